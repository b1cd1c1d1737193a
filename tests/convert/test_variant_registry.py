"""The variants as a registry of behaviour (issue 45): a row each in onnxport/variants.py, a module each in
convert/variants/, and the build dispatching through the row, never on a variant's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onnxport.accuracy import browser_tolerances, budgets
from onnxport.convert import variants
from onnxport.variants import VARIANTS

SERVER = Path(__file__).resolve().parents[2] / "server" / "onnxport"


@pytest.mark.parametrize("row", VARIANTS, ids=lambda row: row.name)
def test_every_row_has_its_module_with_what_the_row_says_it_has(row):
    module = variants.load(row)
    assert callable(module.make), row
    assert callable(getattr(module, "candidates", None)) == (row.rescue == "weight readers"), row
    assert callable(getattr(module, "require_work", None)) == (row.calibration == "real"), row
    assert row.precision in budgets.ARITHMETICS, row
    assert row.rescue_share is None or 0 < row.rescue_share <= 1, row


def test_names_and_modules_are_unique():
    assert len({row.name for row in VARIANTS}) == len({row.maker for row in VARIANTS}) == len(VARIANTS)


def test_the_modules_do_not_import_the_registry_back():
    for path in (SERVER / "convert" / "variants").glob("*.py"):
        if path.name != "__init__.py":
            assert not re.search(
                r"from onnxport\.convert import .*\bvariants\b|convert\.variants import", path.read_text()
            )


def test_the_variant_maker_names_no_variant_but_the_reference():
    text = (SERVER / "convert" / "variant_maker.py").read_text()
    named = {row.name for row in VARIANTS if f'"{row.name}"' in text}
    # fp32 is the model as built; "fp16" is there only as an arithmetic (the one whose refusals are learned).
    assert named <= {"fp32", "fp16"}, named


def test_every_variant_is_published_with_its_arithmetics_browser_tolerances():
    table = browser_tolerances.table()
    for row in VARIANTS:
        for (arithmetic, runtime), tolerance in browser_tolerances.TOLERANCES.items():
            if arithmetic == row.precision:
                assert table[f"{row.name}/{runtime}"]["abs"] == tolerance.abs, (row.name, runtime)
