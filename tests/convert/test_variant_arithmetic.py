"""Imports judged by what each file computes (convert/arithmetic.py), and the variants not worth making:
an already-int8 model, an fp16 variant kept mostly in fp32, a tree ensemble with nothing to quantize,
static int8 without real calibration data (convert/variant_maker.py, convert/int8/)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from graph_helpers import make_model, rng, saturates_without_vnni, tensor
from onnx import TensorProto, helper

from onnxport.accuracy.budgets import BUDGETS


def imported(
    run_cli,
    tmp_path: Path,
    model: onnx.ModelProto,
    name: str,
    *args: object,
    inputs: dict[str, np.ndarray] | None = None,
) -> dict:
    """Import `model` (with `inputs` as its evaluation inputs when given); returns its manifest entry."""
    onnx.save(model, tmp_path / f"{name}.onnx")
    extra: list[object] = []
    if inputs is not None:
        np.savez(tmp_path / f"{name}-inputs.npz", **inputs)
        extra = ["--inputs", tmp_path / f"{name}-inputs.npz"]
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repo",
        "import",
        tmp_path / f"{name}.onnx",
        "--name",
        name,
        "--quiet",
        "--forms",
        "none",
        *extra,
        *args,
    )
    assert code == 0, err
    return json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"][name]


# ------------------------------------------------------------------ an already-int8 model


def already_quantized_model() -> onnx.ModelProto:
    """onnxruntime's dynamic int8 of x @ w_q beside a float x @ w four times its size, as real
    already-quantized models ship: fp16 still halves the float part, so every variant name that
    holds this graph (fp32 and fp16) is stored and judged, the int8 names are skipped."""
    r = rng(4)
    return make_model(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zero"], name="quantize"),
            helper.make_node("MatMulInteger", ["x_q", "w_q", "x_zero", "w_zero"], ["acc"], name="matmul_integer"),
            helper.make_node("Cast", ["acc"], ["acc_float"], name="acc_to_float", to=TensorProto.FLOAT),
            helper.make_node("Mul", ["x_scale", "w_scale"], ["scale"], name="scales"),
            helper.make_node("Mul", ["acc_float", "scale"], ["quantized_out"], name="dequantize"),
            helper.make_node("MatMul", ["x", "w"], ["float_out"], name="float_matmul"),
            helper.make_node("Add", ["quantized_out", "float_out"], ["y"], name="add"),
        ],
        {
            "w_q": r.integers(0, 255, (64, 128)).astype(np.uint8),
            "w_zero": np.uint8(128),
            "w_scale": np.float32(0.002),
            "w": (r.normal(size=(64, 128)) * 0.05).astype(np.float32),
        },
        [tensor("x", "batch", 64)],
        [tensor("y", "batch", 128)],
    )


def test_an_already_int8_model_gets_the_int8_budget_under_every_name_it_is_stored_as(run_cli, tmp_path):
    inputs = {"x": rng(5).normal(size=(8, 64)).astype(np.float32)}
    entry = imported(run_cli, tmp_path, already_quantized_model(), "preq", inputs=inputs)
    variants = entry["variants"]
    stored = {name: record for name, record in variants.items() if "file" in record}
    assert set(stored) == {"fp32", "fp16"}, {n: (r["status"], r["reason"]) for n, r in variants.items()}
    for name, record in stored.items():
        # Judged as what the file computes: the fp32 variant is not held to fp32's 1e-5.
        assert record["arithmetic"] == "int8", name
        assert record["budget"] == BUDGETS["int8"].as_json(), name
        assert record["status"] == "ok", (name, record["reason"])
        assert record["judged_on"] == "real", name
        assert "ai.onnx/MatMulInteger" in record["operator_types"], name
    assert {stored["fp32"]["precision"], stored["fp16"]["precision"]} == {"fp32", "fp16"}  # the names' intent stays
    # Shown as what they are (variant_table.label): the original, and its fp16 conversion, both int8 inside.
    assert (stored["fp32"]["label"], stored["fp16"]["label"]) == ("original (int8)", "fp16 (int8)")
    for name in ("int8-dynamic", "int8-static"):
        assert variants[name] == {
            "precision": "int8",
            "status": "skipped",
            "reason": "already quantized: 2 quantized operators",
        }, name


def test_a_float_model_is_judged_by_each_variant_files_arithmetic(run_cli, tmp_path):
    r = rng(6)
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="dense")],
        {"w": r.normal(size=(64, 32)).astype(np.float32)},
        [tensor("x", "batch", 64)],
        [tensor("y", "batch", 32)],
    )
    calibration = tmp_path / "calibration.npz"
    np.savez(calibration, x=r.normal(size=(8, 64)).astype(np.float32))
    entry = imported(
        run_cli,
        tmp_path,
        model,
        "dense",
        "--calibration",
        calibration,
        inputs={"x": r.normal(size=(8, 64)).astype(np.float32)},
    )
    got = {name: record.get("arithmetic") for name, record in entry["variants"].items()}
    assert got == {
        "fp32": "fp32",
        "fp16": "fp16",
        "int8-dynamic": "int8",
        "int8-static": "int8",
        "int8-weights": "int8",
        "int4": "int8",
    }, entry["variants"]
    for record in entry["variants"].values():
        assert record["budget"] == BUDGETS[record["arithmetic"]].as_json()


# ------------------------------------------------------------------ fp16 kept mostly in fp32


def overflowing_model() -> onnx.ModelProto:
    """A large MatMul whose outputs pass fp16's range on these inputs (kept in fp32 with its
    weight), beside a small one that fp16 converts: the fp16 file is nearly fp32's size."""
    r = rng(7)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "big"], ["hot"], name="hot_matmul"),
            helper.make_node("MatMul", ["x", "small"], ["cool"], name="cool_matmul"),
        ],
        {
            "big": (np.abs(r.normal(size=(64, 256))) * 100 + 50).astype(np.float32),
            "small": (r.normal(size=(64, 4)) * 1e-3).astype(np.float32),
        },
        [tensor("x", "batch", 64)],
        [tensor("hot", "batch", 256), tensor("cool", "batch", 4)],
    )


def test_an_fp16_variant_kept_mostly_in_fp32_is_skipped_with_its_size(run_cli, tmp_path):
    inputs = {"x": (np.abs(rng(8).normal(size=(4, 64))) * 100 + 10).astype(np.float32)}  # hot: ~1e6
    entry = imported(run_cli, tmp_path, overflowing_model(), "hot", inputs=inputs)
    record, fp32_bytes = entry["variants"]["fp16"], entry["variants"]["fp32"]["bytes"]
    assert record["status"] == "skipped" and "file" not in record, record
    assert record["reason"].startswith("fp16 file "), record["reason"]
    assert f"the size of fp32 ({fp32_bytes:,} bytes): not at least 1.25x smaller" in record["reason"], record["reason"]


def cancelling_model() -> onnx.ModelProto:
    """y = x @ w1 - x @ w2 with w2 within 1e-4 of w1: fp16 rounds each weight by ~1e-3 of its size
    and the difference is lost, so fp16 misses its budget; the fallback then keeps the MatMuls in
    fp32, which keeps nearly every byte in fp32."""
    r = rng(9)
    w1 = r.normal(size=(64, 128)).astype(np.float32)
    w2 = (w1 + r.normal(size=w1.shape) * 1e-4).astype(np.float32)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["a"], name="first"),
            helper.make_node("MatMul", ["x", "w2"], ["b"], name="second"),
            helper.make_node("Sub", ["a", "b"], ["y"], name="difference"),
        ],
        {"w1": w1, "w2": w2},
        [tensor("x", "batch", 64)],
        [tensor("y", "batch", 128)],
    )


def test_a_fallback_that_keeps_most_of_fp16_in_fp32_is_not_served(run_cli, tmp_path):
    entry = imported(
        run_cli, tmp_path, cancelling_model(), "cancel", inputs={"x": rng(10).normal(size=(8, 64)).astype(np.float32)}
    )
    record = entry["variants"]["fp16"]
    assert record["status"] != "ok", record
    tries = record["fallback"]["tries"]
    assert any("not at least 1.25x smaller" in t["result"] for t in tries), tries
    assert not any(t["result"] == "within budget" for t in tries), tries  # nothing oversized was measured and taken
    assert "in float leaves the file not at least 1.25x smaller than fp32" in record["reason"], record["reason"]


# ------------------------------------------------------------------ nothing to quantize


def tree_ensemble_file(tmp_path: Path) -> tuple[onnx.ModelProto, np.ndarray]:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    features, labels = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(features, labels)
    model = to_onnx(forest, features[:1], options={"zipmap": False}, target_opset={"": 17, "ai.onnx.ml": 3})
    return model, features[::10]


def test_a_tree_ensemble_has_nothing_to_quantize_and_says_what_it_has(run_cli, tmp_path):
    model, rows = tree_ensemble_file(tmp_path)
    entry = imported(run_cli, tmp_path, model, "forest", "--metric-output", "probabilities", inputs={"X": rows})
    variants = entry["variants"]
    for name in ("int8-dynamic", "int8-static"):
        record = variants[name]
        assert record["status"] == "skipped", record
        assert record["reason"].startswith("nothing to quantize: no operator that onnxruntime quantizes"), record
        assert "ai.onnx.ml/TreeEnsembleClassifier" in record["reason"], record
    fp32 = variants["fp32"]
    assert fp32["status"] == "ok" and fp32["arithmetic"] == "fp32"
    assert "ai.onnx.ml/TreeEnsembleClassifier" in fp32["operator_types"], fp32["operator_types"]
    assert fp32["operator_types"] == sorted(fp32["operator_types"])


# ------------------------------------------------------------------ static int8 needs real calibration


@saturates_without_vnni
def test_static_int8_without_real_calibration_data_is_skipped_with_how_to_give_it(run_cli, tmp_path):
    r = rng(11)
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="dense")],
        {"w": r.normal(size=(64, 32)).astype(np.float32)},
        [tensor("x", "batch", 64)],
        [tensor("y", "batch", 32)],
    )
    entry = imported(run_cli, tmp_path, model, "bare")  # no data: seeded random inputs
    variants = entry["variants"]
    static = variants["int8-static"]
    assert static["status"] == "skipped" and "file" not in static, static
    assert static["reason"].startswith("no real calibration inputs"), static["reason"]
    assert "onnxport import MODEL --calibration FILE.npz|FILE.npy|DIR" in static["reason"], static["reason"]
    assert "--inputs" in static["reason"], static["reason"]
    # What needs no calibration is still made, and says what it was judged on.
    assert variants["int8-dynamic"]["status"] == "ok", variants["int8-dynamic"]
    assert {variants[n]["judged_on"] for n in ("fp32", "fp16", "int8-dynamic")} == {"synthetic"}


def test_real_calibration_data_makes_static_int8(run_cli, tmp_path):
    r = rng(12)
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="dense")],
        {"w": r.normal(size=(64, 32)).astype(np.float32)},
        [tensor("x", "batch", 64)],
        [tensor("y", "batch", 32)],
    )
    calibration = tmp_path / "calibration.npz"
    np.savez(calibration, x=r.normal(size=(16, 64)).astype(np.float32))
    entry = imported(run_cli, tmp_path, model, "calibrated", "--calibration", calibration)
    static = entry["variants"]["int8-static"]
    assert static["status"] == "ok", static["reason"]
    assert static["judged_on"] == "synthetic"  # the evaluation inputs are still seeded: said so
