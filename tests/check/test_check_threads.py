"""What WebKit's page really has for threads, said alike by the app's header and by `onnxport check`: an isolated
WebKitGTK page has no SharedArrayBuffer unless JavaScriptCore is told (JSC_useSharedArrayBuffer=1, which the
harness sets), and without it no threads, whatever the cores it reports (the header used to say `threads: yes`
from the isolation alone)."""

from __future__ import annotations

import json

import pytest
from small_models import two_model_repository

from onnxport.harness import browser_engines
from onnxport.harness import webkit as webkit_driver

pytestmark = [pytest.mark.slow, pytest.mark.browser]

NO_SHARED_MEMORY = "this browser gives the page no SharedArrayBuffer, which threads need"
READ_HEADER = """async () => {
  const deadline = Date.now() + 60000;
  let shown = document.querySelector('[data-testid=probe-threads]');
  while (!shown && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    shown = document.querySelector('[data-testid=probe-threads]');
  }
  return { text: shown?.textContent ?? null, available: shown?.dataset.available ?? null,
           isolated: self.crossOriginIsolated === true, sharedMemory: typeof SharedArrayBuffer === 'function',
           cores: navigator.hardwareConcurrency };
}"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    if "webkit" not in browser_engines.installed():
        pytest.skip("webkit is not installed here (`make browsers` installs it)")
    return two_model_repository(tmp_path_factory.mktemp("threads"))


def without_shared_memory(monkeypatch) -> None:
    """WebKit as a user starts it: JavaScriptCore's SharedArrayBuffer left off."""
    monkeypatch.setattr(webkit_driver, "ENVIRONMENT", {})
    monkeypatch.delenv("JSC_useSharedArrayBuffer", raising=False)


@pytest.mark.parametrize("shared_memory", [False, True], ids=["no-SharedArrayBuffer", "SharedArrayBuffer"])
def test_the_app_header_says_the_threads_the_page_has(repository, serve_repository, monkeypatch, shared_memory):
    if not shared_memory:
        without_shared_memory(monkeypatch)
    base = serve_repository(repository)
    with browser_engines.open_browser("webkit", webgpu=False) as browser:
        page = browser.new_page()
        page.goto(f"{base}/")
        got = page.evaluate(READ_HEADER, timeout_s=90)
    print(f"\nwebkit header: {got}")
    assert got["isolated"] is True and got["sharedMemory"] is shared_memory, got
    assert got["available"] == ("true" if shared_memory else "false"), got
    if shared_memory:
        assert got["text"].startswith(
            f"threads: yes, up to {min(4, got['cores'])} threads (the browser reports {got['cores']} cores"
        ), got["text"]
    else:
        assert got["text"] == f"threads: no ({NO_SHARED_MEMORY})", got["text"]


@pytest.mark.parametrize("shared_memory", [False, True], ids=["no-SharedArrayBuffer", "SharedArrayBuffer"])
def test_the_check_says_the_threads_webkits_page_has(check_cli, repository, monkeypatch, tmp_path, shared_memory):
    if not shared_memory:
        without_shared_memory(monkeypatch)
    report_path = tmp_path / "report.json"
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "mlp-a",
        "--browsers",
        "webkit",
        "--runtimes",
        "wasm",
        "--json",
        report_path,
    )
    assert code == 0, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    identity = report["browsers"]["webkit"]
    assert (identity["cross_origin_isolated"], identity["shared_memory"]) == (True, shared_memory), identity
    line = next(line for line in out.splitlines() if line.startswith(f"webkit {identity['version']}: "))
    rows = [r for r in report["results"] if r.get("browser") == "webkit" and r["runtime"] == "wasm"]
    if shared_memory:
        assert identity["threads"]["most"] > 1 and f"threads: up to {identity['threads']['most']} threads" in line
    else:
        assert identity["threads"] == {"most": 1, "why": f"one thread: {NO_SHARED_MEMORY}"}, identity
        assert line.endswith(f"threads: one thread: {NO_SHARED_MEMORY})"), line
        assert {r["identity"]["threads"] for r in rows} == {1}, rows  # what the rows ran on agrees
