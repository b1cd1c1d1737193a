"""Tree ensembles compiled into ordinary tensor operators, so that runtimes without ai.onnx.ml kernels run them.

onnxruntime-web's WebGPU bundle has no ai.onnx.ml kernel (web/lib/choice/kernels.js), so a model with a
TreeEnsembleClassifier or TreeEnsembleRegressor runs only on WebAssembly there. rewrite() replaces each such
node, from its attributes alone, by the GEMM form of hummingbird-ml (Nakandala et al., OSDI 2020), per tree:

1. every internal node's test: Gather its feature, compare with its threshold by its mode
   (BRANCH_LEQ/LT/GTE/GT/EQ/NEQ); a NaN feature goes where nodes_missing_value_tracks_true sends it;
2. the leaf reached: the tests as 0/1 times a [I, L] matrix (+1 where the leaf lies under the node's true
   branch, -1 under its false branch) equals, for exactly one leaf, that leaf's count of true branches;
3. its values: the one-hot leaves times a [L, K] matrix of leaf weights.
Trees are padded to the same I and L, so steps 2 and 3 are one batched MatMul each over all trees.
Then base_values, the aggregate (SUM, AVERAGE), post_transform and, for a classifier, the label, as
onnxruntime's kernels compute them (onnxruntime/core/providers/cpu/ml/tree_ensemble_aggregator.h and
ml_common.h's write_scores, read for the binary single-score convention).

Exactness: onnxruntime compares a float32 feature with each threshold in float32 (an int64 or int32 feature
as float too; for a float32 input it loads `*_as_tensor` attributes only as float32); so does this form, so
every test, hence every leaf and every label, is the same. Leaf values are summed by MatMul in another
order than onnxruntime's loop: scores and probabilities agree to float32 rounding (about 1e-7 relative),
not bit for bit. What is not implemented is refused with its reason (TreeRewriteError), never guessed.

The node's attributes are read into padded tables in tree_attributes.py and the operators built in
tree_operators.py; this module walks the graph and replaces each node.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper, version_converter

from onnxport.convert.forms.tree_attributes import TreeRewriteError
from onnxport.convert.forms.tree_operators import EnsembleRewriter
from onnxport.convert.graph import copy_model

ML = "ai.onnx.ml"
TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")
# The operators below are written at this default-domain opset (LessOrEqual 12, Softmax's axis 13); a
# model below it is converted first (onnx's version converter leaves ai.onnx.ml nodes as they are).
MIN_OPSET = 13


def has_trees(model: onnx.ModelProto) -> bool:
    """Whether the main graph has a tree ensemble node (the old or the opset-5 one)."""
    return any(n.domain == ML and (n.op_type in TREE_OPS or n.op_type == "TreeEnsemble") for n in model.graph.node)


def rewrite(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` with every TreeEnsembleClassifier/Regressor node replaced by standard operators."""
    if any(n.domain == ML and n.op_type == "TreeEnsemble" for n in model.graph.node):
        raise TreeRewriteError(
            "the ai.onnx.ml opset-5 TreeEnsemble operator is not rewritten (only "
            "TreeEnsembleClassifier and TreeEnsembleRegressor are); convert with ai.onnx.ml opset 3"
        )
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:  # only ai.onnx.ml operators (XGBoost's converter): nothing of the default domain to convert
        out = copy_model(model)
        out.opset_import.append(helper.make_opsetid("", MIN_OPSET))
        opset = MIN_OPSET
    else:
        out = version_converter.convert_version(model, MIN_OPSET) if opset < MIN_OPSET else copy_model(model)
    types = _elem_types(out)
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []
    for index, node in enumerate(out.graph.node):
        if node.domain == ML and node.op_type in TREE_OPS:
            made_nodes, made_inits = EnsembleRewriter(
                node, f"trees{index}_", types.get(node.input[0]), max(opset, MIN_OPSET)
            ).build()
            nodes += made_nodes
            inits += made_inits
        else:
            nodes.append(node)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(inits)
    if not any(n.domain == ML for n in nodes):  # no ai.onnx.ml operator left (a ZipMap would keep it)
        kept = [o for o in out.opset_import if o.domain != ML]
        del out.opset_import[:]
        out.opset_import.extend(kept)
    return out


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type of each named value whose type is known without running anything."""
    graph = model.graph
    types = {
        v.name: v.type.tensor_type.elem_type
        for v in [*graph.input, *graph.value_info, *graph.output]
        if v.type.HasField("tensor_type")
    }
    types.update({t.name: t.data_type for t in graph.initializer})
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        types.update(
            {v.name: v.type.tensor_type.elem_type for v in inferred.value_info if v.type.HasField("tensor_type")}
        )
    except Exception:  # inference is a help, not a need: an unknown type is refused below with its name
        pass
    return types


__all__ = ["TreeRewriteError", "has_trees", "rewrite"]
