"""Start and stop `python -m onnxport serve ...` subprocesses: a free port, a log file, a readiness probe."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from onnxport.errors import OnnxportError
from onnxport.project import PROJECT_ROOT

READY_PROBE = "/v2/health/ready"


class ServerNotReady(OnnxportError):
    """The server exited, or its probe never answered 200 in time; the message ends with its log."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (free when asked; bind it soon)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(overrides: Mapping[str, str] | None = None, *, inherit_onnxport: bool = True) -> dict[str, str]:
    """os.environ plus `overrides`, with unbuffered output (the log is read while the server runs).

    inherit_onnxport=False drops the caller's ONNXPORT_* variables first, so that only
    `overrides` configure the server.
    """
    environment = {k: v for k, v in os.environ.items() if inherit_onnxport or not k.startswith("ONNXPORT_")}
    environment.update(overrides or {})
    environment["PYTHONUNBUFFERED"] = "1"
    return environment


@dataclass
class ServerProcess:
    """A started `onnxport` subprocess, where it answers and where its output goes."""

    process: subprocess.Popen
    base_url: str
    log_path: Path

    def log(self, tail: int | None = None) -> str:
        """What the server printed so far (the last `tail` characters)."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-tail:] if tail else text

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds; waits for the process either way."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(
    args: Sequence[str],
    *,
    port: int,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    probe: str = READY_PROBE,
    timeout: float = 60.0,
    log_tail: int | None = None,
) -> ServerProcess:
    """Start `python -m onnxport ARGS` in the project folder and wait until GET probe answers 200.

    The caller makes the server listen on 127.0.0.1:`port` (--port, ONNXPORT_PORT or a config
    file); `env` is its whole environment (default: server_environment()); stdout and stderr go
    to log_path. If the process exits, or the probe is not 200 within `timeout` seconds, the
    server is stopped and ServerNotReady carries its log (the last `log_tail` characters).
    """
    command = f"onnxport {' '.join(map(str, args))}"
    log_path = Path(log_path)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "onnxport", *map(str, args)],
            cwd=PROJECT_ROOT,
            env=dict(env) if env is not None else server_environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = ServerProcess(process=process, base_url=f"http://127.0.0.1:{port}", log_path=log_path)
    try:
        _wait_ready(server, command, probe, timeout, log_tail)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: ServerProcess, command: str, probe: str, timeout: float, log_tail: int | None) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        if server.process.poll() is not None:
            raise ServerNotReady(
                f"`{command}` exited with {server.process.returncode} before it was ready; "
                f"its log:\n{server.log(log_tail)}"
            )
        status, last = _probe(server.base_url + probe)
        if status == 200:
            return
        if time.monotonic() > deadline:
            raise ServerNotReady(
                f"`{command}`: GET {server.base_url}{probe} not 200 after {timeout:.0f} s "
                f"(last: {last}); its log:\n{server.log(log_tail)}"
            )
        time.sleep(0.1)


def _probe(url: str) -> tuple[int | None, str]:
    """(HTTP status or None, a description of the answer) of one GET."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, f"HTTP {exc.code}: {exc.read()[:200]!r}"
    except (OSError, http.client.HTTPException, ValueError) as exc:  # nothing listening yet, a reset, a timeout
        return None, repr(exc)


@contextlib.contextmanager
def running_server(
    repository: Path,
    *,
    debug_root: Path | None = None,
    tolerances_file: Path | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 60,
    serve_args: Sequence[str] = (),
    stop_timeout: float = 10,
) -> Iterator[str]:
    """The base URL of `onnxport serve [serve_args]` on `repository` and a free port, for a check or a bench;
    stopped afterwards (a Ray engine's cluster with it).

    The caller's environment is passed on (ONNXPORT_* included), then the port, `extra_env` and the options.
    """
    port = free_port()
    overrides = {"ONNXPORT_PORT": str(port), "ONNXPORT_HOST": "127.0.0.1", **(extra_env or {})}
    if tolerances_file is not None:
        overrides["ONNXPORT_TOLERANCES_FILE"] = str(Path(tolerances_file).resolve())
    if debug_root is not None:
        overrides["ONNXPORT_DEBUG_ROOT"] = str(debug_root)
    with tempfile.TemporaryDirectory(prefix="onnxport-serve-") as folder:
        server = start_server(
            # Resolved: the server runs in the project folder, not in the caller's.
            ["serve", "--repository", str(Path(repository).resolve()), *serve_args],
            port=port,
            log_path=Path(folder) / "server.log",
            env=server_environment(overrides),
            timeout=timeout,
            log_tail=2000,
        )
        try:
            yield server.base_url
        finally:
            server.stop(timeout=stop_timeout)
