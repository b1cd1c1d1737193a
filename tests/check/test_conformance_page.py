"""The /conformance page in Chromium: it fills the matrix it is asked for and offers the JSON report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fixtures.check import served_forms, served_variants

pytestmark = pytest.mark.slow


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
    # A row per variant as built and per form of it made for WebAssembly.
    entry = demo_manifest["models"]["iris"]
    expected = [f"iris/{v}/wasm" for v in variants] + [f"iris/{v}+{f}/wasm" for v in variants
                                                       for f in served_forms(entry, v, "wasm")]
    assert len(expected) > len(variants)
    cells = matrix.locator("td[data-cell]")
    expect(cells).to_have_count(len(expected))
    expect(matrix.locator("td[data-status=pass]")).to_have_count(len(expected))
    assert sorted(c.get_attribute("data-cell") for c in cells.all()) == sorted(expected)
    assert all(text.startswith("pass") for text in matrix.locator("td[data-status=pass]").all_inner_texts())

    link = page.get_by_test_id("conformance-download")
    expect(link).to_be_visible()
    assert link.get_attribute("download") == "onnxport-conformance.json"
    with page.expect_download() as download_info:
        link.click()
    report = json.loads(Path(download_info.value.path()).read_text())
    assert report["schema"] == "onnxport.conformance" and report["schema_version"] == 1
    assert sorted(f"{r['model']}/{r['variant']}{'+' + r['form'] if r['form'] else ''}/{r['runtime']}"
                  for r in report["results"]) == sorted(expected)
    assert {r["status"] for r in report["results"]} == {"pass"}
    assert tab.console_errors == []
