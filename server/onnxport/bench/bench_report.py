"""The bench as tables, with every target printed as a measured ratio."""

from __future__ import annotations

from onnxport.bench import engine_speed
from onnxport.bench.engine_speed import sections
from onnxport.bench.report_types import (
    BenchReport,
    BrowserRow,
    NativeTiming,
    RayRow,
    ServerFigures,
    Timing,
    VariantFigures,
)
from onnxport.harness.speed_ratio import SPEED_FLOOR_MS
from onnxport.json_boundary import JsonObject
from onnxport.text_tables import human_bytes, quantity, table


def _ms(value: Timing | None) -> str:
    return f"{value['median_ms']:.3f}" if value else "-"


def _whole(ms: float | None) -> str:
    return f"{ms:.0f}" if isinstance(ms, (int, float)) else "-"  # a stage an older bench did not time


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _median(timing: Timing | None) -> float | None:
    return timing["median_ms"] if timing else None


def _browser_rows(report: BenchReport) -> list[BrowserRow]:
    """The rows of the section every reader of a single browser looks at (`browser`); none without it."""
    section = report.get("browser")
    return section.get("results", []) if section else []


def browser_results(report: BenchReport, model: str) -> dict[tuple[str, str], BrowserRow]:
    """(variant, runtime) -> the browser row of the variant as built."""
    return {(r["variant"], r["runtime"]): r for r in _browser_rows(report) if r["model"] == model and not r.get("form")}


def webgpu_cell(report: BenchReport, model: str, variant: str) -> str:
    """The variant's warm median on WebGPU: its file as built, or where that cannot run there (a tree ensemble's
    ai.onnx.ml operators have no WebGPU kernel) its fastest form that ran, named: "44.100 (gemm)"."""
    rows = [
        r
        for r in _browser_rows(report)
        if r["model"] == model and r["variant"] == variant and r["runtime"] == "webgpu" and r["status"] == "ok"
    ]
    built = next((r for r in rows if not r.get("form")), None)
    if built is not None:
        return _ms(built["warm"])
    if not rows:
        return "-"
    fastest = min(rows, key=lambda r: r["warm"]["median_ms"])
    return f"{_ms(fastest['warm'])} ({fastest['form']})"


# The browser's speed targets (docs/notes/measurements.md, "Benchmarks"): a cached start within 1.1x of session
# creation, and the best browser path within 2.0x of native fp32 with the same threads.
CACHED_START_TARGET = 1.1
WARM_TARGET = 2.0


def wasm_results(report: BenchReport, model: str) -> list[BrowserRow]:
    """The model's measured browser rows on WebAssembly with all threads: every file of every variant."""
    return [r for r in _browser_rows(report) if r["model"] == model and r["runtime"] == "wasm" and r["status"] == "ok"]


def shown(variants: dict[str, VariantFigures]) -> dict[str, str]:
    """A model's variants in bench.json -> what people are shown for each: its `label` where the key is not what
    its file computes (an already-int8 model's fp32 is "original (int8)"), else the key."""
    return {variant: v.get("label") or variant for variant, v in variants.items()}


def start_targets(
    rows: list[BrowserRow], native_fp32_all: float | None, names: dict[str, str] | None = None
) -> list[str]:
    """The two start targets for one model's wasm_results, met or missed by how much, and where the time went.
    names: variant -> what people are shown for it (shown())."""
    if not rows:
        return []
    names = names or {}
    fp32 = names.get("fp32", "fp32")
    name = lambda r: f"{names.get(r['variant'], r['variant'])}/{r.get('form') or 'as built'}"  # noqa: E731
    fastest = min(rows, key=lambda r: r["warm"]["median_ms"])
    lines = []
    if native_fp32_all:
        ratio = fastest["warm"]["median_ms"] / native_fp32_all
        verdict = "met" if ratio <= WARM_TARGET else f"missed by {ratio / WARM_TARGET:.2f}x"
        lines.append(
            f"fastest WebAssembly file: {name(fastest)} {fastest['warm']['median_ms']:.1f} ms = {ratio:.2f}x "
            f"native {fp32} with all threads (target <= {WARM_TARGET}x: {verdict})"
        )
    for start in ("cached", "prepared"):
        best = min((r for r in rows if r.get(start)), key=lambda r: r[start]["total_ms"], default=None)  # the quickest
        if best is None:
            continue
        t = best[start]
        ratio = t["total_ms"] / t["create_ms"]
        verdict = "met" if ratio <= CACHED_START_TARGET else f"missed by {ratio / CACHED_START_TARGET:.2f}x"
        lines.append(
            f"quickest {start} start: {name(best)} {t['total_ms']:.0f} / {t['create_ms']:.0f} ms = {ratio:.2f}x "
            f"(target <= {CACHED_START_TARGET}x: {verdict}); besides creating the session, a start waits for "
            f"{'the runtime and the bytes (in parallel): ' if start == 'cached' else 'the bytes: '}"
            f"{_whole(t.get('ready_ms'))} ms, then runs once: {t['first_run_ms']:.0f} ms"
        )
    return lines


def start_table(
    results: list[BrowserRow], native_fp32_all: float | None, names: dict[str, str] | None = None
) -> str | None:
    """One model's wasm_results (as built and each form): the cached start by stage, the warm run,
    and each against its target. names: variant -> what people are shown for it (shown())."""
    names = names or {}
    fp32 = names.get("fp32", "fp32")
    rows = []
    for r in results:
        cached, prepared, warm = r["cached"], r.get("prepared"), r["warm"]["median_ms"]
        rows.append(
            [
                names.get(r["variant"], r["variant"]),
                r.get("form") or "as built",
                human_bytes(r["bytes"]),
                *(
                    _whole(cached.get(stage))
                    for stage in ("load_ms", "init_ms", "create_ms", "first_run_ms", "total_ms")
                ),
                _ratio(cached["total_ms"], cached["create_ms"]),
                _whole(prepared["total_ms"] if prepared else None),
                _ratio(prepared["total_ms"] if prepared else None, prepared["create_ms"] if prepared else None),
                f"{warm:.1f}",
                _ratio(warm, native_fp32_all),
            ]
        )
    if not rows:
        return None
    return (
        f"cached start by stage and warm runs, WebAssembly all threads (targets: start <= {CACHED_START_TARGET}x "
        f"create, warm <= {WARM_TARGET}x native {fp32} all; prepared: the runtime started when the page opened):\n"
        + table(
            [
                "variant",
                "form",
                "size",
                "load ms",
                "init ms (beside load)",
                "create ms",
                "first run ms",
                "start ms",
                "start / create",
                "prepared start ms",
                "prepared / create",
                "warm ms",
                f"x native {fp32} all",
            ],
            rows,
        )
    )


def text(report: BenchReport) -> str:
    machine = report["machine"]
    parts = [f"machine: {machine['cpu']} · {machine['cores']} cores · onnxruntime {machine['onnxruntime']}"]
    parts.extend(engine_lines(report))
    parts.extend(speed_lines(report))
    for model, data in report["models"].items():
        variants = data["variants"]
        names = shown(variants)
        # The model's fp32 variant by what it is: the figures' reference ("original (int8)" for an int8 original).
        reference = names.get("fp32", "fp32")
        fp32: dict[str, NativeTiming] = variants["fp32"]["native"] if "fp32" in variants else {}
        browser = browser_results(report, model)
        rows = []
        for variant, v in variants.items():
            w1 = browser.get((variant, "wasm-1t"), {}).get("warm")
            wn = browser.get((variant, "wasm"), {}).get("warm")
            cached = browser.get((variant, "wasm"), {}).get("cached")
            rows.append(
                [
                    names[variant],
                    human_bytes(v["bytes"]),
                    f"{v['size_ratio']:.3f}" if v.get("size_ratio") else "-",
                    _ms(v["native"]["1"]),
                    _ms(v["native"]["all"]),
                    _ms(w1),
                    _ratio(w1 and w1["median_ms"], _median(fp32.get("1"))),
                    _ms(wn),
                    _ratio(wn and wn["median_ms"], _median(fp32.get("all"))),
                    _ratio(w1 and w1["median_ms"], wn and wn["median_ms"]),
                    webgpu_cell(report, model, variant),
                    f"{cached['total_ms']:.0f}/{cached['create_ms']:.0f}" if cached else "-",
                ]
            )
        parts.append(f"\n{model} (inputs {data['inputs']})")
        parts.append(
            table(
                [
                    "variant",
                    "size",
                    f"x {reference}",
                    "native 1t ms",
                    "native all ms",
                    "wasm-1t ms",
                    f"x native {reference} 1t",
                    "wasm all ms",
                    f"x native {reference} all",
                    "threads speedup",
                    "webgpu ms",
                    "cached start/create ms",
                ],
                rows,
            )
        )
        side_by_side = engines_table(report, model, names)
        if side_by_side:
            parts.append(side_by_side)
        wasm, native_fp32_all = wasm_results(report, model), _median(fp32.get("all"))
        if wasm:
            if starts := start_table(wasm, native_fp32_all, names):
                parts.append(starts)
            parts.extend(start_targets(wasm, native_fp32_all, names))
        server = data.get("server", ServerFigures())
        if server:
            trip = server["round_trip"]
            base = _median(fp32.get("all"))
            binary, json_ms = trip["binary"]["median_ms"], trip["json"]["median_ms"]
            parts.append(
                f"server V2 batch 1 ({reference}): binary {binary:.3f} ms ({_ratio(binary, base)} "
                f"session.run), JSON {json_ms:.3f} ms ({_ratio(json_ms, base)})"
            )
            off = {r["clients"]: r for r in server["throughput_batching_off"]}
            on = {r["clients"]: r for r in server["throughput_batching_on"]}
            headers = ["clients", "req/s batching off", "p90 ms off", "req/s batching on", "p90 ms on", "gain"]
            parts.append(
                table(
                    headers,
                    [
                        [
                            str(c),
                            f"{off[c]['requests_per_s']:.1f}",
                            f"{off[c]['p90_ms']:.2f}",
                            f"{on[c]['requests_per_s']:.1f}",
                            f"{on[c]['p90_ms']:.2f}",
                            _ratio(on[c]["requests_per_s"], off[c]["requests_per_s"]),
                        ]
                        for c in sorted(off)
                    ],
                )
            )
        if server.get("engines"):
            parts.append(f"engines side by side ({reference}, binary requests; req/s and p90 ms at each client count):")
            parts.append(engine_table(server))
        profile = data.get("operator_profile")
        if profile:
            parts.append(f"where the time goes, {reference}, 1 thread (kernel ms per run):")
            parts.append(
                table(
                    ["op", "native", "browser wasm", "x"],
                    [
                        [
                            p["op"],
                            f"{p['native_ms']:.3f}",
                            f"{p['browser_ms']:.3f}",
                            f"{p['ratio']:.1f}x" if p["ratio"] else "-",
                        ]
                        for p in profile
                    ],
                )
            )
    if report.get("ray_starts"):
        parts.append(
            "\nRay Serve start (local cluster and replicas until ready): "
            + ", ".join(f"{quantity(s['replicas'], 'replica')} {s['seconds']:.1f} s" for s in report["ray_starts"])
        )
    recommended = report.get("recommendations", {}).get("dynamic_batching", {})
    chosen = ", ".join(m for m, on in recommended.items() if on)
    parts.append("\ndynamic batching recommended for: " + (chosen or "none"))
    if "dynamic_batching_ray" in report.get("recommendations", {}):
        on_ray = report["recommendations"]["dynamic_batching_ray"]
        parts.append("on Ray Serve (@serve.batch): " + (", ".join(m for m, on in on_ray.items() if on) or "none"))
    return "\n".join(parts)


def engine_table(server: ServerFigures) -> str:
    rows: list[RayRow] = [
        {"engine": "waitress", "replicas": 1, "batching": "off", "throughput": server["throughput_batching_off"]},
        {"engine": "waitress", "replicas": 1, "batching": "on", "throughput": server["throughput_batching_on"]},
        *server["engines"],
    ]
    counts = [r["clients"] for r in rows[0]["throughput"]]
    return table(
        ["engine", "replicas", "batching", *[f"req/s {c}" for c in counts], *[f"p90 {c}" for c in counts]],
        [
            [
                r["engine"],
                str(r["replicas"]),
                r["batching"],
                *[f"{t['requests_per_s']:.1f}" for t in r["throughput"]],
                *[f"{t['p90_ms']:.1f}" for t in r["throughput"]],
            ]
            for r in rows
        ],
    )


# ---------------------------------------------------------------------------------------- browser engines


def engine_lines(report: BenchReport) -> list[str]:
    """Who ran the browser rows: each engine's identity, or why it has no rows."""
    lines = []
    for engine, section in sections(report).items():
        device = section.get("device") or {}
        line = (
            f"browser {engine} {section.get('version') or '?'}: {section.get('threads') or '-'} threads on wasm "
            f"(hardwareConcurrency {device.get('hardwareConcurrency', '-')}, isolated "
            f"{'yes' if device.get('crossOriginIsolated') else 'no'}); WebGPU: {_adapter(device)}"
        )
        if section.get("error"):
            line += f"; stopped: {section['error']}"
        lines.append(line)
        if device.get("userAgent"):
            lines.append(f"  {device['userAgent']}")
        lines.extend(f"  stalled: {stall}" for stall in section.get("stalls", []))
    return lines


def _adapter(device: JsonObject) -> str:
    adapter = device.get("adapter")
    if not adapter:
        return f"none ({device.get('webgpuReason') or 'not probed'})"
    named = " ".join(filter(None, (adapter.get("vendor"), adapter.get("architecture"), adapter.get("device"))))
    return (
        ("software " if adapter.get("fallback") else "")
        + (named or "adapter")
        + (", shader-f16" if device.get("shaderF16") else "")
    )


def engines_table(report: BenchReport, model: str, names: dict[str, str] | None = None) -> str | None:
    """The model's warm runs in each engine side by side, each engine against Chromium on the same row of the same
    run (x > 1: slower than Chromium). names: variant -> what people are shown for it (shown())."""
    names = names or {}
    found = sections(report)
    if len(found) < 2:
        return None
    warm = {
        engine: {key[1:]: ms for key, ms in engine_speed.warm(section).items() if key[0] == model}
        for engine, section in found.items()
    }
    keys = list(dict.fromkeys(key for by_key in warm.values() for key in by_key))
    compared = [engine for engine in found if engine != "chromium" and "chromium" in found]
    rows = []
    for key in keys:
        cells = [names.get(key[0], key[0]), *key[1:]]
        for engine in found:
            cells.append(f"{warm[engine][key]:.3f}" if key in warm[engine] else "-")
            if engine in compared:
                cells.append(_ratio(warm[engine].get(key), warm["chromium"].get(key)))
        rows.append(cells)
    if not rows:
        return None
    headers = ["variant", "form", "runtime"]
    for engine in found:
        headers += [f"{engine} ms", *([f"{engine} x chromium"] if engine in compared else [])]
    against = "; x: against Chromium in this run" if compared else ""
    return f"browser engines side by side, warm runs (median ms){against}:\n" + table(headers, rows)


def speed_lines(report: BenchReport) -> list[str]:
    """Each engine's median warm-time ratio to Chromium per runtime, over every model's rows."""
    lines = []
    for engine, section in sections(report).items():
        speed = section.get("speed")
        if not speed:
            continue
        figures = ", ".join(
            f"{runtime} x{s['median_ratio']} ({quantity(s['rows'], 'row')})" for runtime, s in speed["runtimes"].items()
        )
        lines.append(
            f"{engine} warm time against {speed['against']} (median ratio over the rows "
            f"{speed['against']} ran in {SPEED_FLOOR_MS:g} ms or more): {figures or 'no such row'}"
        )
    return lines
