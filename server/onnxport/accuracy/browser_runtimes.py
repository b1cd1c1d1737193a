"""The browser runtimes, by the keys of web/lib/choice/runtimes.js: the Python side names them here and nowhere else.

web/lib/choice/runtimes.js is the one table of them (execution provider, bundle, threads, priors...); this
is the part of it the Python side needs, held equal to the JavaScript table through tests/vectors/runtime_vectors.json
(tests/accuracy/test_browser_runtimes.py, tests/js/lib/choice/test_runtime_vectors.mjs). Read from here: the
tolerance table's rows per (variant, runtime) (browser_tolerances.py), the runtimes a form is for
(repository/manifest.py, convert/forms/), the runtimes `onnxport check` and `onnxport bench` run and keep verdicts
of (check/verdict_file.py).

runtimes.js's `server` row is not here: the server's onnxruntime is the reference every browser
runtime is compared with, not a runtime with a tolerance, a verdict or a form.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Runtime:
    key: str
    provider: str  # onnxruntime-web's execution provider
    checked: bool  # `onnxport check` and `onnxport bench` run it in Chromium
    gpu: bool = False  # it computes on the GPU adapter (SwiftShader in CI: slow, so run last)


# In runtimes.js's order (the plan's order of preference).
RUNTIMES: tuple[Runtime, ...] = (
    Runtime("webgpu", "webgpu", checked=True, gpu=True),
    Runtime("webnn", "webnn", checked=False),
    Runtime("wasm", "wasm", checked=True),
    Runtime("wasm-1t", "wasm", checked=True),  # how wasm runs on a page without threads
)
NAMES: tuple[str, ...] = tuple(r.key for r in RUNTIMES)
# runtimes.js CHECKED: CPU first, quick results before the slow adapter.
CHECKED: tuple[str, ...] = tuple(r.key for r in sorted(RUNTIMES, key=lambda r: r.gpu) if r.checked)
# The runtimes that are onnxruntime's CPU execution provider compiled to WebAssembly.
WASM: tuple[str, ...] = tuple(r.key for r in RUNTIMES if r.provider == "wasm")
