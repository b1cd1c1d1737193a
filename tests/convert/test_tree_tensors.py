"""Tree ensembles rewritten into standard operators (convert/forms/tree_tensors.py) against onnxruntime's own ai.onnx.ml
kernels: real converted models (skl2onnx, onnxmltools' LightGBM and XGBoost converters) and small ensembles
written here to reach every mode, missing-value rule, post_transform and label convention. Labels must be
equal; scores and probabilities within 1e-5 of the kernel's (relative to the value past 1), NaN where it is NaN."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnxport import cli
from onnxport.convert.forms import tree_attributes
from onnxport.convert.forms.tree_tensors import TreeRewriteError, has_trees, rewrite

ROWS = 300


def _run(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def _agree(model: onnx.ModelProto, x: np.ndarray, what: str) -> float:
    """The largest relative difference of the rewrite's float outputs from the kernel's; labels must be equal."""
    rewritten = rewrite(model)
    onnx.checker.check_model(rewritten, full_check=True)
    assert not any(n.domain == "ai.onnx.ml" for n in rewritten.graph.node), what
    worst = 0.0
    for index, (want, got) in enumerate(zip(_run(model, x), _run(rewritten, x))):
        assert want.shape == got.shape, f"{what} output {index}: shape {got.shape}, onnxruntime's {want.shape}"
        if want.dtype.kind != "f":
            differ = np.flatnonzero(want.ravel() != got.ravel())
            assert not differ.size, (
                f"{what} output {index}: {differ.size} labels differ, first at row {differ[0]}: "
                f"{got.ravel()[differ[0]]!r}, onnxruntime {want.ravel()[differ[0]]!r}"
            )
            continue
        assert np.array_equal(np.isnan(want), np.isnan(got)), f"{what} output {index}: NaN at other places"
        error = np.abs(want - got) / np.maximum(1.0, np.abs(want))
        error = np.where(np.isnan(want), 0.0, error)
        at = np.unravel_index(np.argmax(error), error.shape)
        assert error[at] <= 1e-5, f"{what} output {index} at {at}: {got[at]}, onnxruntime {want[at]}"
        worst = max(worst, float(error.max()))
    return worst


# -- real converted models ---------------------------------------------------------------------------------


def _with_missing(x: np.ndarray, every: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = x.copy()
    x[rng.random(x.shape) < 1 / every] = np.nan
    return x


@pytest.fixture(scope="module")
def data():
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

    sets = {
        name: tuple(np.asarray(v) for v in loader(return_X_y=True))
        for name, loader in (("cancer", load_breast_cancer), ("wine", load_wine), ("diabetes", load_diabetes))
    }
    return {name: (x.astype(np.float32), y) for name, (x, y) in sets.items()}


def _held_back(x: np.ndarray) -> np.ndarray:
    """Rows to compare on: the data's last rows, the same with a tenth of features missing, and rows at the
    thresholds' scale drawn at random."""
    rng = np.random.default_rng(1)
    rows = x[-ROWS // 3 :]
    wide = rng.normal(x.mean(axis=0), x.std(axis=0) * 2, size=(ROWS // 3, x.shape[1])).astype(np.float32)
    return np.concatenate([rows, _with_missing(rows, 10, 2), wide])


def _skl(estimator, x):
    from skl2onnx import to_onnx

    options = {"zipmap": False} if hasattr(estimator, "predict_proba") else None
    return to_onnx(estimator, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})


def _lightgbm(estimator, x):
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    return convert_lightgbm(
        estimator, initial_types=[("input", FloatTensorType([None, x.shape[1]]))], zipmap=False, target_opset=15
    )


def _xgboost(estimator, x):
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    return convert_xgboost(estimator, initial_types=[("input", FloatTensorType([None, x.shape[1]]))], target_opset=15)


def _model(kind: str, data):
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor

    cancer, wine, diabetes = data["cancer"], data["wine"], data["diabetes"]
    if kind == "sklearn GradientBoostingClassifier binary":
        return _skl(
            GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(*cancer), cancer[0]
        ), cancer[0]
    if kind == "sklearn GradientBoostingClassifier multiclass":
        return _skl(GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(*wine), wine[0]), wine[
            0
        ]
    if kind == "sklearn RandomForestRegressor":
        return _skl(
            RandomForestRegressor(n_estimators=8, max_depth=6, random_state=0).fit(*diabetes), diabetes[0]
        ), diabetes[0]
    lightgbm = pytest.importorskip("lightgbm")
    xgboost = pytest.importorskip("xgboost")
    # trained with missing values, so that their branches are learned, not defaulted
    gappy = _with_missing(cancer[0], 8, 3), cancer[1]
    if kind == "LightGBM classifier binary, trained with NaN":
        return _lightgbm(
            lightgbm.LGBMClassifier(n_estimators=15, num_leaves=15, verbose=-1).fit(*gappy), cancer[0]
        ), cancer[0]
    if kind == "LightGBM classifier multiclass":
        return _lightgbm(lightgbm.LGBMClassifier(n_estimators=10, num_leaves=7, verbose=-1).fit(*wine), wine[0]), wine[
            0
        ]
    if kind == "LightGBM regressor":
        return _lightgbm(
            lightgbm.LGBMRegressor(n_estimators=15, num_leaves=15, verbose=-1).fit(*diabetes), diabetes[0]
        ), diabetes[0]
    if kind == "XGBoost classifier binary, trained with NaN":
        return _xgboost(xgboost.XGBClassifier(n_estimators=15, max_depth=3).fit(*gappy), cancer[0]), cancer[0]
    assert kind == "XGBoost classifier multiclass"
    return _xgboost(xgboost.XGBClassifier(n_estimators=10, max_depth=3).fit(*wine), wine[0]), wine[0]


REAL = [
    "sklearn GradientBoostingClassifier binary",
    "sklearn GradientBoostingClassifier multiclass",
    "sklearn RandomForestRegressor",
    "LightGBM classifier binary, trained with NaN",
    "LightGBM classifier multiclass",
    "LightGBM regressor",
    "XGBoost classifier binary, trained with NaN",
    "XGBoost classifier multiclass",
]


@pytest.mark.parametrize("kind", REAL)
def test_converted_models_agree_with_onnxruntime(kind, data):
    model, x = _model(kind, data)
    assert has_trees(model)
    _agree(model, _held_back(x), kind)


# -- ensembles written here: every mode, missing-value rule, post_transform, label convention -----------------


def _ensemble(
    op: str,
    *,
    trees=4,
    depth=3,
    features=5,
    outputs=1,
    single=False,
    positive=False,
    seed=0,
    base=None,
    post="NONE",
    labels=None,
    as_tensor=False,
    aggregate=None,
    modes=None,
):
    """A random ensemble of full binary trees. single: every leaf weight on output 0 (the binary convention)."""
    rng = np.random.default_rng(seed)
    kind = "class" if op == "TreeEnsembleClassifier" else "target"
    a: dict[str, list] = {
        k: []
        for k in (
            "nodes_treeids",
            "nodes_nodeids",
            "nodes_featureids",
            "nodes_modes",
            "nodes_values",
            "nodes_truenodeids",
            "nodes_falsenodeids",
            "nodes_missing_value_tracks_true",
        )
    }
    w: dict[str, list] = {k: [] for k in (f"{kind}_treeids", f"{kind}_nodeids", f"{kind}_ids", f"{kind}_weights")}
    internal = 2**depth - 1
    for tree in range(trees):
        for node in range(2 ** (depth + 1) - 1):
            leaf = node >= internal
            a["nodes_treeids"].append(tree)
            a["nodes_nodeids"].append(node)
            a["nodes_featureids"].append(0 if leaf else int(rng.integers(features)))
            a["nodes_modes"].append(
                "LEAF"
                if leaf
                else str(
                    rng.choice(
                        modes or ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
                    )
                )
            )
            a["nodes_values"].append(0.0 if leaf else float(rng.choice([-1.0, 0.0, 0.5, 1.0 / 3.0, 2.0])))
            a["nodes_truenodeids"].append(0 if leaf else 2 * node + 1)
            a["nodes_falsenodeids"].append(0 if leaf else 2 * node + 2)
            a["nodes_missing_value_tracks_true"].append(0 if leaf else int(rng.integers(2)))
            if leaf:
                for k in [0] if single else range(outputs):
                    w[f"{kind}_treeids"].append(tree)
                    w[f"{kind}_nodeids"].append(node)
                    w[f"{kind}_ids"].append(k)
                    value = rng.random() if positive else rng.normal()
                    w[f"{kind}_weights"].append(float(value / trees if positive else value))
    attrs = {**a, **w, "post_transform": post}
    if as_tensor:  # onnxruntime reads them for a float32 input only when they are float32 too
        attrs["nodes_values_as_tensor"] = helper.make_tensor(
            "v", TensorProto.FLOAT, [len(a["nodes_values"])], a["nodes_values"]
        )
        del attrs["nodes_values"]
    if base is not None:
        attrs["base_values"] = base
    if aggregate:
        attrs["aggregate_function"] = aggregate
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, features])
    if op == "TreeEnsembleClassifier":
        labels = labels or list(range(outputs if not single else 2))
        attrs["classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s"] = labels
        label_type = TensorProto.STRING if isinstance(labels[0], str) else TensorProto.INT64
        outs = [
            helper.make_tensor_value_info("label", label_type, [None]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, len(labels)]),
        ]
    else:
        attrs["n_targets"] = outputs
        outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, outputs])]
    node = helper.make_node(op, ["x"], [o.name for o in outs], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "trees", [x], outs)
    return helper.make_model(
        graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    )


def _edges(features: int) -> np.ndarray:
    """Rows on the thresholds, a float32 step either side of them, at 1/3 in float32 and double, and NaN."""
    points = np.array([-1.0, 0.0, 0.5, 2.0, np.float32(1 / 3), np.nan, 5.0, -3.0], dtype=np.float32)
    points = np.concatenate(
        [points, np.nextafter(points, np.float32(np.inf)), np.nextafter(points, np.float32(-np.inf))]
    )
    rng = np.random.default_rng(4)
    return rng.choice(points, size=(ROWS, features)).astype(np.float32)


CASES = {
    "binary, margins, LOGISTIC, a base value": dict(
        op="TreeEnsembleClassifier", single=True, post="LOGISTIC", base=[0.3]
    ),
    "binary, margins, NONE, no base value": dict(op="TreeEnsembleClassifier", single=True),
    "binary, probabilities (weights >= 0)": dict(op="TreeEnsembleClassifier", single=True, positive=True),
    "binary, string labels": dict(op="TreeEnsembleClassifier", single=True, post="LOGISTIC", labels=["no", "yes"]),
    "3 classes, SOFTMAX, base values": dict(
        op="TreeEnsembleClassifier", outputs=3, post="SOFTMAX", base=[0.1, -0.2, 0.3]
    ),
    "3 classes, SOFTMAX_ZERO": dict(op="TreeEnsembleClassifier", outputs=3, post="SOFTMAX_ZERO"),
    "4 classes, LOGISTIC, string labels": dict(
        op="TreeEnsembleClassifier", outputs=4, post="LOGISTIC", labels=list("abcd")
    ),
    "3 classes, NONE, thresholds as a tensor": dict(op="TreeEnsembleClassifier", outputs=3, as_tensor=True),
    "regressor, SUM, a base value": dict(op="TreeEnsembleRegressor", base=[1.5]),
    "regressor, AVERAGE, thresholds as a tensor": dict(op="TreeEnsembleRegressor", aggregate="AVERAGE", as_tensor=True),
    "regressor, 2 targets, SOFTMAX, base values": dict(
        op="TreeEnsembleRegressor", outputs=2, post="SOFTMAX", base=[0.5, -0.5]
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_written_ensembles_agree_with_onnxruntime(case):
    """Every mode and missing-value rule, on rows placed on the thresholds, a float32 step either side and NaN."""
    spec = dict(CASES[case])
    model = _ensemble(spec.pop("op"), **spec)
    _agree(model, _edges(5), case)


def test_a_model_below_opset_13_is_converted_first_and_a_single_tree_leaf_counts():
    """A default-domain opset below the operators written (LessOrEqual is 12) is raised by onnx's converter;
    a tree that is one leaf, without a test, still adds its value to every row."""
    model = _ensemble("TreeEnsembleRegressor", trees=2, depth=2, base=[0.25], modes=["BRANCH_LEQ"])
    attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
    keep = [i for i, t in enumerate(attrs["nodes_treeids"]) if t == 0]  # tree 1 becomes one leaf, node 0
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["x"],
        ["y"],
        domain="ai.onnx.ml",
        n_targets=1,
        base_values=[0.25],
        **{
            k: [attrs[k][i] for i in keep] + [v]
            for k, v in (
                ("nodes_treeids", 1),
                ("nodes_nodeids", 0),
                ("nodes_featureids", 0),
                ("nodes_modes", "LEAF"),
                ("nodes_values", 0.0),
                ("nodes_truenodeids", 0),
                ("nodes_falsenodeids", 0),
            )
        },
        target_treeids=[*[t for t in attrs["target_treeids"] if t == 0], 1],
        target_nodeids=[*[n for t, n in zip(attrs["target_treeids"], attrs["target_nodeids"]) if t == 0], 0],
        target_ids=[*[0 for t in attrs["target_treeids"] if t == 0], 0],
        target_weights=[*[w for t, w in zip(attrs["target_treeids"], attrs["target_weights"]) if t == 0], 10.0],
    )
    graph = helper.make_graph([node], "trees", list(model.graph.input), list(model.graph.output))
    old = helper.make_model(
        graph, ir_version=9, opset_imports=[helper.make_opsetid("", 9), helper.make_opsetid("ai.onnx.ml", 1)]
    )
    _agree(old, _edges(5), "opset 9, a one-leaf tree")
    assert [o.version for o in rewrite(old).opset_import if o.domain == ""] == [13]


@pytest.mark.parametrize(
    "change, reason",
    [
        (dict(post="PROBIT"), "post_transform PROBIT is not implemented"),
        (dict(aggregate="MAX"), "aggregate_function MAX is not implemented"),
    ],
)
def test_what_is_not_implemented_is_refused_with_its_reason(change, reason):
    with pytest.raises(TreeRewriteError, match=reason):
        rewrite(_ensemble("TreeEnsembleRegressor", **change))


def test_float64_input_and_the_opset_5_operator_are_refused():
    model = _ensemble("TreeEnsembleRegressor")
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    with pytest.raises(TreeRewriteError, match="its input is float64"):
        rewrite(model)
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml")
    graph = helper.make_graph([node], "g", list(model.graph.input), list(model.graph.output))
    five = helper.make_model(
        graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)]
    )
    assert has_trees(five)
    with pytest.raises(TreeRewriteError, match="opset-5 TreeEnsemble operator is not rewritten"):
        rewrite(five)


def test_a_forest_too_large_for_a_dense_path_matrix_is_refused_with_its_size(monkeypatch):
    monkeypatch.setattr(tree_attributes, "MAX_PATH_ELEMENTS", 4 * 7 * 8 - 1)  # 4 trees, 7 tests, 8 leaves
    with pytest.raises(TreeRewriteError, match=r"4 trees of up to 7 tests and 8 leaves need a path matrix of 0 MB"):
        rewrite(_ensemble("TreeEnsembleRegressor"))


def test_the_default_forms_keep_gemm_though_it_starts_no_sooner(tmp_path, data):
    """--forms auto keeps a form only when its session starts measurably sooner (forms/gain.py), except one that
    runs where the variant as built cannot: the gemm form of an ai.onnx.ml model, which WebGPU runs."""
    import json

    model, x = _model("XGBoost classifier binary, trained with NaN", data)
    onnx.save(model, tmp_path / "xgb.onnx")
    np.savez(tmp_path / "inputs.npz", input=x[-20:])
    code = cli.main(
        [
            str(a)
            for a in (
                "--repository",
                tmp_path / "repo",
                "import",
                tmp_path / "xgb.onnx",
                "--name",
                "xgb",
                "--task",
                "classification",
                "--metric-output",
                "probabilities",
                "--inputs",
                tmp_path / "inputs.npz",
                "--quiet",
            )
        ]
    )
    assert code == 0
    forms = json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"]["xgb"]["variants"]["fp32"]["forms"]
    assert forms["gemm"]["status"] == "ok", forms["gemm"]
    assert forms["gemm"]["optimization"] == "tree-gemm" and forms["gemm"]["runtimes"] is None
    assert forms["basic"]["reason"].startswith("too little gain to keep its file"), forms["basic"]
