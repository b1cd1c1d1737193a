"""Transformers.js from npm, on demand, into scripts/bench/peer/node_modules (its own package.json and lock): the bench
needs it, make check and make test do not, so CI never downloads it.

`npm ci --ignore-scripts`: onnxruntime-node (a dependency of the package, unused in a browser) would otherwise
run an install script that downloads binaries from outside the registry."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

PACKAGE = "@huggingface/transformers"


def ensure(folder: Path) -> None:
    """Installs the locked packages unless the locked Transformers.js and onnxruntime-web are there already."""
    if _installed(folder):
        return
    npm = shutil.which("npm")
    if not npm:
        raise SystemExit("peer_bench: npm is not on PATH (Node 20 and npm are needed to install Transformers.js)")
    print(f"npm ci --prefix {folder} (Transformers.js for the bench only)", flush=True)
    done = subprocess.run(
        [npm, "ci", "--prefix", str(folder), "--ignore-scripts", "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not _installed(folder):
        last = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SystemExit(
            f"peer_bench: npm could not install {PACKAGE} (is the npm registry reachable?): " + " | ".join(last)
        )


def _installed(folder: Path) -> bool:
    lock = json.loads((folder / "package-lock.json").read_text())["packages"]
    for name in (PACKAGE, "onnxruntime-web"):
        manifest = folder / "node_modules" / name / "package.json"
        locked = lock[f"node_modules/{name}"]["version"]
        if not manifest.exists() or json.loads(manifest.read_text())["version"] != locked:
            return False
    return True
