"""`onnxport serve`'s listening options on real server processes: --port (0 to 65535; 0 takes any free
port and prints it), --host, --cors-origins (the cors_origins setting's rule), and `make run HOST=...
PORT=...` beside ONNXPORT_PORT. A bad value exits 2 with one line before anything listens; every
command runs as its own process, so a check that went missing would fail on the timeout, not hang."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request

import pytest

from onnxport.harness.process import ServerProcess, free_port, server_environment
from onnxport.project import PROJECT_ROOT
from onnxport.serving.config import listen_host, port_number

# Answers 200 with no model in the repository (ready waits for models), on the /v2/ path CORS covers.
LIVE = "/v2/health/live"
ORIGIN_RULE = "expected scheme://host[:port] with no path"


def onnxport(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`onnxport ARGS` as a process configured by `env` only (the suite's ONNXPORT_* are not passed on)."""
    return subprocess.run(
        [sys.executable, "-m", "onnxport", *map(str, args)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=server_environment(env, inherit_onnxport=False),
    )


def get(url: str, origin: str | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Origin": origin} if origin else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers)


@pytest.fixture
def repository(tmp_path):
    return tmp_path / "repository"  # none yet: the server still answers LIVE


@pytest.mark.parametrize("text, port", [("0", 0), ("8001", 8001), (" 65535 ", 65535), (8002, 8002)])
def test_the_port_rule_takes_0_to_65535(text, port):
    assert port_number(text) == port


@pytest.mark.parametrize("value", ["99999", "65536", "-1", "+80", "8000.0", "", "http", "٣", True, 70000, 8.0])
def test_the_port_rule_refuses_the_rest(value):
    with pytest.raises(ValueError, match="0 to 65535"):
        port_number(value)


@pytest.mark.parametrize(
    "host, ok",
    [
        ("127.0.0.1", True),
        (" localhost ", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", True),
        ("", False),
        ("  ", False),
        ("localhost:8000", False),
        ("http://localhost", False),
        ("my host", False),
    ],
)
def test_the_host_rule_checks_the_form(host, ok):
    if ok:
        assert listen_host(host) == host.strip()
    else:
        with pytest.raises(ValueError, match="without scheme or port"):
            listen_host(host)


# The same rules through the command line, each case as a process of its own.
@pytest.mark.parametrize(
    "option, value, fragments",
    [
        ("--port", "99999", ["--port '99999'", "0 to 65535", "0: any free port"]),
        ("--port", "http", ["--port 'http'", "whole number"]),
        ("--host", "", ["--host ''", "host name or IP address", "0.0.0.0"]),
        (
            "--cors-origins",
            "https://a.example,app.example/x",
            ["--cors-origins", "'app.example/x' is not an origin", ORIGIN_RULE],
        ),
    ],
)
def test_a_bad_value_exits_2_with_one_line(assert_one_line_error, repository, option, value, fragments):
    done = onnxport("serve", "--repository", repository, option, value)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert_one_line_error(done.stderr, *fragments)


@pytest.mark.parametrize(
    "env, args, fragments",
    [
        ({"ONNXPORT_PORT": "99999"}, [], ["$ONNXPORT_PORT", "'99999'", "0 to 65535"]),
        ({}, ["--engine", "ray", "--port", "0"], ["port 0", "fixed --port"]),
        ({}, ["--engine", "ray", "--cors-origins", "https://a.example"], ["--cors-origins is for the waitress engine"]),
    ],
)
def test_what_the_engine_or_the_environment_cannot_take_exits_2(
    assert_one_line_error, repository, env, args, fragments
):
    done = onnxport("serve", "--repository", repository, *args, env=env)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert_one_line_error(done.stderr, *fragments)


def wait_for_url(server: ServerProcess, timeout: float = 30) -> str:
    """The URL of the server's `onnxport: serving ... on URL` line, once printed."""
    deadline = time.monotonic() + timeout
    while not (found := re.search(r"^onnxport: serving .* on (http://\S+/)$", server.log(), re.MULTILINE)):
        assert server.process.poll() is None, f"the server exited with {server.process.returncode}:\n{server.log()}"
        assert time.monotonic() < deadline, f"no `serving ... on` line after {timeout} s:\n{server.log()}"
        time.sleep(0.05)
    return found.group(1)


def test_port_0_takes_a_free_port_and_prints_the_one_it_got(repository, tmp_path):
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "onnxport", "serve", "--repository", str(repository), "--port", "0"],
            cwd=PROJECT_ROOT,
            env=server_environment(inherit_onnxport=False),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = ServerProcess(process=process, base_url="", log_path=log_path)
    try:
        url = wait_for_url(server)
        port = int(re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", url).group(1))
        assert port != 0
        assert get(url.rstrip("/") + LIVE)[0] == 200
    finally:
        server.stop()


def test_cors_origins_from_the_command_line_win_over_the_environment(spawn_server, repository):
    port = free_port()
    base = spawn_server(
        [
            "serve",
            "--repository",
            repository,
            "--port",
            port,
            "--cors-origins",
            "https://app.example:443, http://localhost:3000",
        ],
        port,
        env={"ONNXPORT_CORS_ORIGINS": "https://env.example"},
        probe=LIVE,
    )
    # Normalised as browsers send the Origin header: the scheme's default port dropped.
    for origin in ("https://app.example", "http://localhost:3000"):
        status, headers = get(base + LIVE, origin)
        assert (status, headers.get("Access-Control-Allow-Origin")) == (200, origin)
    for origin in ("https://env.example", "https://other.example"):
        assert "Access-Control-Allow-Origin" not in get(base + LIVE, origin)[1], origin


def make_run(*make_args: str, env: dict[str, str] | None = None) -> list[str]:
    """The `onnxport serve ...` line of `make -n run ARGS` (a dry run: nothing is built or started), as
    arguments after the program. A parent make's variables (MAKEFLAGS, under `make check`) and any HOST,
    PORT or ONNXPORT_* of the caller stay out, so only the arguments and `env` reach it."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HOST", "PORT", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
        and not k.startswith("ONNXPORT_")
    }
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", *make_args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**inherited, **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    lines = [shlex.split(line) for line in done.stdout.splitlines() if line.split()[1:2] == ["serve"]]
    assert len(lines) == 1, done.stdout
    assert lines[0][0] == ".venv/bin/onnxport", lines[0]
    return lines[0][1:]


def test_make_run_passes_only_the_host_and_port_given_on_its_command_line():
    # A shell's own HOST and PORT are not make's command line: 127.0.0.1:8000 or ONNXPORT_* decide.
    assert make_run(env={"HOST": "elsewhere.example", "PORT": "1"}) == ["serve"]
    assert make_run("PORT=8001") == ["serve", "--port", "8001"]
    assert make_run("HOST=0.0.0.0") == ["serve", "--host", "0.0.0.0"]


def test_make_run_host_and_port_reach_a_real_server(spawn_server, repository):
    port = free_port()
    args = make_run("HOST=127.0.0.1", f"PORT={port}")
    assert args == ["serve", "--host", "127.0.0.1", "--port", str(port)]
    base = spawn_server(args, port, env={"ONNXPORT_REPOSITORY": str(repository)}, probe=LIVE)
    assert get(base + LIVE)[0] == 200


def test_onnxport_port_reaches_a_real_server_through_make_run(spawn_server, repository):
    port = free_port()
    environment = {"ONNXPORT_PORT": str(port), "ONNXPORT_REPOSITORY": str(repository)}
    args = make_run(env=environment)
    assert args == ["serve"]
    base = spawn_server(args, port, env=environment, probe=LIVE)
    assert get(base + LIVE)[0] == 200
