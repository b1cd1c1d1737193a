"""Export a source model (PyTorch, scikit-learn, LightGBM or XGBoost) to ONNX, then check it."""

from __future__ import annotations

import io
import re
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxport.convert.intake import export_trees, value_budget
from onnxport.errors import ModelFileError, RecipeError
from onnxport.recipe import SourceModel

DEFAULT_OPSET = 17
ML_OPSET = 3  # ai.onnx.ml, for the scikit-learn and tree converters
UNNAMED_NODE = re.compile(r"\b[Nn]ame: OpType: (\S+)")  # after whitespace is collapsed
QUOTED_INPUT = re.compile(r"input '([^']*)' of node")


def export(source: SourceModel, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    if source.framework == "pytorch":
        model = _export_torch(source, opset)
    elif source.framework == "sklearn":
        model = _export_sklearn(source, opset)
    elif source.framework in export_trees.FRAMEWORKS:
        model = export_trees.export_trees(source, opset)
        # onnxmltools writes TreeEnsemble* at ai.onnx.ml 1; version 3 only adds their *_as_tensor attributes,
        # so the nodes mean the same at the ML opset the scikit-learn exports use (_dedupe_opsets keeps it).
        model.opset_import.add(domain="ai.onnx.ml", version=ML_OPSET)
    else:
        raise RecipeError(
            f"unknown framework {source.framework!r}; expected pytorch, sklearn, "
            + " or ".join(export_trees.FRAMEWORKS)
        )
    _name_dynamic_dims(model, source.dynamic_axes)
    _dedupe_opsets(model)
    _standard_ml_ops(model)
    return check_and_infer(model, "export")


def check_and_infer(model: onnx.ModelProto, label: str, max_value_bytes: int | None = None) -> onnx.ModelProto:
    """Full checker pass and strict shape inference: catch a bad graph before anyone runs it. With
    max_value_bytes, a value whose inferred size passes it is refused too (value_budget.py)."""
    try:
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        message = checker_message(exc, model.graph)
        raise ModelFileError(f"{label}: the ONNX checker rejects the model: {message}") from exc
    value_budget.check_value_sizes(inferred, label, max_value_bytes)
    return inferred


def checker_message(exc: Exception, graph: onnx.GraphProto) -> str:
    """The checker's objection on one line; an unnamed node it names as "name:  OpType: Cast" is
    named by its op type and index in graph.node instead."""
    text = " ".join(str(exc).split())
    match = UNNAMED_NODE.search(text)
    if match is None:
        return text
    op_type = match.group(1)
    candidates = [i for i, node in enumerate(graph.node) if not node.name and node.op_type == op_type]
    quoted = QUOTED_INPUT.search(text)
    if quoted and len(candidates) > 1:  # "input 'a' of node: ...": the node that reads it
        candidates = [i for i in candidates if quoted.group(1) in graph.node[i].input]
    where = f"{op_type} #{candidates[0]} (unnamed)" if len(candidates) == 1 else f"an unnamed {op_type} node"
    return text[: match.start()] + where + text[match.end() :]


def _export_torch(source: SourceModel, opset: int) -> onnx.ModelProto:
    import torch

    args = tuple(torch.from_numpy(source.sample_inputs[n]) for n in source.input_names)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # The TorchScript exporter warns about its own deprecation; we use it on purpose
        # because it targets opset 17 and gives byte-identical output run after run.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            source.model,
            args,
            # torch's annotation names paths only; the TorchScript exporter writes to a file object too
            buffer,  # type: ignore[arg-type]
            input_names=source.input_names,
            output_names=source.output_names,
            dynamic_axes=source.dynamic_axes,
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,
        )
    return onnx.load_model_from_string(buffer.getvalue())


def _export_sklearn(source: SourceModel, opset: int) -> onnx.ModelProto:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import guess_data_type

    initial_types = []
    for name in source.input_names:
        sample = source.sample_inputs[name]
        tensor_type = guess_data_type(sample)[0][1].__class__
        initial_types.append((name, tensor_type([None, *sample.shape[1:]])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # zipmap off: probabilities as a plain tensor, which every runtime can read.
        return to_onnx(
            source.model,
            initial_types=initial_types,
            target_opset={"": opset, "ai.onnx.ml": ML_OPSET},
            options={"zipmap": False},
            final_types=None,
        )


def _standard_ml_ops(model: onnx.ModelProto) -> None:
    """Rewrite ai.onnx.ml operators that have exact standard equivalents, in place.

    onnxruntime-web's WebGPU build has no ai.onnx.ml kernels, so a scikit-learn
    pipeline would never leave WebAssembly: Scaler becomes Sub + Mul, and
    ArrayFeatureExtractor over a 1-D constant becomes Gather. The fp32
    validation against scikit-learn then proves the rewrite.
    """
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in [*inferred.graph.value_info, *inferred.graph.input]}
    constants = {i.name: i for i in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (
            node.domain == "ai.onnx.ml"
            and node.op_type == "Scaler"
            and types.get(node.input[0]) == onnx.TensorProto.FLOAT
        ):
            # Not "<value>_scale": the quantizers name their own tensors that way.
            offset, scale, shifted = (f"{node.output[0]}__scaler_{part}" for part in ("offset", "factor", "shifted"))
            model.graph.initializer.extend(
                [
                    numpy_helper.from_array(np.asarray(attrs.get("offset", [0.0]), np.float32), offset),
                    numpy_helper.from_array(np.asarray(attrs.get("scale", [1.0]), np.float32), scale),
                ]
            )
            nodes.append(helper.make_node("Sub", [node.input[0], offset], [shifted], name=f"{node.name}_Sub"))
            nodes.append(helper.make_node("Mul", [shifted, scale], [node.output[0]], name=f"{node.name}_Mul"))
        elif (
            node.domain == "ai.onnx.ml"
            and node.op_type == "ArrayFeatureExtractor"
            and node.input[0] in constants
            and len(constants[node.input[0]].dims) == 1
        ):
            nodes.append(
                helper.make_node("Gather", list(node.input), list(node.output), name=f"{node.name}_Gather", axis=0)
            )
        else:
            nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    if not any(n.domain == "ai.onnx.ml" for n in model.graph.node):
        kept = [o for o in model.opset_import if o.domain != "ai.onnx.ml"]
        del model.opset_import[:]
        model.opset_import.extend(kept)


def _dedupe_opsets(model: onnx.ModelProto) -> None:
    """One opset_import per domain (skl2onnx can list the default domain twice,
    which onnxruntime's quantizer refuses); the highest version wins."""
    versions: dict[str, int] = {}
    for opset in model.opset_import:
        domain = "" if opset.domain == "ai.onnx" else opset.domain
        versions[domain] = max(versions.get(domain, 0), opset.version)
    del model.opset_import[:]
    for domain, version in versions.items():
        model.opset_import.add(domain=domain, version=version)


def _name_dynamic_dims(model: onnx.ModelProto, dynamic_axes: dict[str, dict[int, str]]) -> None:
    """Give dynamic dims the recipe's names (batch, sequence) on graph inputs and outputs."""
    for value in [*model.graph.input, *model.graph.output]:
        for axis, axis_name in dynamic_axes.get(value.name, {}).items():
            dims = value.type.tensor_type.shape.dim
            if axis < len(dims):
                dims[axis].Clear()
                dims[axis].dim_param = axis_name


def serialize(model: onnx.ModelProto) -> bytes:
    data = model.SerializeToString(deterministic=True)
    if not data:
        raise ModelFileError("serialized model is empty")
    return data
