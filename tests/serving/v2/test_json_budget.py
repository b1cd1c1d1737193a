"""serving/v2/json_budget.py: the counts are exact (keys, objects, depth, string bytes), at the boundary and across
any chunking of the same bytes, whatever the strings hold; and large arrays are skipped, not visited."""

from __future__ import annotations

import json
import time

import pytest

from onnxport.serving.v2.json_budget import Budget, BudgetExceeded, Scanner, check

WIDE = Budget(keys=10_000, objects=10_000, depth=64, string_bytes=10_000_000)


def counted(text: bytes, budget: Budget = WIDE) -> tuple[int, int, int]:
    scanner = check(text, budget)
    return scanner.keys, scanner.objects, scanner.string_bytes


def fed_byte_by_byte(text: bytes, budget: Budget = WIDE) -> tuple[int, int, int]:
    scanner = Scanner(budget)
    for index in range(len(text)):
        scanner.feed(text[index : index + 1])
    return scanner.keys, scanner.objects, scanner.string_bytes


def over(text: bytes, budget: Budget) -> BudgetExceeded:
    with pytest.raises(BudgetExceeded) as raised:
        check(text, budget)
    return raised.value


TRICKY = [
    # (JSON, keys, objects): strings that hold what is structure outside them
    ({"a": "x:y", "b": "}{][", "c": '"quoted":', "d": "back\\slash\\"}, 4, 1),
    ({"k:": {"}": [":", "{", "]"]}, '"': 1}, 3, 2),
    ({"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [[1.5, -2e-3], [3, 4]]}]}, 5, 2),
    ([{"a": 1}, {"b": [{"c": None}]}, "d", True], 3, 3),
    ({"unicode": "été ✓ 😀", "esc": "\u0000\n\t"}, 2, 1),
    ({}, 0, 1),
    ([], 0, 0),
]


@pytest.mark.parametrize(("value", "keys", "objects"), TRICKY)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_keys_objects_and_string_bytes_are_counted_exactly(value, keys, objects, ensure_ascii):
    text = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    string_bytes = sum(len(json.dumps(s, ensure_ascii=ensure_ascii).encode()) for s in _strings(value))
    assert counted(text) == (keys, objects, string_bytes)
    assert fed_byte_by_byte(text) == (keys, objects, string_bytes)  # a chunk may end anywhere, even in an escape


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *_strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_whitespace_anywhere_changes_nothing():
    text = b' \n{ "a" :\t1 ,\r\n "b" : [ "x" , { "c" : "y" } ] , "d" : "z" }\n'
    assert counted(text) == fed_byte_by_byte(text) == (4, 2, 21)


@pytest.mark.parametrize(
    "what, budget",
    [
        ("keys", Budget(keys=3, objects=10, depth=10, string_bytes=None)),
        ("objects", Budget(keys=10, objects=2, depth=10, string_bytes=None)),
    ],
)
def test_the_boundary_is_exact(what, budget):
    at_limit = b'{"a": {"b": 1}, "c": 2}'  # 3 keys, 2 objects
    check(at_limit, budget)
    one_more = b'{"a": {"b": 1}, "c": 2, "d": {}}'  # 4 keys, 3 objects
    refused = over(one_more, budget)
    assert refused.what == what and refused.limit == getattr(budget, what)


def test_depth_is_exact_for_objects_and_for_arrays_skipped_whole():
    budget = Budget(keys=100, objects=100, depth=4, string_bytes=None)
    check(b'{"a": [[[1, 2], [3]]]}', budget)  # 4 levels
    check(b'{"a": {"b": {"c": [1]}}}', budget)
    for deeper in (b'{"a": [[[[1]]]]}', b'{"a": {"b": {"c": {"d": {}}}}}', b"[[[[[]]]]]", b'{"a": [[[["s"]]]]}'):
        refused = over(deeper, budget)
        assert refused.what == "depth" and refused.limit == 4, deeper


def test_string_bytes_boundary_counts_quotes_and_escapes():
    text = b'{"ab": "c\\"d"}'  # "ab" is 4 bytes, "c\"d" is 6
    check(text, Budget(keys=10, objects=10, depth=10, string_bytes=10))
    assert over(text, Budget(keys=10, objects=10, depth=10, string_bytes=9)).what == "string_bytes"


def test_strings_in_arrays_count_unless_strings_are_the_bodys_to_bound():
    text = json.dumps({"data": ["ab"] * 1000}).encode()
    assert over(text, Budget(keys=10, objects=10, depth=10, string_bytes=1000)).what == "string_bytes"
    check(text, Budget(keys=10, objects=10, depth=10, string_bytes=None))


def test_a_long_key_is_refused_even_when_strings_are_not_counted():
    budget = Budget(keys=10, objects=10, depth=10, string_bytes=None, key_bytes=8)
    check(b'{"123456": "a value may be longer than a key"}', budget)  # 8 bytes with its quotes
    refused = over(b'{"1234567": 1}', budget)
    assert refused.what == "key_bytes"


def test_numbers_literals_and_colons_in_strings_are_no_keys():
    text = json.dumps({"data": [1, -2.5e10, True, False, None, "a:b", "{}"]}).encode()
    assert counted(text)[:2] == (1, 1)


def test_4_million_keys_stop_at_the_budget_in_the_first_kilobytes():
    body = b"{" + b",".join(b'"k%d":0' % index for index in range(4_000_000)) + b"}"
    started = time.perf_counter()
    refused = over(body, Budget(keys=2048, objects=100, depth=10, string_bytes=None))
    seconds = time.perf_counter() - started
    print(f"\n{len(body):,} bytes, 4M keys: refused at byte {refused.offset:,} in {seconds * 1000:.2f} ms")
    assert refused.what == "keys" and refused.offset < 40_000


def test_a_million_floats_are_skipped_in_one_match_flat_or_nested():
    budget = Budget(keys=20, objects=10, depth=6, string_bytes=1000)
    for data in ([0.123456789 * i for i in range(1_000_000)], [[1.25, -3.5, 7e-3, 2]] * 250_000):
        text = json.dumps({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": data}]}).encode()
        started = time.perf_counter()
        scanner = check(text, budget)
        seconds = time.perf_counter() - started
        print(f"\n{len(text):,} bytes of floats scanned in {seconds * 1000:.1f} ms")
        assert (scanner.keys, scanner.objects) == (5, 2)
        assert seconds < 1  # visiting each float from Python would take seconds


def test_text_that_stops_being_json_stops_the_count():
    # The parser refuses these at or before where the scanner stops; nothing after it costs anything.
    budget = Budget(keys=2, objects=2, depth=3, string_bytes=None)
    for text in (
        b'{"a": 1}' + b'{"b": 1}' * 10,
        b'{"a": [}' + b'{"b": 1}' * 10,
        b'{"a" "b"' + b',"c":1' * 10,
        b"{1: 2" + b',"c":1' * 10,
    ):
        check(text, budget)


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_chunks_of_any_size_count_the_same_as_the_whole(chunk):
    text = json.dumps(
        {
            "id": "a:b",
            "inputs": [
                {"name": "x", "shape": [3000, 2, 2], "datatype": "FP32", "data": [[[1.5, 2], [3, 4e5]]] * 3000},
                {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["{", "]:"]},
                {"name": "f", "shape": [40000], "datatype": "FP32", "data": [0.25] * 40000},
            ],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}],
        }
    ).encode()
    scanner = Scanner(WIDE)
    for start in range(0, len(text), chunk):
        scanner.feed(text[start : start + chunk])
    assert (scanner.keys, scanner.objects, scanner.string_bytes) == counted(text) == (18, 6, 182)
    shallow = Scanner(Budget(keys=100, objects=100, depth=5, string_bytes=None))  # x's data nests 6 deep
    with pytest.raises(BudgetExceeded, match="depth"):
        for start in range(0, len(text), chunk):
            shallow.feed(text[start : start + chunk])


def test_a_long_scalar_value_split_across_chunks_leaves_the_next_key_a_key():
    text = b'{"a": ' + b"1" * 3_000_000 + b", " + b",".join(b'"k%d":0' % index for index in range(1000)) + b"}"
    scanner = Scanner(Budget(keys=100, objects=10, depth=5, string_bytes=None))
    with pytest.raises(BudgetExceeded, match="keys"):
        for start in range(0, len(text), 1 << 20):
            scanner.feed(text[start : start + (1 << 20)])
