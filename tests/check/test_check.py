"""`onnxport check` end to end: its own server, headless Chromium (SwiftShader WebGPU), the
conformance page, the source rows, --locate, the JSON/HTML reports, and the /conformance page.

`check` runs in-process through server.cli.main, in a thread of its own: Playwright's sync API
cannot start inside another sync Playwright on the same thread, and the browser fixtures of
tests/fixtures/browser.py (used by the last test, and by test_browser.py in the same session) hold one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from playwright.sync_api import expect

from onnxport import cli
from onnxport.accuracy import tolerances
from onnxport.check import locate, runner
from onnxport.harness import process
from onnxport.runtime import create_session

pytestmark = pytest.mark.slow

RUNTIMES = ("wasm", "wasm-1t", "webgpu")
STATUSES = {"pass", "fail", "error", "skipped", "unsupported"}
METRIC = {"classification": "top1_agreement", "embedding": "cosine_min"}
BACKEND = Path(__file__).resolve().parents[1] / "data" / "onnx-backend"
CHECK_TIMEOUT_S = 900


@pytest.fixture
def check_cli(capsys):
    """check_cli(*args) -> (exit code, stdout, stderr) of `onnxport ARGS...`, run in a thread."""

    def run(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()
        box: dict = {}

        def target() -> None:
            try:
                box["code"] = cli.main([str(a) for a in args])
            except SystemExit as exc:  # argparse usage errors
                box["code"] = exc.code
            except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
                box["error"] = exc

        thread = threading.Thread(target=target, name="onnxport-check", daemon=True)
        thread.start()
        thread.join(CHECK_TIMEOUT_S)
        assert not thread.is_alive(), f"`onnxport {' '.join(map(str, args))}` still running after {CHECK_TIMEOUT_S} s"
        if "error" in box:
            raise box["error"]
        out, err = capsys.readouterr()
        return box["code"], out, err

    return run


def served_variants(entry: dict) -> list[str]:
    return [v for v, record in entry["variants"].items() if record.get("status") == "ok"]


def expected_keys(manifest: dict, models: list[str], runtimes=RUNTIMES) -> list[tuple[str, str, str]]:
    keys = []
    for model in models:
        keys.append((model, "fp32", "source"))
        keys += [(model, variant, runtime) for variant in served_variants(manifest["models"][model]) for runtime in runtimes]
    return sorted(keys)


def keys_of(report: dict) -> list[tuple[str, str, str]]:
    return sorted((r["model"], r["variant"], r["runtime"]) for r in report["results"])


def result(report: dict, model: str, variant: str, runtime: str) -> dict:
    found = [r for r in report["results"] if (r["model"], r["variant"], r["runtime"]) == (model, variant, runtime)]
    assert len(found) == 1, f"{len(found)} results for {model} {variant} {runtime}"
    return found[0]


def table_rows(out: str) -> list[tuple[str, str, str, str]]:
    """(model, variant, runtime, status) of each row of the printed table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("------")) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(tuple(line.split()[:4]))
    return rows


def summary_line(report: dict) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(report["summary"].items()))


def read_golden(repository: Path, entry: dict) -> tuple[dict, dict]:
    folder = repository / entry["golden"]["path"] / "test_data_set_0"

    def read(prefix: str, names: list[dict]) -> dict:
        out = {}
        for k, spec in enumerate(names):
            proto = onnx.TensorProto()
            proto.ParseFromString((folder / f"{prefix}_{k}.pb").read_bytes())
            out[spec["name"]] = numpy_helper.to_array(proto)
        return out

    return read("input", entry["inputs"]), read("output", entry["outputs"])


def assert_report_consistent(report: dict, out: str) -> None:
    """Schema, summary and printed table agree with the results."""
    assert report["schema"] == "onnxport.conformance" and report["schema_version"] == 1
    assert report["server"].startswith("http://127.0.0.1:")
    counts: dict[str, int] = {}
    for r in report["results"]:
        assert r["status"] in STATUSES, r
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    assert report["summary"] == counts
    assert sorted(table_rows(out)) == sorted((r["model"], r["variant"], r["runtime"], r["status"]) for r in report["results"])
    assert summary_line(report) in out


# --------------------------------------------------------------------------- 1. the full demo matrix


def test_the_full_demo_matrix_passes_in_every_browser_runtime(check_cli, demo_repository, demo_manifest, tmp_path, capsys):
    report_path = tmp_path / "conformance.json"
    started = time.monotonic()
    code, out, err = check_cli("--repository", demo_repository, "check", "--json", report_path)
    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(f"\n[test_check] `onnxport check` of the full demo matrix took {elapsed:.1f} s")
    assert code == 0, f"exit {code}\n{out}\n{err}"
    assert "onnxport: error" not in err

    text = report_path.read_text()
    report = json.loads(text, parse_constant=lambda token: pytest.fail(f"report is not strict JSON: {token}"))
    models = sorted(demo_manifest["models"])
    assert keys_of(report) == expected_keys(demo_manifest, models)
    assert_report_consistent(report, out)
    assert report["tolerances"] == tolerances.table()

    batches = {m: len(next(iter(read_golden(demo_repository, demo_manifest["models"][m])[0].values()))) for m in models}
    browser = report["browser"]
    assert browser["cross_origin_isolated"] is True
    assert browser["webgpu"] is True and isinstance(browser["adapter"], dict)

    for r in report["results"]:
        where = f"{r['model']} {r['variant']} {r['runtime']}"
        entry = demo_manifest["models"][r["model"]]
        assert r["status"] in ("pass", "skipped", "unsupported"), f"{where}: {r['status']}: {r.get('reason')}"
        if r["status"] != "pass":
            assert isinstance(r.get("reason"), str) and r["reason"].strip(), f"{where} has no reason"
            assert r["runtime"] == "webgpu", f"{where} is {r['status']} off WebGPU: {r['reason']}"
            continue
        assert not r.get("reason"), where
        # Per-output errors for every output of the model.
        assert set(r["outputs"]) == {o["name"] for o in entry["outputs"]}, where
        for name, errors in r["outputs"].items():
            assert isinstance(errors["max_abs"], (int, float)) and errors["max_abs"] >= 0, (where, name)
            assert "first_mismatch" not in errors and not errors.get("nonfinite"), (where, name)
        metric = METRIC[entry["task"]]
        assert isinstance(r["metric"].get(metric), (int, float)), f"{where}: metric {r['metric']}"

        batch = batches[r["model"]]
        assert r["rows"] == (min(2, batch) if r["runtime"] == "webgpu" else batch), where
        if r["runtime"] == "source":
            assert r["variant"] == "fp32"
            assert r["tolerance"] == entry["validation"]["tolerance"], where
            continue
        tol = r["tolerance"]
        assert tol == tolerances.table()[f"{r['variant']}/{r['runtime']}"], where
        if metric == "top1_agreement":
            assert r["metric"][metric] >= tol["top1_min"], where
        else:
            assert r["metric"][metric] >= tol["cosine_min"], where
        timings = r["timings"]
        for key in ("create_ms", "first_run_ms", "warm_run_ms", "server_ms"):
            assert isinstance(timings[key], (int, float)) and timings[key] >= 0, (where, key)
        identity = r["identity"]
        assert re.fullmatch(r"\d+\.\d+\.\d+.*", identity["onnxruntime_web"]), where
        if r["runtime"] == "wasm":
            assert identity["threads"] == min(4, browser["hardware_concurrency"]), where
            assert identity["adapter"] is None and r["placement"] is None
        elif r["runtime"] == "wasm-1t":
            assert identity["threads"] == 1, where
            assert identity["adapter"] is None and r["placement"] is None
        else:
            assert identity["adapter"] == browser["adapter"], where
            assert identity["adapter"].get("architecture") or identity["adapter"].get("vendor"), where
            placement = r["placement"]
            assert placement["found"] is True and placement["webgpu_nodes"] > 0, f"{where}: {placement}"

    # Each model's source row: the fp32 artifact against the source framework's outputs.
    for model in models:
        assert result(report, model, "fp32", "source")["status"] == "pass"
    # Without shader-f16 (SwiftShader), fp16 on WebGPU is skipped, and says why.
    if not browser["shader_f16"]:
        for model in models:
            if "fp16" in served_variants(demo_manifest["models"][model]):
                skipped = result(report, model, "fp16", "webgpu")
                assert skipped["status"] == "skipped" and "shader-f16" in skipped["reason"]

    html_path = report_path.with_suffix(".html")
    html = html_path.read_text()
    assert "<table>" in html and "</table>" in html
    assert html.count("<tr class=") == len(report["results"])
    for r in report["results"]:
        assert f"<td>{r['model']}</td><td>{r['variant']}</td><td>{r['runtime']}</td><td>{r['status']}</td>" in html


# --------------------------------------------------------------------------- 2. an imported model


@pytest.fixture
def backend_data() -> Path:
    if not (BACKEND / "test_Conv2d" / "model.onnx").exists():
        pytest.fail("ONNX backend test data missing: run `make testdata` (scripts/fetch_onnx_testdata.py)")
    return BACKEND


def test_a_model_imported_from_onnx_backend_test_data_is_checked(check_cli, backend_data, tmp_path):
    repository = tmp_path / "imported"
    code, out, err = check_cli("--repository", repository, "import", backend_data / "test_Conv2d",
                               "--name", "conv2d", "--quiet")
    assert code == 0, err
    manifest = json.loads((repository / "manifest.json").read_text())
    assert list(manifest["models"]) == ["conv2d"]

    report_path = tmp_path / "out" / "conv2d.json"
    report_path.parent.mkdir()
    html_path = tmp_path / "elsewhere.html"
    code, out, err = check_cli("--repository", repository, "check", "conv2d", "--runtimes", "wasm,wasm-1t,webgpu",
                               "--json", report_path, "--html", html_path)
    assert code == 0, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    assert keys_of(report) == expected_keys(manifest, ["conv2d"])
    assert len(report["results"]) == 1 + 3 * len(served_variants(manifest["models"]["conv2d"]))
    assert_report_consistent(report, out)

    source = result(report, "conv2d", "fp32", "source")
    assert source["status"] == "pass"
    assert source["tolerance"] == manifest["models"]["conv2d"]["validation"]["tolerance"]
    for r in report["results"]:
        assert r["status"] in ("pass", "skipped", "unsupported"), r
        if r["status"] != "pass":
            assert r["reason"], r
    # Plain ONNX operators only: fp32 runs on every runtime, on the GPU for WebGPU.
    for runtime in RUNTIMES:
        assert result(report, "conv2d", "fp32", runtime)["status"] == "pass", runtime
    assert result(report, "conv2d", "fp32", "webgpu")["placement"]["webgpu_nodes"] > 0

    # --html names the HTML file: nothing is written beside the JSON then.
    assert "conv2d" in html_path.read_text()
    assert not report_path.with_suffix(".html").exists()


# --------------------------------------------------------------------------- 3. a broken artifact


def break_digits_fp32(repository: Path) -> dict:
    """Add 1.0 to the first Conv's weights of digits' fp32 artifact, store it under its new sha256
    name and point the manifest at it (atomically). Returns the new record."""
    manifest = json.loads((repository / "manifest.json").read_text())
    record = manifest["models"]["digits"]["variants"]["fp32"]
    model = onnx.load(str(repository / record["file"]))
    conv = next(node for node in model.graph.node if node.op_type == "Conv")
    weight = next(init for init in model.graph.initializer if init.name == conv.input[1])
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) + np.float32(1.0), weight.name))
    data = model.SerializeToString()
    sha256 = hashlib.sha256(data).hexdigest()
    (repository / "artifacts" / f"{sha256}.onnx").write_bytes(data)
    record.update(file=f"artifacts/{sha256}.onnx", sha256=sha256, bytes=len(data))
    temporary = repository / ".manifest.json.broken-tmp"
    temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, repository / "manifest.json")
    return record


def test_a_broken_fp32_artifact_fails_the_source_row(check_cli, repository_copy, tmp_path):
    repository = repository_copy(["digits"])
    record = break_digits_fp32(repository)
    report_path = tmp_path / "broken.json"
    code, out, err = check_cli("--repository", repository, "check", "digits", "--runtimes", "wasm", "--json", report_path)
    assert code == 1, f"exit {code}\n{out}\n{err}"
    assert "onnxport: error" not in err  # a failed check, not a failed command

    report = json.loads(report_path.read_text())
    assert_report_consistent(report, out)
    source = result(report, "digits", "fp32", "source")
    assert source["status"] == "fail"
    match = re.search(r"output logits at \[(\d+), (\d+)\]", source["reason"])
    assert match, source["reason"]
    mismatch = source["outputs"]["logits"]["first_mismatch"]
    assert mismatch["index"] == [int(match.group(1)), int(match.group(2))]
    assert set(mismatch) >= {"index", "expected", "got"}

    # expected is the source framework's output; got is the broken artifact's, from onnxruntime.
    entry = json.loads((repository / "manifest.json").read_text())["models"]["digits"]
    inputs, outputs = read_golden(repository, entry)
    index = tuple(mismatch["index"])
    assert mismatch["expected"] == pytest.approx(float(outputs["logits"][index]), rel=1e-6)
    session = create_session(repository / record["file"])
    broken = session.run(["logits"], inputs)[0]
    assert mismatch["got"] == pytest.approx(float(broken[index]), rel=1e-4, abs=1e-4)
    assert abs(mismatch["got"] - mismatch["expected"]) > entry["validation"]["tolerance"]["abs"]

    # The browser runs the same (broken) artifact as the server: only the source row can catch it.
    for variant in served_variants(entry):
        assert result(report, "digits", variant, "wasm")["status"] == "pass", variant
    failing = [line for line in out.splitlines() if re.match(r"digits\s+fp32\s+source\s+fail\b", line)]
    assert len(failing) == 1 and "logits" in failing[0]


# --------------------------------------------------------------------------- 4. --locate


def test_locate_names_the_first_node_that_differs_at_all(check_cli, demo_repository, demo_manifest, tmp_path):
    exact = tmp_path / "exact.json"
    exact.write_text(json.dumps({"fp32/wasm": {"abs": 0, "rel": 0}}))  # only bit-equal values pass
    report_path = tmp_path / "located.json"
    code, out, err = check_cli("--repository", demo_repository, "check", "digits", "--runtimes", "wasm",
                               "--tolerances", exact, "--locate", "--json", report_path)
    assert code == 1, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    assert_report_consistent(report, out)
    assert report["tolerances"]["fp32/wasm"]["abs"] == 0 and str(exact) in report["tolerances"]["fp32/wasm"]["why"]

    row = result(report, "digits", "fp32", "wasm")
    assert row["status"] == "fail"
    assert re.search(r"output logits at \[\d+, \d+\]", row["reason"]), row["reason"]
    assert row["tolerance"]["abs"] == 0 and row["tolerance"]["rel"] == 0

    divergence = row["divergence"]
    assert {"node", "op_type", "output", "index"} <= set(divergence), divergence
    artifact = onnx.load(str(demo_repository / demo_manifest["models"]["digits"]["variants"]["fp32"]["file"]))
    first_conv = next((i, n) for i, n in enumerate(artifact.graph.node) if n.op_type == "Conv")
    assert first_conv[0] == 0, "digits no longer starts with a Conv; rethink this test"
    assert divergence["op_type"] == "Conv"
    assert divergence["node"] == first_conv[1].name and divergence["node_index"] == first_conv[0]
    assert divergence["output"] == first_conv[1].output[0]
    assert isinstance(divergence["index"], list) and len(divergence["index"]) == 4
    assert divergence["expected"] != divergence["got"]

    # expected is onnxruntime's value of that intermediate on the golden inputs.
    inputs, _ = read_golden(demo_repository, demo_manifest["models"]["digits"])
    debug = locate.debug_model(artifact)
    session = create_session(debug.SerializeToString())
    value = session.run([divergence["output"]], inputs)[0]
    assert divergence["expected"] == pytest.approx(float(value[tuple(divergence["index"])]), rel=1e-5, abs=1e-6)

    # The text table says it too; rows that pass get no divergence.
    assert f"first divergence: node {divergence['node']} (Conv)" in out
    for r in report["results"]:
        if r["status"] == "pass":
            assert "divergence" not in r


# --------------------------------------------------------------------------- 5. bad input


def test_an_unknown_model_is_one_error_line_naming_it(check_cli, demo_repository, assert_one_line_error):
    code, out, err = check_cli("--repository", demo_repository, "check", "iris", "no-such-model", "--runtimes", "wasm")
    assert code == 1
    assert_one_line_error(err, "unknown model 'no-such-model'", "digits, iris, minilm")
    assert out == ""


@pytest.mark.parametrize("runtimes", ["cuda", "wasm,webgl", "wasm,,wasm-2t"])
def test_an_unknown_runtime_is_one_error_line_naming_it(check_cli, demo_repository, assert_one_line_error, runtimes):
    bad = [r for r in runtimes.split(",") if r and r not in RUNTIMES][0]
    code, out, err = check_cli("--repository", demo_repository, "check", "--runtimes", runtimes)
    assert code == 1
    assert_one_line_error(err, f"unknown runtime '{bad}'", "wasm, wasm-1t, webgpu")
    assert out == ""


@pytest.mark.parametrize("option", [["--locate"], ["--tolerances", "t.json"]], ids=["locate", "tolerances"])
def test_url_with_options_needing_the_checks_own_server_is_an_error(check_cli, demo_repository,
                                                                    assert_one_line_error, tmp_path, option):
    (tmp_path / "t.json").write_text("{}")
    code, out, err = check_cli("--repository", demo_repository, "check", "--url", "http://127.0.0.1:9", *option)
    assert code == 1
    assert_one_line_error(err, "--url", option[0])


def test_a_bad_tolerances_file_fails_before_anything_starts(check_cli, demo_repository, assert_one_line_error,
                                                            tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(runner, "running_server", lambda *a, **k: started.append(a) or pytest.fail("server started"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fp32/tpu": {"abs": 1}}))
    code, _, err = check_cli("--repository", demo_repository, "check", "--tolerances", bad)
    assert code == 1
    assert_one_line_error(err, str(bad), "'fp32/tpu'")
    assert not started


def test_a_missing_browser_is_one_error_line_naming_it(check_cli, repository_copy, assert_one_line_error, tmp_path):
    repository = repository_copy(["iris"])
    missing = tmp_path / "no-chromium"
    code, out, err = check_cli("--repository", repository, "check", "--runtimes", "wasm", "--browser", missing)
    assert code == 1
    assert_one_line_error(err, str(missing))


def test_a_relative_repository_is_the_callers(check_cli, repository_copy, tmp_path, monkeypatch):
    repository = repository_copy(["iris"])  # tmp_path/repository-0; the working folder is tmp_path
    assert Path.cwd() == tmp_path and repository.parent == tmp_path
    # The 60 s readiness wait, shortened so that the failure is quick.
    monkeypatch.setattr(runner, "running_server", functools.partial(process.running_server, timeout=15))
    code, out, err = check_cli("--repository", repository.name, "check", "iris", "--runtimes", "wasm")
    assert code == 0, err


# --------------------------------------------------------------------------- 6. the page in a browser


def test_the_conformance_page_fills_the_matrix_and_offers_the_report(open_tab, demo_manifest):
    tab = open_tab("conformance?autorun=1&models=iris&runtimes=wasm")
    page = tab.page
    status = page.get_by_test_id("conformance-status")
    expect(status).to_have_attribute("data-done", "true", timeout=180_000)
    assert status.get_attribute("data-error") is None, status.get_attribute("data-error")
    assert status.get_attribute("data-failed") == "0"

    variants = served_variants(demo_manifest["models"]["iris"])
    matrix = page.get_by_test_id("conformance-matrix")
    assert matrix.locator("thead th").all_inner_texts() == ["model", "variant", "wasm"]
    cells = matrix.locator("td[data-cell]")
    expect(cells).to_have_count(len(variants))
    expect(matrix.locator("td[data-status=pass]")).to_have_count(len(variants))
    assert sorted(c.get_attribute("data-cell") for c in cells.all()) == sorted(f"iris/{v}/wasm" for v in variants)
    assert all(text.startswith("pass") for text in matrix.locator("td[data-status=pass]").all_inner_texts())

    link = page.get_by_test_id("conformance-download")
    expect(link).to_be_visible()
    assert link.get_attribute("download") == "onnxport-conformance.json"
    with page.expect_download() as download_info:
        link.click()
    report = json.loads(Path(download_info.value.path()).read_text())
    assert report["schema"] == "onnxport.conformance" and report["schema_version"] == 1
    assert sorted((r["model"], r["variant"], r["runtime"], r["status"]) for r in report["results"]) == sorted(
        ("iris", v, "wasm", "pass") for v in variants)
    assert tab.console_errors == []
