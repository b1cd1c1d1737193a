"""check/check_report.py: the table and the HTML page say what decided each verdict and show the diagnostic."""

from __future__ import annotations

from onnxport.check import check_report

DIAGNOSTIC = (
    "element-wise vs the server's output of this file: max abs 0.5 in 'logits', first outside the floor at "
    "logits[0, 0]; the element rule would have needed abs 0.5"
)


def _report() -> dict:
    common = {"model": "m", "form": None, "task": "classification", "timings": {"warm_run_ms": 1.5}}
    return {
        "results": [
            {
                **common,
                "variant": "fp32",
                "runtime": "source",
                "status": "pass",
                "outputs": {"logits": {"max_abs": 1e-7}},
                "metric": {"top1_agreement": 1.0},
            },
            {
                **common,
                "variant": "fp32",
                "runtime": "wasm",
                "status": "fail",
                "basis": "floor",
                "reason": "output 'logits' at [0, 0]: expected 1.0, got 1.001 (max abs 0.001; floor abs 0.0001, rel 1e-06)",  # noqa: E501
                "outputs": {"logits": {"max_abs": 1e-3}},
                "metric": {"top1_agreement": 1.0},
            },
            {
                **common,
                "variant": "int8-dynamic",
                "runtime": "wasm",
                "status": "pass",
                "basis": "budget",
                "reason": None,
                "outputs": {"logits": {"max_abs": 0.5}},
                "metric": {"top1_agreement": 0.75},
                "metric_vs_fp32": {"top1_agreement": 1.0},
                "diagnostic": {"max_abs": 0.5, "text": DIAGNOSTIC},
            },
            {**common, "variant": "fp16", "runtime": "webgpu", "status": "skipped", "reason": "no shader-f16"},
        ],
        "summary": {"pass": 2, "fail": 1, "skipped": 1},
    }


def test_the_table_has_the_basis_the_judged_metric_and_the_diagnostic():
    rows = {(r[2], r[4]): r for r in check_report.rows(_report())}
    basis, metric, detail = (check_report.HEADERS.index(h) for h in ("basis", "metric", "detail"))
    keys = (("fp32", "source"), ("fp32", "wasm"), ("int8-dynamic", "wasm"), ("fp16", "webgpu"))
    assert [rows[k][basis] for k in keys] == ["export", "floor", "budget", "-"]
    # The budget basis shows the figure the budget judged (against fp32), not the one against the server's int8.
    assert rows[("int8-dynamic", "wasm")][metric] == "top1 1.0000 vs fp32"
    assert rows[("fp32", "wasm")][metric] == "top1 1.0000"
    assert rows[("int8-dynamic", "wasm")][detail] == DIAGNOSTIC[:160]
    assert rows[("fp32", "wasm")][detail].startswith("output 'logits' at [0, 0]")
    text = check_report.text_table(_report())
    assert "budget" in text and "floor" in text


def test_the_html_page_keeps_the_whole_diagnostic_and_explains_the_bases():
    page = check_report.to_html(_report())
    assert DIAGNOSTIC.replace("'", "&#x27;") in page
    assert "<b>floor</b>" in page and "<b>budget</b>" in page
    assert "<td>m</td><td>int8-dynamic</td><td>-</td><td>wasm</td><td>pass</td><td>budget</td>" in page
