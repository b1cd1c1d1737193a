"""server/onnxport/progress.py: a build's steps as a redrawn bar on a terminal, one line per step anywhere else (a
pipe, a log file: `make run > log` was one line of thousands of carriage returns)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from onnxport.convert.build_transaction import STEPS_PER_MODEL
from onnxport.progress import Steps

SERVER = Path(__file__).resolve().parents[1] / "server"


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{SERVER}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _build_args(repository: Path, recipes: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "onnxport",
        "--repository",
        str(repository),
        "build",
        "--recipes",
        str(recipes),
        "--forms",
        "none",
    ]


def test_a_build_piped_prints_one_line_per_step_and_no_carriage_return(tmp_path, recipes_dir):
    done = subprocess.run(
        _build_args(tmp_path / "r", recipes_dir), env=_environment(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr, done.stderr[:500]
    lines = done.stderr.splitlines()
    # Each step, numbered, with the time since the model's build began; then the model's total.
    assert len(lines) == STEPS_PER_MODEL + 1, lines
    assert re.fullmatch(r"tiny: load source model \(1/\d+, 0\.\d s in\)", lines[0]), lines[0]
    assert all(
        re.fullmatch(rf"tiny: .+ \({i}/{STEPS_PER_MODEL}, \d+\.\d s in\)", line) for i, line in enumerate(lines[:-1], 1)
    ), lines
    assert re.fullmatch(r"tiny: done in \d+\.\d s", lines[-1]), lines[-1]


def test_a_build_on_a_terminal_redraws_one_bar(tmp_path, recipes_dir):
    leader, follower = pty.openpty()
    # A terminal of 24 rows and 100 columns (a new pty has 0 columns, and tqdm draws nothing in 0 columns).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        _build_args(tmp_path / "r", recipes_dir), env=_environment(), stdout=subprocess.DEVNULL, stderr=follower
    ) as build:
        os.close(follower)
        said = b""
        while True:  # read as it comes: a full terminal buffer would stop the build
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the build closed its end
                break
            if not chunk:
                break
            said += chunk
        code = build.wait(timeout=600)
    os.close(leader)
    assert code == 0, said.decode(errors="replace")
    assert b"\r" in said and b"tiny: golden data" in said, said[:500]
    assert b"done in" not in said  # the bar, not the lines


def test_quiet_steps_print_nothing_but_still_know_the_step():
    stream = io.StringIO()
    with Steps("m", 3, enabled=False, file=stream) as steps:
        steps.step("export")
    assert stream.getvalue() == "" and steps.label == "export"


def test_a_failed_job_does_not_say_done():
    stream = io.StringIO()
    try:
        with Steps("m", 3, file=stream) as steps:
            steps.step("export")
            raise RuntimeError("export broke")
    except RuntimeError:
        pass
    assert stream.getvalue().splitlines() == ["m: export (1/3, 0.0 s in)"]
