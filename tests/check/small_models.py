"""Two small imported models with several served variants (fp32, fp16, int8, int4) and their forms: enough rows
for a check's plan, progress and interruption to be seen, each row quick even on a software WebGPU adapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxport import cli


def mlp_file(folder: Path, seed: int) -> Path:
    """y = relu(x @ W1) @ W2, x: [batch, 64] float32, checked and saved as folder/mlp-<seed>.onnx."""
    rng = np.random.default_rng(seed)
    weights = [
        numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) / 8, name)
        for name, shape in (("W1", (64, 128)), ("W2", (128, 10)))
    ]
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W1"], ["h"], name="hidden"),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "W2"], ["y"], name="scores"),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"mlp-{seed}.onnx"
    onnx.save(model, path)
    np.savez(folder / f"mlp-{seed}-inputs.npz", x=rng.standard_normal((8, 64)).astype(np.float32))
    return path


def two_model_repository(root: Path) -> Path:
    """mlp-a and mlp-b imported as classifiers with every form kept; returns the repository."""
    repository = root / "repository"
    for name, seed in (("mlp-a", 0), ("mlp-b", 1)):
        path = mlp_file(root / "models", seed)
        code = cli.main(
            [
                "--repository",
                str(repository),
                "import",
                str(path),
                "--name",
                name,
                "--task",
                "classification",
                "--inputs",
                str(path.with_name(f"mlp-{seed}-inputs.npz")),
                "--forms",
                "all",
                "--quiet",
            ]
        )
        assert code == 0, f"importing {name} failed; see the captured stderr"
    return repository
