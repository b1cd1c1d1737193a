"""onnxport/variants.py is the one table of variants (repository/variant_table.py reads it); the browser's reading
order is the same list, generated (web/lib/files/variants.js)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from onnxport.accuracy import budgets
from onnxport.repository import store
from onnxport.repository import variant_table as variants

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MANIFEST_JS = PROJECT_ROOT / "web" / "lib" / "files" / "manifest.js"
VARIANTS_JS = PROJECT_ROOT / "web" / "lib" / "files" / "variants.js"


def test_the_browser_reads_the_variants_in_the_table_order():
    found = re.search(r"VARIANT_ORDER = Object\.freeze\(\[([^\]]*)\]\)", VARIANTS_JS.read_text())
    assert found, f"no VARIANT_ORDER in {VARIANTS_JS}"
    # On one line or, once longer than Biome's width, one name a line.
    assert [json.loads(name) for name in re.findall(r'"[^"]*"', found.group(1))] == list(variants.NAMES)


def test_the_browser_twin_of_the_table_is_current():
    script = PROJECT_ROOT / "scripts" / "generate" / "js_variants.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_order_puts_unknown_names_last():
    assert [variants.order(n) for n in ("fp32", "int8-static", "int4", "int2")] == [0, 3, 5, len(variants.NAMES)]


def test_every_variant_has_a_precision_and_a_reasoned_budget():
    for row in variants.VARIANTS:
        assert row.precision in ("fp32", "fp16", "int8"), row
        assert variants.budget(row.name).why.strip() and not variants.budget(row.name).elementwise, row


def test_the_browser_reads_the_manifest_version_the_store_writes():
    found = re.search(r"const SCHEMA_VERSION = (\d+);", MANIFEST_JS.read_text())
    assert found and int(found.group(1)) == store.SCHEMA_VERSION


def test_one_budget_per_arithmetic_which_each_variant_reads_through_its_precision():
    # One table of figures: a variant name has no budget of its own (the build judges a file by the
    # budget of what it computes, convert/arithmetic.py), so two names cannot drift apart.
    assert tuple(budgets.BUDGETS) == budgets.ARITHMETICS == ("fp32", "fp16", "int8")
    assert {row.precision for row in variants.VARIANTS} == set(budgets.ARITHMETICS)
    for row in variants.VARIANTS:
        assert variants.budget(row.name) is budgets.budget(row.precision), row
    for arithmetic, budget in budgets.BUDGETS.items():
        assert budget.why.strip() and not budget.elementwise, arithmetic
