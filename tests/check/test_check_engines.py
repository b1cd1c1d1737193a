"""`onnxport check --browsers`: one report over several engines (Firefox and WebKit beside Chromium), the findings
where engines differ (check/engine_findings.py), and an unknown engine refused before anything starts."""

from __future__ import annotations

import json
import re
import time

import pytest

from fixtures.check import assert_report_consistent, served_forms, served_variants
from name_models import matmul_file
from onnxport.check import check_run as runner
from onnxport.check.engine_findings import compare
from onnxport.check.row_stream import row_line
from onnxport.harness import browser_engines

OTHER_ENGINES = ("firefox", "webkit")


@pytest.mark.slow
def test_the_demo_in_firefox_and_webkit_one_report(check_cli, demo_repository, demo_manifest, tmp_path, capsys):
    """The demo models in Firefox and WebKit: every served variant passes on wasm in both and the pipelines agree;
    on WebGPU, iris and digits pass on Firefox's lavapipe and WebKitGTK's rows name the engine and its reason."""
    missing = [e for e in OTHER_ENGINES if e not in browser_engines.installed()]
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)} (`make browsers` installs them)")
    report_path = tmp_path / "conformance.json"
    started = time.monotonic()
    # WebGPU on iris and digits only: minilm's on Firefox's software adapter is a minute of this test, and
    # its fp16 failure is the library's test (tests/browser/test_engines_library.py).
    code, out, err = check_cli(
        "--repository",
        demo_repository,
        "check",
        "--browsers",
        "firefox,webkit",
        "--runtimes",
        "wasm",
        "--json",
        report_path,
    )
    gpu_path = tmp_path / "webgpu.json"
    gpu_code, _, gpu_err = check_cli(
        "--repository",
        demo_repository,
        "check",
        "iris",
        "digits",
        "--browsers",
        "firefox,webkit",
        "--runtimes",
        "webgpu",
        "--json",
        gpu_path,
    )
    with capsys.disabled():
        print(
            f"\n[test_check_engines] the demo on wasm, iris and digits on webgpu, in firefox and webkit: "
            f"{time.monotonic() - started:.1f} s"
        )
    report, gpu_report = json.loads(report_path.read_text()), json.loads(gpu_path.read_text())
    failing = [r for r in report["results"] if r["status"] in runner.FAILING]
    assert code == (1 if failing else 0), f"exit {code}\n{out}\n{err}"
    assert report["incomplete"] is None
    assert_report_consistent(report, out)

    for engine in OTHER_ENGINES:
        rows = [r for r in report["results"] if r.get("browser") == engine]
        for name, entry in demo_manifest["models"].items():
            expected = sorted(
                (variant, form)
                for variant in served_variants(entry)
                for form in ["-", *served_forms(entry, variant, "wasm")]
            )
            wasm = [r for r in rows if r["model"] == name and r["runtime"] == "wasm"]
            assert sorted((r["variant"], r.get("form") or "-") for r in wasm) == expected, (engine, name)
            assert {r["status"] for r in wasm} == {"pass"}, [r for r in wasm if r["status"] != "pass"]
        pipelines = [r for r in rows if r["runtime"] in ("preprocessing", "answers")]
        assert pipelines and {r["status"] for r in pipelines} == {"pass"}, pipelines
        streamed = err.splitlines()  # as they finished, the page's with their progress after them
        assert all(any(line.startswith(row_line(r)) for line in streamed) for r in rows), err
    # WebKitGTK: navigator.gpu is null, every webgpu row says so; Firefox: lavapipe runs them, and one that fails
    # (minilm fp16: its shader compiler refuses 'Clip') names the engine and the reason.
    assert gpu_code == 0, gpu_err
    webkit_gpu = [r for r in gpu_report["results"] if r.get("browser") == "webkit" and r["runtime"] == "webgpu"]
    assert webkit_gpu and {r["status"] for r in webkit_gpu} == {"skipped"}, webkit_gpu
    assert all("navigator.gpu is null" in r["reason"] for r in webkit_gpu), webkit_gpu[0]["reason"]
    firefox_gpu = [r for r in gpu_report["results"] if r.get("browser") == "firefox" and r["runtime"] == "webgpu"]
    assert firefox_gpu and {r["status"] for r in firefox_gpu} == {"pass"}, firefox_gpu
    assert failing == [], failing
    assert gpu_report["browsers"]["firefox"]["adapter"]["fallback"] is True  # lavapipe: a software adapter

    assert list(report["browsers"]) == list(OTHER_ENGINES)
    firefox, webkit = report["browsers"]["firefox"], report["browsers"]["webkit"]
    assert re.fullmatch(r"\d+\.\d+(\.\d+)*", firefox["version"]) and "Firefox/" in firefox["user_agent"], firefox
    assert re.fullmatch(r"\d+\.\d+(\.\d+)*", webkit["version"]) and "AppleWebKit/" in webkit["user_agent"], webkit
    for engine, identity in report["browsers"].items():
        assert f"\n{engine} {identity['version']}: " in out, out
    assert report["speed"]["webkit"]["against"] == "firefox" and report["speed"]["webkit"]["runtimes"]["wasm"]["rows"]
    # The table's browser column, and the HTML matrix's columns: one per runtime and engine.
    table = {line.split()[0] for line in out.splitlines() if " iris " in line and " wasm " in line}
    assert table == set(OTHER_ENGINES), table
    assert "<th>wasm<br>firefox</th>" in report_path.with_suffix(".html").read_text()
    assert "<th>webgpu<br>webkit</th>" in gpu_path.with_suffix(".html").read_text()
    # docs/reference/conformance.md: every row names its `browser`, null in the source rows.
    assert {r.get("browser", "absent") for r in report["results"] if r["runtime"] == "source"} == {None}


@pytest.mark.parametrize("browsers, bad", [("safari", "safari"), ("chromium,edge", "edge")])
def test_an_unknown_browser_is_one_error_line_before_a_server_starts(
    check_cli, assert_one_line_error, tmp_path, monkeypatch, browsers, bad
):
    monkeypatch.setattr(runner, "running_server", lambda *a, **k: pytest.fail("a server started"))
    code, out, err = check_cli("--repository", tmp_path / "repository", "check", "--browsers", browsers)
    assert code == 2
    assert_one_line_error(err, f"unknown browser {bad!r}; browsers: chromium, firefox, webkit")
    assert out == ""


def test_an_engine_not_installed_is_one_error_line_before_a_server_starts(
    check_cli, assert_one_line_error, tmp_path, monkeypatch
):
    monkeypatch.setattr(runner, "running_server", lambda *a, **k: pytest.fail("a server started"))
    from onnxport import cli

    # A repository with a model: an empty one is the command line's mistake, said first (exit 2).
    assert (
        cli.main(
            [
                "--repository",
                str(tmp_path / "repository"),
                "import",
                str(matmul_file(tmp_path / "models")),
                "--name",
                "mm",
                "--quiet",
                "--forms",
                "none",
            ]
        )
        == 0
    )
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    code, out, err = check_cli("--repository", tmp_path / "repository", "check", "--browsers", "firefox")
    assert code == 1
    assert_one_line_error(err, "firefox is not installed: apt-get install -y firefox-esr")


# --------------------------------------------------------------------------- engine_findings.compare


def row(
    browser: str | None,
    status: str,
    *,
    runtime: str = "wasm",
    max_abs: float | None = None,
    variant: str = "fp32",
    form: str | None = None,
    reason: str | None = None,
) -> dict:
    outputs = {"probabilities": {"max_abs": max_abs}, "label": {"max_abs": 0.0}} if max_abs is not None else {}
    return {
        "model": "iris",
        "variant": variant,
        "form": form,
        "runtime": runtime,
        "browser": browser,
        "status": status,
        "reason": reason,
        "outputs": outputs,
    }


def test_a_status_that_differs_between_engines_is_a_finding_with_each_reason():
    findings = compare(
        [
            row("chromium", "pass", max_abs=1e-7),
            row("firefox", "fail", reason="output 0 at 3: ..."),
            row("webkit", "pass", max_abs=1e-7),
        ]
    )
    assert findings == [
        {
            "model": "iris",
            "variant": "fp32",
            "form": None,
            "runtime": "wasm",
            "kind": "status",
            "statuses": {"chromium": "pass", "firefox": "fail", "webkit": "pass"},
            "reasons": {"firefox": "output 0 at 3: ..."},
            "text": "chromium pass, firefox fail, webkit pass",
        }
    ]


def test_different_numbers_on_webassembly_are_a_finding():
    findings = compare([row("chromium", "pass", max_abs=1.2e-7), row("firefox", "pass", max_abs=3e-6)])
    assert [(f["kind"], f["max_abs"], f["text"]) for f in findings] == [
        ("numbers", {"chromium": 1.2e-7, "firefox": 3e-6}, "max abs to the server: chromium 1.2e-07, firefox 3e-06")
    ]


def test_the_same_numbers_and_webgpu_numbers_are_no_finding():
    same = [row("chromium", "pass", max_abs=1.2e-7), row("webkit", "pass", max_abs=1.2e-7)]
    webgpu = [
        row("chromium", "pass", runtime="webgpu", max_abs=1e-4),
        row("firefox", "pass", runtime="webgpu", max_abs=2e-3),
    ]
    assert compare(same) == [] and compare(webgpu) == []


def test_one_engine_alone_is_no_finding_even_failing():
    assert compare([row("chromium", "fail", reason="wrong"), row("chromium", "error", runtime="wasm-1t")]) == []
    assert compare([row(None, "fail", runtime="source"), row("firefox", "pass", runtime="source")]) == []


def test_skipped_rows_are_not_compared():
    # WebKit has no WebGPU adapter: its webgpu rows are skipped, which its engine line says, not a finding.
    assert (
        compare(
            [
                row("chromium", "pass", runtime="webgpu"),
                row("firefox", "pass", runtime="webgpu"),
                row("webkit", "skipped", runtime="webgpu", reason="no WebGPU adapter"),
            ]
        )
        == []
    )
    # A row an engine tried and refused still is one.
    findings = compare(
        [
            row("chromium", "pass", runtime="webgpu"),
            row("webkit", "skipped", runtime="webgpu"),
            row("firefox", "unsupported", runtime="webgpu", reason="ShaderModule with 'Clip' label"),
        ]
    )
    assert [(f["statuses"], f["reasons"]) for f in findings] == [
        ({"chromium": "pass", "firefox": "unsupported"}, {"firefox": "ShaderModule with 'Clip' label"})
    ]


def test_each_form_and_variant_is_its_own_row():
    assert (
        compare([row("chromium", "pass", form="basic"), row("firefox", "fail"), row("webkit", "fail", variant="fp16")])
        == []
    )
