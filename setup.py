"""setuptools' build hook: a wheel carries the browser side too (the web app, the library and the npm files they
load, checked against package-lock.json), in onnxport/_web/. scripts/web_bundle.py says what goes in and how it is
checked. Everything else about the package is in pyproject.toml."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithWeb(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install serves the checkout's web/ and node_modules/ as they are
            return
        spec = importlib.util.spec_from_file_location("web_bundle", HERE / "scripts" / "web_bundle.py")
        web_bundle = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(web_bundle)
        try:
            web_bundle.write(Path(self.build_lib) / "onnxport" / "_web", HERE)
        except web_bundle.BundleError as exc:
            raise SystemExit(f"onnxport wheel: {exc}") from exc


setup(cmdclass={"build_py": BuildWithWeb})
