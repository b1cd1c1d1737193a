"""`onnxport check`: run the conformance page in each browser engine, add the source and pipeline rows, locate
divergences."""

from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, cast

import numpy as np

from onnxport import runtime as ort_runtime
from onnxport import tensor_json
from onnxport.accuracy import browser_tolerances, compare
from onnxport.accuracy.tolerance import Tolerance
from onnxport.check import engine_findings, generation_rows, locate, preprocessing, server_http, skips, verdict_file
from onnxport.check.report_types import BrowserIdentity, CheckReport, CheckRow, Divergence, EngineRun
from onnxport.check.row_stream import RowStream
from onnxport.errors import OnnxportError, UsageError
from onnxport.harness import browser_engines, conformance_page
from onnxport.harness.interrupts import interrupts_deferred
from onnxport.harness.process import running_server
from onnxport.json_boundary import JsonObject
from onnxport.repository import variant_record, variant_table
from onnxport.repository.manifest import Manifest, ModelEntry
from onnxport.repository.store import Repository

BROWSER_RUNTIMES = verdict_file.RUNTIMES
FAILING = ("fail", "error", "timeout")
DEBUG_TIMEOUT_S = 600


def run_check(
    *,
    repository: Path | None,
    url: str | None,
    models: list[str],
    runtimes: list[str],
    browsers: list[str] | None = None,
    browser: str | None = None,
    webgpu_rows: int = 2,
    full_webgpu: bool = False,
    find_divergence: bool = False,
    tolerances_file: Path | None = None,
    timeout_s: float = 3600,
    row_timeout_s: float = 300,
    stream: RowStream | None = None,
) -> CheckReport:
    """The conformance report: source rows, then each engine's page and pipeline rows, every row naming its
    `browser`. A check that runs past `timeout_s` or is interrupted (Ctrl-C, SIGTERM) returns the rows it has,
    with `incomplete` saying why; the server and browsers it started are stopped either way. On a software WebGPU
    adapter each engine runs one WebGPU row per model unless `full_webgpu`; `plans` says what each engine planned."""
    unknown = [r for r in runtimes if r not in (*BROWSER_RUNTIMES, generation_rows.RUNTIME)]
    if unknown:
        raise UsageError(f"unknown runtime {unknown[0]!r}; runtimes: {', '.join(BROWSER_RUNTIMES)}, server")
    runtimes = [r for r in runtimes if r in BROWSER_RUNTIMES]  # `server` alone: the server's rows, no browser
    if (find_divergence or tolerances_file) and url:
        raise UsageError("--locate and --tolerances need the check's own server: drop --url")
    engine_names = browser_engines.available(browsers) if runtimes else []  # after the command line's mistakes
    browser_tolerances.load_overrides(tolerances_file)  # a bad file fails before anything starts
    stream = stream or RowStream(enabled=False)
    deadline = time.monotonic() + timeout_s
    report: CheckReport = {"results": [], "browsers": {}, "plans": {}, "incomplete": None}
    manifest: Manifest  # the server's, as served (_served_manifest)
    with contextlib.ExitStack() as stack:
        debug_root = (
            Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="onnxport-debug-")))
            if find_divergence
            else None
        )
        if url:
            base = url.rstrip("/")
        elif repository is not None:
            base = stack.enter_context(
                running_server(repository, debug_root=debug_root, tolerances_file=tolerances_file)
            )
        else:
            raise UsageError("check needs a repository to serve, or the --url of a server")
        manifest = _served_manifest(base)
        decoders = generation_rows.decoder_names(manifest, models)
        missing = [m for m in models if m not in manifest["models"] and m not in decoders]
        if missing:
            served = ", ".join(sorted([*manifest["models"], *decoders])) or "none"
            raise UsageError(f"unknown model {missing[0]!r}; the server has: {served}")
        names = [m for m in models if m in manifest["models"]] if models else sorted(manifest["models"])
        try:
            for row in [*source_rows(base, manifest, names), *generation_rows.rows(base, manifest, decoders)]:
                report["results"].append(row)
                stream.row(row)
            for engine in engine_names if names and runtimes else []:
                if time.monotonic() >= deadline:
                    report["incomplete"] = (
                        f"the check's time limit ({timeout_s:g} s, --timeout) ran out before "
                        f"{', '.join(engine_names[engine_names.index(engine) :])}"
                    )
                    break
                position = f"engine {engine_names.index(engine) + 1} of {len(engine_names)}"
                run = _engine_rows(
                    engine,
                    browser if engine == "chromium" else None,
                    base,
                    manifest,
                    names,
                    runtimes,
                    PageOptions(webgpu_rows, full_webgpu, row_timeout_s, deadline),
                    stream,
                    position,
                )
                report["results"] += run["results"]
                report["browsers"][engine] = run["identity"]
                if run["plan"]:
                    report["plans"][engine] = run["plan"]
                for key in ("schema", "schema_version", "created", "tolerances"):  # from the first page that has them
                    if run.get(key) is not None:
                        cast(JsonObject, report).setdefault(key, cast(JsonObject, run)[key])
                if run["interrupted"]:
                    report["incomplete"] = "interrupted"
                    break
                if run["stopped"]:
                    report["incomplete"] = f"the check's time limit ({timeout_s:g} s, --timeout) ran out in {engine}"
                    break
                if find_divergence and debug_root is not None:
                    _locate_failures(
                        engine, base, repository, debug_root, manifest, run["results"], webgpu_rows, tolerances_file
                    )
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM made one by the command line: keep what is finished
            report["incomplete"] = "interrupted"
        finally:
            stream.close()
    report["browser"] = next(iter(report["browsers"].values()), BrowserIdentity())  # the first engine's, as before
    report["findings"] = engine_findings.compare(report["results"])
    report["speed"] = engine_findings.speed(report["results"], list(report["browsers"]))
    report["server"] = base
    report["summary"] = summary(report["results"])
    if not url and repository is not None and not report["incomplete"]:  # its own server: the repository keeps verdicts
        _record_verdicts(Path(repository), report, manifest)
    return report


@dataclass(frozen=True)
class PageOptions:
    webgpu_rows: int
    full_webgpu: bool
    row_timeout_s: float
    deadline: float


def _engine_rows(
    engine: str,
    executable: str | None,
    base: str,
    manifest: Manifest,
    names: list[str],
    runtimes: list[str],
    options: PageOptions,
    stream: RowStream,
    position: str,
) -> EngineRun:
    """One engine's rows: the conformance page's, then the pipeline rows. An engine that cannot start or whose
    page breaks is one `error` row naming it, and the next engine goes on."""
    out: EngineRun = {
        "results": [],
        "identity": {"engine": engine},
        "plan": None,
        "stopped": None,
        "interrupted": False,
    }

    def started(run: conformance_page.PageRun) -> None:
        # Kept as soon as the page says: an interrupted check's summary names the engine's adapter and threads.
        out["identity"].update(cast(BrowserIdentity, run.browser))  # as the page says
        out["plan"] = {"rows": run.total, "webgpu": run.plan.get("webgpu")}
        stream.start(engine, out["identity"]["version"], run.total or 0, run.browser, runtimes, run.plan, position)

    def add(page_row: JsonObject | CheckRow) -> None:  # as the page wrote it (a JSON boundary), or the check's own
        row = cast(CheckRow, {**page_row, "browser": engine})
        with interrupts_deferred():  # a row in the report is a row printed, and the other way round
            out["results"].append(row)
            stream.row(row)

    try:
        with browser_engines.open_browser(engine, webgpu="webgpu" in runtimes, executable_path=executable) as opened:
            out["identity"]["version"] = opened.version
            page = opened.new_page()
            run = conformance_page.run_conformance_page(
                page,
                base,
                names,
                runtimes,
                webgpu_rows=options.webgpu_rows,
                row_timeout_s=options.row_timeout_s,
                deadline=options.deadline,
                full_webgpu=options.full_webgpu,
                on_start=started,
                on_row=add,
            )
            page.close()
            out["identity"].update(cast(BrowserIdentity, run.browser))
            page_keys = {key: run.report.get(key) for key in ("schema", "schema_version", "created", "tolerances")}
            out.update(cast(EngineRun, page_keys))
            out["stopped"] = run.stopped
            if not run.stopped:
                for row in preprocessing.pipeline_rows(opened, base, manifest, names):
                    add(row)
    except OnnxportError as exc:
        add({"model": "-", "variant": "-", "runtime": "-", "status": "error", "reason": str(exc).splitlines()[0]})
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: the browser is closed on the way out, the rows so far kept
        out["interrupted"] = True
    return out


def _locate_failures(
    engine: str,
    base: str,
    repository,
    debug_root: Path,
    manifest: Manifest,
    results: list[CheckRow],
    webgpu_rows: int,
    tolerances_file: Path | None,
) -> None:
    failing = [r for r in results if r["status"] in FAILING and r["runtime"] in BROWSER_RUNTIMES]
    if not failing:
        return
    with browser_engines.open_browser(engine, webgpu=any(r["runtime"] == "webgpu" for r in failing)) as opened:
        page = opened.new_page()
        for result in failing:
            result["divergence"] = _locate(
                page, base, repository, debug_root, manifest, result, webgpu_rows, tolerances_file
            )


def _record_verdicts(repository: Path, report: CheckReport, checked_manifest: Manifest) -> None:
    """Keep the browser verdicts in the repository (/api/conformance), per engine (each is its own kind of
    device); the report matters more, so a repository that cannot take them is a warning, not a failed check."""
    try:
        current = Repository(repository).read_manifest()
        engines_run = report.get("browsers") or {}
        groups = (
            [
                (identity, [r for r in report["results"] if r.get("browser") == engine])
                for engine, identity in engines_run.items()
            ]
            if engines_run
            else [(report.get("browser") or {}, report["results"])]
        )  # one page's report
        for identity, rows in groups:
            verdict_file.record(repository, {**report, "browser": identity, "results": rows}, checked_manifest, current)
    except (OSError, OnnxportError) as exc:
        path = repository / verdict_file.VERDICTS_FILE
        verdict_file.print_warning(f"the verdicts were not recorded in {path}: {exc}")


def source_rows(base: str, manifest: Manifest, names: list[str]) -> list[CheckRow]:
    """The server's fp32 variant against the source framework's outputs stored as golden data; one row
    per model. A model whose row cannot run is `skipped` or `error` with why, and the others go on."""
    rows: list[CheckRow] = []
    for name in names:
        entry = manifest["models"][name]
        row: CheckRow = {
            "model": name,
            "variant": "fp32",
            **variant_table.label_key(entry["variants"].get("fp32"), "fp32"),
            "runtime": "source",
            "task": entry["task"],
            "browser": None,
        }
        skip = (
            "fp32 is not served"
            if "fp32" not in entry["variants"] or not variant_record.served(entry["variants"]["fp32"])
            else skips.uncarried_tensor(entry)
        )
        if skip:
            rows.append({**row, "status": "skipped", "reason": skip})
            continue
        try:
            rows.append(_source_row(base, entry, row))
        except OnnxportError as exc:  # the server's own run broke: that model's failure, not the check's
            rows.append({**row, "status": "error", "reason": str(exc).splitlines()[0]})
    return rows


def _source_row(base: str, entry: ModelEntry, row: CheckRow) -> CheckRow:
    name, record = row["model"], entry["variants"]["fp32"]
    tolerance = entry.get("validation", {}).get("tolerance", {"abs": 1e-5, "rel": 1e-3})
    golden = _golden(base, name)
    data = server_http.get_bytes(f"{base}/repository/{variant_record.file_of(record)}")
    session = ort_runtime.create_session(data, label=f"{name} fp32")
    outputs = ort_runtime.run(session, golden["inputs"], label=f"{name} fp32")
    errors = compare.compare(golden["outputs"], outputs, Tolerance(abs=tolerance["abs"], rel=tolerance["rel"]))
    metric_output = entry.get("metric_output")
    metric = (
        compare.task_metric(entry["task"], golden["outputs"][metric_output], outputs[metric_output])
        if metric_output in golden["outputs"]
        else {}
    )
    failing = next(
        ((k, e) for k, e in errors.items() if "first_mismatch" in e or e.get("nonfinite") or "shape_mismatch" in e),
        None,
    )
    reason = None
    if failing:
        output, e = failing
        first: Mapping[str, object] = e["first_mismatch"] if "first_mismatch" in e else {}
        reason = (
            f"output {output} at {first.get('index')}: expected {first.get('expected')}, "
            f"got {first.get('got')} "
            f"(max abs {e.get('max_abs', 0):.3g}; tolerance abs {tolerance['abs']} + rel {tolerance['rel']})"
        )
    return {
        **row,
        "status": "fail" if reason else "pass",
        "reason": reason,
        "outputs": cast(dict[str, JsonObject], errors),
        "metric": metric,
        "tolerance": tolerance,
        "rows": len(next(iter(golden["inputs"].values()))),
    }


def _locate(
    page, base, repository: Path, debug_root: Path, manifest, result, webgpu_rows, tolerances_file: Path | None
) -> Divergence:
    entry = manifest["models"][result["model"]]
    record = entry["variants"][result["variant"]]
    if result.get("form"):
        record = record["forms"][result["form"]]
        if record["format"] != "onnx":
            return {
                "error": f"the {result['form']} form is in {record['format']} format, which onnx cannot open to "
                "expose its intermediate values"
            }
    artifact = Path(repository) / record["file"]
    name = locate.write_debug_model(artifact, debug_root)
    feeds = _golden(base, result["model"])["inputs"]
    if result["runtime"] == "webgpu" and entry.get("batch_axis"):  # as the page cut them: rows, not a sequence
        feeds = {k: v[:webgpu_rows] if v.ndim else v for k, v in feeds.items()}  # scalars (a sample rate) stay whole
    try:
        reference = locate.reference_outputs(debug_root / name, feeds)
    except OnnxportError as exc:
        # Exposing every value can break onnxruntime's own QDQ handling; say so, keep the report.
        return {"error": f"the debug model did not run in onnxruntime: {str(exc).splitlines()[0]}"}
    try:
        encoded = conformance_page.run_debug_model(
            page, base, f"{base}/debug/{name}", result["runtime"], tensor_json.encode(feeds), timeout_s=DEBUG_TIMEOUT_S
        )
    except Exception as exc:
        return {"error": f"the debug model did not run in {result['runtime']}: {str(exc).splitlines()[0]}"}
    import onnx

    found = locate.first_divergence(
        onnx.load(str(debug_root / name)),
        reference,
        tensor_json.decode(encoded),
        locate.tolerance_for(entry, result, tolerances_file),
    )
    return found or {
        "note": "every intermediate value is within tolerance: the difference comes from the final outputs' handling"
    }


def summary(results: list[CheckRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    return counts


def _served_manifest(base: str) -> Manifest:
    """The server's /api/manifest: its manifest.json as the catalog serves it (serving/models/catalog.py)."""
    return cast(Manifest, server_http.get_json(f"{base}/api/manifest"))


def _golden(base: str, model: str) -> dict[str, dict[str, np.ndarray]]:
    first = server_http.get_json(f"{base}/api/models/{model}/golden")["sets"][0]
    return {part: tensor_json.decode(first[part]) for part in ("inputs", "outputs")}
