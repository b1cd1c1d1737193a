"""generation/stop_strings.py: a stop string over text in pieces never reaches the caller, and nothing after it."""

from __future__ import annotations

from onnxport.generation.stop_strings import StopText


def run(stops, pieces):
    stop = StopText(stops)
    given = [stop.push(p) for p in pieces]
    return [text for text, _ in given], given[-1][1] if given else False, stop


def test_text_without_stops_passes_as_it_comes():
    texts, stopped, stop = run([], ["a", "b\n", "c"])
    assert texts == ["a", "b\n", "c"] and not stopped and stop.flush() == ""


def test_a_stop_string_across_pieces_is_held_then_dropped_with_what_follows():
    texts, stopped, _ = run(["\n\nUser:"], ["Hi.", "\n", "\nUs", "er: more", " and more"])
    assert texts == ["Hi.", "", "", "", ""] and stopped


def test_held_text_that_does_not_become_a_stop_is_given_when_it_is_known():
    texts, stopped, stop = run(["\n\nUser:"], ["Hi.\n", "\nUs", "ing it"])
    assert texts == ["Hi.", "", "\n\nUsing it"] and not stopped
    texts, stopped, stop = run(["\n\nUser:"], ["Hi.\n", "\nUse"])
    assert texts == ["Hi.", ""] and stop.flush() == "\n\nUse"


def test_the_earliest_of_several_stops_wins_and_a_stop_inside_one_piece_cuts_it():
    texts, stopped, _ = run(["END", "."], ["one, two. three END"])
    assert texts == ["one, two"] and stopped
    texts, stopped, _ = run(["ab", "b"], ["xa", "b"])
    assert texts == ["x", ""] and stopped


def test_after_a_stop_nothing_more_is_given():
    stop = StopText(["."])
    assert stop.push("a.b") == ("a", True)
    assert stop.push("c") == ("", True)
    assert stop.flush() == ""
