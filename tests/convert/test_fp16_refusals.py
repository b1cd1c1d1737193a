"""fp16 variants onnxruntime refuses (convert/fp16/refusals.py, issue 32 5b-5c): what its error names is
kept in float and the variant made again, no list of operators kept; and a refused variant's reason is one
line naming the node, its operator and onnxruntime's reason, its whole message kept as the record's
`detail` (issue 44), in the manifest, `onnxport info` and the HTTP 404 for that version.

The model: a cubic Resize whose scales are computed from constants, as exporters of `interpolate` write
them, between two convolutions. 100 x 0.01 is exactly 1 in fp32 and 0.9995 in fp16, and onnxruntime's
cubic Resize refuses an outermost scale that is not 1 with a message of several lines
("ScalesValidation 'Cubic' mode only supports:" then the list). make_fp16 now keeps what a Resize's inputs
are computed from in fp32 before any refusal (convert/resize_inputs.py); the tests of the refusals' path,
the net for what no rule foresaw, turn that rule off (`refusals_only`) to reach it with this model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import helper

from onnxport import runtime
from onnxport.convert import fp16
from onnxport.convert.fp16 import refusals as fp16_refusals
from onnxport.convert.lower_precision import make_fp16
from onnxport.errors import ModelFileError
from onnxport.serving.app import create_app

CUBIC_REFUSAL = "ScalesValidation 'Cubic' mode only supports: * 2-D inputs ('Bicubic') or * 4-D inputs"
REFUSAL_END = "in the Resize operator"  # the last words of onnxruntime's message: the detail is whole
# The variant's one-line reason: the node, its operator, onnxruntime's reason (its list cut), fp32 runs.
ONE_LINE = (
    f"onnxruntime {runtime.VERSION} failed to run it: Resize node resize: 'Cubic' mode only supports: "
    "2-D inputs ('Bicubic') or 4-D inputs with"
)
FP32_RUNS = "; fp32 runs on the same onnxruntime and inputs"


@pytest.fixture
def refusals_only(monkeypatch):
    """make_fp16 without its Resize rule: the cubic model's scales are computed in fp16 and refused."""
    monkeypatch.setattr(fp16, "folded_resize_inputs", lambda model: (set(), set()))


def cubic_model() -> onnx.ModelProto:
    r = rng(32)
    return make_model(
        [
            helper.make_node("Conv", ["x", "w1"], ["features"], pads=[1, 1, 1, 1], name="conv1"),
            helper.make_node("Mul", ["percent", "hundredth"], ["scales"], name="scales"),
            helper.make_node("Resize", ["features", "", "scales"], ["resized"], mode="cubic", name="resize"),
            helper.make_node("Conv", ["resized", "w2"], ["y"], pads=[1, 1, 1, 1], name="conv2"),
        ],
        {
            "w1": (r.normal(size=(32, 3, 3, 3)) * 0.2).astype(np.float32),
            "w2": (r.normal(size=(16, 32, 3, 3)) * 0.1).astype(np.float32),
            "percent": np.array([100, 100, 50, 50], np.float32),
            "hundredth": np.array([0.01], np.float32),
        },
        [tensor("x", 1, 3, 16, 16)],
        [tensor("y", 1, 16, 8, 8)],
    )


def feeds(seed: int) -> dict[str, np.ndarray]:
    return {"x": rng(seed).normal(size=(1, 3, 16, 16)).astype(np.float32)}


def imported(run_cli, tmp_path: Path, model: onnx.ModelProto, name: str) -> dict:
    onnx.save(model, tmp_path / f"{name}.onnx")
    np.savez(tmp_path / "inputs.npz", **feeds(1))
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repo",
        "import",
        tmp_path / f"{name}.onnx",
        "--name",
        name,
        "--task",
        "generic",
        "--inputs",
        tmp_path / "inputs.npz",
        "--quiet",
        "--forms",
        "none",
    )
    assert code == 0, err
    return json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"][name]


def refusal(model: onnx.ModelProto) -> str:
    """onnxruntime's error on `model`, as the build sees it."""
    with pytest.raises(ModelFileError) as caught:
        session = runtime.create_session(model.SerializeToString(), label="fp16")
        runtime.run(session, feeds(2), label="fp16")
    return str(caught.value)


def test_the_resize_rule_keeps_the_scales_in_fp32_before_any_refusal(run_cli, tmp_path):
    model = cubic_model()
    made, settings = make_fp16(model, [feeds(1)])
    assert "scales" in settings["blocked_nodes"]
    runtime.run(runtime.create_session(made.SerializeToString(), label="fp16"), feeds(2), label="fp16")
    entry = imported(run_cli, tmp_path, model, "cubic")
    assert entry["variants"]["fp16"]["status"] == "ok", entry["variants"]["fp16"]["reason"]
    assert "refusals" not in entry["variants"]["fp16"]["settings"]


def test_the_fp16_file_of_the_cubic_model_is_what_onnxruntime_refuses(refusals_only):
    """The premise: fp32 runs, the plain fp16 conversion (Resize kept in float by upstream's block list,
    its scales computed in fp16) is refused, and the message spans lines in onnxruntime."""
    model = cubic_model()
    runtime.run(runtime.create_session(model.SerializeToString()), feeds(2))
    fp16, settings = make_fp16(model, [feeds(1)])
    assert "Resize" in settings["blocked_ops"]  # a list of operators did not save it
    message = refusal(fp16)
    assert CUBIC_REFUSAL in message and message.endswith(REFUSAL_END), message
    assert "\n" not in message
    print(f"onnxruntime's refusal, whole: {message}")


def test_a_refused_fp16_variant_is_saved_by_keeping_in_float_what_the_error_names(run_cli, tmp_path, refusals_only):
    entry = imported(run_cli, tmp_path, cubic_model(), "cubic")
    fp16 = entry["variants"]["fp16"]
    assert fp16["status"] == "ok", fp16["reason"]
    # Named "resize" (kept already), so what computes its parameters from constants was kept next.
    [learned] = fp16["settings"]["refusals"]
    assert learned["kept"] == ["scales"]
    assert CUBIC_REFUSAL in learned["error"] and learned["error"].endswith(REFUSAL_END), learned["error"]
    assert "scales" in fp16["settings"]["blocked_nodes"]
    assert fp16["size_ratio"] < 0.6, fp16["size_ratio"]  # the convolutions are fp16: it halves the file
    print(
        f"fp16 saved: {fp16['size_ratio']}x of fp32, metric {fp16['vs_fp32'].get('metric')}, "
        f"kept {learned['kept']} after: {learned['error'][:120]}..."
    )


def test_a_refusal_s_reason_is_one_line_and_its_detail_whole_in_the_manifest_info_and_the_404(
    run_cli, tmp_path, monkeypatch, assert_json_error, refusals_only
):
    """With no retry allowed, the variant is rejected with one line naming the node, its operator and
    onnxruntime's reason, and saying fp32 runs; onnxruntime's whole message, on one line, is its detail
    (the reason was the whole message, source positions and codes included)."""
    monkeypatch.setattr(fp16_refusals, "MAX_TRIES", 0)
    entry = imported(run_cli, tmp_path, cubic_model(), "cubic")
    variant = entry["variants"]["fp16"]
    assert variant["status"] == "rejected"
    assert variant["reason"].startswith(ONE_LINE) and variant["reason"].endswith(FP32_RUNS), variant["reason"]
    assert "\n" not in variant["reason"] and "ONNXRuntimeError" not in variant["reason"], variant["reason"]
    assert CUBIC_REFUSAL in variant["detail"] and variant["detail"].endswith(REFUSAL_END), variant["detail"]
    code, out, _ = run_cli("--repository", tmp_path / "repo", "info", "cubic")
    assert code == 0 and f"fp16 rejected: {variant['reason']}" in out and variant["detail"] in out, out
    client = create_app({"repository": tmp_path / "repo"}).test_client()
    message = assert_json_error(client.get("/v2/models/cubic/versions/fp16"), 404, "not served", ONE_LINE)
    assert FP32_RUNS in message, message


def test_the_error_names_the_node_or_only_the_operator(refusals_only):
    """Read off onnxruntime's own messages: a refused run names its node, a kernel's check at load
    names only its operator (the NHWC cubic downscale onnxruntime refuses in fp32 too)."""
    model = cubic_model()
    at_run = refusal(make_fp16(model, [feeds(1)])[0])
    assert fp16_refusals.named(at_run) == ({"resize"}, {"Resize"})
    nhwc = make_model(
        [
            helper.make_node("Transpose", ["x"], ["nchw"], perm=[0, 3, 1, 2], name="to_nchw"),
            helper.make_node("Resize", ["nchw", "", "scales"], ["small"], mode="cubic", name="shrink"),
            helper.make_node("Transpose", ["small"], ["y"], perm=[0, 2, 3, 1], name="to_nhwc"),
        ],
        {"scales": np.array([1, 1, 0.5, 0.5], np.float32)},
        [tensor("x", 1, 8, 8, 4)],
        [tensor("y", 1, 4, 4, 4)],
    )
    with pytest.raises(ModelFileError) as caught:
        runtime.create_session(nhwc.SerializeToString(), label="nhwc")
    assert fp16_refusals.named(str(caught.value)) == (set(), {"Resize"})
    assert str(caught.value).endswith(REFUSAL_END) and "\n" not in str(caught.value)


def test_what_is_kept_next_goes_from_the_named_node_to_its_parameters_to_its_neighbours(refusals_only):
    model = cubic_model()
    valid = fp16_refusals.node_names(model)
    fp16, settings = make_fp16(model, [feeds(1)])
    message = "Non-zero status code returned while running Conv node. Name:'conv2' Status Message: refused"
    assert fp16_refusals.keep_more(fp16, settings, message, valid) == {"conv2"}  # not kept yet: itself
    message = "FAIL : upsamplebase.h:579 ScalesValidation refused in the Resize operator"
    assert fp16_refusals.keep_more(fp16, settings, message, valid) == {"scales"}  # kept: its parameters
    fp16, settings = make_fp16(model, [feeds(1)], keep_float=["scales"])
    assert fp16_refusals.keep_more(fp16, settings, message, valid) == {"conv1", "conv2"}  # then its neighbours
    # A Cast make_fp16 added stands for the model's nodes on either side of it.
    cast = next(n.name for n in fp16.graph.node if n.op_type == "Cast" and n.name not in valid)
    named = f"Non-zero status code returned while running Cast node. Name:'{cast}' Status Message: refused"
    assert (
        fp16_refusals.keep_more(fp16, settings, named, valid)
        and fp16_refusals.keep_more(fp16, settings, named, valid) <= valid
    )
    assert fp16_refusals.keep_more(fp16, settings, "out of memory", valid) == set()  # names nothing: no retry


def test_parameters_computed_from_values_kept_in_fp32_are_kept_too(refusals_only):
    """A ViT's positional grid resized to the input's: the scales are the input's size (kept in fp32 by
    the integer rule, `ratio`) over the grid's, concatenated with constant ones in fp16 (`scales`)."""
    r = rng(1)
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["f"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Shape", ["f"], ["shape"], start=2, name="shape"),
            helper.make_node("Cast", ["shape"], ["size"], to=onnx.TensorProto.FLOAT, name="size"),
            helper.make_node("Div", ["size", "grid"], ["ratio"], name="ratio"),
            helper.make_node("Concat", ["ones", "ratio"], ["scales"], axis=0, name="scales"),
            helper.make_node("Resize", ["pos", "", "scales"], ["pos_big"], mode="cubic", name="resize"),
            helper.make_node("Add", ["f", "pos_big"], ["y"], name="add"),
        ],
        {
            "w": r.normal(size=(8, 3, 3, 3)).astype(np.float32),
            "grid": np.array([4, 4], np.float32),
            "ones": np.array([1, 1], np.float32),
            "pos": r.normal(size=(1, 8, 4, 4)).astype(np.float32),
        },
        [tensor("x", 1, 3, "h", "w")],
        [tensor("y", 1, 8, "h", "w")],
    )
    fp16, settings = make_fp16(model, [{"x": r.normal(size=(1, 3, 16, 16)).astype(np.float32)}])
    assert "ratio" in settings["blocked_nodes"] and "scales" not in settings["blocked_nodes"]
    message = "FAIL : upsamplebase.h:579 ScalesValidation refused in the Resize operator"
    assert fp16_refusals.keep_more(fp16, settings, message, fp16_refusals.node_names(model)) == {"scales"}
