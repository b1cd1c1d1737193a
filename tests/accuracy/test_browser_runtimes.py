"""server/onnxport/accuracy/browser_runtimes.py: the Python side's browser runtime names are
web/lib/choice/runtimes.js's, and every list of them in the package is made from them.

tests/vectors/runtime_vectors.json holds the names as this side gives them (tests/vectors/make_runtime_vectors.py);
tests/js/lib/choice/test_runtime_vectors.mjs holds runtimes.js to the same file."""

from __future__ import annotations

import pytest

from fixtures import vectors
from onnxport.accuracy import browser_runtimes, browser_tolerances
from onnxport.check import check_run, verdict_file
from onnxport.convert import forms
from onnxport.repository import manifest, schema


@pytest.fixture(scope="module")
def js() -> dict:
    """runtimes.js's rows and the lists it derives, as the shared vector file pins them."""
    return vectors.read("runtime_vectors")


def test_the_vector_file_is_what_the_python_side_writes_now(js):
    assert js == vectors.rebuilt("runtime_vectors"), "run tests/vectors/make_runtime_vectors.py"


def test_the_names_are_the_javascript_tables_browser_runtimes(js):
    # Not runtimes.js's `server` row: the server is the reference, with no tolerance, verdict or form.
    assert browser_runtimes.NAMES == tuple(js["browser"])
    assert [r["key"] for r in js["rows"] if r["provider"] is None] == ["server"]


def test_each_runtime_has_the_javascript_rows_provider_and_flags(js):
    rows = {r["key"]: r for r in js["rows"]}
    assert [(r.key, r.provider, r.checked, r.gpu) for r in browser_runtimes.RUNTIMES] == [
        (key, rows[key]["provider"], rows[key]["checked"], rows[key]["gpu"]) for key in js["browser"]
    ]


def test_the_checked_runtimes_are_the_javascript_ones_in_its_order(js):
    assert browser_runtimes.CHECKED == tuple(js["checked"])
    assert verdict_file.RUNTIMES == check_run.BROWSER_RUNTIMES == browser_runtimes.CHECKED


def test_the_cpu_runtimes_of_a_form_are_the_wasm_provider_rows(js):
    assert forms.CPU_RUNTIMES == browser_runtimes.WASM == tuple(r["key"] for r in js["rows"] if r["provider"] == "wasm")


def test_every_variant_has_a_tolerance_for_every_runtime_and_no_other():
    variants = dict.fromkeys(variant for variant, _ in browser_tolerances.TOLERANCES)
    assert set(browser_tolerances.TOLERANCES) == {(v, r) for v in variants for r in browser_runtimes.NAMES}


def test_the_manifest_schema_allows_exactly_these_runtimes():
    assert set(manifest.BrowserRuntime.__args__) == set(browser_runtimes.NAMES)
    enums = [node["enum"] for node in _walk(schema.manifest_schema()) if "wasm-1t" in node.get("enum", [])]
    assert enums and all(tuple(enum) == browser_runtimes.NAMES for enum in enums)


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)
