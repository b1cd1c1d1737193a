"""The browser library's npm package (web/lib/package.json): `npm pack` gives the library, its generated
type declarations and its README, nothing of the app, the examples or the tests, and no dependency a
bundler would pull in (onnxruntime-web comes from the server at run time)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib

import pytest
from npm_pack import LIBRARY, PROJECT_ROOT, pack

# Far above what the docs state (below) means something else got in (a tarball, a folder of the app).
MAX_PACKED_BYTES = 120_000
# Where the package's size is stated, and how far `npm pack` may drift from it before the figure is stale.
SIZE_STATED = {
    LIBRARY / "README.md": r"about (\d+) kB packed, (\d+) files",
    PROJECT_ROOT / "docs" / "guide" / "browser-library.md": r"about (\d+) kB and (\d+) files",
}
DRIFT = 0.10


def manifest() -> dict:
    return json.loads((LIBRARY / "package.json").read_text())


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> dict:
    """npm's record of `npm pack --dry-run` (the prepack script's tsc runs: a few seconds)."""
    return pack(tmp_path_factory.mktemp("npm-pack"), dry_run=True)


def test_npm_pack_gives_the_library_its_declarations_and_readme_and_nothing_else(packed):
    record = packed
    files = {entry["path"] for entry in record["files"]}
    # dist/ is the bundle pages load without a bundler; npm users bundle the sources themselves.
    modules = {
        path.relative_to(LIBRARY).as_posix()
        for path in LIBRARY.rglob("*.js")
        if "types" not in path.parts and "dist" not in path.parts
    }

    assert record["name"] == "onnxport-web"
    assert modules <= files, f"modules missing from the package: {sorted(modules - files)}"
    declarations = {f"types/{name.removesuffix('.js')}.d.ts" for name in modules}
    assert declarations <= files, f"declarations missing (the prepack script's tsc): {sorted(declarations - files)}"
    assert {"README.md", "package.json"} <= files
    stray = sorted(files - modules - declarations - {"README.md", "package.json"})
    assert not stray, f"files in the package that are not the library: {stray}"
    assert record["size"] <= MAX_PACKED_BYTES, f"{record['size']} bytes packed ({record['entryCount']} files)"


def test_every_entry_of_the_exports_map_is_in_the_package(packed):
    package = manifest()
    files = {entry["path"] for entry in packed["files"]}
    targets = [package["types"]]
    for entry in package["exports"].values():
        targets += entry.values() if isinstance(entry, dict) else [entry]
    assert set(package["exports"]) == {".", "./internal", "./package.json"}
    assert package["exports"]["."]["default"] == "./index.js"
    assert package["exports"]["./internal"]["default"] == "./internal.js"
    missing = [target for target in targets if target.removeprefix("./") not in files]
    assert not missing, f"exports point at files the package lacks: {missing}"


def test_the_package_pulls_in_nothing_and_is_released_with_the_server():
    package = manifest()
    assert not package.get("private"), "a private package cannot be installed from the registry"
    # onnxruntime-web (and its .wasm) are loaded from the server's /ort/ at run time: a dependency on it
    # would put 100 MB into every app's node_modules, and bundlers would go looking for its files.
    for kind in ("dependencies", "peerDependencies", "optionalDependencies", "devDependencies"):
        assert not package.get(kind), f"web/lib/package.json has {kind}: {package[kind]}"
    assert package["type"] == "module"
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert package["version"] == pyproject["project"]["version"], "the library's version is the server's"


@pytest.mark.parametrize("document", SIZE_STATED, ids=lambda path: path.name)
def test_the_documented_package_size_is_what_npm_pack_says(packed, document):
    text = " ".join(document.read_text().split())
    found = re.search(SIZE_STATED[document], text)
    assert found, f"{document.name}: expected the package's size stated as {SIZE_STATED[document]!r}"
    kilobytes, files = int(found[1]), int(found[2])
    measured_kb = packed["size"] / 1000  # npm's "package size" is in kB of 1000 bytes
    print(
        f"{document.name}: {kilobytes} kB, {files} files stated; npm pack: {measured_kb:.1f} kB, "
        f"{packed['entryCount']} files"
    )
    assert abs(kilobytes - measured_kb) <= DRIFT * measured_kb, (
        f"{document.name} says about {kilobytes} kB packed; npm pack --dry-run says {measured_kb:.1f} kB"
    )
    assert abs(files - packed["entryCount"]) <= DRIFT * packed["entryCount"], (
        f"{document.name} says {files} files; npm pack --dry-run says {packed['entryCount']}"
    )


def test_packing_without_typescript_says_what_to_run(tmp_path):
    """A fresh clone has no node_modules: the prepack step names the command that brings tsc, and npm stops."""
    copy = tmp_path / "lib"
    shutil.copytree(LIBRARY, copy, ignore=shutil.ignore_patterns("types", "*.tgz", "node_modules"))
    node = shutil.which("node")
    assert node, "node is not on PATH"
    bare_path = os.pathsep.join(dict.fromkeys([os.path.dirname(node), os.path.dirname(shutil.which("npm") or node)]))
    if shutil.which("tsc", path=bare_path):
        pytest.skip(f"a global tsc is installed beside node ({shutil.which('tsc', path=bare_path)})")
    env = {**os.environ, "PATH": bare_path, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    done = subprocess.run(["npm", "pack", "--dry-run"], cwd=copy, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "tsc: not found" not in done.stderr, done.stderr[-2000:]
    assert "run `npm ci` at the root of the onnxport checkout" in done.stderr, done.stderr[-2000:]
    assert not (copy / "types").exists(), "a failed pack left declarations behind"
