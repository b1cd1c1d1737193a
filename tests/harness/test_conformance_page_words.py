"""harness/conformance_page.py python_words: a page's row in Python's words for the report, the CLI and the
verdicts file, from the reason the page sent as data (accuracy/reasons.py)."""

from __future__ import annotations

from onnxport.harness.conformance_page import python_words

FLOOR = {
    "code": "outside_floor",
    "output": "logits",
    "index": [0, 0],
    "expected": 2,  # JSON.stringify writes 2.0 as 2
    "got": 3.5,
    "max_abs": 1.5,
    "floor_abs": 0.0001,
    "floor_rel": 0.001,
}
DIAGNOSTIC = {
    "code": "elementwise_diagnostic",
    "max_abs": 0.5,
    "output": "y",
    "first_outside_floor": {"output": "y", "index": [0, 0], "expected": 1.75, "got": 2.25},
    "needed_abs": 0.5,
    "text": "the page's own words",
}


def test_a_failed_rows_reason_is_rendered_in_pythons_words_from_its_data():
    row = {"status": "fail", "reason": "the page's own words", "reason_data": FLOOR, "diagnostic": None}
    assert python_words(row)["reason"] == (
        "output 'logits' at [0, 0]: expected 2.0, got 3.5 (max abs 1.5; floor abs 0.0001, rel 0.001)"
    )
    assert python_words(row)["reason_data"] == FLOOR and row["reason"] == "the page's own words"  # not changed


def test_a_diagnostic_gets_pythons_words_and_a_row_without_data_keeps_its_text():
    row = {"status": "pass", "reason": None, "reason_data": None, "diagnostic": DIAGNOSTIC}
    assert python_words(row)["diagnostic"]["text"] == (
        "element-wise vs the server's output of this file: max abs 0.5 in 'y', first outside the floor at y[0, 0]; "
        "the element rule would have needed abs 0.5"
    )
    skipped = {"status": "skipped", "reason": "no WebGPU adapter"}
    assert python_words(skipped) == skipped
