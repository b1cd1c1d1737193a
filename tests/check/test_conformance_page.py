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
    expected = [f"iris/{v}/wasm" for v in variants] + [
        f"iris/{v}+{f}/wasm" for v in variants for f in served_forms(entry, v, "wasm")
    ]
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
    assert sorted(
        f"{r['model']}/{r['variant']}{'+' + r['form'] if r['form'] else ''}/{r['runtime']}" for r in report["results"]
    ) == sorted(expected)
    assert {r["status"] for r in report["results"]} == {"pass"}
    assert tab.console_errors == []


def test_webgpu_rows_log_no_shader_source_to_the_console(open_tab, chromium_webgpu):
    """WebGPU runs are verbose (their log says where each node ran), and onnxruntime's WebAssembly build writes
    every log line to stderr, one console.error a line: iris and digits on SwiftShader gave 7,328 console errors,
    the WebGPU shaders' source line by line, with no row failing. Its records reach the console one line each at
    their own severity now (web/lib/worker/ort-log.js); the placement read from the same log is still there."""
    messages: list[tuple[str, str]] = []
    tab = open_tab(browser=chromium_webgpu)
    tab.page.on("console", lambda message: messages.append((message.type, message.text)))
    tab.goto("conformance?autorun=1&models=iris&runtimes=webgpu")
    status = tab.page.get_by_test_id("conformance-status")
    expect(status).to_have_attribute("data-done", "true", timeout=300_000)
    assert status.get_attribute("data-error") is None, status.get_attribute("data-error")
    kinds = {kind: sum(1 for k, _ in messages if k == kind) for kind in sorted({k for k, _ in messages})}
    print(f"console messages by type: {kinds}")
    assert tab.console_errors == [], f"{len(tab.console_errors)} console errors, the first: {tab.console_errors[:3]}"
    shader = [text for _, text in messages if "Shader code" in text or "@compute" in text or "@group(" in text]
    assert not shader, f"{len(shader)} console lines of shader source, the first: {shader[:3]}"
    assert all("\x1b[" not in text for _, text in messages), [text for _, text in messages if "\x1b[" in text][:3]
    passed = tab.page.get_by_test_id("conformance-matrix").locator("td[data-status=pass]")
    expect(passed.first).to_contain_text("GPU ")  # the node placement, read from the worker's log
