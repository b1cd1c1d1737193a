"""onnxport's build backend: setuptools' own, with one step more for a wheel: the browser side (the web app, the
library and the npm files they load, checked against package-lock.json) in onnxport/_web/. web_bundle.py, beside
this file, says what goes in and how it is checked; pyproject.toml says everything else about the package.

pyproject.toml names this folder as the backend's path, so pip and `python -m build` import both modules from the
source tree as they import any backend, and names BuildWithWeb as setuptools' build_py command.
"""

from pathlib import Path

from setuptools.build_meta import *  # noqa: F403 (the PEP 517 hooks, setuptools' unchanged)
from setuptools.command.build_py import build_py
from web_bundle import BundleError, write


class BuildWithWeb(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install serves the checkout's web/ and node_modules/ as they are
            return
        try:
            write(Path(self.build_lib) / "onnxport" / "_web")
        except BundleError as exc:
            raise SystemExit(f"onnxport wheel: {exc}") from exc
