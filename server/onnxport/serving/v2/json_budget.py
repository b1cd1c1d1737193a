"""A JSON text checked against a budget of keys, objects, nesting depth and string bytes, as its bytes arrive.

json.loads builds everything before anyone can count it: one object of 4 million keys (51 MB) costs seconds and
gigabytes before a validator sees the first key. This scanner walks the bytes first, fed in chunks as they are
read, and stops at the first count over its budget, having kept nothing but a few counters.

It is a lexer, not a parser: it finds the structural characters and skips the rest with `re` at C speed.
Whatever cannot be structure is skipped as one match: numbers, literals, commas and whitespace, and whole arrays
of scalars nested up to the depth left (the `data` of a tensor, flat or nested, however large). Only objects,
keys, strings outside such arrays, and arrays that hold objects or that a chunk ends inside are visited one by
one, so the work in Python is bounded by the budget, not by the body. It leaves checking the syntax to the
parser that follows: where the text stops being JSON (a bracket closing a brace, a second top-level value) it
stops counting, and the parser, reading the same bytes, refuses them at or before that point.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Bytes that can never be structure (numbers, literals, commas, whitespace; in text that is no JSON, whatever
# else), as one run: every byte but `"{}[]:` written as ranges, since `re` runs a positive class about twice as
# fast as the same class negated. Possessive (`*+`): a failed match never backtracks.
_SCALARS = rb"[\x00-\x21\x23-\x39\x3b-\x5a\x5c\x5e-\x7a\x7c\x7e-\xff]*+"
_STRING = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_STRING_REST = re.compile(rb'(?s)[^"\\]*+(?:\\.[^"\\]*+)*+')  # a string's bytes up to its closing quote
_SPACE = re.compile(rb"[ \t\r\n]*+")
_NOT_IN_ARRAYS = [b'"', b"{", b"}", b":"]  # what an array of numbers never holds
_SCALAR_BYTES = bytes(byte for byte in range(256) if byte not in b"[]")
_OBJECT, _ARRAY = ord("{"), ord("[")
_CLOSERS = {ord("}"): _OBJECT, ord("]"): _ARRAY}


@dataclass(frozen=True)
class Budget:
    """The most a JSON text may hold. string_bytes counts every string as sent (quotes and escapes included);
    None leaves strings to the body's own limit (a model that takes text), and strings in arrays are then
    skipped whole rather than counted."""

    keys: int
    objects: int
    depth: int
    string_bytes: int | None
    key_bytes: int = 256


class BudgetExceeded(Exception):
    """What went over: `what` ("keys", "objects", "depth", "string_bytes", "key_bytes"), its limit, and the
    byte offset in the text where the scanner stood."""

    def __init__(self, what: str, limit: int, offset: int):
        super().__init__(f"more than {limit:,} {what} (at byte {offset:,})")
        self.what = what
        self.limit = limit
        self.offset = offset


def _skip(items: list[bytes]) -> bytes:
    """Runs of scalars with any of `items` between them."""
    if not items:
        return _SCALARS
    return _SCALARS + rb"(?:(?:" + b"|".join(items) + b")" + _SCALARS + rb")*+"


@functools.cache
def _array(levels: int, strings: bool) -> bytes:
    """An array of scalars (and strings, if `strings`) nested at most `levels` deep, as one pattern."""
    others = [_STRING] if strings else []
    pattern = rb"\[" + _skip(others) + rb"\]"
    for _ in range(levels - 1):
        pattern = rb"\[" + _skip([pattern, *others]) + rb"\]"
    return pattern


@functools.cache
def _run(in_array: bool, levels: int, strings: bool) -> re.Pattern[bytes]:
    """What can be skipped in one match at this point: scalars and whole arrays that fit in the depth left;
    inside an array also strings (never keys there) when they are not counted."""
    items = [_array(levels, strings)] if levels > 0 else []
    if in_array and strings:
        items.append(_STRING)
    return re.compile(rb"(?s)" + _skip(items))


class Scanner:
    """feed() the text's bytes in order, in chunks of any size; each raises BudgetExceeded as soon as a count is
    over. `keys`, `objects` and `string_bytes` tell what was counted."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self.keys = self.objects = self.string_bytes = 0
        self._stack = bytearray()  # the open containers, `{` or `[`
        self._offset = 0  # bytes fed before the current chunk
        self._tail = b""  # a backslash a chunk ended on, inside a string
        self._in_string = False
        self._after_string = False  # a string has ended; the next byte says if it was a key
        self._string = 0  # bytes of the current string so far
        self._value_next = False  # in an object, after a key's colon
        self._stopped = False  # past the end of the JSON (or of what is JSON): the parser refuses the rest
        self._skip_strings = budget.string_bytes is None

    def feed(self, chunk: bytes | bytearray) -> None:
        if self._stopped:
            return
        data = self._tail + chunk if self._tail else chunk
        self._tail = b""
        in_array = self._stack and self._stack[-1] == _ARRAY and not (self._in_string or self._after_string)
        if in_array and all(data.find(byte) < 0 for byte in _NOT_IN_ARRAYS):
            # Inside an array, only scalars and brackets (the middle of a tensor's data, most of a large body):
            # memchr found no other structure, and the brackets alone, a few percent of the bytes, say all there
            # is to count, at a fraction of the pattern's time.
            start = self._offset
            if data.find(b"[") < 0 and data.find(b"]") < 0:  # scalars alone: nothing to count
                self._offset = start + len(data)
                return
            try:
                self._scan(data.translate(None, _SCALAR_BYTES))
            except BudgetExceeded as over:
                raise BudgetExceeded(over.what, over.limit, start + len(data)) from None
            self._offset = start + len(data)
            return
        self._scan(data)

    def _scan(self, data: bytes | bytearray) -> None:
        end, pos = len(data), 0
        while pos < end and not self._stopped:
            if self._in_string:
                pos = self._string_rest(data, pos, end)
            elif self._after_string:
                pos = _SPACE.match(data, pos).end()  # type: ignore[union-attr]
                if pos < end:
                    pos = self._string_ended(data[pos], pos)
            else:
                pos = self._structure(data, pos, end)
        self._offset += end - len(self._tail)

    def _structure(self, data, pos: int, end: int) -> int:
        in_array = not self._stack or self._stack[-1] == _ARRAY
        start = pos
        pos = _run(in_array, self.budget.depth - len(self._stack), self._skip_strings).match(data, pos).end()  # type: ignore[union-attr]
        if pos > start and self._value_next and _SPACE.fullmatch(data, start, pos) is None:
            self._value_next = False  # the key's value was a scalar
        if pos == end:
            return pos
        char = data[pos]
        if char == ord('"'):
            self._in_string, self._string = True, 1
        elif char in (_OBJECT, _ARRAY):
            self._open(char, pos)
        elif char in _CLOSERS and self._stack and self._stack[-1] == _CLOSERS[char]:
            self._stack.pop()
            self._value_next = False
            self._stopped = not self._stack  # the top-level value is complete
        else:  # a closer that closes nothing open, or a colon after no key: not JSON from here on
            self._stopped = True
        return pos + 1

    def _open(self, char: int, pos: int) -> None:
        if len(self._stack) >= self.budget.depth:
            raise BudgetExceeded("depth", self.budget.depth, self._offset + pos)
        self._stack.append(char)
        self._value_next = False
        if char == _OBJECT:
            self.objects += 1
            if self.objects > self.budget.objects:
                raise BudgetExceeded("objects", self.budget.objects, self._offset + pos)

    def _string_rest(self, data, pos: int, end: int) -> int:
        stop = _STRING_REST.match(data, pos).end()  # type: ignore[union-attr]
        closed = stop < end and data[stop] == ord('"')
        self._string += stop - pos + closed
        self._check_string(stop)
        if stop == end:
            return stop
        if closed:
            self._in_string, self._after_string = False, True
            return stop + 1
        self._tail = bytes(data[stop:])  # a backslash at the chunk's end: its escaped byte is in the next
        return end

    def _check_string(self, pos: int) -> None:
        budget = self.budget
        if budget.string_bytes is not None and self.string_bytes + self._string > budget.string_bytes:
            raise BudgetExceeded("string_bytes", budget.string_bytes, self._offset + pos)
        if self._stack and self._stack[-1] == _OBJECT and not self._value_next and self._string > budget.key_bytes:
            raise BudgetExceeded("key_bytes", budget.key_bytes, self._offset + pos)

    def _string_ended(self, char: int, pos: int) -> int:
        self._after_string = False
        self.string_bytes += self._string
        if not self._stack or self._stack[-1] == _ARRAY:
            return pos
        if char == ord(":") and not self._value_next:
            self.keys += 1
            if self.keys > self.budget.keys:
                raise BudgetExceeded("keys", self.budget.keys, self._offset + pos)
            self._value_next = True
            return pos + 1
        if not self._value_next:  # a string in an object that is neither a key nor a value: not JSON
            self._stopped = True
        self._value_next = False
        return pos


def check(text: bytes | bytearray, budget: Budget) -> Scanner:
    """The whole text at once: the Scanner that read it (its counts), or BudgetExceeded."""
    scanner = Scanner(budget)
    scanner.feed(text)
    return scanner
