"""Request framing by RFC 9112, where waitress 3.0 (pinned in pyproject.toml) is lenient: its parser, stricter.

What waitress accepts and a proxy in front of it may read otherwise (a desynchronized connection: the
proxy's idea of where a request ends is not the server's, so bytes one client sent as a body are
answered as the next request, request smuggling):

- Content-Length together with Transfer-Encoding (waitress takes the chunked body and keeps the
  connection open; a proxy that trusts Content-Length forwards the rest as a new request);
- Transfer-Encoding on a request that is not HTTP/1.1 (waitress ignores it and reads Content-Length);
- chunked given twice, or a Transfer-Encoding whose last coding is not chunked;
- obsolete line folding (a header line starting with a space or tab), which waitress joins to the line before;
- an HTTP/1.1 request without a Host header, or with several.

Each is refused with a 400 and the connection closed (waitress closes after every answer it gives
itself). And the chunked body is read by BoundedChunks: waitress re-joins an unfinished chunk line or
trailer with each packet, so one that never ends costs time quadratic in its length (a minute of CPU for
30 MB), and it reads a chunk of any declared size until the body cap stops it. Here a chunk-size has at
most 16 hex digits, a chunk line or the trailer at most waitress's header cap, and a chunk that would take
the body past its cap is refused (413) when its size line arrives.
"""

from __future__ import annotations

from typing import Any

from waitress.parser import HTTPRequestParser, ParsingError, TransferEncodingNotImplemented
from waitress.rfc7230 import CHUNK_EXT_RE, ONLY_HEXDIG_RE
from waitress.utilities import BadRequest, Error, RequestEntityTooLarge

# A chunk-size is a 64-bit number at most: more digits are no size a body under the cap could have.
MAX_CHUNK_SIZE_DIGITS = 16
# Content-Length digits past which the value is over any body cap, read without int() (which refuses
# strings over 4300 digits with a ValueError that waitress does not catch).
MAX_LENGTH_DIGITS = 18


class StrictParser(HTTPRequestParser):
    """waitress's request parser, refusing the framings above (see the module's text)."""

    body_rcv: Any  # waitress's receivers, or BoundedChunks; None before a body

    def parse_header(self, header_plus: bytes) -> None:
        fields = header_fields(header_plus)
        unsupported = unreadable_length = False
        try:
            super().parse_header(header_plus)
        except TransferEncodingNotImplemented:
            unsupported = True  # said in words below, as 400 or 501 by RFC 9112
        except ValueError as exc:
            if not hasattr(self, "path"):  # urlsplit() of a request target such as http://[/
                raise ParsingError(f"request target is not a URI ({exc})") from exc
            unreadable_length = True  # int() of a Content-Length over 4300 digits
        too_large = length_over_cap(fields.get("content-length", []), self.adj.max_request_body_size)
        if too_large:
            self._refuse(RequestEntityTooLarge(too_large))
            return
        if unreadable_length:
            raise ParsingError("Content-Length is invalid (thousands of digits)")
        problem = framing_problem(getattr(self, "version", ""), fields)
        if problem:
            raise ParsingError(problem)
        codings = transfer_codings(fields.get("transfer-encoding", []))
        if unsupported or codings[:-1]:
            raise TransferEncodingNotImplemented(
                f"Transfer-Encoding {', '.join(codings)!r}: only chunked is supported, alone"
            )
        if self.chunked:
            self.body_rcv = BoundedChunks(
                self.body_rcv.getbuf(), self.adj.max_request_body_size, self.adj.max_request_header_size
            )

    def _refuse(self, error: Error) -> None:
        """Answer `error` with no body read (the parser completes the request once the head is parsed)."""
        self.error = error
        self.completed = True
        self.chunked = False
        self.content_length = 0
        self.body_rcv = None


def header_fields(header_plus: bytes) -> dict[str, list[str]]:
    """The request's header field values by lower-case name, each field line apart (waitress joins
    repeated fields with a comma, which hides that a field came twice)."""
    fields: dict[str, list[str]] = {}
    for line in header_plus.split(b"\r\n")[1:]:
        if line[:1] in (b" ", b"\t"):
            raise ParsingError("obsolete line folding (a header line starting with a space or tab) is not accepted")
        name, colon, value = line.partition(b":")
        if colon:
            fields.setdefault(name.decode("latin-1").lower(), []).append(value.strip(b" \t").decode("latin-1"))
    return fields


def transfer_codings(values: list[str]) -> list[str]:
    """The transfer codings of Transfer-Encoding field values, in order."""
    return [coding.strip(" \t").lower() for value in values for coding in value.split(",")]


def length_over_cap(values: list[str], max_body: int) -> str | None:
    """What is wrong with a Content-Length too long to be under the body cap, or None."""
    digits = [value.lstrip("0") for value in values if value.isascii() and value.isdigit()]
    longest = max((len(value) for value in digits), default=0)
    if longest > MAX_LENGTH_DIGITS:
        return f"Content-Length of {longest} digits is over max_body of {max_body}"
    return None


def framing_problem(version: str, fields: dict[str, list[str]]) -> str | None:
    """Why this request's framing or Host is refused (RFC 9112 sections 3.2, 6.1 and 6.3), or None."""
    transfer_encoding = fields.get("transfer-encoding", [])
    hosts = fields.get("host", [])
    if version == "1.1" and not hosts:
        return "an HTTP/1.1 request needs a Host header, and this one has none"
    if len(hosts) > 1:
        return f"a request has one Host header, this one has {len(hosts)}"
    if not transfer_encoding:
        return None
    if "content-length" in fields:
        return (
            "a request gives its length by Content-Length or by Transfer-Encoding, this one gives both "
            "(Content-Length: {}, Transfer-Encoding: {})".format(
                ", ".join(fields["content-length"]), ", ".join(transfer_encoding)
            )
        )
    if version != "1.1":
        return f"Transfer-Encoding needs HTTP/1.1, this request is HTTP/{version or '0.9'}"
    codings = transfer_codings(transfer_encoding)
    if "" in codings:
        return f"Transfer-Encoding {', '.join(transfer_encoding)!r}: an empty coding"
    if codings[-1] != "chunked":
        return f"Transfer-Encoding {', '.join(transfer_encoding)!r}: its last coding must be chunked"
    if codings.count("chunked") > 1:
        return f"Transfer-Encoding {', '.join(transfer_encoding)!r}: chunked may be applied once"
    return None


class BoundedChunks:
    """A chunked body decoder with waitress's receiver interface (received, getfile, getbuf, completed,
    error), in linear time: an unfinished line is kept in a bytearray and only its new bytes are searched."""

    completed = False
    error: Error | None = None

    def __init__(self, buf: Any, max_body: int, max_line: int) -> None:
        self.buf = buf
        self.max_body = max_body
        self.max_line = max_line  # a chunk line (size and extensions), and the whole trailer
        self.line = bytearray()
        self.remaining = 0  # bytes of the current chunk's data still to come
        self.state = "size"  # size, data, data end (its CRLF), trailer
        self.body = 0  # the data's bytes declared so far
        self.trailer = 0

    def __len__(self) -> int:
        return len(self.buf)

    def getfile(self) -> Any:
        return self.buf.getfile()

    def getbuf(self) -> Any:
        return self.buf

    def received(self, data: bytes) -> int:
        """Take what `data` holds of this body; returns the bytes taken (the rest is the next request)."""
        at = 0
        while at < len(data) and not self.completed:
            if self.state == "data":
                taken = data[at : at + self.remaining]
                self.buf.append(taken)
                at += len(taken)
                self.remaining -= len(taken)
                if not self.remaining:
                    self.state = "data end"
                continue
            end = self._line_end(data, at)
            if end < 0:
                return len(data)
            line, at = bytes(self.line[:-2]), end
            self.line.clear()
            self._take_line(line)
        return len(data) if self.error else at

    def _line_end(self, data: bytes, at: int) -> int:
        """Where the line under way ends in `data` (just past its CRLF), or -1 with the rest of `data` kept."""
        before = len(self.line)
        self.line += data[at : at + self.max_line + 2 - before]
        found = self.line.find(b"\r\n", max(0, before - 1))  # its CR may have ended the last packet
        if found >= 0:
            del self.line[found + 2 :]
            return at + found + 2 - before
        if len(self.line) > self.max_line:
            what = "trailer" if self.state == "trailer" else "chunk line"
            self._fail(BadRequest(f"{what} longer than {self.max_line} bytes"))
        return -1

    def _take_line(self, line: bytes) -> None:
        if self.state == "data end":
            if line:
                self._fail(BadRequest("chunk data longer than its chunk-size (no CRLF after it)"))
            self.state = "size"
        elif self.state == "trailer":
            self.trailer += len(line) + 2
            if not line:
                self.completed = True
            elif self.trailer > self.max_line:
                self._fail(BadRequest(f"trailer longer than {self.max_line} bytes"))
        else:
            self._take_size(line)

    def _take_size(self, line: bytes) -> None:
        size, semicolon, extensions = line.partition(b";")
        if semicolon and not CHUNK_EXT_RE.match(semicolon + extensions):
            self._fail(BadRequest("invalid chunk extension"))
        elif not ONLY_HEXDIG_RE.match(size):
            self._fail(BadRequest(f"chunk-size {size[:40]!r} is not hexadecimal digits"))
        elif len(size) > MAX_CHUNK_SIZE_DIGITS:
            self._fail(BadRequest(f"chunk-size of {len(size)} hex digits, more than {MAX_CHUNK_SIZE_DIGITS}"))
        else:
            length = int(size, 16)
            self.body += length
            if self.body >= self.max_body:
                self._fail(
                    RequestEntityTooLarge(f"a chunk of {length} bytes takes the body past max_body of {self.max_body}")
                )
            elif length:
                self.remaining, self.state = length, "data"
            else:
                self.state = "trailer"

    def _fail(self, error: Error) -> None:
        self.error = error
        self.completed = True
