"""An already-int8 model's variant is named by what it is (issue 32 5a) wherever people read it: "original (int8)",
where everything said "fp32". The manifest's `label` (repository/variant_table.label) is what is shown; the key
`fp32` stays in URLs, the page's data (data-variant), the V2 version and the reports' `variant`.

One repository for the module: onnxruntime's quantize_dynamic output of a small float network imported as it is
(one served variant, its key fp32), and one `onnxport bench` of it. Shown in: the models and model pages, the
playground (its variant pin, its run text, its plan), the conformance page, the performance page's charts,
`onnxport check`'s table, HTML page, stderr lines and JSON rows, and `onnxport bench`'s tables.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from playwright.sync_api import expect

from fixtures.doc_keys import BENCH, BENCH_MAPS, REPORT, REPORT_MAPS, assert_documented
from int8_models import quantized_file
from onnxport import cli

PAGE_TIMEOUT_MS = 60_000
pytestmark = pytest.mark.browser  # the bench fixture starts Chromium itself


@pytest.fixture(scope="module")
def quantized_repository(tmp_path_factory):
    """A repository holding `quantized`, the int8 file imported as it is (1 s)."""
    folder = tmp_path_factory.mktemp("quantized")
    np.savez(folder / "inputs.npz", x=np.random.default_rng(8).normal(size=(6, 64)).astype(np.float32))
    code = cli.main(
        [
            str(a)
            for a in (
                "--repository",
                folder / "repo",
                "import",
                quantized_file(folder),
                "--name",
                "quantized",
                "--task",
                "generic",
                "--inputs",
                folder / "inputs.npz",
                "--quiet",
                "--forms",
                "none",
            )
        ]
    )
    assert code == 0
    return folder / "repo"


@pytest.fixture(scope="module")
def quantized_bench(quantized_repository):
    """(bench.json, printed tables, stderr) of one `onnxport bench` of it: 3 runs, wasm in Chromium (about 20 s).
    The repository keeps the bench.json, which the performance page charts."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(quantized_repository),
            "bench",
            "--runs",
            "3",
            "--runtimes",
            "wasm",
            "--browsers",
            "chromium",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads((quantized_repository / "bench.json").read_text()), run.stdout, run.stderr


def column(table_text: str, header: str, name: str, rows: int) -> list[str]:
    """The cells under `name` in the first `rows` rows of the printed table whose header line matches `header` (a
    regular expression)."""
    lines = table_text.splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(header, line))
    start = lines[at].index(name)
    end = lines[at + 1].find(" ", start)  # a column is as wide as its dashes under the header
    return [line[start : end if end >= 0 else None].strip() for line in lines[at + 2 : at + 2 + rows]]


def test_the_pages_name_an_int8_original_by_what_it_is(
    tmp_path, quantized_repository, quantized_bench, serve_repository, chromium
):
    base = serve_repository(quantized_repository)
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(f"{base}/#/", timeout=PAGE_TIMEOUT_MS)
        row = page.locator('[data-model="quantized"] tr[data-variant="fp32"]')
        row.wait_for(timeout=PAGE_TIMEOUT_MS)
        cells = row.locator("td").all_inner_texts()
        assert cells[:2] == ["original (int8)", "int8"], cells

        page.goto(f"{base}/#/model/quantized", timeout=PAGE_TIMEOUT_MS)
        page.get_by_text("original (int8)").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        rows = [r for r in page.locator("tr").all_inner_texts() if r.startswith("original (int8)")]
        assert len(rows) == 1 and "\tint8\t" in rows[0], rows

        # The playground: the variant pin (its value the key), then a run: which file ran, the server's card, the plan.
        page.goto(f"{base}/#/play/quantized?runtime=wasm", timeout=PAGE_TIMEOUT_MS)
        option = page.locator('[data-testid="pin-variant"] option[value="fp32"]')
        option.wait_for(state="attached", timeout=PAGE_TIMEOUT_MS)
        assert option.inner_text() == "original (int8)"
        page.get_by_test_id("run").click()
        status = page.get_by_test_id("path")
        expect(status).to_have_attribute("data-variant", "fp32", timeout=PAGE_TIMEOUT_MS)
        ran = status.inner_text()
        assert ran.startswith("Ran on wasm (original (int8), "), ran
        assert page.get_by_test_id("server-result").inner_text().count("original (int8)") == 1
        assert "original (int8)" in page.get_by_test_id("plan-summary").inner_text()
        verdict = page.get_by_test_id("verdict").inner_text()
        assert "against the server's original (int8) on these inputs" in verdict, verdict
        played = page.get_by_test_id("results").inner_text() + page.get_by_test_id("choice").inner_text()
        assert "fp32" not in played, played

        # The conformance page's matrix: the row by its label, its key in data-variant and the cell's key.
        page.goto(f"{base}/conformance?autorun=1&models=quantized&runtimes=wasm-1t", timeout=PAGE_TIMEOUT_MS)
        done = page.get_by_test_id("conformance-status")
        expect(done).to_have_attribute("data-done", "true", timeout=PAGE_TIMEOUT_MS)
        matrix_row = page.locator('[data-testid="conformance-matrix"] tr[data-model="quantized"][data-variant="fp32"]')
        matrix_cells = matrix_row.locator("td").all_inner_texts()
        assert matrix_cells[:2] == ["quantized", "original (int8)"], matrix_cells
        assert "vs original (int8)" in matrix_cells[2], matrix_cells
        assert matrix_row.locator('td[data-cell="quantized/fp32/wasm-1t"]').count() == 1
        report = page.evaluate("window.onnxportReport.results")
        assert [(r["variant"], r.get("label")) for r in report] == [("fp32", "original (int8)")], report

        # The performance page: each chart's categories name the variant by its label.
        page.goto(f"{base}/#/performance", timeout=PAGE_TIMEOUT_MS)
        page.get_by_test_id("latency-chart-quantized").wait_for(timeout=PAGE_TIMEOUT_MS)
        charts = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-testid] canvas')]
            .map((c) => [c.parentElement.dataset.testid, Chart.getChart(c)])
            .map(([id, chart]) => [id, { labels: chart.data.labels, title: chart.options.plugins.title.text }]))""")
        assert charts["latency-chart-quantized"]["labels"] == ["original (int8)"], charts
        assert charts["start-chart-quantized"]["labels"] == ["original (int8)"], charts
        assert "(original (int8), batch-1 requests)" in charts["throughput-chart-quantized"]["title"], charts
        names = page.evaluate("""() => Chart.getChart(
            document.querySelector('[data-testid="frontier-chart-quantized"] canvas'),
        ).data.datasets.flatMap((d) => d.data.map((p) => p.name))""")
        assert names and set(names) == {"original (int8)"}, names  # the frontier chart's points too
        print(f"playground: {ran!r}; conformance row: {matrix_cells[:2]}; performance: {charts}")
    finally:
        context.close()


def test_check_names_it_by_what_it_is_in_its_table_html_and_rows(check_cli, tmp_path, quantized_repository):
    code, out, err = check_cli(
        "--repository", quantized_repository, "check", "--runtimes", "wasm-1t", "--json", tmp_path / "check.json"
    )
    assert code == 0, err
    report = json.loads((tmp_path / "check.json").read_text())
    rows = [(r["variant"], r.get("label"), r["runtime"], r["status"]) for r in report["results"]]
    assert rows == [("fp32", "original (int8)", "source", "pass"), ("fp32", "original (int8)", "wasm-1t", "pass")]
    assert column(out, "browser ", "variant", 3) == ["original (int8)", "original (int8)", ""], out
    assert "vs original (int8)" in out and " fp32 " not in out, out
    assert "[chromium] quantized original (int8) wasm-1t: pass" in err, err
    page = (tmp_path / "check.html").read_text()
    assert page.count("<td>original (int8)</td>") == 3, page  # two rows and the matrix's one
    assert "<td>fp32</td>" not in page
    assert_documented(report, "the `onnxport check` report", REPORT, REPORT_MAPS)  # its `label` too
    print(out)


def test_bench_names_it_by_what_it_is_in_its_tables(quantized_bench):
    report, out, err = quantized_bench
    variants = report["models"]["quantized"]["variants"]
    assert list(variants) == ["fp32"] and variants["fp32"]["label"] == "original (int8)"
    assert column(out, r"variant +size ", "variant", 1) == ["original (int8)"], out
    assert column(out, r"variant +form ", "variant", 1) == ["original (int8)"], out
    assert "x native original (int8) all" in out and "fastest WebAssembly file: original (int8)/as built" in out
    assert "server V2 batch 1 (original (int8))" in out, out
    assert "fp32" not in out, out
    assert "wasm: quantized original (int8)" in err, err
    assert_documented(report, "bench.json", BENCH, BENCH_MAPS)  # its variants' `label` too
    print(out)
