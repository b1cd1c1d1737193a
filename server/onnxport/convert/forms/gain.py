"""Whether an optimized form starts enough sooner than its variant as built to be worth its file.

A form costs about its variant's size on disk (the 97 MB model of issue 32 took 513 MB with its forms)
and gains only at session creation: the parsing and graph optimization it did once at build time
(convert/forms/__init__.py). `--forms auto`, the default, keeps a form only where that gain is measured on the
model: onnxruntime (this build's, the same code the browser's WebAssembly build compiles) creates a
session from the form and from the variant as built, interleaved, RUNS times each on one thread, and the
form is kept when its fastest creation is at least MIN_GAIN and MIN_GAIN_MS below the variant's. Time is
the creating thread's CPU time (all of a one-thread session's creation), not the wall clock, and the
fastest, not the median: on a shared machine other work only adds wall time (a build under load 12 kept
the forms of a 2 ms model by the wall clock), and a few slow creations must not make a form look like a
gain.

MIN_GAIN is the browser plan's own bar for choosing a form (web/lib/choice/cost.js MIN_GAIN: a closer call is
one bench run's noise). MIN_GAIN_MS: a smaller gain is lost in a browser's start, whose fixed part
(the runtime's start, 140 to 300 ms; a session of a tiny model, 24 to 48 ms in Chromium) does not
shrink with the graph. Measured figures: docs/guide/build-and-import.md, "Optimized forms and disk".

One form is kept whatever its start costs: one that runs where its variant as built cannot (opens_runtimes).
onnxruntime-web's WebGPU bundle has no ai.onnx.ml kernel (web/lib/choice/kernels.js, measured), so a form without
ai.onnx.ml operators made from a variant with some (`gemm`: tree ensembles as tensor operators) is what lets
WebGPU run the model at all; the browser plan then chooses between it and the variant by measured speed.
"""

from __future__ import annotations

import time

import onnx
import onnxruntime as ort

from onnxport import runtime

MIN_GAIN = 0.10
MIN_GAIN_MS = 5.0
RUNS = 5
# A big model's creations are slow but steady: past this many seconds of measuring, three runs each do.
BUDGET_S = 10.0


def creation_ms(data: bytes, label: str) -> float:
    """CPU ms of this thread to create a one-thread session (no thread pool: the work is all here)."""
    began = time.thread_time()
    runtime.create_session(data, label=label, threads=1, inter_op_threads=1, spinning=False)
    return (time.thread_time() - began) * 1000


def fastest(variant: bytes, form: bytes, label: str, runs: int = RUNS) -> tuple[float, float]:
    """(variant's, form's) fastest session creation in CPU ms, interleaved in alternating order so that load
    that comes and goes falls on both alike."""
    times: dict[str, list[float]] = {"variant": [], "form": []}
    began = time.monotonic()
    for index in range(runs):
        order = [("variant", variant), ("form", form)]
        for which, data in order if index % 2 == 0 else order[::-1]:
            times[which].append(creation_ms(data, label))
        if index >= 2 and time.monotonic() - began > BUDGET_S:
            break
    return min(times["variant"]), min(times["form"])


# The operator domain that onnxruntime-web's WebGPU bundle has no kernel for at all (web/lib/choice/kernels.js).
NO_WEBGPU_DOMAIN = "ai.onnx.ml"


def opens_runtimes(variant: bytes, form: bytes, form_format: str) -> bool:
    """Whether the form runs where the variant as built cannot: the variant has ai.onnx.ml operators, the form
    (a `.onnx`; an ORT-format form is for WebAssembly only) none."""

    def has_ml(data: bytes) -> bool:
        return any(n.domain == NO_WEBGPU_DOMAIN for n in onnx.load_from_string(data).graph.node)

    return form_format == "onnx" and has_ml(variant) and not has_ml(form)


def short_of(variant: bytes, form: bytes, form_name: str, label: str) -> str | None:
    """Why the form is not kept (its gain is short of the bar, with the figures), or None to keep it."""
    as_built, made = fastest(variant, form, label)
    gain = as_built - made
    if gain >= MIN_GAIN * as_built and gain >= MIN_GAIN_MS:
        return None
    sooner = f"{gain / as_built:.0%} sooner" if gain >= 0 else f"{-gain / as_built:.0%} later"
    return (
        f"too little gain to keep its file: onnxruntime {ort.__version__} creates its session in {made:.1f} ms, "
        f"the variant as built in {as_built:.1f} ms (CPU time, the fastest of several, one thread), {sooner}; "
        f"a form is kept by default when at least {MIN_GAIN:.0%} and {MIN_GAIN_MS:g} ms sooner "
        f"(`--forms {form_name}` or `--forms all` keeps it whatever it gains)"
    )
