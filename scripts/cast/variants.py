"""The models of the Cast investigation (docs/cast.md): tiny one-op graphs and minilm/iris variants.

build(out) writes <out>/<name>.onnx and returns {name: {"path", "feeds"}} where feeds are numpy arrays.
Nothing in the repository is changed: the shipped artifacts are only read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = ROOT / "models" / ".repository"
SEQUENCE = 128


def artifact(model: str, variant: str = "fp32") -> Path:
    manifest = json.loads((REPOSITORY / "manifest.json").read_text())
    return REPOSITORY / "artifacts" / f"{manifest['models'][model]['variants'][variant]['sha256']}.onnx"


def minilm_feeds() -> dict[str, np.ndarray]:
    """models/minilm.py bench_inputs(): one full 128-token sequence, no padding."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, (1, SEQUENCE)).astype(np.int64)
    ids[0, 0], ids[0, -1] = 101, 102
    return {"input_ids": ids, "attention_mask": np.ones((1, SEQUENCE), np.int64)}


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "cast_probe", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxport-cast")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _io(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def tiny_models() -> dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    """One-op graphs on an int64 [1, N] graph input (N = 128 is minilm's attention_mask)."""
    I64, F32, I32, BOOL = TensorProto.INT64, TensorProto.FLOAT, TensorProto.INT32, TensorProto.BOOL
    out = {}
    for n in (128, 16384, 1048576):
        x = np.ones((1, n), np.int64)
        out[f"cast_input_i64_f32_{n}"] = (_model(
            [helper.make_node("Cast", ["x"], ["y"], to=F32, name="cast")],
            [_io("x", I64, [1, n])], [_io("y", F32, [1, n])]), {"x": x})
        out[f"identity_input_i64_{n}"] = (_model(
            [helper.make_node("Identity", ["x"], ["y"], name="identity")],
            [_io("x", I64, [1, n])], [_io("y", I64, [1, n])]), {"x": x})
        # The Cast reads an internal tensor (the Add's output), not the graph input.
        out[f"cast_internal_i64_f32_{n}"] = (_model(
            [helper.make_node("Add", ["x", "one"], ["t"], name="add"),
             helper.make_node("Cast", ["t"], ["y"], to=F32, name="cast")],
            [_io("x", I64, [1, n])], [_io("y", F32, [1, n])],
            [numpy_helper.from_array(np.array([1], np.int64), "one")]), {"x": x})
    x = np.ones((1, SEQUENCE), np.int64)
    out["cast_input_i64_bool_128"] = (_model(
        [helper.make_node("Cast", ["x"], ["y"], to=BOOL, name="cast")],
        [_io("x", I64, [1, SEQUENCE])], [_io("y", BOOL, [1, SEQUENCE])]), {"x": x})
    out["cast_input_i32_f32_128"] = (_model(
        [helper.make_node("Cast", ["x"], ["y"], to=F32, name="cast")],
        [_io("x", I32, [1, SEQUENCE])], [_io("y", F32, [1, SEQUENCE])]), {"x": x.astype(np.int32)})
    out["add_input_i64_128"] = (_model(
        [helper.make_node("Add", ["x", "one"], ["y"], name="add")],
        [_io("x", I64, [1, SEQUENCE])], [_io("y", I64, [1, SEQUENCE])],
        [numpy_helper.from_array(np.array([1], np.int64), "one")]), {"x": x})
    # A Cast that neither reads a graph input nor writes a graph output.
    out["cast_middle_i64_f32_128"] = (_model(
        [helper.make_node("Add", ["x", "one"], ["t"], name="add"),
         helper.make_node("Cast", ["t"], ["u"], to=F32, name="cast"),
         helper.make_node("Mul", ["u", "two"], ["y"], name="mul")],
        [_io("x", I64, [1, SEQUENCE])], [_io("y", F32, [1, SEQUENCE])],
        [numpy_helper.from_array(np.array([1], np.int64), "one"),
         numpy_helper.from_array(np.array([2], np.float32), "two")]), {"x": x})
    return out


def minilm_variants() -> dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    """The shipped minilm fp32 graph, and the same graph with the attention_mask Casts changed."""
    base = onnx.load(str(artifact("minilm")))
    feeds = minilm_feeds()
    out = {"minilm": (base, feeds)}

    # The mask as bool: /bert/Cast (int64 -> bool) goes, /Cast (Unsqueeze -> float) stays.
    m = onnx.ModelProto()
    m.CopyFrom(base)
    _retype_input(m, "attention_mask", TensorProto.BOOL)
    _bypass(m, "/bert/Cast")
    out["minilm_mask_bool"] = (m, {**feeds, "attention_mask": feeds["attention_mask"].astype(bool)})

    # The mask as float: /Cast (float -> float) goes, /bert/Cast becomes float -> bool.
    m = onnx.ModelProto()
    m.CopyFrom(base)
    _retype_input(m, "attention_mask", TensorProto.FLOAT)
    _bypass(m, "/Cast")
    out["minilm_mask_float"] = (m, {**feeds, "attention_mask": feeds["attention_mask"].astype(np.float32)})
    return out


def _retype_input(model: onnx.ModelProto, name: str, dtype: int) -> None:
    """Give a graph input another element type. The recorded types (value_info) of the tensors that carry its
    type on (the outputs of its Unsqueeze) go; the rest stay, so onnxruntime fuses the graph as it fuses the
    original."""
    graph = model.graph
    for value in graph.input:
        if value.name == name:
            value.type.tensor_type.elem_type = dtype
            break
    else:
        raise KeyError(name)
    carried = {o for n in graph.node if name in n.input and n.op_type in ("Unsqueeze", "Reshape", "Flatten", "Identity")
               for o in n.output}
    for vi in [vi for vi in graph.value_info if vi.name in carried]:
        graph.value_info.remove(vi)


def _bypass(model: onnx.ModelProto, node_name: str) -> None:
    """Remove a one-input one-output node, its consumers reading its input instead."""
    graph = model.graph
    (node,) = [n for n in graph.node if n.name == node_name]
    src, dst = node.input[0], node.output[0]
    graph.node.remove(node)
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name == dst:
                n.input[i] = src
    for vi in list(graph.value_info):
        if vi.name == dst:
            graph.value_info.remove(vi)


def build(out: Path, which: str = "all") -> dict[str, dict]:
    out.mkdir(parents=True, exist_ok=True)
    models = {}
    if which in ("all", "tiny"):
        models.update(tiny_models())
    if which in ("all", "minilm"):
        models.update(minilm_variants())
    built = {}
    for name, (model, feeds) in models.items():
        path = out / f"{name}.onnx"
        if name == "minilm":
            path = artifact("minilm")  # the shipped bytes, unchanged
        else:
            onnx.save(model, str(path))
        built[name] = {"path": path, "feeds": feeds}
    built["iris"] = {"path": artifact("iris"),
                     "feeds": {"features": np.array([[5.1, 3.5, 1.4, 0.2]], np.float32)}}
    return built


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/onnxport-cast")
    for name, entry in build(target).items():
        print(name, entry["path"], {k: (str(v.dtype), v.shape) for k, v in entry["feeds"].items()})
