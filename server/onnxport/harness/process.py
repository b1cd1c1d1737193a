"""Start `onnxport serve` on a free port for a check, and stop it afterwards."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

from onnxport.errors import OnnxportError
from onnxport.project import PROJECT_ROOT



def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_server(repository: Path, *, debug_root: Path | None = None, tolerances_file: Path | None = None,
                   extra_env: dict[str, str] | None = None, timeout: float = 60) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "ONNXPORT_PORT": str(port), "ONNXPORT_HOST": "127.0.0.1", **(extra_env or {})}
    if tolerances_file is not None:
        env["ONNXPORT_TOLERANCES_FILE"] = str(Path(tolerances_file).resolve())
    if debug_root is not None:
        env["ONNXPORT_DEBUG_ROOT"] = str(debug_root)
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            # Resolved: the server runs in the project folder, not in the caller's.
            [sys.executable, "-m", "onnxport", "serve", "--repository", str(Path(repository).resolve())],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, process, log, timeout)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_ready(base: str, process: subprocess.Popen, log, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{base}/v2/health/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)  # polling a port that is not open yet
    log.seek(0)
    output = log.read().decode(errors="replace")[-2000:]
    raise OnnxportError(f"the server did not become ready at {base} within {timeout:.0f} s; its log:\n{output}")
