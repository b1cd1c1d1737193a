"""`onnxport check` end to end: the demo matrix in every browser runtime (on a software WebGPU adapter, one WebGPU
row per model, as the default plans it), and an imported ONNX model."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from fixtures.check import RUNTIMES, assert_report_consistent, read_golden, result, served_forms, served_variants
from onnxport.accuracy import browser_tolerances, judgement

pytestmark = pytest.mark.slow

METRIC = {"classification": "top1_agreement", "embedding": "cosine_min"}
BACKEND = Path(__file__).resolve().parents[1] / "data" / "onnx-backend"


def expected_keys(manifest: dict, models: list[str], runtimes=RUNTIMES) -> list[tuple[str, str, str, str]]:
    """(model, variant, form, runtime): every served variant as built ("-") and each of its forms made
    for the runtime."""
    keys = []
    for model in models:
        entry = manifest["models"][model]
        keys.append((model, "fp32", "-", "source"))
        if entry.get("pipeline"):  # its raw-input pipeline: the tensors, then the answers end to end
            keys += [(model, "-", "-", "preprocessing"), (model, "fp32", "-", "answers")]
        keys += [
            (model, variant, form, runtime)
            for variant in served_variants(entry)
            for runtime in runtimes
            for form in ["-", *served_forms(entry, variant, runtime)]
        ]
    return sorted(keys)


def keys_of(report: dict) -> list[tuple[str, str, str, str]]:
    return sorted((r["model"], r["variant"], r.get("form") or "-", r["runtime"]) for r in report["results"])


# --------------------------------------------------------------------------- the demo matrix


def test_the_demo_matrix_passes_in_every_browser_runtime(check_cli, demo_repository, demo_manifest, tmp_path, capsys):
    report_path = tmp_path / "conformance.json"
    started = time.monotonic()
    # The default plan, as users meet it: every wasm and wasm-1t row, and on this machine's software WebGPU
    # adapter one row per model. Every variant and form on WebGPU (--full-webgpu) is the two small models' test
    # (test_check_software_webgpu.py): here it was 160 s of SwiftShader, most of this test.
    code, out, err = check_cli("--repository", demo_repository, "check", "--json", report_path)
    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(f"\n[test_check] `onnxport check` of the demo matrix took {elapsed:.1f} s")
    assert code == 0, f"exit {code}\n{out}\n{err}"
    assert "onnxport: error" not in err

    text = report_path.read_text()
    report = json.loads(text, parse_constant=lambda token: pytest.fail(f"report is not strict JSON: {token}"))
    models = sorted(demo_manifest["models"])
    plan = report["plans"]["chromium"]["webgpu"]
    assert plan["scope"] == "one per model" and plan["left_out"] > 0, plan
    assert sorted(plan["chosen"]) == models, plan
    webgpu = [(model, variant, "-", "webgpu") for model, variant in plan["chosen"].items()]
    wasm = expected_keys(demo_manifest, models, runtimes=[r for r in RUNTIMES if r != "webgpu"])
    assert keys_of(report) == sorted(wasm + webgpu)
    assert_report_consistent(report, out)
    assert report["tolerances"] == browser_tolerances.table()

    batches = {m: len(next(iter(read_golden(demo_repository, demo_manifest["models"][m])[0].values()))) for m in models}
    browser = report["browser"]
    assert browser["cross_origin_isolated"] is True
    assert browser["webgpu"] is True and isinstance(browser["adapter"], dict)

    for r in report["results"]:
        where = f"{r['model']} {r['variant']} {r.get('form') or 'as built'} {r['runtime']}"
        entry = demo_manifest["models"][r["model"]]
        assert r["status"] in ("pass", "skipped", "unsupported"), f"{where}: {r['status']}: {r.get('reason')}"
        if r["runtime"] in ("preprocessing", "answers"):
            assert r["status"] == "pass" and r["inputs"] >= 10 and r["reason"], where
            continue
        if r["status"] != "pass":
            assert isinstance(r.get("reason"), str) and r["reason"].strip(), f"{where} has no reason"
            assert r["runtime"] == "webgpu", f"{where} is {r['status']} off WebGPU: {r['reason']}"
            continue
        assert not r.get("reason"), where
        # Per-output errors for every output of the model; element by element they decide only fp32 files.
        assert set(r["outputs"]) == {o["name"] for o in entry["outputs"]}, where
        for name, errors in r["outputs"].items():
            assert isinstance(errors["max_abs"], (int, float)) and errors["max_abs"] >= 0, (where, name)
            assert not errors.get("nonfinite"), (where, name)
            if r.get("basis") == "floor":
                assert "first_mismatch" not in errors, (where, name)
        metric = METRIC[entry["task"]]
        assert isinstance(r["metric"].get(metric), (int, float)), f"{where}: metric {r['metric']}"

        batch = batches[r["model"]]
        assert r["rows"] == (min(2, batch) if r["runtime"] == "webgpu" else batch), where
        if r["runtime"] == "source":
            assert r["variant"] == "fp32"
            assert r["tolerance"] == entry["validation"]["tolerance"], where
            continue
        tol = r["tolerance"]
        assert tol == browser_tolerances.table()[f"{r['variant']}/{r['runtime']}"], where
        variant = entry["variants"][r["variant"]]
        assert r["arithmetic"] == variant.get("arithmetic", variant["precision"]), where
        if r["arithmetic"] == "fp32":
            # A file that computes in fp32: element-wise against the server's run, within onnxruntime-web's floor.
            # onnxruntime-web's floor, loosened to the recipe's export tolerance where that is looser.
            floor = judgement.fp32_floor(browser_tolerances.table()[f"fp32/{r['runtime']}"], entry["validation"])
            assert r["basis"] == "floor" and r["floor"] == floor, where
            assert r["metric"][metric] >= r["floor"]["top1_min" if metric == "top1_agreement" else "cosine_min"], where
            assert r["diagnostic"] is None and r["metric_vs_fp32"] is None, where
        else:
            # fp16 and int8: the task metric against fp32 within the variant's budget, as the import judged it.
            assert r["basis"] == "budget" and r["budget"] == variant["budget"], where
            bound = r["budget"]["top1_min" if metric == "top1_agreement" else "cosine_min"]
            assert r["metric_vs_fp32"][metric] >= bound, where
            assert r["diagnostic"]["max_abs"] == max(o["max_abs"] for o in r["outputs"].values()), where
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

    # Every form of every demo model is checked, and passes on WebAssembly like its variant.
    for model in models:
        forms = [r for r in report["results"] if r["model"] == model and r.get("form")]
        assert {r["form"] for r in forms} >= {"ort", "basic"}, model
        assert all(r["status"] == "pass" for r in forms if r["runtime"] != "webgpu"), model
        form_files = {
            f["sha256"]
            for v in demo_manifest["models"][model]["variants"].values()
            for f in v.get("forms", {}).values()
            if f["status"] == "ok"
        }
        assert {r["sha256"] for r in forms} == form_files, model
    minilm_forms = {r["form"] for r in report["results"] if r["model"] == "minilm" and r.get("form")}
    assert minilm_forms == {"ort", "basic", "fused"}

    # Each model's source row: the fp32 artifact against the source framework's outputs.
    for model in models:
        assert result(report, model, "fp32", "source")["status"] == "pass"
    # fp16 skipped on WebGPU without shader-f16 (SwiftShader) is test_check_software_webgpu.py's, with every row.

    html_path = report_path.with_suffix(".html")
    html = html_path.read_text()
    assert "<table>" in html and "</table>" in html
    assert html.count("<tr class=") == len(report["results"])
    for r in report["results"]:
        assert (
            f"<td>{r['model']}</td><td>{r['variant']}</td><td>{r.get('form') or '-'}</td><td>{r['runtime']}</td>"
            f"<td>{r['status']}</td>"
        ) in html


# --------------------------------------------------------------------------- an imported model


@pytest.fixture
def backend_data() -> Path:
    if not (BACKEND / "test_Conv2d" / "model.onnx").exists():
        pytest.fail("ONNX backend test data missing: run `make testdata` (scripts/testdata/fetch_onnx_backend.py)")
    return BACKEND


def test_a_model_imported_from_onnx_backend_test_data_is_checked(check_cli, backend_data, tmp_path):
    repository = tmp_path / "imported"
    code, out, err = check_cli(
        "--repository", repository, "import", backend_data / "test_Conv2d", "--name", "conv2d", "--quiet"
    )
    assert code == 0, err
    manifest = json.loads((repository / "manifest.json").read_text())
    assert list(manifest["models"]) == ["conv2d"]

    report_path = tmp_path / "out" / "conv2d.json"
    report_path.parent.mkdir()
    html_path = tmp_path / "elsewhere.html"
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "conv2d",
        "--runtimes",
        "wasm,wasm-1t,webgpu",
        "--full-webgpu",
        "--json",
        report_path,
        "--html",
        html_path,
    )
    assert code == 0, f"exit {code}\n{out}\n{err}"
    report = json.loads(report_path.read_text())
    assert keys_of(report) == expected_keys(manifest, ["conv2d"])
    entry = manifest["models"]["conv2d"]
    assert len(report["results"]) == 1 + sum(
        1 + len(served_forms(entry, variant, runtime)) for variant in served_variants(entry) for runtime in RUNTIMES
    )
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
