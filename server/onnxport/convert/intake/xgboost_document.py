"""XGBoost's model files (`save_model` .json, or UBJSON .ubj), read with a nesting limit and checked before
XGBoost reads them (tree_limits.py says why).

Python's json recurses with the nesting (a RecursionError deep down; XGBoost's own reader crashes): the JSON's
depth is measured first by a scan of its brackets outside strings, and only a document within MAX_NESTING is
parsed. UBJSON is decoded here without recursion, its typed numeric arrays straight into numpy.
The checks: num_class, num_feature and num_target, the number of trees, each tree's node count, every per-node
array of that length, every child and split feature in range, each node the child of one parent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from onnxport.convert.intake.tree_limits import MAX_NESTING, Checker, TreeLimits, integers

NODE_ARRAYS = (
    "left_children",
    "right_children",
    "parents",
    "split_indices",
    "split_conditions",
    "default_left",
    "loss_changes",
    "sum_hessian",
    "split_type",
)
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (skipped whole) and brackets


def check(path: Path, limits: TreeLimits) -> None:
    checker = Checker(path, limits)
    checker.file_size()
    document = read(path, checker)
    learner = _object(checker, document, "learner")
    params = _object(checker, learner, "learner_model_param", "learner")
    checker.count("learner.learner_model_param.num_class", params.get("num_class", 0), "classes")
    checker.count("learner.learner_model_param.num_target", params.get("num_target", 1), "classes")
    features = checker.count("learner.learner_model_param.num_feature", params.get("num_feature", 0), "features")
    objective = learner.get("objective")
    if isinstance(objective, dict):
        for key, value in objective.items():
            if isinstance(value, dict) and "num_class" in value:
                checker.count(f"learner.objective.{key}.num_class", value["num_class"], "classes")
    booster = _object(checker, learner, "gradient_booster", "learner")
    model = booster.get("gbtree", booster).get("model") if isinstance(booster.get("gbtree", booster), dict) else None
    if not isinstance(model, dict) or "trees" not in model:
        return  # gblinear: its weights are one array, whose length XGBoost checks against num_feature
    trees = model["trees"]
    if not isinstance(trees, list):
        raise checker.refuse("learner.gradient_booster's trees is not a list")
    if len(trees) > limits.trees:
        raise checker.over("the number of trees", len(trees), "trees")
    for index, tree in enumerate(trees):
        _tree(checker, f"tree {index}", tree, features)


def read(path: Path, checker: Checker) -> Any:
    """The document, JSON or UBJSON (told apart by the byte after the opening brace), within MAX_NESTING."""
    data = path.read_bytes()
    if data[:1] == b"{" and data[1:2] not in b'"} \t\r\n':  # JSON's next byte is a key's quote or a blank
        return _ubjson(data, checker)
    depth = 0
    for token in _TOKENS.finditer(data):
        bracket = token.group()
        if bracket in (b"[", b"{"):
            depth += 1
            if depth > MAX_NESTING:
                raise checker.refuse(
                    f"the JSON nests deeper than {MAX_NESTING} levels (at byte {token.start():,}); "
                    "an XGBoost model nests about 8"
                )
        elif bracket in (b"]", b"}"):
            depth -= 1
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise checker.refuse(f"not a JSON document ({' '.join(str(exc).split())[:200]})") from None


def _object(checker: Checker, parent: Any, key: str, where: str = "the document") -> dict:
    value = parent.get(key) if isinstance(parent, dict) else None
    if not isinstance(value, dict):
        raise checker.refuse(f"{where} has no {key!r} object; expected an XGBoost model saved by save_model")
    return value


def _tree(checker: Checker, where: str, tree: Any, features: int) -> None:
    if not isinstance(tree, dict):
        raise checker.refuse(f"{where} is not an object")
    param: dict = tree["tree_param"] if isinstance(tree.get("tree_param"), dict) else {}
    nodes = checker.whole(f"{where} tree_param.num_nodes", param.get("num_nodes", ""))
    if not 1 <= nodes <= 2 * checker.limits.leaves - 1:
        if nodes > 0:
            raise checker.over(
                f"{where} tree_param.num_nodes (leaves: (num_nodes + 1) / 2)", (nodes + 1) // 2, "leaves"
            )
        raise checker.refuse(f"{where} tree_param.num_nodes is {nodes}; expected 1 or more")
    checker.count(f"{where} tree_param.size_leaf_vector", param.get("size_leaf_vector", 1), "classes")
    because = f"{where} num_nodes={nodes}"
    arrays = {}
    for key in NODE_ARRAYS:
        if key in tree:
            values = tree[key]
            checker.length(f"{where} {key}", values if hasattr(values, "__len__") else [], nodes, because)
            arrays[key] = values
    for key in ("left_children", "right_children", "split_indices"):
        if key not in arrays:
            raise checker.refuse(f"{where} has no {key}; {because} needs {nodes:,} entries")
    left = integers(f"{where} left_children", arrays["left_children"], checker)
    right = integers(f"{where} right_children", arrays["right_children"], checker)
    for key, values in (("left_children", left), ("right_children", right)):
        checker.in_range(f"{where} {key}", values, -1, nodes, f"{because} (-1 for a leaf)")
    leaf = left == -1
    if np.any(leaf != (right == -1)):
        node = int(np.flatnonzero(leaf != (right == -1))[0])
        raise checker.refuse(f"{where} node {node} has one child; expected two, or -1 for both (a leaf)")
    children = np.concatenate([left[~leaf], right[~leaf]])
    checker.single_parents(where, children, nodes)
    split = integers(f"{where} split_indices", arrays["split_indices"], checker)
    checker.in_range(
        f"{where} split_indices (of a split node)",
        np.where(leaf, 0, split),
        0,
        max(features, 1),
        f"num_feature={features}",
    )
    if "parents" in arrays:
        parents = integers(f"{where} parents", arrays["parents"], checker)
        owners = np.concatenate([np.flatnonzero(~leaf), np.flatnonzero(~leaf)])
        wrong = np.flatnonzero(parents[children] != owners)
        if wrong.size:
            raise checker.refuse(
                f"{where} parents[{children[wrong[0]]}] is {parents[children[wrong[0]]]}; "
                f"its parent is node {owners[wrong[0]]}"
            )
    _categories(checker, where, tree, nodes)


def _categories(checker: Checker, where: str, tree: dict, nodes: int) -> None:
    """A categorical split's node, and its segment of the categories list, in range."""
    categories = tree.get("categories", [])
    names = ("categories_nodes", "categories_segments", "categories_sizes")
    node_list, segments, sizes = (integers(f"{where} {n}", tree.get(n, []), checker) for n in names)
    for name, values in zip(names[1:], (segments, sizes)):
        checker.length(f"{where} {name}", values, len(node_list), f"{where} categories_nodes")
    checker.in_range(f"{where} categories_nodes", node_list, 0, nodes, f"num_nodes={nodes}")
    total = len(categories) if hasattr(categories, "__len__") else 0
    ends = segments + sizes
    if np.any(segments < 0) or np.any(sizes < 0) or np.any(ends > total):
        raise checker.refuse(
            f"{where} categories_segments and categories_sizes reach past the {total:,} entries of categories"
        )


# ---------------------------------------------------------------- UBJSON, without recursion

_NUMBERS = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4", b"D": ">f8"}


class _Input:
    def __init__(self, data: bytes, checker: Checker):
        self.data, self.at, self.checker = data, 0, checker

    def take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise self.checker.refuse(f"the UBJSON ends inside a value (at byte {self.at:,}, {size:,} bytes wanted)")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def number(self, marker: bytes) -> Any:
        dtype = np.dtype(_NUMBERS[marker])
        return np.frombuffer(self.take(dtype.itemsize), dtype)[0].item()

    def length(self) -> int:
        marker = self.take(1)
        if marker not in _NUMBERS or marker in (b"d", b"D"):
            raise self.checker.refuse(
                f"UBJSON length at byte {self.at - 1:,} has marker {marker!r}; expected an integer"
            )
        size = self.number(marker)
        if size < 0:
            raise self.checker.refuse(f"UBJSON length {size} at byte {self.at:,}")
        return size


def _ubjson(data: bytes, checker: Checker) -> Any:
    source = _Input(data, checker)
    # Each open container: [the value, its key to fill next (objects), items left (None: until its end marker)].
    stack: list[list[Any]] = []
    root: list[Any] = []

    def place(value: Any) -> None:
        if not stack:
            root.append(value)
            return
        frame = stack[-1]
        if isinstance(frame[0], dict):
            frame[0][frame[1]] = value
        else:
            frame[0].append(value)
        if frame[2] is not None:
            frame[2] -= 1

    while True:
        while stack and stack[-1][2] == 0:  # counted containers close by themselves
            place(stack.pop()[0])
        if root:
            return root[0]
        frame = stack[-1] if stack else None
        if frame is not None and isinstance(frame[0], dict):
            if frame[2] is None and source.data[source.at : source.at + 1] == b"}":
                source.take(1)
                stack.pop()
                place(frame[0])
                continue
            frame[1] = source.take(source.length()).decode("utf-8", "replace")
        marker = source.take(1)
        if marker == b"N":
            continue
        if frame is not None and frame[2] is None and marker in (b"]", b"}"):
            stack.pop()
            place(frame[0])
        elif marker in (b"[", b"{"):
            if len(stack) >= MAX_NESTING:
                raise checker.refuse(
                    f"the UBJSON nests deeper than {MAX_NESTING} levels (at byte {source.at:,}); "
                    "an XGBoost model nests about 8"
                )
            typed, count = None, None
            if source.data[source.at : source.at + 1] == b"$":
                source.take(1)
                typed = source.take(1)
            if source.data[source.at : source.at + 1] == b"#":
                source.take(1)
                count = source.length()
            if typed is not None:
                if typed not in _NUMBERS or marker != b"[" or count is None:
                    raise checker.refuse(
                        f"a UBJSON container typed {typed!r} at byte {source.at:,}; expected a counted array of numbers"
                    )
                dtype = np.dtype(_NUMBERS[typed])
                place(np.frombuffer(source.take(count * dtype.itemsize), dtype))
                continue
            stack.append([{} if marker == b"{" else [], None, count])
        elif marker in _NUMBERS:
            place(source.number(marker))
        elif marker in (b"T", b"F", b"Z"):
            place({b"T": True, b"F": False, b"Z": None}[marker])
        elif marker in (b"S", b"H"):
            text = source.take(source.length()).decode("utf-8", "replace")
            place(text)
        elif marker == b"C":
            place(source.take(1).decode("latin-1"))
        else:
            raise checker.refuse(f"UBJSON marker {marker!r} at byte {source.at - 1:,} is not one of UBJSON's")
