"""The app's pages name an already-int8 model's variant by what it is (issue 32 5a): "original (int8)" with the
arithmetic "int8" in the models and model pages' variant tables, and in the playground's variant pin, where
they said "fp32", "fp32". The manifest's `label` (repository/variant_table.label) is what they show; the key
`fp32` stays in the page's data (data-variant) and URLs. A real `onnxport serve` and Chromium.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PAGE_TIMEOUT_MS = 60_000


def quantized_file(folder) -> str:
    """onnxruntime's quantize_dynamic of a small float network: an int8 model as third parties ship them."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    r = np.random.default_rng(7)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["hidden"], name="layer1"),
         helper.make_node("Relu", ["hidden"], ["active"], name="relu"),
         helper.make_node("MatMul", ["active", "w2"], ["y"], name="layer2")],
        "float", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])],
        [numpy_helper.from_array((r.normal(size=(64, 256)) * 0.1).astype(np.float32), "w1"),
         numpy_helper.from_array((r.normal(size=(256, 32)) * 0.1).astype(np.float32), "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "float.onnx")
    quantize_dynamic(folder / "float.onnx", folder / "int8.onnx", weight_type=QuantType.QUInt8)
    return str(folder / "int8.onnx")


def test_the_pages_show_an_int8_original_as_the_original_with_its_arithmetic(
        run_cli, tmp_path, serve_repository, chromium):
    np.savez(tmp_path / "inputs.npz", x=np.random.default_rng(8).normal(size=(6, 64)).astype(np.float32))
    code, _, err = run_cli("--repository", tmp_path / "repo", "import", quantized_file(tmp_path), "--name", "quantized",
                           "--task", "generic", "--inputs", tmp_path / "inputs.npz", "--quiet", "--forms", "none")
    assert code == 0, err
    base = serve_repository(tmp_path / "repo")
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(f"{base}/#/", timeout=PAGE_TIMEOUT_MS)
        row = page.locator('[data-model="quantized"] tr[data-variant="fp32"]')
        row.wait_for(timeout=PAGE_TIMEOUT_MS)
        cells = row.locator("td").all_inner_texts()
        assert cells[:2] == ["original (int8)", "int8"], cells

        page.goto(f"{base}/#/model/quantized", timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("original (int8)").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        rows = [r for r in page.locator("tr").all_inner_texts() if r.startswith("original (int8)")]
        assert len(rows) == 1 and "\tint8\t" in rows[0], rows

        page.goto(f"{base}/#/play/quantized", timeout=PAGE_TIMEOUT_MS)
        option = page.locator('[data-testid="pin-variant"] option[value="fp32"]')
        option.wait_for(state="attached", timeout=PAGE_TIMEOUT_MS)
        assert option.inner_text() == "original (int8)"
        print(f"models page row: {cells}; model page row: {rows[0]!r}")
    finally:
        context.close()
