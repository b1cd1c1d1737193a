"""LightGBM's text model format, checked line by line before LightGBM reads it (tree_limits.py says why).

The file is `key=value` header lines (`num_class`, `num_tree_per_iteration`, `max_feature_idx`, `tree_sizes`:
each tree block's size in bytes, which LightGBM uses as offsets into the file), then one block per tree from a
`Tree=N` line (`num_leaves`, `num_cat`, arrays of num_leaves - 1 splits and of num_leaves leaves), then
`end of trees` and text LightGBM does not index by (feature importances, parameters).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from onnxport.convert.intake.tree_limits import Checker, TreeLimits, integers

# Arrays of one entry per split (num_leaves - 1) and per leaf (num_leaves), as LightGBM writes them.
SPLIT_ARRAYS = (
    "split_feature",
    "split_gain",
    "threshold",
    "decision_type",
    "left_child",
    "right_child",
    "internal_value",
    "internal_weight",
    "internal_count",
)
LEAF_ARRAYS = ("leaf_value", "leaf_weight", "leaf_count", "leaf_parent", "leaf_const", "num_features")
CATEGORICAL = 1  # decision_type's bit of a categorical split: its threshold is an index into cat_boundaries
END = b"end of trees"


def check(path: Path, limits: TreeLimits) -> None:
    """Every count within its limit, every array of its length, every index in range; else a UsageError."""
    checker = Checker(path, limits)
    checker.file_size()
    header: dict[str, str] = {}
    block: tuple[str, dict[str, str]] | None = None  # the tree being read: its Tree=N line and keys
    starts: list[int] = []  # each Tree= line's offset in the file
    features = 0
    offset = 0
    with path.open("rb") as handle:
        for raw in handle:  # one tree at a time: the checks hold no more of the file than its longest line
            if raw.startswith(END):
                break
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            if line.startswith("Tree="):
                if block is None:
                    features = _header(checker, header)
                else:
                    _tree(checker, *block, features)
                if len(starts) >= limits.trees:
                    raise checker.over("the number of Tree= blocks", len(starts) + 1, "trees")
                starts.append(offset)
                block = (line, {})
            elif "=" in line:
                key, _, value = line.partition("=")
                (block[1] if block else header)[key.strip()] = value.strip()
            offset += len(raw)
    if block is None:
        features = _header(checker, header)
    else:
        _tree(checker, *block, features)
    _tree_sizes(checker, header, starts, offset)


def _header(checker: Checker, header: dict[str, str]) -> int:
    """The header's counts; the number of features."""
    for field in ("num_class", "num_tree_per_iteration"):
        if field in header:
            checker.count(field, header[field], "classes", least=1)
    if "max_feature_idx" not in header:
        raise checker.refuse("no max_feature_idx line; expected a LightGBM text model")
    features = checker.count("max_feature_idx", header["max_feature_idx"], "features") + 1
    if features > checker.limits.features:
        raise checker.over("the number of features (max_feature_idx + 1)", features, "features")
    return features


def _tree_sizes(checker: Checker, header: dict[str, str], starts: list[int], end: int) -> None:
    """LightGBM reads tree i at the first tree's offset plus the sizes before it, unchecked: they must be the
    blocks' own sizes."""
    if "tree_sizes" not in header:
        return
    sizes = integers("tree_sizes", header["tree_sizes"].split(), checker)
    checker.length("tree_sizes", sizes, len(starts), "the number of Tree= blocks")
    actual = np.diff(np.array([*starts, end], np.int64))
    wrong = np.flatnonzero(sizes != actual)
    if wrong.size:
        at = int(wrong[0])
        raise checker.refuse(f"tree_sizes[{at}] is {sizes[at]}, but Tree block {at} is {actual[at]} bytes long")


def _tree(checker: Checker, title: str, keys: dict[str, str], features: int) -> None:
    leaves = checker.count(f"{title} num_leaves", keys.get("num_leaves", ""), "leaves", least=1)
    arrays = {key: keys[key].split() for key in (*SPLIT_ARRAYS, *LEAF_ARRAYS) if key in keys}
    because = f"{title} num_leaves={leaves}"
    for key, values in arrays.items():
        checker.length(f"{title} {key}", np.empty(len(values)), leaves - (key in SPLIT_ARRAYS), because)
    if leaves == 1:
        return
    splits = leaves - 1
    for key in ("split_feature", "left_child", "right_child"):
        if key not in arrays:
            raise checker.refuse(f"{title} has no {key} line; {because} needs one of {splits:,} entries")
    split_feature = integers(f"{title} split_feature", arrays["split_feature"], checker)
    checker.in_range(f"{title} split_feature", split_feature, 0, features, f"max_feature_idx={features - 1}")
    sides = [integers(f"{title} {side}", arrays[side], checker) for side in ("left_child", "right_child")]
    for side, links in zip(("left_child", "right_child"), sides):
        # A child >= 0 is a split's index; a leaf is written as ~index (-1 for leaf 0).
        checker.in_range(f"{title} {side}", links, -leaves, splits, f"{because} ({splits:,} splits, {leaves:,} leaves)")
    children = np.concatenate(sides)
    checker.single_parents(title, children[children >= 0], splits)
    reached = np.bincount(~children[children < 0], minlength=leaves)
    if np.any(reached != 1):
        leaf = int(np.flatnonzero(reached != 1)[0])
        raise checker.refuse(f"{title}: leaf {leaf} is the child of {int(reached[leaf])} splits; expected one")
    _categories(checker, title, keys, arrays, splits)
    if keys.get("is_linear", "0") not in ("0", ""):
        _linear(checker, title, keys, arrays, features)


def _categories(checker: Checker, title: str, keys: dict[str, str], arrays: dict[str, list[str]], splits: int) -> None:
    """A categorical split's threshold indexes cat_boundaries, whose entries index cat_threshold."""
    num_cat = checker.whole(f"{title} num_cat", keys.get("num_cat", "0"))
    if not 0 <= num_cat <= splits:
        raise checker.refuse(f"{title} num_cat is {num_cat}; a tree of {splits:,} splits allows 0 to {splits:,}")
    decision = integers(f"{title} decision_type", arrays.get("decision_type", []), checker)
    categorical = np.flatnonzero(decision & CATEGORICAL) if decision.size else np.empty(0, np.int64)
    if categorical.size:
        thresholds = np.asarray(arrays.get("threshold", []), dtype=object)[categorical]
        indices = integers(f"{title} threshold (of a categorical split)", [float(t) for t in thresholds], checker)
        checker.in_range(f"{title} threshold (of a categorical split)", indices, 0, num_cat, f"num_cat={num_cat}")
    if num_cat == 0:
        return
    boundaries = integers(f"{title} cat_boundaries", keys.get("cat_boundaries", "").split(), checker)
    checker.length(f"{title} cat_boundaries", boundaries, num_cat + 1, f"num_cat={num_cat}")
    words = len(keys.get("cat_threshold", "").split())
    if boundaries[0] != 0 or np.any(np.diff(boundaries) < 0) or boundaries[-1] != words:
        raise checker.refuse(f"{title} cat_boundaries must rise from 0 to the {words:,} entries of cat_threshold")


def _linear(checker: Checker, title: str, keys: dict[str, str], arrays: dict[str, list[str]], features: int) -> None:
    """A linear tree's leaves: each its count of features, then those features' indices and coefficients."""
    counts = integers(f"{title} num_features", arrays.get("num_features", []), checker)
    checker.in_range(f"{title} num_features", counts, 0, features + 1, f"max_feature_idx={features - 1}")
    total = int(counts.sum())
    indices = integers(f"{title} leaf_features", keys.get("leaf_features", "").split(), checker)
    checker.length(f"{title} leaf_features", indices, total, "the sum of num_features")
    checker.in_range(f"{title} leaf_features", indices, 0, features, f"max_feature_idx={features - 1}")
    checker.length(
        f"{title} leaf_coeff", np.empty(len(keys.get("leaf_coeff", "").split())), total, "the sum of num_features"
    )
