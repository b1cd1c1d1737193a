"""Browser start-up before and after the web/lib rewrite, measured in one run.

Starts two real `onnxport serve` processes on free ports over the same repository: the old app
(commit 96ea64f's web/ folder, extracted with `git archive` into a temporary folder and served
through ONNXPORT_WEB_ROOT) and the new app (web/ of the work tree). Drives headless system
Chromium (WebAssembly only: no WebGPU flags) through Playwright and prints a markdown table:

1. cold start: a fresh context (empty cache, empty localStorage) opens `#/play/<model>`, draws a
   digit for digits, clicks Run; time from the click to the path text starting with "Ran". Both
   apps also fetch the server reference after the browser run; nothing is subtracted. Times are
   taken inside the page (a click listener and a MutationObserver on performance.now()), so they do
   not include Playwright's polling. Repetitions alternate old/new; medians are reported.
   Warm start: the same context reloads the page (files cached, verdicts remembered) and runs again.
2. first-use verification: in a fresh context on the new server, `client.load(name, {verify})`
   with verify 'always' (choice.verification: ms, bytes) and 'off'; load() start to resolve, medians.

Usage: .venv/bin/python scripts/measure_browser_start.py [--reps 3] [--models iris digits minilm]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from onnxport.harness import chromium as chromium_driver
from onnxport.harness.playground import PAGE_TIMEOUT_MS, RUN_TIMEOUT_MS, by_testid, draw_digit
from onnxport.harness.process import ServerNotReady, free_port, server_environment
from onnxport.harness.process import start_server as start_onnxport_serve

ROOT = Path(__file__).resolve().parent.parent

OLD_COMMIT = "96ea64f"
REPOSITORY = ROOT / "models" / ".repository"

# Installed before the click: the click time and the first time the path says "Ran"/"Failed".
WATCH = """() => {
  window.__t = { click: null, done: null, text: null };
  document.querySelector('[data-testid=run]').addEventListener('click', () => {
    window.__t.click = performance.now();
  }, { capture: true });
  const check = () => {
    const path = document.querySelector('[data-testid=path]');
    const text = path ? path.textContent : '';
    if (window.__t.click !== null && window.__t.done === null && /^(Ran|Failed)/.test(text)) {
      window.__t.done = performance.now(); window.__t.text = text;
    }
  };
  new MutationObserver(check).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""

LOAD = """async ([name, verify]) => {
  const { connect } = await import('/web/lib/index.js');
  const client = connect();
  const started = performance.now();
  const model = await client.load(name, { verify });
  const loadMs = performance.now() - started;
  const c = model.choice;
  const choice = { runtime: c.runtime, variant: c.variant, threads: c.threads, why: c.why,
                   verification: c.verification, source: c.source };
  await model.dispose();
  return { loadMs, choice };
}"""


def start_server(web_root: Path | None, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    overrides = {"ONNXPORT_WEB_ROOT": str(web_root)} if web_root else {}
    try:
        server = start_onnxport_serve(["serve", "--repository", str(REPOSITORY), "--port", str(port)], port=port,
                                      log_path=log, env=server_environment(overrides, inherit_onnxport=False))
    except ServerNotReady as exc:
        raise SystemExit(str(exc)) from None
    return server.process, server.base_url


def extract_old_web(into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_COMMIT, "web"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "web"


def timed_run(page, model: str) -> tuple[float, str]:
    """Draw if needed, click Run, wait for "Ran"; (click -> Ran in ms, "runtime/variant")."""
    expect(by_testid(page, "run")).to_be_enabled(timeout=PAGE_TIMEOUT_MS)
    if model == "digits":
        assert draw_digit(page) > 0
    page.evaluate(WATCH)
    by_testid(page, "run").click()
    path = by_testid(page, "path")
    expect(path).to_have_text(re.compile(r"^(Ran|Failed)"), timeout=RUN_TIMEOUT_MS)
    t = page.evaluate("() => window.__t")
    if not t["text"].startswith("Ran"):
        raise RuntimeError(f"{model}: {t['text']} {by_testid(page, 'results').inner_text()!r}")
    return t["done"] - t["click"], f"{path.get_attribute('data-runtime')}/{path.get_attribute('data-variant')}"


def cold_and_warm(browser, base: str, model: str) -> dict:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{base}/#/play/{model}")
        cold, choice = timed_run(page, model)
        page.reload()
        warm, warm_choice = timed_run(page, model)
        return {"cold": cold, "warm": warm, "choice": choice, "warm_choice": warm_choice}
    finally:
        context.close()


def load_once(browser, base: str, model: str, verify: str) -> dict:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{base}/#/")
        expect(by_testid(page, "probe")).to_have_attribute("data-ready", "true", timeout=PAGE_TIMEOUT_MS)
        return page.evaluate(LOAD, [model, verify])
    finally:
        context.close()


def med(values) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["iris", "digits", "minilm"])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="measure-browser-") as tmp:
        tmp = Path(tmp)
        old_web = extract_old_web(tmp / "old-root")
        servers = {}
        try:
            servers["old"] = start_server(old_web, tmp / "old.log")
            servers["new"] = start_server(None, tmp / "new.log")
            with sync_playwright() as p:
                browser = chromium_driver.launch(p, webgpu=False)
                rows = []
                for model in args.models:
                    starts = {"old": [], "new": []}
                    for rep in range(args.reps):
                        for app in ("old", "new") if rep % 2 == 0 else ("new", "old"):
                            result = cold_and_warm(browser, servers[app][1], model)
                            starts[app].append(result)
                            print(f"[{model}] {app} rep {rep}: cold {result['cold']:.0f} ms ({result['choice']}), "
                                  f"warm {result['warm']:.0f} ms ({result['warm_choice']})", file=sys.stderr)
                    loads = {"always": [], "off": []}
                    for rep in range(args.reps):
                        for verify in ("always", "off") if rep % 2 == 0 else ("off", "always"):
                            result = load_once(browser, servers["new"][1], model, verify)
                            loads[verify].append(result)
                            v = result["choice"]["verification"]
                            print(f"[{model}] load verify={verify} rep {rep}: {result['loadMs']:.0f} ms, "
                                  f"{result['choice']['runtime']}/{result['choice']['variant']}, verification {v}",
                                  file=sys.stderr)
                    checks = [r["choice"]["verification"] for r in loads["always"]]
                    rows.append({
                        "model": model,
                        "old": med([r["cold"] for r in starts["old"]]),
                        "new": med([r["cold"] for r in starts["new"]]),
                        "old_choice": ", ".join(sorted({r["choice"] for r in starts["old"]})),
                        "new_choice": ", ".join(sorted({r["choice"] for r in starts["new"]})),
                        "old_warm": med([r["warm"] for r in starts["old"]]),
                        "new_warm": med([r["warm"] for r in starts["new"]]),
                        "verify_ms": med([c["ms"] for c in checks]),
                        "verify_bytes": med([c["bytes"] for c in checks]),
                        "verify_status": ", ".join(sorted({c["status"] for c in checks})),
                        "load_choice": ", ".join(sorted({f"{r['choice']['runtime']}/{r['choice']['variant']}"
                                                         for r in loads["always"] + loads["off"]})),
                        "always": med([r["loadMs"] for r in loads["always"]]),
                        "off": med([r["loadMs"] for r in loads["off"]]),
                    })
                browser.close()
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(timeout=15)

    print(f"\nMedians of {args.reps} repetitions; cold/warm = click Run -> 'Ran' (includes the server reference).\n")
    print("| model | old cold ms | new cold ms | new/old | old choice | new choice | warm ms old / new "
          "| verification ms (status) | verification bytes | load ms verify=always / off (choice) "
          "| verification cost ms |")
    print("|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['old']:.0f} | {r['new']:.0f} | {r['new'] / r['old']:.2f} | {r['old_choice']} "
              f"| {r['new_choice']} | {r['old_warm']:.0f} / {r['new_warm']:.0f} "
              f"| {r['verify_ms']:.1f} ({r['verify_status']}) "
              f"| {r['verify_bytes']:,.0f} | {r['always']:.0f} / {r['off']:.0f} ({r['load_choice']}) "
              f"| {r['always'] - r['off']:.0f} |")


if __name__ == "__main__":
    main()
