"""The browser side of a wheel: our web app and library, and the few npm files they load, copied into the package.

Run by the build backend (onnxport_build.py, beside this file) when a wheel is built (never for an editable
install, which serves the checkout's web/ and node_modules/ directly); `python build_backend/web_bundle.py OUT`
writes the same folder by hand.

What goes in (OUT is onnxport/_web/ inside the wheel; project.PACKAGED_WEB reads it):
  web/                  web/app, web/lib, web/examples, web/index.html, web/style.css, web/favicon.svg
  ort/                  the onnxruntime-web bundles web/lib/choice/runtimes.js names, the loader (.mjs) each bundle
                        imports and the .wasm each loader fetches: found by reading those files, so a new
                        onnxruntime-web release that renames them is followed, and one we cannot trace fails
  vendor/tokenizers/    the files web/index.html's import map or web/lib's modules name under /vendor/tokenizers/
                        (the library imports the tokenizer by that URL for model.pipeline)
  vendor/chartjs/       the files they name under /vendor/chartjs/
  SOURCES.json          for each npm package: version, the lock's integrity, and every file taken with its sha256

How the npm files are checked: package-lock.json's `integrity` is the sha512 of the package's npm tarball,
not of any file in it, so the files are taken out of the tarball itself, after its sha512 matched the lock.
The tarball comes from npm's own content-addressed cache (where `npm ci` left it; `npm cache add` fetches it
when missing). node_modules is never read: a file edited there cannot reach a wheel.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEB_PARTS = ["app", "lib", "examples", "index.html", "style.css", "favicon.svg"]
# Where the server publishes each npm package's dist folder (serving/http/web.py's routes) -> our folder for it.
ORT = "onnxruntime-web"
VENDOR = {
    "/vendor/tokenizers/": ("@huggingface/tokenizers", "vendor/tokenizers"),
    "/vendor/chartjs/": ("chart.js", "vendor/chartjs"),
}
LOADER = re.compile(r"ort-wasm[\w.-]*?\.mjs")
WASM = re.compile(r"ort-wasm[\w.-]*?\.wasm")
BUNDLE = re.compile(r"""\bbundle:\s*["']([^"']+)["']""")
IMPORT_MAP = re.compile(r'<script type="importmap">(.*?)</script>', re.DOTALL)


class BundleError(Exception):
    """The web files cannot be gathered or do not match the lock: the wheel must not be built."""


def write(out: Path, root: Path = ROOT) -> dict:
    """Fill `out` (made anew) with the web files; returns what SOURCES.json records."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for part in WEB_PARTS:
        source = root / "web" / part
        if source.is_dir():
            shutil.copytree(source, out / "web" / part, ignore=shutil.ignore_patterns("node_modules", "*.tgz"))
        else:
            (out / "web").mkdir(exist_ok=True)
            shutil.copy2(source, out / "web" / part)
    lock = json.loads((root / "package-lock.json").read_text())
    sources = {}
    with _Tarball(lock, ORT) as ort:
        sources[ORT] = ort.record(_ort_files(root, ort), out / "ort")
    for prefix, (package, folder) in VENDOR.items():
        with _Tarball(lock, package) as tarball:
            sources[package] = tarball.record(_named_files(root, prefix), out / folder)
    (out / "SOURCES.json").write_text(json.dumps(sources, indent=2, sort_keys=True) + "\n")
    return sources


def _ort_files(root: Path, ort: _Tarball) -> list[str]:
    bundles = sorted(set(BUNDLE.findall((root / "web" / "lib" / "choice" / "runtimes.js").read_text())))
    if not bundles:
        raise BundleError('web/lib/choice/runtimes.js names no onnxruntime-web bundle (`bundle: "..."`)')
    files = []
    for bundle in bundles:
        loaders = sorted(set(LOADER.findall(ort.text(bundle))))
        if not loaders:
            raise BundleError(f"{ORT} {bundle}: names no ort-wasm*.mjs loader; cannot tell which files it loads")
        for loader in loaders:
            wasm = sorted(set(WASM.findall(ort.text(loader))))
            if not wasm:
                raise BundleError(f"{ORT} {loader}: names no .wasm file")
            files += [bundle, loader, *wasm]
    return sorted(set(files))


def _named_files(root: Path, prefix: str) -> list[str]:
    """The files under `prefix` that the app's import map names, or that a web/lib module names by URL."""
    match = IMPORT_MAP.search((root / "web" / "index.html").read_text())
    if match is None:
        raise BundleError("web/index.html has no import map")
    urls = json.loads(match.group(1))["imports"].values()
    files = {url[len(prefix) :] for url in urls if url.startswith(prefix)}
    by_url = re.compile(re.escape(prefix.lstrip("/")) + r"([\w.-]+)")
    for module in sorted((root / "web" / "lib").rglob("*.js")):
        files |= set(by_url.findall(module.read_text()))
    if not files:
        raise BundleError(f"neither web/index.html's import map nor web/lib names a file under {prefix}")
    return sorted(files)


class _Tarball:
    """One npm package's tarball from npm's cache, checked against package-lock.json's integrity."""

    def __init__(self, lock: dict, package: str) -> None:
        entry = lock.get("packages", {}).get(f"node_modules/{package}")
        if not entry or "integrity" not in entry:
            raise BundleError(f"package-lock.json has no integrity for {package}")
        self.package, self.version, self.integrity = package, entry["version"], entry["integrity"]
        algorithm, _, digest = self.integrity.partition("-")
        if algorithm != "sha512":
            raise BundleError(f"package-lock.json: {package}'s integrity is {algorithm}; expected sha512")
        self.digest = base64.b64decode(digest)
        data = _cached(algorithm, self.digest) or _fetch(package, self.version, algorithm, self.digest)
        if hashlib.sha512(data).digest() != self.digest:
            raise BundleError(
                f"{package}@{self.version}: the npm tarball's sha512 is not package-lock.json's "
                f"integrity {self.integrity}"
            )
        self.archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")

    def __enter__(self) -> _Tarball:
        return self

    def __exit__(self, *exc: object) -> None:
        self.archive.close()

    def read(self, name: str) -> bytes:
        try:
            member = self.archive.extractfile(f"package/dist/{name}")
        except KeyError:
            member = None
        if member is None:
            raise BundleError(f"{self.package}@{self.version} has no dist/{name}")
        return member.read()

    def text(self, name: str) -> str:
        return self.read(name).decode("utf-8", errors="replace")

    def record(self, names: list[str], out: Path) -> dict:
        out.mkdir(parents=True, exist_ok=True)
        files = {}
        for name in names:
            data = self.read(name)
            (out / name).write_bytes(data)
            files[name] = hashlib.sha256(data).hexdigest()
        return {"version": self.version, "integrity": self.integrity, "files": files}


def _cache_folder() -> Path:
    try:
        found = subprocess.run(["npm", "config", "get", "cache"], capture_output=True, text=True, timeout=60)
    except OSError:
        return Path.home() / ".npm"
    return Path(found.stdout.strip() or Path.home() / ".npm")


def _cached(algorithm: str, digest: bytes) -> bytes | None:
    # npm's cache (cacache) stores content under content-v2/<algorithm>/<hex digest split 2/2/rest>.
    hexdigest = digest.hex()
    path = _cache_folder() / "_cacache" / "content-v2" / algorithm / hexdigest[:2] / hexdigest[2:4] / hexdigest[4:]
    return path.read_bytes() if path.is_file() else None


def _fetch(package: str, version: str, algorithm: str, digest: bytes) -> bytes:
    try:
        subprocess.run(["npm", "cache", "add", f"{package}@{version}"], check=True, capture_output=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BundleError(f"{package}@{version} is not in npm's cache and `npm cache add` failed: {exc}") from exc
    data = _cached(algorithm, digest)
    if data is None:
        raise BundleError(f"{package}@{version}: `npm cache add` stored no tarball with package-lock.json's integrity")
    return data


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python build_backend/web_bundle.py OUT")
    try:
        recorded = write(Path(sys.argv[1]))
    except BundleError as error:
        sys.exit(f"web_bundle: {error}")
    print(json.dumps({package: sorted(entry["files"]) for package, entry in recorded.items()}, indent=2))
