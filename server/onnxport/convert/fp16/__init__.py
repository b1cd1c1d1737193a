"""The fp16 variant: fp16 weights and activations, fp32 inputs and outputs, some nodes kept in fp32.

onnxconverter_common.float16 (1.16) converts the tensors and names the operators to keep in fp32
(DEFAULT_OP_BLOCK_LIST); its graph rewriting, convert_float_to_float16, is not used: it gets the
types wrong in ways no pass after it can undo (the passes in make_fp16 say which). Here the types
are followed forward from the fp32 model's, through every subgraph, and a Cast is placed wherever
a value meets a reader that wants the other float type.
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from onnxport.convert.fp16.casts import _Caster, _convert_tensors, _has_fp16
from onnxport.convert.fp16.overflow import _overflow
from onnxport.convert.fp16.plan import _integer_nodes, _Plan, _scale_nodes
from onnxport.convert.fp16.rules import FP16_SAFE, PRECISION_OPS, QUANTIZED_OPS
from onnxport.convert.graph import all_nodes, copy_model, graphs, name_nodes, value_names
from onnxport.convert.resize_inputs import folded_resize_inputs
from onnxport.errors import VariantSkipped
from onnxport.recipe import Feeds
from onnxport.repository.variant_record import Settings

# Above this many nodes (every graph's), the fp16 variant is skipped; see make_fp16's reason.
FP16_MAX_NODES = 20_000


def make_fp16(
    model: onnx.ModelProto, feeds: Iterable[Feeds], keep_float: Iterable[str] = ()
) -> tuple[onnx.ModelProto, Settings]:
    """fp16 weights and activations, fp32 inputs and outputs.

    Kept in fp32: nodes reading or writing values past FP16_SAFE on the feeds, quantization
    islands and the scale arithmetic around them, integer arithmetic done in float, the operators
    upstream blocks and those in QUANTIZED_OPS and PRECISION_OPS, nodes whose dtypes cannot be
    followed (custom domains, sequences), the nodes named in keep_float (names of `model`'s nodes,
    in any graph; a kept If, Loop or Scan keeps everything inside it), and the MOVEMENT_OPS fed by
    kept nodes only. settings' blocked_nodes lists every node kept by name, blocked_ops the
    operators kept by type.
    """
    from onnxconverter_common import float16

    if (nodes := sum(1 for _ in all_nodes(model.graph))) > FP16_MAX_NODES:
        raise VariantSkipped(
            f"the graph has {nodes:,} nodes, more than {FP16_MAX_NODES:,}: loading an fp16 graph in onnxruntime "
            f"takes time growing with the square of its nodes (the Casts it puts around fp16 operators its CPU "
            f"kernels lack: 5 s at 10,000 nodes, 29 s at 20,000), and the build loads it several times"
        )
    feeds = list(feeds)
    work = copy_model(model)
    # Upstream names its Casts after nodes ("<node>_output_cast0"): unnamed nodes made duplicate
    # values (SSA broken). Every node gets a name here, the import's; Casts are named after values.
    name_nodes(work.graph)
    every_node = [n for g in graphs(work.graph) for n in g.node]
    wanted = set(keep_float)
    unknown = wanted - {n.name for n in every_node}
    if unknown:
        raise ValueError(f"keep_float names nodes the model does not have: {sorted(unknown)[:5]}")
    # Values past FP16_SAFE on the feeds keep the nodes touching them in fp32; the probe sees into
    # If/Loop/Scan bodies (it used to look at the main graph only).
    hot_nodes, peaks = _overflow(work, feeds)
    hot_values = {name for name, top in peaks.items() if top > FP16_SAFE}
    # Upstream converts whatever feeds a quantized operator (DynamicQuantizeLinear got fp16 and
    # onnxruntime refused the model): quantization islands, and the scales around them, stay fp32.
    plan = _Plan(work, set(float16.DEFAULT_OP_BLOCK_LIST) | QUANTIZED_OPS | PRECISION_OPS, hot_values)
    # What a Resize's inputs are computed from stays fp32, as onnxruntime folds it at load (resize_inputs.py).
    resize_nodes, _ = folded_resize_inputs(work)
    plan.keep(hot_nodes | wanted | _integer_nodes(work, plan, peaks) | _scale_nodes(work, plan) | resize_nodes)
    plan.follow()
    # Upstream clips weights to +/-1e4 (fp16 holds 65504) and converts Constants that only blocked
    # nodes read: a tensor is converted here when every reader wants fp16, and only clipped past 65504.
    _convert_tensors(work, plan, float16)
    # Upstream casts by its value_info, which claims fp16 for values that stay fp32 (a Cast to
    # float, a blocked Scaler), and in subgraphs turns inputs and outputs to fp16 without casting
    # the outer values they read, so an If's outputs disagreed with its branches' (onnxruntime
    # refused vad-web-silero-legacy): types are followed forward here, bodies with their outer scope.
    _Caster(plan, value_names(work.graph)).walk(work.graph, None, top=True)
    # Counting fp16 in every graph: silero-vad's float work is all inside an If.
    if not _has_fp16(work):
        raise VariantSkipped("no float operator that fp16 conversion applies to")
    settings: Settings = {
        "tool": "onnxconverter_common.float16.convert_tensor_float_to_float16 (types and Casts: onnxport)",
        "keep_io_types": True,
        "blocked_nodes": sorted(plan.kept),
        "blocked_ops": sorted({n.op_type for n in every_node if n.op_type in plan.op_block}),
        "overflow_threshold": FP16_SAFE,
    }
    return work, settings
