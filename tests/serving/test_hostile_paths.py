"""Every route of the app, walked with names the file system refuses: each answer is a 4xx (or a success), never a 5xx.

The routes come from the app's url_map, so a route added later is walked too. Each variable part of a
route gets, one at a time, hostile values (a 300-byte name, a 5000-byte one, a path past PATH_MAX, `..`,
an encoded NUL, invalid UTF-8, an encoded `../`, non-ASCII, a newline), the others a served value; a path
part gets them also under each folder the served roots hold, so the walk reaches the file lookups. The
folders hold a symbolic link loop and a folder named like a file. Before, a name over 255 bytes under
/web/, /ort/, /vendor/... or a golden data folder was a 500 (OSError: File name too long).
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from relu_server import relu_repository, relu_server  # noqa: F401 - fixtures

from fixtures.servers import buffered_client
from onnxport.serving.app import create_app

HOSTILE = {
    "300-byte name": "a" * 300,
    "5000-byte name": "b" * 5000,
    "path past PATH_MAX": "/".join(["c" * 200] * 25),
    "dot-dot": "..",
    "NUL": "%00",
    "invalid UTF-8": "%ff",
    "encoded ../": "%2e%2e%2f",
    "deep traversal": "../../../../../../etc/passwd",
    "unicode name": "%C3%A9t%C3%A9-\u6f22\u5b57.js",
    "newline": "a%0Ab",
    "symlink loop": "loop",
    "folder as file": "folder",
}
# A served value for each variable name the routes use; another name gets "x".
SERVED = {"model": "relu", "version": "fp32", "relative": "index.html"}
METHODS = ("GET", "HEAD", "POST", "OPTIONS")
VARIABLE = re.compile(r"<(?:(\w+)(?:\([^)]*\))?:)?(\w+)>")


def hostile_folder(root: Path) -> Path:
    """A symlink loop and a folder named like a file, in `root`."""
    (root / "folder").mkdir(parents=True, exist_ok=True)
    loop = root / "loop"
    if not loop.is_symlink():
        loop.symlink_to("loop")
    return root


@pytest.fixture
def walked_app(relu_repository, tmp_path):  # noqa: F811 - the fixture imported above
    web = hostile_folder(tmp_path / "web")
    (web / "index.html").write_text("<!doctype html><title>x</title>")
    hostile_folder(web / "lib")
    debug = hostile_folder(tmp_path / "debug")
    for folder in relu_repository.joinpath("testdata").iterdir():
        hostile_folder(folder)
    hostile_folder(relu_repository / "artifacts")
    settings = {
        "repository": relu_repository,
        "web_root": web,
        "ort_root": web,
        "tokenizers_root": web,
        "chartjs_root": web,
        "debug_root": debug,
    }
    return create_app(settings), [relu_repository, web, debug]


def folders(roots: list[Path]) -> list[str]:
    """Every folder up to two deep under the roots, as a URL path prefix ("" for the roots themselves)."""
    found = {""}
    for root in roots:
        for path in [*root.glob("*"), *root.glob("*/*")]:
            if path.is_dir() and not path.is_symlink():
                found.add(f"{path.relative_to(root).as_posix()}/")
    return sorted(found)


def urls(rule: str, prefixes: list[str]):
    """(what, url) for the rule with each variable hostile in turn, the others served."""
    variables = VARIABLE.findall(rule)
    served = {name: SERVED.get(name, "x") for _, name in variables}
    if not variables:
        yield "as is", rule
    for converter, name in variables:
        for label, value in HOSTILE.items():
            for prefix in prefixes if converter == "path" else [""]:
                values = {**served, name: prefix + value}
                yield f"{name}={prefix}<{label}>", VARIABLE.sub(lambda m: values[m.group(2)], rule)


def test_no_route_answers_a_hostile_path_with_a_5xx(walked_app):
    app, roots = walked_app
    client = buffered_client(app)
    prefixes = folders(roots)
    failures, walked, rules = [], 0, set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        rules.add(rule.rule)
        for method in sorted(set(METHODS) & (rule.methods or set())):
            for what, url in urls(rule.rule, prefixes):
                body = b"{}" if method == "POST" else None
                response = client.open(url, method=method, data=body, content_type="application/json")
                walked += 1
                if response.status_code >= 500:
                    failures.append(f"{method} {rule.rule} {what}: {response.status_code} {response.data[:200]!r}")
                elif response.status_code >= 400 and method != "HEAD":
                    error = json.loads(response.data)
                    assert list(error) == ["error"], (method, url[:200], error)
    assert not failures, f"{len(failures)} of {walked} requests got a 5xx:\n" + "\n".join(failures[:40])
    # The walk reached the routes that serve files (a regression that empties url_map would pass vacuously).
    assert {
        "/web/<path:relative>",
        "/ort/<path:relative>",
        "/repository/<path:relative>",
        "/debug/<path:relative>",
        "/v2/models/<model>/infer",
    } <= rules, rules


def raw_get(base_url: str, target: bytes) -> tuple[int, bytes]:
    """GET `target` as raw bytes in the request line (what no client library sends): (status, body)."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize(
    "target",
    [
        b"/web/" + b"a" * 300,
        b"/ort/" + b"a" * 5000,
        b"/vendor/chartjs/" + b"a" * 300,
        b"/vendor/tokenizers/" + b"a" * 300,
        b"/web/\xff\xfe",
        b"/web/a%00b",
        b"/repository/artifacts/" + b"a" * 300,
        b"/web/" + b"/".join([b"c" * 200] * 25),
    ],
)
def test_a_real_server_answers_a_name_the_file_system_refuses_with_a_4xx(relu_server, target):  # noqa: F811
    status, body = raw_get(relu_server, target)
    assert status in (400, 404), body[:300]
    assert list(json.loads(body)) == ["error"]
