"""`npm pack` of the browser library's package (web/lib), run on a copy so that no test writes into the
checkout (the prepack script writes the declarations into the package folder, postpack removes them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LIBRARY = PROJECT_ROOT / "web" / "lib"
# tsc (typescript) for the prepack script: a devDependency of the checkout's package.json.
NODE_BIN = PROJECT_ROOT / "node_modules" / ".bin"


def pack(workdir: Path, *, dry_run: bool) -> dict:
    """`npm pack --json` of a copy of web/lib made in workdir: npm's record of the package (name, size,
    unpackedSize, files, filename); without dry_run the tarball is workdir / record["filename"]."""
    copy = workdir / "onnxport-web"
    shutil.copytree(LIBRARY, copy, ignore=shutil.ignore_patterns("types", "*.tgz", "node_modules"))
    env = {
        **os.environ,
        "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
    }
    command = ["npm", "pack", "--json", "--pack-destination", str(workdir), *(["--dry-run"] if dry_run else [])]
    done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"npm pack of web/lib failed (exit {done.returncode}):\n{done.stderr[-4000:]}"
    [record] = json.loads(done.stdout)
    return record
