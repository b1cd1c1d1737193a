"""`onnxport check` on a machine whose WebGPU adapters are software (SwiftShader in Chromium, lavapipe in Firefox):
by default one WebGPU row per model, said in one line before the rows and in the summary; `--full-webgpu` runs
them all. And the progress on every row line: row N of M, the time taken, an estimate of the time left."""

from __future__ import annotations

import json
import re
import time

import pytest
from small_models import two_model_repository

from onnxport.harness import browser_engines

pytestmark = pytest.mark.slow

MODELS = ("mlp-a", "mlp-b")
PROGRESS = re.compile(r"^(  \[(\w+)\] .*)  \(row (\d+) of (\d+), (\d\d:\d\d) elapsed, (.*)\)$")


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return two_model_repository(tmp_path_factory.mktemp("software-webgpu"))


@pytest.fixture(scope="module")
def software_engines():
    """The installed engines whose WebGPU adapter is software here (all of them on a machine without a GPU)."""
    found = [e for e in ("chromium", "firefox") if e in browser_engines.installed()]
    if not found:
        pytest.skip("neither chromium nor firefox is installed here (`make browsers` installs them)")
    return found


def webgpu_rows(report: dict, engine: str) -> list[tuple[str, str, str | None, str]]:
    return [
        (r["model"], r["variant"], r.get("form"), r["status"])
        for r in report["results"]
        if r.get("browser") == engine and r["runtime"] == "webgpu"
    ]


def test_one_webgpu_row_per_model_on_a_software_adapter_said_once_with_progress(
    check_cli, repository, software_engines, tmp_path, capsys
):
    report_path = tmp_path / "report.json"
    started = time.monotonic()
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "--browsers",
        ",".join(software_engines),
        "--runtimes",
        "wasm,webgpu",
        "--json",
        report_path,
    )
    report = json.loads(report_path.read_text())
    with capsys.disabled():
        print(
            f"\n[software webgpu] default check of 2 models in {', '.join(software_engines)}: "
            f"{time.monotonic() - started:.1f} s, {len(report['results'])} rows"
        )
    assert code == 0, f"exit {code}\n{out}\n{err}"
    manifest = json.loads((repository / "manifest.json").read_text())
    for engine in software_engines:
        identity = report["browsers"][engine]
        assert identity["adapter"]["fallback"] is True, identity
        # fp32, as built: the one row of each model; every other variant and form is left out, and counted.
        assert webgpu_rows(report, engine) == [(m, "fp32", None, "pass") for m in MODELS], webgpu_rows(report, engine)
        plan = report["plans"][engine]["webgpu"]
        full = sum(
            1 + sum(1 for f in record["forms"].values() if f["status"] == "ok" and f["runtimes"] is None)
            for m in MODELS
            for record in manifest["models"][m]["variants"].values()
            if record["status"] == "ok"
        )
        assert plan == {
            "scope": "one per model",
            "adapter": plan["adapter"],
            "chosen": dict.fromkeys(MODELS, "fp32"),
            "left_out": full - len(MODELS),
        }, plan
        # Said in one line before the rows, and in the summary's engine line.
        notes = [line for line in err.splitlines() if "one webgpu row per model" in line]
        name = identity["adapter"]["architecture"] or "unnamed"
        assert (
            f"  WebGPU adapter is software ({name}): one webgpu row per model (mlp-a fp32, mlp-b fp32), "
            f"{plan['left_out']} left out; --full-webgpu runs them all (up to a minute each)" in notes
        ), err
        engine_line = next(line for line in out.splitlines() if line.startswith(f"{engine} {identity['version']}: "))
        assert f"one row per model ({plan['left_out']} left out: --full-webgpu runs them)" in engine_line, engine_line
        assert_progress(err, engine, report)
    assert len([line for line in err.splitlines() if "one webgpu row per model" in line]) == len(software_engines)


def assert_progress(err: str, engine: str, report: dict) -> None:
    """Every page row of `engine` printed with `row N of M` (N counting up to M, the page's plan), the time taken
    and, once a row has finished, an estimate of the time left; the last one says none is left."""
    rows = [r for r in report["results"] if r.get("browser") == engine and r["runtime"] in ("wasm", "webgpu")]
    lines = [m for m in map(PROGRESS.match, err.splitlines()) if m and m.group(2) == engine]
    total = report["plans"][engine]["rows"]
    assert total == len(rows) and [int(m.group(3)) for m in lines] == list(range(1, total + 1)), err
    assert {int(m.group(4)) for m in lines} == {total}
    elapsed = [int(m.group(5)[:2]) * 60 + int(m.group(5)[3:]) for m in lines]
    assert elapsed == sorted(elapsed), elapsed
    estimates = [m.group(6) for m in lines]
    assert all(re.fullmatch(r"about \d\d:\d\d left", e) for e in estimates[:-1]), estimates
    assert estimates[-1] == "no rows left"
    assert all(r["row_ms"] >= 0 for r in rows)  # what the estimate is made of, from the page
    assert "rows (wasm, webgpu), engine " in err


def test_full_webgpu_runs_every_variant_and_form_on_the_software_adapter(check_cli, repository, tmp_path):
    report_path = tmp_path / "report.json"
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "--browsers",
        "chromium",
        "--runtimes",
        "webgpu",
        "--full-webgpu",
        "--json",
        report_path,
    )
    assert code == 0, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    manifest = json.loads((repository / "manifest.json").read_text())
    variants = [(m, variant, record) for m in MODELS for variant, record in manifest["models"][m]["variants"].items()]
    expected = sorted(
        (m, variant, form)
        for m, variant, record in variants
        if record["status"] == "ok"
        for form in ["-", *(f for f, r in record["forms"].items() if r["status"] == "ok" and r["runtimes"] is None)]
    )
    rows = webgpu_rows(report, "chromium")
    assert sorted((m, v, f or "-") for m, v, f, _ in rows) == expected
    # SwiftShader has no shader-f16: fp16's rows are skipped with why; the others ran.
    assert {s for m, v, f, s in rows if v != "fp16"} == {"pass"} and {s for m, v, f, s in rows if v == "fp16"} == {
        "skipped"
    }, rows
    assert report["plans"]["chromium"]["webgpu"] == {"scope": "full"}
    assert "WebGPU adapter is software (swiftshader), --full-webgpu: every webgpu row runs" in err, err
    assert "left out" not in out
