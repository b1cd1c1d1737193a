"""Where onnxport runs from: its own checkout, or an installed package in someone else's folder.

In a checkout (server/onnxport/ two levels under a pyproject.toml named onnxport, beside web/lib/) the
defaults are the checkout's: models/ for recipes, models/.repository, web/ and node_modules/, as `make run`
and `make test` use them. Installed (a wheel in site-packages), the browser side comes from the package's
own copy (PACKAGED_WEB, written at wheel build time by build_backend/web_bundle.py) and everything the user owns
(recipes, the repository) from the working folder, never from the install location.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# The wheel's copy of the browser side: web/ (app, lib, examples), ort/, vendor/tokenizers/, vendor/chartjs/.
PACKAGED_WEB = PACKAGE / "_web"


def _checkout() -> Path | None:
    """The checkout this package is imported from, or None when it is installed."""
    root = PACKAGE.parents[1]
    pyproject = root / "pyproject.toml"
    if not (pyproject.is_file() and (root / "web" / "lib").is_dir() and (root / "server" / "onnxport") == PACKAGE):
        return None
    try:
        name = tomllib.loads(pyproject.read_text()).get("project", {}).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return root if name == "onnxport" else None


CHECKOUT = _checkout()
# The folder the defaults hang from: the checkout, or the working folder (relative, so it is the working
# folder of the moment a path is used, not of the moment onnxport was imported).
PROJECT_ROOT = CHECKOUT if CHECKOUT is not None else Path(".")
