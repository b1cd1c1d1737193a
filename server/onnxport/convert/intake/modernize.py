"""Old ONNX files brought to what onnxruntime and the converters expect, each change noted for the manifest."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.version_converter

from onnxport.convert.graph import all_nodes, name_nodes
from onnxport.convert.node_order import sort_nodes
from onnxport.errors import ModelFileError

MIN_RUNTIME_OPSET = 7  # onnxruntime has no kernels for older opsets (e.g. Gemm-6)
UPGRADE_OPSET = 13
MAX_RUNTIME_IR = 13  # "max supported IR version: 13" (onnxruntime 1.30)


def modernize(model: onnx.ModelProto, model_path: Path) -> tuple[onnx.ModelProto, dict]:
    """Bring old models to what onnxruntime and the converters expect.

    Opsets below onnxruntime's oldest kernels are converted up with onnx's
    version converter; initializers listed as graph inputs (IR < 4) are taken
    off the input list, or fp16 conversion would leave the inputs' types behind.
    """
    notes: dict = {}
    opset = _default_opset(model)
    if opset == 0 and not any(node.domain in ("", "ai.onnx") for node in all_nodes(model.graph)):
        # A graph of other domains' nodes alone (onnxmltools' XGBoost file: one ai.onnx.ml TreeEnsemble) may
        # import no default opset; nothing to convert, but the variants' Casts need one.
        model.opset_import.add(domain="", version=UPGRADE_OPSET)
        notes["opset_upgraded"] = f"none -> {UPGRADE_OPSET}"
    elif opset < MIN_RUNTIME_OPSET:
        try:
            model = onnx.version_converter.convert_version(model, UPGRADE_OPSET)
        except Exception as exc:
            raise ModelFileError(
                f"{model_path}: opset {opset} is older than onnxruntime runs ({MIN_RUNTIME_OPSET}+) "
                f"and onnx's version converter could not upgrade it: {exc}"
            ) from exc
        notes["opset_upgraded"] = f"{opset} -> {UPGRADE_OPSET}"
    if model.ir_version > MAX_RUNTIME_IR:
        # Newer onnx writers stamp IR versions onnxruntime refuses; the opsets decide what is needed.
        lowered = max(onnx.helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True), 4)
        notes["ir_version_lowered"] = f"{model.ir_version} -> {lowered}"
        model.ir_version = lowered
    initializers = {i.name for i in model.graph.initializer}
    if any(i.name in initializers for i in model.graph.input):
        kept = [i for i in model.graph.input if i.name not in initializers]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        model.ir_version = max(model.ir_version, 4)
        notes["initializers_removed_from_inputs"] = True
    named = name_nodes(model.graph)
    if named:
        notes["nodes_named"] = named
    # After naming, so a generated name holds the node's index in the file as given.
    moved = sort_nodes(model.graph)
    if moved:
        notes["nodes_sorted"] = moved
    return model, notes


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
