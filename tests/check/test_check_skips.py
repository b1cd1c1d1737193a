"""`onnxport check` goes on past a model the browser cannot run: a STRING input gives `skipped` rows with the
reason, a kernel the runtime lacks an `unsupported` row, and the other models are checked as usual."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fixtures.check import assert_report_consistent, result
from onnxport.check import verdict_file

ML_OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
STRING_REASON = "input phs is a string tensor (numpy object)"


def scale_model() -> onnx.ModelProto:
    """y = x * w: the model the browser runs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    w = numpy_helper.from_array(np.array([1.5, -2.0, 0.5], np.float32), "w")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "scale", [x], [y], [w])
    return helper.make_model(graph, opset_imports=ML_OPSETS[:1])


def phonemes_model() -> onnx.ModelProto:
    """Phoneme strings to a code (ai.onnx.ml LabelEncoder) times a float pitch: the shape of the
    singing-synthesis F0 model that ended the whole check."""
    phs = helper.make_tensor_value_info("phs", TensorProto.STRING, ["n"])
    f0 = helper.make_tensor_value_info("f0", TensorProto.FLOAT, ["n"])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n"])
    nodes = [
        helper.make_node(
            "LabelEncoder",
            ["phs"],
            ["code"],
            domain="ai.onnx.ml",
            keys_strings=["a", "b", "sil"],
            values_floats=[1.0, 2.0, 0.0],
            default_float=-1.0,
        ),
        helper.make_node("Mul", ["code", "f0"], ["out"]),
    ]
    return helper.make_model(helper.make_graph(nodes, "phonemes", [phs, f0], [out]), opset_imports=ML_OPSETS)


def binarizer_model() -> onnx.ModelProto:
    """An ai.onnx.ml operator: onnxruntime-web's WebGPU bundle has no kernel for it, its wasm one has."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.0)
    return helper.make_model(helper.make_graph([node], "bin", [x], [y]), opset_imports=ML_OPSETS)


def write_test_set(folder: Path, inputs: dict[str, np.ndarray]) -> Path:
    """ONNX's test-directory form (test_data_set_0/input_K.pb): it carries string tensors, which an .npz
    without pickle does not."""
    data = folder / "test_data_set_0"
    data.mkdir(parents=True)
    for k, (name, value) in enumerate(inputs.items()):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    return folder


def build_repository(tmp_path: Path, run_cli) -> Path:
    rng = np.random.default_rng(0)
    repository = tmp_path / "repository"
    models = {
        "scale": (scale_model(), {"x": rng.standard_normal((4, 3)).astype(np.float32)}),
        "phonemes": (
            phonemes_model(),
            {
                "phs": np.array([b"a", b"sil", b"b", b"zz", b"a"], dtype=object),
                "f0": np.array([220, 0, 233, 1, 246], np.float32),
            },
        ),
        "bin": (binarizer_model(), {"x": rng.standard_normal((4, 3)).astype(np.float32)}),
    }
    for name, (model, inputs) in models.items():
        onnx.save(model, tmp_path / f"{name}.onnx")
        data = write_test_set(tmp_path / f"{name}-inputs", inputs)
        code, _, err = run_cli(
            "--repository",
            repository,
            "import",
            tmp_path / f"{name}.onnx",
            "--name",
            name,
            "--task",
            "regression",
            "--inputs",
            data,
            "--quiet",
            "--forms",
            "none",
        )
        assert code == 0, f"import {name}: {err}"
    return repository


def test_a_string_input_model_is_skipped_and_the_others_are_checked(check_cli, run_cli, tmp_path):
    repository = build_repository(tmp_path, run_cli)
    report_path = tmp_path / "report.json"
    started = time.perf_counter()
    code, out, err = check_cli("--repository", repository, "check", "--runtimes", "wasm,webgpu", "--json", report_path)
    print(f"\ncheck of 3 models on wasm and webgpu: {time.perf_counter() - started:.1f} s\n{out}")
    # Before: exit 1, "the conformance page failed: golden input phs: dtype object is not supported in the browser".
    assert "onnxport: error" not in err, err
    assert code == 0, f"exit {code}: skipped and unsupported rows are not failures\n{out}\n{err}"

    report = json.loads(report_path.read_text())
    assert_report_consistent(report, out)
    for runtime in ("source", "wasm", "webgpu"):
        row = result(report, "scale", "fp32", runtime)
        assert row["status"] == "pass", row
    for runtime in ("source", "wasm", "webgpu"):  # one row per runtime, as every model has, each saying why
        row = result(report, "phonemes", "fp32", runtime)
        assert row["status"] == "skipped" and row["reason"].startswith(STRING_REASON), row
    browser_reason = result(report, "phonemes", "fp32", "wasm")["reason"]
    assert browser_reason.endswith("the browser library carries numeric and bool tensors only"), browser_reason
    # A kernel the runtime lacks: refused at session creation (`unsupported`), the check goes on.
    assert result(report, "bin", "fp32", "wasm")["status"] == "pass"
    refused = result(report, "bin", "fp32", "webgpu")
    assert refused["status"] == "unsupported" and "Binarizer" in refused["reason"], refused
    assert report["summary"] == {"pass": 5, "skipped": 3, "unsupported": 1}

    # The terminal says what was skipped and why, in full, under the counts.
    assert "5 pass, 3 skipped, 1 unsupported" in out
    lines = out.splitlines()
    assert any(line.startswith(f"skipped, not failures: 2 rows of phonemes: {STRING_REASON}") for line in lines), out
    assert any(line.startswith(f"skipped, not failures: 1 row of phonemes: {STRING_REASON}") for line in lines), out
    assert any(line.startswith("unsupported, not failures: 1 row of bin: ") for line in lines), out
    assert "skipped, not failures: 2 rows of phonemes" in report_path.with_suffix(".html").read_text()

    # The repository's verdicts keep the skips beside the verdicts, with their reason.
    recorded = json.loads((repository / verdict_file.VERDICTS_FILE).read_text())["verdicts"]
    statuses = {(e["model"], e["runtime"]): e["status"] for e in recorded}
    assert statuses == {
        ("bin", "wasm"): "pass",
        ("bin", "webgpu"): "unsupported",
        ("phonemes", "wasm"): "skipped",
        ("phonemes", "webgpu"): "skipped",
        ("scale", "wasm"): "pass",
        ("scale", "webgpu"): "pass",
    }
    assert all(e["reason"].startswith(STRING_REASON) for e in recorded if e["model"] == "phonemes")


def test_a_skip_never_replaces_a_verdict_on_the_same_artifact():
    manifest = {"models": {"m": {"variants": {"fp32": {"status": "ok", "sha256": "a" * 64}}}}}
    entry = {"model": "m", "variant": "fp32", "form": None, "runtime": "webgpu", "device_kind": "k", "sha256": "a" * 64}
    passed = {**entry, "status": "pass", "reason": None}
    skipped = {**entry, "status": "skipped", "reason": "no WebGPU adapter"}
    assert verdict_file.merge([passed], [skipped], manifest) == [passed]
    assert verdict_file.merge([], [skipped], manifest) == [skipped]
    failed = {**entry, "status": "fail", "reason": "output y at [0]"}
    assert verdict_file.merge([skipped], [failed], manifest) == [failed]  # a verdict replaces a skip
    rebuilt = {**passed, "sha256": "b" * 64}  # a verdict on an artifact no longer served does not hold one back
    assert verdict_file.merge([rebuilt], [skipped], manifest) == [skipped]
