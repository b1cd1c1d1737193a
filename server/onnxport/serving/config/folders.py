"""Where the folder settings point by default: a checkout's own folders, or an installed package's copies."""

from __future__ import annotations

from pathlib import Path

from onnxport.project import CHECKOUT, PACKAGED_WEB

# The defaults: in a checkout, its own folders (`make run`); installed, the package's copy of the browser side
# and a repository in the working folder (relative: resolved where the command runs). project.py tells which.
if CHECKOUT is not None:
    DEFAULT_REPOSITORY = CHECKOUT / "models" / ".repository"
    WEB_ROOT = CHECKOUT / "web"
    ORT_ROOT = CHECKOUT / "node_modules" / "onnxruntime-web" / "dist"
    TOKENIZERS_ROOT = CHECKOUT / "node_modules" / "@huggingface" / "tokenizers" / "dist"
    CHARTJS_ROOT = CHECKOUT / "node_modules" / "chart.js" / "dist"
else:
    DEFAULT_REPOSITORY = Path("onnxport-repository")
    WEB_ROOT = PACKAGED_WEB / "web"
    ORT_ROOT = PACKAGED_WEB / "ort"
    TOKENIZERS_ROOT = PACKAGED_WEB / "vendor" / "tokenizers"
    CHARTJS_ROOT = PACKAGED_WEB / "vendor" / "chartjs"
