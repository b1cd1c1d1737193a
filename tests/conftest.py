"""Shared fixtures: the real CLI, a built demo repository, and a folder of tiny recipes."""

from __future__ import annotations

from pathlib import Path

import pytest

from server import cli

# A real recipe, in the pattern of models/iris.py but trained in milliseconds. The
# upper-case constants are knobs: write_recipe() rewrites them to make variants of it
# (another name, other weights, outputs the export cannot match, a load that fails).
# An MLP rather than a LogisticRegression: linear models export to ai.onnx.ml operators
# only, and int8 quantization of those crashes (see test_variants.py).
TINY_RECIPE = '''\
"""A scaler and an 8-unit MLP on iris: the smallest real recipe, for tests."""

import numpy as np

from server.recipe import Recipe, SourceModel, Tolerance

NAME = "tiny"
ALPHA = 1e-4
SHIFT = 0.0
LOAD_ERROR = None


def load() -> SourceModel:
    from sklearn.datasets import load_iris
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    features, labels = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    train_x, test_x = features[0::2], features[1::2]
    model = make_pipeline(
        StandardScaler(),
        MLPClassifier(hidden_layer_sizes=(8,), solver="lbfgs", alpha=ALPHA, max_iter=1000, random_state=0),
    ).fit(train_x, labels[0::2])
    if LOAD_ERROR is not None:
        raise LOAD_ERROR

    def run(feeds):
        x = feeds["features"]
        return {
            "label": model.predict(x).astype(np.int64),
            "probabilities": model.predict_proba(x).astype(np.float32) + np.float32(SHIFT),
        }

    return SourceModel(
        framework="sklearn",
        model=model,
        input_names=["features"],
        output_names=["label", "probabilities"],
        dynamic_axes={"features": {0: "batch"}},
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},
        calibration_inputs=[{"features": train_x[i : i + 25]} for i in range(0, len(train_x), 25)],
        run=run,
        facts={"test_accuracy": float(model.score(test_x, labels[1::2]))},
        golden_labels=labels[1::2].astype(np.int64),
    )


RECIPE = Recipe(
    name=NAME,
    task="classification",
    description="Iris species by a small MLP (test recipe).",
    load=load,
    tolerance=Tolerance(abs_tol=1e-5, rel_tol=1e-4),
    metric_output="probabilities",
)
'''


def tiny_recipe_text(**knobs: str) -> str:
    """TINY_RECIPE with knobs set to Python source, e.g. tiny_recipe_text(SHIFT="1.0")."""
    lines = TINY_RECIPE.splitlines(keepends=True)
    for knob, source in knobs.items():
        index = next(i for i, line in enumerate(lines) if line.startswith(f"{knob} = "))
        lines[index] = f"{knob} = {source}\n"
    return "".join(lines)


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    # onnxruntime's symbolic shape inference drops temporary files into the working folder.
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def run_cli(capsys):
    """Run `onnxport ARGS...` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()  # drop whatever earlier steps printed
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def assert_one_line_error():
    """The failure contract of the CLI: stderr is one line, `onnxport: error: ...`, naming things."""

    def check(err: str, *fragments: str) -> None:
        lines = err.splitlines()
        assert len(lines) == 1, f"expected one stderr line, got {len(lines)}:\n{err}"
        assert lines[0].startswith("onnxport: error: "), lines[0]
        for fragment in fragments:
            assert str(fragment) in lines[0], f"{fragment!r} not in {lines[0]!r}"

    return check


@pytest.fixture
def recipes_dir(tmp_path) -> Path:
    """A recipes folder holding tiny.py; write_recipe() adds more."""
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "tiny.py").write_text(TINY_RECIPE)
    return folder


@pytest.fixture
def write_recipe(recipes_dir):
    """write_recipe(stem, text=None, **knobs) -> path of recipes_dir/stem.py.

    Without text, the tiny recipe with its knobs set (Python source, e.g. SHIFT="1.0");
    NAME defaults to the stem, as a recipe's name must.
    """

    def write(stem: str, text: str | None = None, **knobs: str) -> Path:
        path = recipes_dir / f"{stem}.py"
        path.write_text(text if text is not None else tiny_recipe_text(**{"NAME": repr(stem), **knobs}))
        return path

    return write


@pytest.fixture(scope="session")
def demo_repository(tmp_path_factory) -> Path:
    """Every demo recipe (iris, digits, minilm) built once, through the real CLI."""
    root = tmp_path_factory.mktemp("demo")
    repository = root / "repository"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        code = cli.main(["--repository", str(repository), "build", "--quiet"])
    assert code == 0, "building the demo models failed; see the captured stderr"
    return repository
