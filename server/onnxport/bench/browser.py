"""The browser part of the bench: web/app/bench.js in each browser engine (harness/browser_engines.py), step by
step in turn.

Each engine's section keeps its identity (engine, version, the page's probe, the threads its sessions used) beside
its rows, so engines compare on the same model, variant, form and runtime measured in the same run.
"""

from __future__ import annotations

import contextlib
from typing import Callable

import numpy as np

from onnxport import tensor_json
from onnxport.bench import bench_page, engine_speed
from onnxport.bench.engine_threads import EngineThread
from onnxport.bench.report_types import EngineSection
from onnxport.harness import browser_interface
from onnxport.json_boundary import JsonObject

PROFILE_TIMEOUT_S = 600.0
# The engine the others are compared with, and whose section is the report's `browser` (the performance page's).
REFERENCE = "chromium"

PROFILE = """async ([model, encodedInputs]) => {
    const { profileOperators } = await import('/web/app/bench.js');
    return profileOperators({ model, variant: 'fp32', runtime: 'wasm-1t', encodedInputs });
}"""


def browser_bench(
    base_url: str,
    browsers: list[str],
    executable: str | None,
    variants: dict[str, list[str]],
    runtimes: list[str],
    inputs: dict[str, dict[str, np.ndarray]],
    runs: int,
    say: Callable[[str], None] = print,
    labels: dict[str, dict[str, str]] | None = None,
) -> dict[str, EngineSection]:
    """engine -> its section: `engine`, `version`, `device`, `threads`, `results` (and `error` when the engine could
    not start or its page broke: the others go on); beside Chromium, each other engine's `speed` against it. The
    reference engine's section (the first engine when Chromium is not measured) also has `profiles` (fp32, one
    thread) when wasm-1t is measured. labels: model -> variant -> what people are shown for it, in the progress
    lines (bench.json's `label`; the key where there is none).

    The engines are open together and each step (one variant in one runtime) runs in each of them in turn: on a
    shared machine, load that comes and goes then falls on every engine alike. One engine after the other, a
    busier quarter of an hour made Chromium's minilm runs 4.9 times slower in one run than in the run before,
    and Firefox's ratio to it went from 2.05 to 0.41."""
    encoded = {name: tensor_json.encode(feeds) for name, feeds in inputs.items()}
    reference = REFERENCE if REFERENCE in browsers else browsers[0]
    sections: dict[str, EngineSection] = {
        engine: {"engine": engine, "version": None, "device": None, "threads": None, "results": []}
        for engine in browsers
    }
    with contextlib.ExitStack() as stack:
        pages: dict[str, browser_interface.Page] = {}
        for engine in browsers:  # each in a thread of its own (engine_threads.py: one Playwright per thread)
            try:
                opened = stack.enter_context(
                    contextlib.closing(
                        EngineThread(
                            engine,
                            webgpu="webgpu" in runtimes,
                            executable_path=executable if engine == "chromium" else None,
                        )
                    )
                )
                sections[engine]["version"] = opened.version
                opened.page.goto(f"{base_url}/")
                pages[engine] = opened.page
            except browser_interface.EngineError as exc:  # named in its section; the other engines go on
                _stopped(sections[engine], exc, say)
        for name, served in variants.items():
            for variant in served:  # a step each: a page that hangs costs one step, not the bench
                for runtime in runtimes:
                    for engine in list(pages):
                        section = sections[engine]
                        shown = (labels or {}).get(name, {}).get(variant, variant)
                        say(f"browser {engine} {section['version']}, {runtime}: {name} {shown}")
                        try:
                            step = _step(pages[engine], base_url, section, name, variant, runtime, encoded[name], runs)
                        except browser_interface.EngineError as exc:  # its page could not be opened again
                            _stopped(section, exc, say)
                            del pages[engine]
                            continue
                        section["device"] = section["device"] or step.get("device")
                        section["results"].extend(step["results"])
        if reference in pages and "wasm-1t" in runtimes:
            try:  # one thread on both sides, so kernel times compare like for like
                sections[reference]["profiles"] = {
                    name: pages[reference].evaluate(PROFILE, [name, encoded[name]], timeout_s=PROFILE_TIMEOUT_S)
                    for name in variants
                }
            except browser_interface.EngineError as exc:
                _stopped(sections[reference], exc, say)
    for engine, section in sections.items():
        for row in section["results"]:
            row["browser"] = engine
        section["threads"] = max(
            (r["threads"] for r in section["results"] if r["runtime"] == "wasm" and r["status"] == "ok"), default=None
        )
    if REFERENCE in sections:  # each engine against Chromium, measured in this same run
        for engine, section in sections.items():
            if engine != REFERENCE:
                section["speed"] = engine_speed.against(section, sections[REFERENCE])
    return sections


def _stopped(section: EngineSection, exc: Exception, say: Callable[[str], None]) -> None:
    section["error"] = str(exc)
    say(f"browser {section['engine']}: {exc}")


def _step(
    page: browser_interface.Page,
    base_url: str,
    section: EngineSection,
    name: str,
    variant: str,
    runtime: str,
    encoded: dict,
    runs: int,
) -> JsonObject:
    """runBench for one variant in one runtime. A step that stalls is run once more on a fresh page and said in the
    section's `stalls`; a page error, or a second stall, is one `error` row (the variant as built) saying so."""
    arg = [[name], [variant], [runtime], {name: encoded}, runs]
    error = ""
    for then in ("run again", "gave up"):
        try:
            return bench_page.run_step(page, section["engine"], arg)
        except browser_interface.EngineError as exc:
            error = str(exc)
            page.goto(f"{base_url}/")  # a fresh page: its workers and whatever hung in them are gone
            if not isinstance(exc, bench_page.Stalled):
                break  # the page's own error: it would say it again
            section.setdefault("stalls", []).append(f"{name} {variant} {runtime}: {exc}; {then}")
    return {
        "device": None,
        "results": [
            {"model": name, "variant": variant, "form": None, "runtime": runtime, "status": "error", "reason": error}
        ],
    }
