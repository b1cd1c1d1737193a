"""Small ONNX files for the name, replace and remove tests: y = x @ W, W seeded, so each seed is another file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def matmul_file(folder: Path, seed: int = 0) -> Path:
    """A checked y = x @ W (x: [batch, 8] float32) saved as folder/matmul-<seed>.onnx."""
    weight = numpy_helper.from_array(np.random.default_rng(seed).standard_normal((8, 4)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"matmul-{seed}.onnx"
    onnx.save(model, path)
    return path


def manifest_of(repository: Path) -> dict:
    return json.loads((repository / "manifest.json").read_text())


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under root (the lock aside) and its bytes: to show that nothing changed."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"
    }


def rename_by_hand(repository: Path, old: str, new: str) -> None:
    """Rename a model in manifest.json as a hand edit (or an older onnxport) would leave it, bypassing the store."""
    manifest = manifest_of(repository)
    entry = manifest["models"].pop(old)
    manifest["models"][new] = {**entry, "name": new}
    (repository / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
