"""A tree ensemble node's replacement in standard operators, built over its padded tables (tree_attributes.py):
Gather and compare per test, a batched MatMul to the leaf reached, a MatMul to its values, then base_values,
the aggregate, post_transform and the label as onnxruntime's kernels compute them."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxport.convert.forms.tree_attributes import EnsembleReader

POST_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO")


class EnsembleRewriter(EnsembleReader):
    """One tree ensemble node: its attributes read and checked (EnsembleReader), then its replacement built."""

    def __init__(self, node: onnx.NodeProto, prefix: str, input_type: int | None, opset: int):
        super().__init__(node)
        self.opset = opset
        self.p = prefix
        self.input_type = input_type
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []

    def build(self) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
        """The replacing nodes and initializers; the last nodes write the node's own outputs."""
        t = self.read()
        scores = self._scores(t.feature, t.threshold, t.test, t.turns, t.wanted, t.leaf_values)
        if self.classifier:
            self._classify(scores, t.ids, t.weights, t.count)
        else:
            self._regress(scores, t.count, t.outputs)
        return self.nodes, self.inits

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
        if post not in POST_TRANSFORMS:
            raise self._refuse(f"post_transform {post} is not implemented (implemented: {', '.join(POST_TRANSFORMS)})")
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
