"""A page of onnxruntime-web alone, for timing model files side by side in this machine's Chromium (int4_forms.py).
It is served cross-origin isolated from a folder of its own (the model files beside it, onnxruntime-web's dist
folder linked in), so WebAssembly threads run; the page's query names the bundle, the thread count and the
execution provider, which onnxruntime-web fixes for the page's life.

In the page: openSession(name, file) -> creation ms; setFeeds(key, encoded); timeRuns(name, key, runs, withOutput)
-> {times, output, dims}; closeSession(name).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

from onnxport.harness import chromium as chromium_driver

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' cross-origin isolated file server

from fixtures.isolated_files import isolated_files  # noqa: E402

WASM_BUNDLE = "ort.wasm.min.mjs"  # WebAssembly only: faster on the CPU than a bundle with the WebGPU bridge
WEBGPU_BUNDLE = "ort.webgpu.min.mjs"  # the native WebGPU execution provider, as web/lib/worker uses
PAGE = """<!doctype html><script type="module">
const query = new URLSearchParams(location.search);
const ort = await import(`./ort/${query.get("bundle")}`);
ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
ort.env.wasm.numThreads = Number(query.get("threads")) || navigator.hardwareConcurrency;
const providers = [query.get("ep")];
const sessions = new Map();
const feeds = new Map();
const tensor = (t) => new ort.Tensor(t.type,
  t.type === "int64" ? BigInt64Array.from(t.data, BigInt) : Float32Array.from(t.data), t.dims);
window.setFeeds = (key, encoded) => {
  feeds.set(key, Object.fromEntries(Object.entries(encoded).map(([name, t]) => [name, tensor(t)])));
};
window.openSession = async (name, file) => {
  const bytes = new Uint8Array(await (await fetch(file)).arrayBuffer());
  const began = performance.now();
  sessions.set(name, await ort.InferenceSession.create(bytes, { executionProviders: providers }));
  return performance.now() - began;
};
window.timeRuns = async (name, key, runs, withOutput) => {
  const session = sessions.get(name);
  const times = [];
  let out = null;
  for (let i = 0; i < runs; i++) {
    const began = performance.now();
    out = await session.run(feeds.get(key));
    times.push(performance.now() - began);
  }
  const first = out[session.outputNames[0]];
  return { times, dims: first.dims, output: withOutput ? Array.from(first.data, Number) : null };
};
window.closeSession = async (name) => {
  await sessions.get(name).release();
  sessions.delete(name);
};
window.threads = () => ort.env.wasm.numThreads;
window.isolated = crossOriginIsolated;
window.ready = true;
</script>"""


def folder(prefix: str) -> Path:
    """A new temporary folder holding the page (index.html) and onnxruntime-web's files (ort/): copy or link
    the model files into it."""
    made = Path(tempfile.mkdtemp(prefix=prefix))
    (made / "ort").symlink_to(ROOT / "node_modules" / "onnxruntime-web" / "dist")
    (made / "index.html").write_text(PAGE)
    return made


def encode(feeds: dict[str, np.ndarray]) -> dict[str, dict]:
    """Feeds as the page's setFeeds takes them (JSON: type, flat data, dims)."""
    return {k: {"type": str(v.dtype), "data": v.ravel().tolist(), "dims": list(v.shape)} for k, v in feeds.items()}


@contextlib.contextmanager
def opened(where: Path, *, threads: int | None = None, webgpu: bool = False) -> Iterator:
    """A Playwright page on `where`'s index.html, ready: WebAssembly on `threads` (None: the page's
    hardwareConcurrency), or WebGPU (Chromium started with chromium.WEBGPU_FLAGS, SwiftShader)."""
    from playwright.sync_api import sync_playwright

    query = urlencode(
        {
            "bundle": WEBGPU_BUNDLE if webgpu else WASM_BUNDLE,
            "ep": "webgpu" if webgpu else "wasm",
            "threads": threads or 0,
        }
    )
    with isolated_files(where) as url, sync_playwright() as playwright:
        browser = chromium_driver.launch(playwright, webgpu=webgpu)
        try:
            page = browser.new_page()
            page.goto(f"{url}index.html?{query}")
            page.wait_for_function("window.ready === true")
            if threads and threads > 1 and not page.evaluate("window.isolated"):
                raise SystemExit("the page is not cross-origin isolated: WebAssembly would run on one thread")
            yield page
        finally:
            browser.close()
