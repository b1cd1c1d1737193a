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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter

from onnxport.convert.graph import copy_model

ML = "ai.onnx.ml"
TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")
# The operators below are written at this default-domain opset (LessOrEqual 12, Softmax's axis 13); a
# model below it is converted first (onnx's version converter leaves ai.onnx.ml nodes as they are).
MIN_OPSET = 13
# The path matrix is dense, [trees, internal nodes, leaves] of float32, every tree padded to the largest: past
# this many elements (64 MB) the form is refused rather than made many times the model's size (deep forests).
MAX_PATH_ELEMENTS = 2**24
_TESTS = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
_POST = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO")


class TreeRewriteError(ValueError):
    """A tree ensemble this module does not rewrite, and why."""


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
            made_nodes, made_inits = _Rewriter(
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


@dataclass
class _Tree:
    internal: list[int]  # indexes (into the node's flat attribute lists) of the tests, in order
    leaves: list[int]
    paths: dict[int, list[tuple[int, int]]]  # leaf -> [(position in `internal`, +1 true branch / -1 false)]


class _Rewriter:
    """One tree ensemble node: its attributes read and checked, then its replacement built."""

    def __init__(self, node: onnx.NodeProto, prefix: str, input_type: int | None, opset: int):
        self.node = node
        self.opset = opset
        self.p = prefix
        self.a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        self.input_type = input_type
        self.classifier = node.op_type == "TreeEnsembleClassifier"
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []

    # -- reading ----------------------------------------------------------------------------------------

    def _refuse(self, why: str) -> TreeRewriteError:
        return TreeRewriteError(f"{self.node.op_type} {self.node.name!r}: {why}")

    def _values(self, name: str) -> np.ndarray | None:
        """A float attribute, or its double `_as_tensor` twin, as float64 (None when neither is set)."""
        if name in self.a:
            return np.asarray(self.a[name], dtype=np.float64)
        tensor = self.a.get(f"{name}_as_tensor")
        return None if tensor is None else numpy_helper.to_array(tensor).astype(np.float64).ravel()

    def _text(self, name: str, default: str) -> str:
        value = self.a.get(name, default)
        return value.decode() if isinstance(value, bytes) else str(value)

    def build(self) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
        a = self.a
        tree_ids = np.asarray(a["nodes_treeids"], dtype=np.int64)
        node_ids = np.asarray(a["nodes_nodeids"], dtype=np.int64)
        modes = [m.decode() if isinstance(m, bytes) else m for m in a["nodes_modes"]]
        thresholds = self._values("nodes_values")
        if thresholds is None:
            thresholds = np.zeros(len(modes))
        features = np.asarray(a.get("nodes_featureids", [0] * len(modes)), dtype=np.int64)
        true_ids = np.asarray(a.get("nodes_truenodeids", [0] * len(modes)), dtype=np.int64)
        false_ids = np.asarray(a.get("nodes_falsenodeids", [0] * len(modes)), dtype=np.int64)
        missing_true = np.asarray(a.get("nodes_missing_value_tracks_true", [0] * len(modes)), dtype=bool)
        unknown = sorted({m for m in modes if m != "LEAF" and m not in _TESTS})
        if unknown:
            raise self._refuse(f"node mode {unknown[0]} is not one of {', '.join(_TESTS)}, LEAF")
        kind = "class" if self.classifier else "target"
        w_tree = np.asarray(a.get(f"{kind}_treeids", []), dtype=np.int64)
        w_node = np.asarray(a.get(f"{kind}_nodeids", []), dtype=np.int64)
        w_id = np.asarray(a.get(f"{kind}_ids", []), dtype=np.int64)
        weights = self._values(f"{kind}_weights")
        weights = np.zeros(len(w_id)) if weights is None else weights

        trees = sorted(set(tree_ids.tolist()))
        position = {(t, n): i for i, (t, n) in enumerate(zip(tree_ids.tolist(), node_ids.tolist()))}
        parsed = [self._tree(t, tree_ids, node_ids, modes, true_ids, false_ids, position) for t in trees]
        count = len(parsed)
        width = max(1, max(len(t.internal) for t in parsed))  # I: a tree that is one leaf gets an idle test
        depth_l = max(len(t.leaves) for t in parsed)  # L
        if count * width * depth_l > MAX_PATH_ELEMENTS:
            raise self._refuse(
                f"{count} trees of up to {width} tests and {depth_l} leaves need a path matrix of "
                f"{count * width * depth_l * 4 / 2**20:.0f} MB (float32, padded to the largest tree); "
                f"the limit is {MAX_PATH_ELEMENTS * 4 / 2**20:.0f} MB"
            )
        outputs = self._outputs(w_id)

        feature = np.zeros((count, width), dtype=np.int64)
        threshold = np.zeros((count, width), dtype=np.float32)
        # padding's idle tests take the commonest kind, so that they add no comparison operator of their own
        common = max(set(m for m in modes if m != "LEAF") or {"BRANCH_LEQ"}, key=modes.count)
        test = np.full((count, width), common, dtype=object)
        turns = np.zeros((count, width, depth_l), dtype=np.float32)
        wanted = np.full((count, 1, depth_l), -1.0, dtype=np.float32)  # a padded leaf is never reached
        leaf_values = np.zeros((count, depth_l, outputs), dtype=np.float64)
        leaf_at = {}
        for t, tree in enumerate(parsed):
            for i, n in enumerate(tree.internal):
                feature[t, i] = features[n]
                threshold[t, i], test[t, i] = _float32_test(modes[n], thresholds[n], bool(missing_true[n]))
            for j, leaf in enumerate(tree.leaves):
                leaf_at[(trees[t], int(node_ids[leaf]))] = (t, j)
                wanted[t, 0, j] = sum(1 for _, side in tree.paths[leaf] if side > 0)
                for i, side in tree.paths[leaf]:
                    turns[t, i, j] = side
        for tr, nd, k, w in zip(w_tree.tolist(), w_node.tolist(), w_id.tolist(), weights.tolist()):
            if (tr, nd) not in leaf_at:
                raise self._refuse(f"a weight names tree {tr} node {nd}, which is no leaf of the ensemble")
            t, j = leaf_at[(tr, nd)]
            leaf_values[t, j, k] += w  # several weights of one class at one leaf add up, as onnxruntime's do
        scores = self._scores(feature, threshold, test, turns, wanted, leaf_values.astype(np.float32))
        if self.classifier:
            self._classify(scores, w_id, weights, count)
        else:
            self._regress(scores, count, outputs)
        return self.nodes, self.inits

    def _tree(self, tree, tree_ids, node_ids, modes, true_ids, false_ids, position) -> _Tree:
        members = [i for i in range(len(modes)) if tree_ids[i] == tree]
        internal = [i for i in members if modes[i] != "LEAF"]
        children = {int(x) for i in internal for x in (true_ids[i], false_ids[i])}
        roots = [i for i in members if int(node_ids[i]) not in children]
        if len(roots) != 1:
            raise self._refuse(f"tree {tree} has {len(roots)} roots (nodes no other node points to), not one")
        place = {n: k for k, n in enumerate(internal)}
        leaves: list[int] = []
        paths: dict[int, list[tuple[int, int]]] = {}
        stack: list[tuple[int, list[tuple[int, int]]]] = [(roots[0], [])]
        while stack:
            here, path = stack.pop()
            if len(path) > len(members):
                raise self._refuse(f"tree {tree} has a cycle")
            if modes[here] == "LEAF":
                leaves.append(here)
                paths[here] = path
                continue
            for child, side in ((true_ids[here], 1), (false_ids[here], -1)):
                if (tree, int(child)) not in position:
                    raise self._refuse(
                        f"tree {tree} node {int(node_ids[here])} points to node {int(child)}, which is not in it"
                    )
                stack.append((position[(tree, int(child))], [*path, (place[here], side)]))
        return _Tree(internal, leaves, paths)

    def _outputs(self, ids: np.ndarray) -> int:
        if self.classifier:
            labels = self.a.get("classlabels_int64s") or self.a.get("classlabels_strings") or []
            if not labels:
                raise self._refuse("it has no classlabels_int64s or classlabels_strings")
            return len(labels)
        return int(self.a.get("n_targets", (int(ids.max()) + 1) if len(ids) else 1))

    # -- building ---------------------------------------------------------------------------------------

    def _name(self, what: str) -> str:
        return f"{self.p}{what}"

    def _const(self, what: str, value: np.ndarray | np.generic) -> str:
        name = self._name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def _op(self, op: str, inputs: list[str], what: str, **attrs) -> str:
        out = self._name(what)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def _features(self) -> str:
        x = self.node.input[0]
        kind = self.input_type
        if kind == TensorProto.FLOAT:
            return x
        if kind in (TensorProto.INT64, TensorProto.INT32):
            # onnxruntime compares an integer feature with a float threshold as float: the same after Cast
            return self._op("Cast", [x], "x_float", to=TensorProto.FLOAT)
        if kind == TensorProto.DOUBLE:
            raise self._refuse(
                "its input is float64, which onnxruntime compares in float64; float32 tensors "
                "(all WebGPU has) cannot give the same splits (cast the input to float32 before the trees)"
            )
        raise self._refuse(
            f"its input's element type is {'unknown' if kind is None else TensorProto.DataType.Name(kind)}, "
            "not float32, int64 or int32"
        )

    def _scores(self, feature, threshold, test, turns, wanted, leaf_values) -> str:
        count, width = feature.shape
        x = self._features()
        picked = self._op("Gather", [x, self._const("feature", feature.ravel())], "picked", axis=1)  # [N, T*I]
        flat_t = threshold.ravel()
        flat_test = test.ravel()
        kinds = sorted(set(flat_test.tolist()))
        passed = None
        for k, kind in enumerate(kinds):
            result = self._compare(picked, self._const(f"threshold{k}", flat_t), kind, k)
            if (
                len(kinds) > 1
            ):  # each node takes its own kind's answer (And/Or: Where has no bool kernel before opset 16)
                result = self._op("And", [result, self._const(f"is_test{k}", flat_test == kind)], f"own{k}")
            passed = result if passed is None else self._op("Or", [passed, result], f"passed{k}")
        assert passed is not None
        tests = self._op("Cast", [passed], "tests", to=TensorProto.FLOAT)
        tests = self._op(
            "Reshape", [tests, self._const("tree_shape", np.array([-1, count, width], np.int64))], "by_tree"
        )
        tests = self._op("Transpose", [tests], "tree_first", perm=[1, 0, 2])  # [T, N, I]
        reached = self._op("MatMul", [tests, self._const("turns", turns)], "turns_taken")  # [T, N, L]
        leaf = self._op("Equal", [reached, self._const("wanted", wanted)], "leaf")
        leaf = self._op("Cast", [leaf], "leaf_float", to=TensorProto.FLOAT)
        leaf = self._op("Transpose", [leaf], "row_first", perm=[1, 0, 2])  # [N, T, L]
        leaves = leaf_values.shape[1]
        leaf = self._op(
            "Reshape", [leaf, self._const("leaf_shape", np.array([-1, count * leaves], np.int64))], "leaves"
        )
        values = leaf_values.reshape(count * leaves, -1)
        return self._op("MatMul", [leaf, self._const("leaf_values", values)], "sum")  # [N, K]

    def _compare(self, picked: str, threshold: str, kind: str, k: int) -> str:
        """kind: a mode, or "NOT_" + the opposite mode for a test that NaN passes (NaN fails every
        comparison but NEQ, so `not (x > t)` is `x <= t or x is NaN`)."""
        ops = {
            "BRANCH_LEQ": "LessOrEqual",
            "BRANCH_LT": "Less",
            "BRANCH_GTE": "GreaterOrEqual",
            "BRANCH_GT": "Greater",
            "BRANCH_EQ": "Equal",
        }
        if kind == "BRANCH_NEQ":
            return self._op("Not", [self._op("Equal", [picked, threshold], f"eq{k}")], f"test{k}")
        if kind == "EQ_OR_NAN":
            same = self._op("Equal", [picked, threshold], f"eq{k}")
            nan = self._op("Not", [self._op("Equal", [picked, picked], f"self_eq{k}")], f"nan{k}")
            return self._op("Or", [same, nan], f"test{k}")
        if kind.startswith("NOT_"):
            return self._op("Not", [self._op(ops[kind[4:]], [picked, threshold], f"cmp{k}")], f"test{k}")
        return self._op(ops[kind], [picked, threshold], f"test{k}")

    def _post(self, scores: str, post: str) -> str:
        if post == "NONE":
            return scores
        if post == "LOGISTIC":
            return self._op("Sigmoid", [scores], "logistic")
        if post == "SOFTMAX":
            return self._op("Softmax", [scores], "softmax", axis=-1)
        # SOFTMAX_ZERO, as onnxruntime's ComputeSoftmaxZero: a score within 1e-7 of zero becomes itself times
        # exp(-max) and is left out of the sum; the others are exp(score - max)
        if self.opset >= 18:  # ReduceMax's axes became an input at opset 18
            top = self._op("ReduceMax", [scores, self._const("max_axis", np.array([-1], np.int64))], "max", keepdims=1)
        else:
            top = self._op("ReduceMax", [scores], "max", axes=[-1], keepdims=1)
        shifted = self._op("Exp", [self._op("Sub", [scores, top], "shifted")], "exp")
        faint = self._op("Mul", [scores, self._op("Exp", [self._op("Neg", [top], "neg_max")], "exp_neg_max")], "faint")
        nonzero = self._op(
            "Greater", [self._op("Abs", [scores], "abs"), self._const("tiny", np.float32(1e-7))], "nonzero"
        )
        picked = self._op("Where", [nonzero, shifted, faint], "softmax_terms")
        counted = self._op("Where", [nonzero, shifted, self._const("zero", np.float32(0))], "summed_terms")
        total = self._op(
            "ReduceSum", [counted, self._const("last_axis", np.array([-1], np.int64))], "total", keepdims=1
        )
        return self._op("Div", [picked, total], "softmax_zero")

    def _post_transform(self) -> str:
        post = self._text("post_transform", "NONE")
        if post not in _POST:
            raise self._refuse(f"post_transform {post} is not implemented (implemented: {', '.join(_POST)})")
        return post

    def _regress(self, scores: str, count: int, targets: int) -> None:
        aggregate = self._text("aggregate_function", "SUM")
        if aggregate not in ("SUM", "AVERAGE"):
            raise self._refuse(f"aggregate_function {aggregate} is not implemented (SUM, AVERAGE are)")
        post = self._post_transform()
        if targets == 1 and post != "NONE":
            raise self._refuse(f"post_transform {post} on a single target is not implemented (NONE is)")
        if aggregate == "AVERAGE":
            scores = self._op("Div", [scores, self._const("tree_count", np.float32(count))], "average")
        base = self._values("base_values")
        if base is not None and len(base) and (len(base) == targets or (targets == 1 and len(base) == 1)):
            scores = self._op("Add", [scores, self._const("base", base.astype(np.float32))], "based")
        out = self._post(scores, post)
        self.nodes.append(helper.make_node("Identity", [out], [self.node.output[0]], name=self._name("out")))

    def _classify(self, scores: str, ids: np.ndarray, weights: np.ndarray, count: int) -> None:
        a = self.a
        post = self._post_transform()
        strings = not a.get("classlabels_int64s")
        labels = (
            np.array([s.decode() if isinstance(s, bytes) else s for s in a["classlabels_strings"]], dtype=object)
            if strings
            else np.asarray(a["classlabels_int64s"], dtype=np.int64)
        )
        classes = len(labels)
        base = self._values("base_values")
        base = np.zeros(0) if base is None else base
        scored = set(ids.tolist())
        label_out, proba_out = self.node.output[0], self.node.output[1] if len(self.node.output) > 1 else None
        if classes > 2:
            if len(base) not in (0, classes):
                raise self._refuse(f"{len(base)} base_values for {classes} classes")
            if len(base) == 0 and scored != set(range(classes)):
                raise self._refuse(
                    "a class without any leaf weight and no base_values: onnxruntime leaves it out "
                    "of the label's argmax, which is not implemented"
                )
            if len(base):
                scores = self._op("Add", [scores, self._const("base", base.astype(np.float32))], "based")
            index = self._op("ArgMax", [scores], "argmax", axis=1, keepdims=0)
            probabilities = self._post(scores, post)
        else:
            if scored != {0} or len(base) > 1:
                raise self._refuse(
                    "a two-class ensemble is implemented in its single-score form (every weight on "
                    f"class 0, at most one base value); this one has weights on {sorted(scored)} and "
                    f"{len(base)} base values"
                )
            one = self._op(
                "Slice",
                [
                    scores,
                    self._const("c0", np.array([0], np.int64)),
                    self._const("c1", np.array([1], np.int64)),
                    self._const("axis1", np.array([1], np.int64)),
                ],
                "score",
            )  # [N, 1]
            if len(base):
                one = self._op("Add", [one, self._const("base", base.astype(np.float32))], "based")
            # onnxruntime: weights all >= 0 are a probability of the positive class (label past 0.5,
            # scores [1 - s, s], no post_transform); mixed weights are a margin (label past 0, scores
            # [-s, s] or, with LOGISTIC, [sigmoid(-s), sigmoid(s)])
            positive = bool((weights >= 0).all())
            cut = self._const("cut", np.float32(0.5 if positive else 0.0))
            winner = self._op("Greater", [one, cut], "positive")
            index = self._op(
                "Cast",
                [self._op("Squeeze", [winner, self._const("axis1s", np.array([1], np.int64))], "positive_row")],
                "argmax",
                to=TensorProto.INT64,
            )
            if positive:
                pair = [self._op("Sub", [self._const("one", np.float32(1)), one], "negative_score"), one]
            elif post == "LOGISTIC":
                pair = [
                    self._op("Sigmoid", [self._op("Neg", [one], "minus")], "negative_score"),
                    self._op("Sigmoid", [one], "positive_score"),
                ]
            else:
                pair = [self._op("Neg", [one], "negative_score"), one]
            probabilities = self._op("Concat", pair, "pair", axis=1)
        if strings:
            table = helper.make_tensor(
                self._name("labels"), TensorProto.STRING, [classes], [s.encode() for s in labels.tolist()]
            )
            self.inits.append(table)
            label_table = table.name
        else:
            label_table = self._const("labels", labels)
        self.nodes.append(
            helper.make_node("Gather", [label_table, index], [label_out], name=self._name("label"), axis=0)
        )
        if proba_out:
            self.nodes.append(helper.make_node("Identity", [probabilities], [proba_out], name=self._name("out")))


def _float32_test(mode: str, threshold: float, missing_true: bool) -> tuple[np.float32, str]:
    """(float32 threshold, test kind) that answers, for every float32 feature, as onnxruntime's test of `mode`:
    for a node whose missing values go to its true branch, the opposite comparison negated (NaN fails every
    comparison but NEQ, so `not (x > t)` is `x <= t or x is NaN`)."""
    value = np.float32(threshold)
    if not missing_true or mode == "BRANCH_NEQ":
        return value, mode
    if mode == "BRANCH_EQ":
        return value, "EQ_OR_NAN"
    opposite = {
        "BRANCH_LEQ": "BRANCH_GT",
        "BRANCH_LT": "BRANCH_GTE",
        "BRANCH_GTE": "BRANCH_LT",
        "BRANCH_GT": "BRANCH_LEQ",
    }
    return value, "NOT_" + opposite[mode]
