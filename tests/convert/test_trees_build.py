"""LightGBM and XGBoost recipes (models-trees/, convert/intake/export_trees.py): the ONNX files answer what the
libraries answer on held-back rows, and the build refuses a conversion that does not."""

from __future__ import annotations

import functools
import json
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest

from onnxport import cli, runtime
from onnxport.convert.intake import export_trees
from onnxport.project import PROJECT_ROOT
from onnxport.recipe import load_recipe

TREES = PROJECT_ROOT / "models-trees"
# Classifier and regressor of each library; the multiclass and ranker recipes are built too (their fp32 check).
COMPARED = ("lgbm_cancer", "lgbm_diabetes", "xgb_cancer", "xgb_diabetes")
BUILT = (*COMPARED, "lgbm_wine", "lgbm_rank")


@pytest.fixture(scope="module")
def trees_repository(tmp_path_factory) -> Path:
    repository = tmp_path_factory.mktemp("trees") / "repository"
    code = cli.main(
        ["--repository", str(repository), "build", "--recipes", str(TREES), "--forms", "none", "--quiet", *BUILT]
    )
    assert code == 0
    return repository


def _recipe(name: str):
    return load_recipe(name, TREES / f"{name}.py")


@pytest.mark.parametrize("name", COMPARED)
def test_onnx_answers_what_the_library_predicts(trees_repository, name):
    entry = json.loads((trees_repository / "manifest.json").read_text())["models"][name]
    fp32 = (trees_repository / entry["variants"]["fp32"]["file"]).read_bytes()
    # A fresh model from the recipe (same seed): the library's own predict / predict_proba on the held-back rows.
    source = _recipe(name).load()
    expected = source.run(source.golden_inputs)
    got = runtime.run(runtime.create_session(fp32, label=name), source.golden_inputs, label=name)
    tolerance = entry["validation"]["tolerance"]
    for output, want in expected.items():
        assert got[output].shape == want.shape, (output, got[output].shape, want.shape)
        if output == "label":
            wrong = np.flatnonzero(got[output] != want)
            assert wrong.size == 0, f"{name} label: rows {wrong[:5]}: {got[output][wrong[:5]]}, not {want[wrong[:5]]}"
            continue
        error = np.abs(got[output] - want)
        bound = np.maximum(tolerance["abs"], tolerance["rel"] * np.abs(want))
        worst = int(np.argmax(error - bound))
        assert (error <= bound).all(), (
            f"{name} {output}: index {worst}: expected {want.flat[worst]}, "
            f"got {got[output].flat[worst]} (tolerance {tolerance})"
        )
    assert entry["kind"] == source.framework
    assert {o["name"] for o in entry["outputs"]} == set(source.output_names)


def test_a_tree_ensemble_has_nothing_for_int8_and_no_smaller_fp16(trees_repository):
    for name in BUILT:
        variants = json.loads((trees_repository / "manifest.json").read_text())["models"][name]["variants"]
        assert "nothing to quantize" in variants["int8-dynamic"]["reason"], (name, variants["int8-dynamic"])
        # The fp16 converter leaves ai.onnx.ml nodes in float32: no smaller file, nothing served.
        assert "file" not in variants["fp16"], (name, variants["fp16"])


def test_thresholds_rounded_to_nearest_are_refused_by_the_check(run_cli, tmp_path, monkeypatch, assert_one_line_error):
    # onnxmltools on its own stores LightGBM's double thresholds rounded to the nearest float32, which sends one
    # held-back diabetes row down the other branch; the build's check against LightGBM must refuse it.
    monkeypatch.setattr(
        export_trees, "export_trees", functools.partial(export_trees.export_trees, round_thresholds=False)
    )
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repository",
        "build",
        "--recipes",
        TREES,
        "--forms",
        "none",
        "--quiet",
        "lgbm_diabetes",
    )
    assert code == 1
    assert_one_line_error(
        err, "lgbm_diabetes: fp32 export differs from the lightgbm source on output 'prediction'", "tolerance abs 0.001"
    )
    assert "max abs error 3.41" in err


def _one_recipe(folder: Path, name: str, body: str) -> Path:
    """A recipe folder with one regressor recipe on the diabetes data; `body` makes x, FRAMEWORK and model."""
    folder.mkdir()
    head = textwrap.dedent("""
        import numpy as np
        from onnxport import Recipe, SourceModel, Tolerance

        def load():
            from sklearn.datasets import load_diabetes
            x, y = load_diabetes(return_X_y=True)
    """)
    tail = textwrap.dedent(f"""
            return SourceModel(framework=FRAMEWORK, model=model, input_names=["features"],
                               output_names=["prediction"], dynamic_axes={{}}, sample_inputs={{"features": x[:1]}},
                               golden_inputs={{"features": x[:20]}}, calibration_inputs=[],
                               run=lambda f: {{"prediction": model.predict(f["features"]).reshape(-1, 1)}})

        RECIPE = Recipe(name="{name}", task="regression", description="d", load=load,
                        tolerance=Tolerance(abs=1e-3), metric_output="prediction")
    """)
    (folder / f"{name}.py").write_text(head + textwrap.indent(textwrap.dedent(body), "    ") + tail)
    return folder


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        # float64 features where the converter takes float32.
        (
            """
     from lightgbm import LGBMRegressor
     FRAMEWORK = "lightgbm"
     model = LGBMRegressor(n_estimators=3, verbose=-1).fit(x, y)
     """,
            ["input 'features': lightgbm's converter (onnxmltools) expects float32 features", "got float64"],
        ),
        # Linear leaves, which the converter would drop.
        (
            """
     from lightgbm import LGBMRegressor
     FRAMEWORK = "lightgbm"
     x = x.astype(np.float32)
     model = LGBMRegressor(n_estimators=3, verbose=-1, linear_tree=True).fit(x, y)
     """,
            ["a LightGBM model trained with linear_tree=True: onnxmltools drops the leaves' linear models"],
        ),
        # A model kind onnxmltools does not convert.
        (
            """
     from xgboost import XGBRanker
     FRAMEWORK = "xgboost"
     x = x.astype(np.float32)
     model = XGBRanker(n_estimators=3).fit(x[:400], (y[:400] > 150).astype(int), qid=np.repeat(np.arange(40), 10))
     """,
            ["onnxmltools cannot convert this XGBRanker", "it converts XGBClassifier and XGBRegressor"],
        ),
    ],
    ids=["float64", "linear_tree", "xgbranker"],
)
def test_what_the_converter_cannot_take_is_named(run_cli, tmp_path, assert_one_line_error, body, fragments):
    recipes = _one_recipe(tmp_path / "recipes", "tree", body)
    code, _, err = run_cli(
        "--repository", tmp_path / "repository", "build", "--recipes", recipes, "--forms", "none", "--quiet"
    )
    assert code == 1
    assert_one_line_error(err, *fragments)


def test_a_converted_xgboost_file_imports_with_inputs(run_cli, tmp_path):
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType
    from sklearn.datasets import load_wine
    from xgboost import XGBClassifier

    x, y = load_wine(return_X_y=True)
    x = x.astype(np.float32)
    model = XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(x, y)
    # As a user converts it elsewhere: onnxmltools' defaults (opset 15, ai.onnx.ml 1).
    converted = convert_xgboost(model, initial_types=[("features", FloatTensorType([None, x.shape[1]]))])
    onnx.save_model(converted, tmp_path / "wine.onnx")
    np.savez(tmp_path / "rows.npz", features=x[::10])
    code, out, err = run_cli(
        "--repository",
        tmp_path / "repository",
        "import",
        tmp_path / "wine.onnx",
        "--name",
        "wine",
        "--task",
        "classification",
        "--inputs",
        tmp_path / "rows.npz",
        "--forms",
        "none",
        "--quiet",
    )
    assert code == 0, err
    entry = json.loads((tmp_path / "repository" / "manifest.json").read_text())["models"]["wine"]
    assert entry["kind"] == "onnx"
    assert "ai.onnx.ml.TreeEnsembleClassifier" in entry["operators"]
    fp32 = (tmp_path / "repository" / entry["variants"]["fp32"]["file"]).read_bytes()
    got = runtime.run(runtime.create_session(fp32, label="wine"), {"features": x[::10]}, label="wine")
    labels, probabilities = (got[o["name"]] for o in entry["outputs"])
    assert (labels == model.predict(x[::10])).all()
    np.testing.assert_allclose(probabilities, model.predict_proba(x[::10]), atol=1e-6)


def test_the_readme_recipe_builds(run_cli, tmp_path):
    # The front page's LightGBM recipe, as printed, under 30 lines.
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme[readme.index("## A recipe") :]
    code = section[section.index("```python\n") + len("```python\n") : section.index("```\n", 10)]
    assert len(code.splitlines()) < 30
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "cancer.py").write_text(code)
    exit_code, _, err = run_cli(
        "--repository",
        tmp_path / "repository",
        "build",
        "--recipes",
        tmp_path / "recipes",
        "--forms",
        "none",
        "--quiet",
    )
    assert exit_code == 0, err
    entry = json.loads((tmp_path / "repository" / "manifest.json").read_text())["models"]["cancer"]
    assert entry["kind"] == "lightgbm" and "fp32" in entry["variants"]


def test_a_zipmap_output_is_refused_at_import_by_name(run_cli, tmp_path, assert_one_line_error):
    from lightgbm import LGBMClassifier
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType
    from sklearn.datasets import load_wine

    x, y = load_wine(return_X_y=True)
    x = x.astype(np.float32)
    model = LGBMClassifier(n_estimators=5, verbose=-1).fit(x, y)
    # onnxmltools' default: probabilities as a ZipMap (a sequence of maps), which nothing downstream carries.
    onnx.save_model(
        convert_lightgbm(model, initial_types=[("features", FloatTensorType([None, 13]))]), tmp_path / "zip.onnx"
    )
    np.savez(tmp_path / "rows.npz", features=x[::10])
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repository",
        "import",
        tmp_path / "zip.onnx",
        "--name",
        "zip",
        "--task",
        "classification",
        "--inputs",
        tmp_path / "rows.npz",
        "--quiet",
    )
    assert code == 2
    assert_one_line_error(
        err, "zip.onnx: output 'probabilities' is a sequence of maps (a ZipMap's); expected a tensor", "zipmap=False"
    )


def test_lightgbm_categorical_splits_convert_on_integer_codes():
    from lightgbm import LGBMRegressor
    from sklearn.datasets import load_diabetes

    from onnxport.convert.intake.export import export
    from onnxport.recipe import SourceModel

    x, y = load_diabetes(return_X_y=True)
    codes = np.random.default_rng(0).integers(0, 5, len(x))
    features = np.column_stack([x, codes]).astype(np.float32)  # the category as its integer code, in float32
    model = LGBMRegressor(n_estimators=30, verbose=-1, random_state=0).fit(
        features, y + 30 * codes, categorical_feature=[10]
    )
    source = SourceModel(
        framework="lightgbm",
        model=model,
        input_names=["features"],
        output_names=["prediction"],
        dynamic_axes={},
        sample_inputs={"features": features[:1]},
        golden_inputs={"features": features},
        calibration_inputs=[],
        run=model.predict,
    )
    converted = export(source, 17)
    trees = next(n for n in converted.graph.node if n.op_type == "TreeEnsembleRegressor")
    modes = next(a for a in trees.attribute if a.name == "nodes_modes").strings
    assert b"BRANCH_EQ" in modes  # the category splits, one equality test per category
    got = runtime.run(runtime.create_session(converted.SerializeToString()), {"features": features})["prediction"]
    np.testing.assert_allclose(got.ravel(), model.predict(features), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize(
    ("library", "suffix", "loader"),
    [
        ("lightgbm", "txt", "load_breast_cancer"),
        ("xgboost", "json", "load_wine"),
        ("xgboost", "ubj", "load_diabetes"),
    ],
)
def test_a_model_file_saved_by_the_library_imports_checked_against_it(run_cli, tmp_path, library, suffix, loader):
    import sklearn.datasets

    x, y = getattr(sklearn.datasets, loader)(return_X_y=True)
    x = x.astype(np.float32)
    regressor = loader == "load_diabetes"
    if library == "lightgbm":
        from lightgbm import LGBMClassifier, LGBMRegressor

        model = (LGBMRegressor if regressor else LGBMClassifier)(n_estimators=10, verbose=-1).fit(x, y)
        model.booster_.save_model(tmp_path / f"model.{suffix}")
    else:
        from xgboost import XGBClassifier, XGBRegressor

        model = (XGBRegressor if regressor else XGBClassifier)(n_estimators=10, n_jobs=1).fit(x, y)
        model.save_model(tmp_path / f"model.{suffix}")
    rows = x[::7]
    np.savez(tmp_path / "rows.npz", features=rows)
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repository",
        "import",
        tmp_path / f"model.{suffix}",
        "--name",
        "mine",
        "--task",
        "regression" if regressor else "classification",
        "--inputs",
        tmp_path / "rows.npz",
        "--forms",
        "none",
        "--quiet",
    )
    assert code == 0, err
    entry = json.loads((tmp_path / "repository" / "manifest.json").read_text())["models"]["mine"]
    assert entry["facts"]["converted_from"] == f"{library} model file"
    assert entry["facts"]["golden_data"].endswith(f"expected outputs from {library}")
    # The feature count comes from the file.
    assert entry["inputs"] == [{"name": "features", "dtype": "float32", "shape": ["batch", x.shape[1]]}]
    fp32 = (tmp_path / "repository" / entry["variants"]["fp32"]["file"]).read_bytes()
    got = runtime.run(runtime.create_session(fp32, label="mine"), {"features": rows}, label="mine")
    if regressor:
        np.testing.assert_allclose(got["prediction"].ravel(), model.predict(rows), rtol=1e-5)
    else:
        assert (got["label"] == model.predict(rows)).all()
        np.testing.assert_allclose(got["probabilities"], model.predict_proba(rows), atol=1e-6)


def test_a_build_without_lightgbm_names_the_trees_extra(tmp_path, assert_one_line_error):
    import subprocess
    import sys

    from onnxport.install_source import installed_from

    # A fresh interpreter in which LightGBM cannot be imported, as without the extra.
    script = textwrap.dedent(f"""
        import sys
        sys.modules["lightgbm"] = None
        from onnxport import cli
        sys.exit(cli.main(["--repository", {str(tmp_path / "repository")!r}, "build", "--recipes", {str(TREES)!r},
                           "--forms", "none", "--quiet", "lgbm_cancer"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert_one_line_error(done.stderr, f"onnxport build needs LightGBM: {installed_from().pip_install('trees')}")
