"""A tree ensemble node's attributes read, checked and laid out as the padded tables its tensor form needs.

Per tree: the internal nodes' features, float32 thresholds and test kinds; the turns (+1 true branch, -1 false)
from each test to each leaf and the count of true turns that reaches it; each leaf's values. Every tree is padded
to the largest (tree_operators.py makes the operators over these tables). What is not implemented is refused
with its reason (TreeRewriteError), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

# The path matrix is dense, [trees, internal nodes, leaves] of float32, every tree padded to the largest: past
# this many elements (64 MB) the form is refused rather than made many times the model's size (deep forests).
MAX_PATH_ELEMENTS = 2**24
TESTS = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")


class TreeRewriteError(ValueError):
    """A tree ensemble this module does not rewrite, and why."""


@dataclass
class Tree:
    internal: list[int]  # indexes (into the node's flat attribute lists) of the tests, in order
    leaves: list[int]
    paths: dict[int, list[tuple[int, int]]]  # leaf -> [(position in `internal`, +1 true branch / -1 false)]


@dataclass(frozen=True)
class Tables:
    """One ensemble, padded: T trees, I tests and L leaves each, K outputs."""

    feature: np.ndarray  # [T, I] the feature each test reads
    threshold: np.ndarray  # [T, I] float32
    test: np.ndarray  # [T, I] test kinds (see _float32_test)
    turns: np.ndarray  # [T, I, L] +1 / -1 where a leaf lies under a test's true / false branch
    wanted: np.ndarray  # [T, 1, L] the true turns that reach each leaf (-1 for padding: never reached)
    leaf_values: np.ndarray  # [T, L, K] float32
    ids: np.ndarray  # the class or target of each weight attribute
    weights: np.ndarray
    count: int  # T
    outputs: int  # K


class EnsembleReader:
    """One TreeEnsembleClassifier or TreeEnsembleRegressor node's attributes."""

    def __init__(self, node: onnx.NodeProto):
        self.node = node
        self.a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        self.classifier = node.op_type == "TreeEnsembleClassifier"

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

    def read(self) -> Tables:
        """The ensemble as padded tables: per tree, its tests, the turns to each leaf and the leaves' values."""
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
        unknown = sorted({m for m in modes if m != "LEAF" and m not in TESTS})
        if unknown:
            raise self._refuse(f"node mode {unknown[0]} is not one of {', '.join(TESTS)}, LEAF")
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
        return Tables(
            feature, threshold, test, turns, wanted, leaf_values.astype(np.float32), w_id, weights, count, outputs
        )

    def _tree(self, tree, tree_ids, node_ids, modes, true_ids, false_ids, position) -> Tree:
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
        return Tree(internal, leaves, paths)

    def _outputs(self, ids: np.ndarray) -> int:
        if self.classifier:
            labels = self.a.get("classlabels_int64s") or self.a.get("classlabels_strings") or []
            if not labels:
                raise self._refuse("it has no classlabels_int64s or classlabels_strings")
            return len(labels)
        return int(self.a.get("n_targets", (int(ids.max()) + 1) if len(ids) else 1))


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
