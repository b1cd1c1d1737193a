"""A variant's outcome read from its record: served, over budget, failed or skipped, as manifest.json writes them
("ok", "rejected" with or without a file, "skipped"), and the typed reads the store and the server use."""

from __future__ import annotations

import typing

import pytest

from onnxport.repository import variant_record

SHA = "a" * 64
MADE = {"precision": "int8", "file": f"artifacts/{SHA}.onnx", "sha256": SHA, "bytes": 10}
FORM = {"status": "ok", "reason": None, "file": f"artifacts/{'b' * 64}.ort", "sha256": "b" * 64, "bytes": 8}
RECORDS = {
    "served": {
        **MADE,
        "status": "ok",
        "reason": None,
        "forms": {"ort": FORM, "basic": {"status": "rejected", "reason": "x"}},
    },
    "over_budget": {**MADE, "status": "rejected", "reason": "max error 0.2 > budget 0.1"},
    "failed": {"precision": "int8", "status": "rejected", "reason": "onnxruntime cannot load it"},
    "skipped": {"precision": "int8", "status": "skipped", "reason": "nothing to quantize"},
}


def test_every_outcome_is_told_from_its_record():
    assert set(typing.get_args(variant_record.Outcome)) == set(RECORDS)
    for outcome, record in RECORDS.items():
        assert variant_record.outcome(record) == outcome


def test_made_served_and_forms_read_what_each_outcome_has():
    assert [o for o, r in RECORDS.items() if variant_record.made(r)] == ["served", "over_budget"]
    assert [o for o, r in RECORDS.items() if variant_record.served(r)] == ["served"]
    forms = variant_record.forms_of(RECORDS["served"])
    assert [name for name, form in forms.items() if variant_record.made_form(form)] == ["ort"]
    assert variant_record.forms_of(RECORDS["over_budget"]) == {}
    assert variant_record.file_of(RECORDS["over_budget"]) == MADE["file"]
    with pytest.raises(KeyError):  # a failed variant has no file, as reading the key says
        variant_record.file_of(RECORDS["failed"])
