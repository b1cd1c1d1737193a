"""The chunked body decoder (serving/waitress/framing.py's BoundedChunks) on waitress's own buffer, fed as a
network would.

Whatever the packets' boundaries (a CRLF split between two, one byte at a time), it reads the same body
and stops exactly where the next request begins; a line without end is refused once it passes its cap.
"""

from __future__ import annotations

import random

import pytest
from waitress.buffers import OverflowableBuffer

from onnxport.serving.waitress.framing import BoundedChunks

NEXT_REQUEST = b"GET / HTTP/1.1\r\n"


def decoder(max_body: int = 1 << 20, max_line: int = 1000) -> BoundedChunks:
    return BoundedChunks(OverflowableBuffer(1 << 20), max_body, max_line)


def feed(chunks: BoundedChunks, stream: bytes, pieces: random.Random) -> int:
    """Feed `stream` in random pieces until the decoder completes; returns the bytes it took."""
    at = 0
    while not chunks.completed and at < len(stream):
        at += chunks.received(stream[at : at + pieces.randrange(1, 9)])
    return at


@pytest.mark.parametrize("seed", range(40))
def test_any_packet_boundaries_give_the_same_body_and_stop_at_the_next_request(seed):
    rng = random.Random(seed)
    data = [rng.randbytes(rng.randrange(1, 60)) for _ in range(rng.randrange(0, 5))]
    extensions = [b"", b";a=b", b';name="quoted;value"']
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(d), rng.choice(extensions), d) for d in data)
    body += b"0\r\n" + rng.choice([b"", b"X-Trailer: 1\r\n", b"A: b\r\nC: d\r\n"]) + b"\r\n"
    chunks = decoder()
    assert feed(chunks, body + NEXT_REQUEST, rng) == len(body)
    assert chunks.error is None
    assert chunks.getfile().read() == b"".join(data)


@pytest.mark.parametrize(
    "start, what", [(b"10;", "chunk line"), (b"0\r\nX-A: ", "trailer"), (b"1" * 2000, "chunk line")]
)
def test_a_line_without_end_is_refused_past_its_cap(start, what):
    chunks = decoder(max_line=1000)
    taken = chunks.received(start) + sum(chunks.received(b"a" * 100) for _ in range(20))
    assert chunks.completed and chunks.error is not None and chunks.error.code == 400
    assert what in chunks.error.body and "1000 bytes" in chunks.error.body
    assert taken <= len(start) + 2000
    assert len(chunks.line) <= 1002  # what it keeps stays within the cap


def test_a_chunk_past_the_body_cap_is_refused_when_its_size_arrives():
    chunks = decoder(max_body=5000)
    chunks.received(b"1000\r\n" + b"a" * 4096 + b"\r\n")
    assert chunks.error is None
    chunks.received(b"1000\r\n")
    assert chunks.error is not None and chunks.error.code == 413 and "4096 bytes" in chunks.error.body
