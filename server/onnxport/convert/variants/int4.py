"""4-bit weights: each MatMul's constant weight in blocks of 4-bit integers (onnxruntime's MatMulNBits),
embedding tables too (GatherBlockQuantized), every other large weight int8 (convert/int8/weights.py).

The blocks are made by onnxruntime's MatMulNBitsQuantizer, round-to-nearest, symmetric (no zero points) in
blocks of 32, MatMulNBits at accuracy_level 0 (fp32 arithmetic); embedding tables in 4-bit blocks of 32 with
zero points. A node the fallback search names (keep_float) is stored in 8-bit blocks of 128 rather than in
float, and the search may name up to half of the MatMuls (its row's rescue_share, onnxport/variants.py).

Why (scripts/bench/int4_forms.py on minilm, 2-core Xeon; docs/notes/benchmarks.md "4-bit forms"), against the form
before (blocks of 16 with zero points, level 4): onnxruntime-web's WebAssembly runs 4-bit MatMuls slower than fp32
(one text: 47.6 ms against 18.7), zero points most: without them a one-text run takes 0.73x the time (34.8 ms,
one thread; 0.71x on two), 8 texts 0.91x; blocks of 16 without zero points 0.77x; blocks of 32 or 64 with zero
points, or int8 tables, 0.81x to 1.05x. WebAssembly has no int8 path: the level changes neither its time nor
its output. Level 0 computes what the browsers compute, so the build judges that; natively it is slower (one
text 1.6x the time, 8 texts 0.8x to 0.9x). WebGPU (SwiftShader): 3.2 s against 8.5 s.
Accuracy: the 4-bit MatMuls alone give min cosine 0.957 on the golden inputs (before: 0.979; int4 is served
within 0.982); the search keeps 11 of 36 MatMuls in 8 bits for 0.983 (14.8 MB; before: 5 kept, 15.6 MB). On 40
other texts 0.981 (before 0.983; level 4 with blocks of 32: 0.9795, under the 0.98 budget).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import onnx
from onnx import helper

from onnxport.convert.arithmetic import quantized_count
from onnxport.convert.graph import copy_model, name_nodes
from onnxport.convert.int8 import prep
from onnxport.convert.int8.select import gemm_to_matmul
from onnxport.convert.int8.weights import store_weights
from onnxport.convert.prepared import Prepared
from onnxport.errors import VariantSkipped
from onnxport.repository.variant_record import Settings

BLOCK_TABLE = 32
BLOCK_8BIT = 128
# An embedding table smaller than this stays as weights.py leaves it (int8 per row).
MIN_TABLE_ELEMENTS = 65_536
# GatherBlockQuantized takes its 4-bit data as an opset-21 int4 type.
INT4_OPSET = 21


@dataclass(frozen=True)
class Form:
    """How the 4-bit file is made: what scripts/bench/int4_forms.py varies and measures."""

    block: int = 32  # MatMul weights: values per block, each block with its own scale
    symmetric: bool = True  # no zero point per block (MatMulNBits' implicit 8), in 4 and 8 bits
    accuracy_level: int = 0  # MatMulNBits' arithmetic: 0 fp32, 4 int8 activations (where the CPU has it)
    table_bits: int = 4  # embedding tables: 4 (GatherBlockQuantized) or 8 (int8 per row, as weights.py)

    def describe(self) -> str:
        """The manifest's `weights` setting."""
        points = "symmetric" if self.symmetric else "with zero points"
        tables = f"tables 4-bit blocks of {BLOCK_TABLE}" if self.table_bits == 4 else "tables int8 per row"
        return f"MatMul 4-bit blocks of {self.block}, {points}, accuracy level {self.accuracy_level}; {tables}"


FORM = Form()


def make_int4(
    model: onnx.ModelProto, keep_float: tuple[str, ...] = (), form: Form = FORM
) -> tuple[onnx.ModelProto, Settings]:
    """A copy of `model` with its MatMuls' constant weights in 4-bit blocks (the nodes in keep_float in
    8-bit blocks), large embedding tables in 4-bit blocks (form.table_bits 4), every other large float
    weight in int8.
    Raises VariantSkipped when there is no MatMul or Gather with a constant 2-D weight to store."""
    if already := quantized_count(model):
        raise VariantSkipped(f"already quantized: {already} quantized operators")
    model = copy_model(model)
    prep.constants_to_initializers(model)
    model, _ = prep.upgrade_opset(model)  # the int8 weights' DequantizeLinear (opset 10, `axis` from 13)
    name_nodes(model.graph)  # the quantizer picks nodes by name, and the fallback search names them
    model = gemm_to_matmul(model)  # a Linear layer exported as Gemm is a MatMul to MatMulNBits
    matmuls = _constant_weight_nodes(model, "MatMul", 1, 0)
    tables = _constant_weight_nodes(model, "Gather", 0, MIN_TABLE_ELEMENTS) if form.table_bits == 4 else []
    if not matmuls and not tables:
        raise VariantSkipped("nothing to store in 4 bits: no MatMul or Gather reads a constant 2-D float weight")
    kept = set(keep_float)
    # A Gemm rewritten as a MatMul is named after it (select.gemm_to_matmul): the search names the Gemm.
    eight = [n for n in matmuls if n in kept or n.removesuffix("_MatMul") in kept]
    four = [n for n in matmuls if n not in eight]
    if four:
        model = _quantize(model, four, _rtn(4, form.block, form.symmetric, ("MatMul",)))
    if eight:
        model = _quantize(model, eight, _rtn(8, BLOCK_8BIT, form.symmetric, ("MatMul",)))
    gathered = [n for n in tables if n not in kept]
    if gathered:
        model = _with_opset(model, INT4_OPSET)
        model = _quantize(model, gathered, _rtn(4, BLOCK_TABLE, False, ("Gather",)))
    for node in prep.all_nodes(model):
        # Level 0 is the attribute's default, left out as onnxruntime's quantizer leaves it out.
        if node.op_type == "MatMulNBits" and form.accuracy_level:
            _set_int(node, "accuracy_level", form.accuracy_level)
    # What MatMulNBits cannot take (Conv, Gemm, a GRU, small tables) is still stored in int8.
    rest = store_weights(model, kept)
    settings: Settings = {
        "weights": form.describe(),
        "weights_4bit": len(four) + len(gathered),
        "weights_8bit": len(eight),
        "weights_stored": rest,
    }
    if eight:
        settings["weights"] += f"; {len(eight)} kept nodes in 8-bit blocks of {BLOCK_8BIT}"
    if keep_float:
        settings["kept_float"] = sorted(keep_float)
    return model, settings


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    return make_int4(prepared.fp32, keep_float)


def candidates(model: onnx.ModelProto) -> set[str]:
    """The nodes the fallback search may name: the MatMuls (or Gemms, which become MatMuls) this variant
    stores in 4 bits. Embedding tables stay in 4 bits whatever the search finds: in 8 they alone are
    1.3x the rest of minilm's 4-bit file."""
    return set(_constant_weight_nodes(model, "MatMul", 1, 0)) | set(_constant_weight_nodes(model, "Gemm", 1, 0))


def _constant_weight_nodes(model: onnx.ModelProto, op_type: str, position: int, min_elements: int) -> list[str]:
    """Names of the main graph's `op_type` nodes whose input `position` is a 2-D float initializer of at
    least min_elements (MatMulNBitsQuantizer quantizes those; for a Gather, the table along axis 0)."""
    weights = {i.name: i for i in model.graph.initializer}
    found = []
    for node in model.graph.node:
        if node.op_type != op_type or node.domain not in ("", "ai.onnx") or len(node.input) <= position:
            continue
        weight = weights.get(node.input[position])
        if weight is None or weight.data_type != onnx.TensorProto.FLOAT or len(weight.dims) != 2:
            continue
        elements = weight.dims[0] * weight.dims[1]
        if elements < max(min_elements, 1) or (op_type == "Gather" and _axis(node) != 0):
            continue
        found.append(node.name)
    return found


def _quantize(model: onnx.ModelProto, nodes: Iterable[str], config) -> onnx.ModelProto:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    # nodes_to_include adds to op_types_to_quantize rather than narrowing it: exclude every other node.
    chosen = set(nodes)
    others = [n.name for n in prep.all_nodes(model) if n.name not in chosen]
    quantizer = MatMulNBitsQuantizer(model, nodes_to_exclude=others, algo_config=config)
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.ERROR)
    quantizer.process()
    return quantizer.model.model


def _rtn(bits: int, block: int, symmetric: bool, op_types: tuple[str, ...]):
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig

    # accuracy_level is set on the nodes afterwards (make_int4): the 8-bit blocks take the form's too.
    return DefaultWeightOnlyQuantConfig(
        block_size=block,
        bits=bits,
        is_symmetric=symmetric,
        accuracy_level=None,
        op_types_to_quantize=op_types,
        quant_axes=(("MatMul", 0), ("Gather", 1)),
    )


def _with_opset(model: onnx.ModelProto, version: int) -> onnx.ModelProto:
    upgraded, failed = prep.upgrade_opset(model, version)
    if failed:
        raise VariantSkipped(f"4-bit embedding tables need opset {version}: {failed}")
    return upgraded


def _axis(node: onnx.NodeProto) -> int:
    return next((a.i for a in node.attribute if a.name == "axis"), 0)


def _set_int(node: onnx.NodeProto, name: str, value: int) -> None:
    for attribute in node.attribute:
        if attribute.name == name:
            attribute.i = value
            return
    node.attribute.append(helper.make_attribute(name, value))
