"""`onnxport init DIR`: a new project folder of one's own, a recipe template and a short README in it.

Installed onnxport takes recipes from ./models and keeps its repository in ./onnxport-repository (project.py,
serving/config/folders.py), so in the folder this writes, `onnxport build` and `onnxport serve` need no options.
"""

from __future__ import annotations

from pathlib import Path

from onnxport.errors import UsageError
from onnxport.install_source import Source, installed_from

RECIPE = '''"""example: a scikit-learn neural network that reads handwritten digits, a recipe to copy. The file name
is the model's name. `onnxport build` exports it to ONNX, checks the export against scikit-learn, makes its
variants (fp16, int8 three ways, 4-bit weights), judges each against fp32 on the golden inputs below and
writes the ones that pass into ./onnxport-repository. Needs onnxport's sklearn extra (the README's pip line;
a PyTorch model needs the pytorch extra and framework="pytorch")."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

SEED = 0
# Two hidden layers: about 50,000 weights (200 KB in fp32), enough for fp16, int8 and 4-bit files to be
# smaller than fp32. A model of a few hundred weights gains nothing from them, and the build skips them.
HIDDEN = (256, 128)


def load() -> SourceModel:
    # Imported here, not at the top: listing recipes loads no framework.
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits  # installed with scikit-learn

    images, labels = load_digits(return_X_y=True)  # 1,797 8x8 grey images, bundled with scikit-learn
    pixels = (images / 16.0).astype(np.float32)  # 0..16 -> 0..1, one row of 64 per image
    train_x, test_x, train_y, test_y = train_test_split(pixels, labels, test_size=0.2, random_state=SEED,
                                                        stratify=labels)
    # One BLAS thread: on matrices this small more threads mostly wait for each other (training took 25 s of
    # CPU on a busy 2-core machine, 1.3 s on one thread), and one thread gives the same weights every time.
    with threadpool_limits(limits=1):
        model = MLPClassifier(hidden_layer_sizes=HIDDEN, max_iter=300, random_state=SEED).fit(train_x, train_y)

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
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},  # the rows the browser and the server are compared on
        calibration_inputs=[{"features": train_x[i:i + 64]} for i in range(0, 512, 64)],  # for static int8
        run=run,
        facts={"dataset": "sklearn.datasets.load_digits", "train_size": len(train_x), "test_size": len(test_x),
               "test_accuracy": float(model.score(test_x, test_y))},
        golden_labels=test_y.astype(np.int64),  # the accuracy column of the build's table
    )


RECIPE = Recipe(
    name="example",
    task="classification",
    description="A handwritten digit 0-9 from 64 pixels, 0..1 (scikit-learn MLP; the onnxport init template).",
    load=load,
    tolerance=Tolerance(abs=1e-5, rel=1e-4),  # scikit-learn computes in float64, the export in float32
    metric_output="probabilities",
    playground="generic",  # the web app's playground feeds it its golden rows (64 fields are too many to type)
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
    return README.format(
        name=name,
        model=MODEL,
        pip_sklearn=source.pip_install("sklearn"),
        pip_browser=source.pip_install("browser"),
        wheel_note="" if source.known else WHEEL_NOTE.format(placeholder=source.location),
    )


def write_project(folder: Path) -> list[Path]:
    """Write FILES into `folder` (new, or an empty folder); the paths written."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(
            f"{folder}: expected a new or empty folder for the project; it "
            f"{'is a file' if not folder.is_dir() else 'has files in it'}"
        )
    written = []
    for relative, text in FILES.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(readme(folder.resolve().name, installed_from()) if relative == "README.md" else text)
        written.append(path)
    return written
