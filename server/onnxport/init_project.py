"""`onnxport init DIR`: a new project folder of one's own, a recipe template and a short README in it.

Installed onnxport takes recipes from ./models and keeps its repository in ./onnxport-repository (project.py,
serving/config.py), so in the folder this writes, `onnxport build` and `onnxport serve` need no options.
"""

from __future__ import annotations

from pathlib import Path

from onnxport.errors import UsageError
from onnxport.install_source import Source, installed_from

RECIPE = '''"""example: a scikit-learn classifier, the smallest recipe. Copy this file to add a model: the file name is
the model's name. `onnxport build` exports it to ONNX, checks the export against scikit-learn, makes its
variants (fp16, int8) and writes them into ./onnxport-repository. Needs onnxport's sklearn extra (the
README's pip line; a PyTorch model needs the pytorch extra and framework="pytorch")."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

SEED = 0


def load() -> SourceModel:
    # Imported here, not at the top: listing recipes loads no framework.
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(SEED)
    features = rng.normal(size=(300, 4)).astype(np.float32)
    labels = (features[:, 0] + 0.5 * features[:, 1] > 0).astype(np.int64)
    model = LogisticRegression().fit(features[:200], labels[:200])

    def run(feeds):  # the reference every export is measured against
        x = feeds["features"]
        return {"label": model.predict(x).astype(np.int64),
                "probabilities": model.predict_proba(x).astype(np.float32)}

    return SourceModel(
        framework="sklearn",
        model=model,
        input_names=["features"],
        output_names=["label", "probabilities"],
        dynamic_axes={"features": {0: "batch"}, "label": {0: "batch"}, "probabilities": {0: "batch"}},
        sample_inputs={"features": features[200:201]},
        golden_inputs={"features": features[200:]},  # the rows the browser and the server are compared on
        calibration_inputs=[{"features": features[i:i + 50]} for i in range(0, 200, 50)],  # for static int8
        run=run,
        golden_labels=labels[200:],
    )


RECIPE = Recipe(
    name="example",
    task="classification",
    description="A logistic regression on four synthetic features (the onnxport init template).",
    load=load,
    tolerance=Tolerance(abs=1e-5, rel=1e-4),  # scikit-learn computes in float64, the export in float32
    metric_output="probabilities",
    playground="tabular",
)
'''

# The template's model: the recipe's file name (models/example.py) is the model's name.
MODEL = "example"

README = """# {name}

An onnxport project: recipes in `models/`, the built models in `onnxport-repository/` (both relative to
this folder; `--repository` or `ONNXPORT_REPOSITORY` moves the latter).
{wheel_note}
```sh
{pip_sklearn}  # scikit-learn for the template; [pytorch] for PyTorch
onnxport build  # models/*.py -> onnxport-repository/
onnxport serve  # http://127.0.0.1:8000/: the web app, the V2 API, the files
```

<http://127.0.0.1:8000/web/examples/index.html?model={model}> runs the template's model in your browser.
In another terminal, in this folder: a model of your own, and the check in browsers.

```sh
onnxport import model.onnx --name mine  # an .onnx file of yours (or an ONNX test directory)
{pip_browser}  # Playwright; the browsers are the system's
onnxport check  # each served variant in each installed browser, against the server
```

A page of yours on another origin needs it allowed, e.g. `onnxport serve --cors-origins http://localhost:5173`;
without it Chromium stops at the library's import (`Failed to fetch dynamically imported module`).
"""

# When pip recorded no wheel (or it is gone), the commands name install_source.placeholder() and say so.
WHEEL_NOTE = "\n`{placeholder}` below stands for the onnxport wheel you have: onnxport is on no package index.\n"

FILES = {"README.md": README, f"models/{MODEL}.py": RECIPE}


def readme(name: str, source: Source) -> str:
    """The project's README: its commands name the wheel (or folder) this onnxport was installed from."""
    return README.format(name=name, model=MODEL, pip_sklearn=source.pip_install("sklearn"),
                         pip_browser=source.pip_install("browser"),
                         wheel_note="" if source.known else WHEEL_NOTE.format(placeholder=source.location))


def write_project(folder: Path) -> list[Path]:
    """Write FILES into `folder` (new, or an empty folder); the paths written."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"{folder}: expected a new or empty folder for the project; it "
                         f"{'is a file' if not folder.is_dir() else 'has files in it'}")
    written = []
    for relative, text in FILES.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(readme(folder.resolve().name, installed_from()) if relative == "README.md" else text)
        written.append(path)
    return written
