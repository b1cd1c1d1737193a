"""The bench page's own origin: a small static server, cross-origin isolated so that WebAssembly gets threads.

It serves the page (scripts/bench/peer/web/), Transformers.js and onnxruntime-web from
scripts/bench/peer/node_modules, and the model folder, under /peer/. onnxport's side comes from `onnxport serve`
on its own port, which lists this origin in --cors-origins: the library's documented way onto another origin
(docs/guide/browser-library.md), so neither side's bytes pass through a proxy.
Every answer carries COOP/COEP (threads) and CORP.
"""

from __future__ import annotations

import http.server
import mimetypes
import threading
from functools import partial
from pathlib import Path
from urllib.parse import unquote, urlsplit

ISOLATION = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
}
TYPES = {
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".onnx": "application/octet-stream",
    ".html": "text/html; charset=utf-8",
}


class _Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, mounts: dict[str, Path], **kwargs):
        self.mounts = mounts
        super().__init__(*args, directory="/nonexistent", **kwargs)

    def translate_path(self, path: str) -> str:
        """/peer/<mount>/<rest> -> the mount's file; anything outside a mount or climbing out of it -> nowhere."""
        path = unquote(urlsplit(path).path)
        for prefix, root in sorted(self.mounts.items(), key=lambda m: -len(m[0])):
            if path == prefix.rstrip("/") or path.startswith(prefix):
                rest = path[len(prefix) :] or "index.html"
                target = (root / rest).resolve()
                if target == root.resolve() or root.resolve() in target.parents:
                    return str(target)
        return "/nonexistent/404"

    def guess_type(self, path) -> str:
        return TYPES.get(Path(str(path)).suffix, mimetypes.guess_type(str(path))[0] or "application/octet-stream")

    def end_headers(self) -> None:
        for name, value in ISOLATION.items():
            self.send_header(name, value)
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args) -> None:
        pass  # quiet: the bench prints its own table


class StaticServer:
    """Serves `mounts` ({"/peer/ort/": folder, ...}) on 127.0.0.1:`port` in a thread until close()."""

    def __init__(self, mounts: dict[str, Path], port: int):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), partial(_Handler, mounts=mounts))
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="peer-static", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
