"""A static file server that is cross-origin isolated (COOP same-origin, COEP require-corp), as a page that
runs WebAssembly threads must be: for the tests and scripts that open a page of their own in Chromium."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path


class IsolatedFiles(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, *args):  # the stdlib's name; test and script output stays readable
        pass


@contextlib.contextmanager
def isolated_files(folder: Path, port: int = 0) -> Iterator[str]:
    """Serve folder on 127.0.0.1:port (0: a free port) while the block runs; yields its URL, with a final /."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                            functools.partial(IsolatedFiles, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
