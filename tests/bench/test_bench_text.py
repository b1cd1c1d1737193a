"""bench's text table: the WebGPU cell of a variant whose file cannot run there (a tree ensemble's ai.onnx.ml
operators) is its fastest form that ran, named, not a dash."""

from __future__ import annotations

from onnxport.bench.bench_report import webgpu_cell


def _row(form: str | None, status: str, median_ms: float | None = None) -> dict:
    row = {"model": "lgbm_cancer", "variant": "fp32", "form": form, "runtime": "webgpu", "status": status}
    return {**row, "warm": {"median_ms": median_ms}} if median_ms is not None else row


def test_a_file_webgpu_cannot_run_shows_its_fastest_form_that_ran():
    # As `onnxport bench lgbm_cancer --runtimes wasm,webgpu` recorded them in Chromium on SwiftShader.
    report = {"browser": {"results": [_row(None, "error"), _row("gemm", "ok", 56.165), _row("basic", "ok", 70.0)]}}
    assert webgpu_cell(report, "lgbm_cancer", "fp32") == "56.165 (gemm)"


def test_the_file_as_built_is_shown_when_it_ran_and_a_dash_when_nothing_did():
    ran = {"browser": {"results": [_row(None, "ok", 3.25), _row("gemm", "ok", 1.0)]}}
    assert webgpu_cell(ran, "lgbm_cancer", "fp32") == "3.250"
    assert webgpu_cell({"browser": {"results": [_row(None, "error")]}}, "lgbm_cancer", "fp32") == "-"
    assert webgpu_cell({}, "lgbm_cancer", "fp32") == "-"
