"""A check's row is recorded and printed as one step: an interrupt waits for it, then acts as it would have."""

from __future__ import annotations

import os
import signal

import pytest

from onnxport.harness.interrupts import interrupts_deferred, sigterm_interrupts


@pytest.fixture(autouse=True)
def _ctrl_c_interrupts():
    # As in a terminal: a job started in the background of a script has SIGINT ignored, which it would keep.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_inside_waits_for_the_step_then_interrupts():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("recorded")
            done.append("printed")  # not cut between the two
    assert done == ["recorded", "printed"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back


def test_a_sigterm_during_a_check_is_a_ctrl_c_that_also_waits():
    with sigterm_interrupts():
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                reached = True
        assert reached
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_without_a_signal_nothing_happens():
    with interrupts_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
