"""check/time_left.py: each row still to run counts at the mean time of its runtime's finished rows."""

from __future__ import annotations

import pytest

from onnxport.check.time_left import TimeLeft


def test_nothing_to_go_by_before_the_first_row():
    assert TimeLeft(["wasm", "webgpu"]).seconds() is None


def test_rows_left_count_at_their_runtimes_mean():
    left = TimeLeft(["wasm", "webgpu", "wasm", "webgpu", "wasm"])
    left.finished("wasm", 1.0)
    left.finished("webgpu", 30.0)
    # One webgpu row (30 s) and two wasm rows (1 s) to go: not five rows at the 15.5 s mean of all.
    assert left.seconds() == pytest.approx(32.0)


def test_a_runtime_not_seen_yet_counts_at_the_mean_of_all():
    left = TimeLeft(["wasm", "wasm", "webgpu"])
    left.finished("wasm", 2.0)
    left.finished("wasm", 4.0)
    assert left.seconds() == pytest.approx(3.0)


def test_none_left_after_the_last_row():
    left = TimeLeft(["wasm"])
    left.finished("wasm", 5.0)
    assert left.seconds() == 0
