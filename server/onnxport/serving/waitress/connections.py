"""Limits for slow clients on waitress: how many connections, and how long each may take to send.

waitress 3.0 (pinned in pyproject.toml) has a connection limit (100 by default) and one inactivity
timeout (channel_timeout, 120 s), which a client that trickles a byte every few seconds never trips:
about 100 idle or trickling connections held every slot, and a normal client waited minutes. Here each
connection has deadlines instead, which the serving loop (drain.py runs it) checks a few times a second:

- header_timeout: a request's head (request line and headers) must be whole within this many seconds,
  counted from the connection's opening for its first request, from its first byte for a later one;
- body_timeout: its body must then be whole within this many seconds;
- idle_timeout: a kept-alive connection with no request on it is closed after this many seconds
  without traffic (an answer the client does not read counts as no traffic too).

A connection past its header or body deadline gets a 408 and is closed, and the request log has its
line. A request read whole (queued, running in a worker, or its answer being written) is never cut:
while a connection holds one, the clocks of whatever follows it on that connection wait.
"""

from __future__ import annotations

import json
import math
import resource
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.task import ErrorTask
from waitress.utilities import RequestHeaderFieldsTooLarge

from onnxport.serving.config import ServerSettings
from onnxport.serving.waitress.framing import StrictParser

SWEEP_SECONDS = 0.2  # how often the deadlines are checked (the loop wakes at least once a second)
# File descriptors the process needs besides its connections: model files, onnxruntime, pipes, the log.
SPARE_FILES = 256

# status, method, path, error, bytes_in, bytes_out: what request_log.server_logger() takes.
Log = Callable[[int, "str | None", "str | None", str, int, int], None]


@dataclass(frozen=True)
class Limits:
    max_connections: int
    idle_timeout: float
    header_timeout: float
    body_timeout: float

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> Limits:
        return cls(
            settings["max_connections"], settings["idle_timeout"], settings["header_timeout"], settings["body_timeout"]
        )

    @property
    def backstop(self) -> int:
        """waitress's own channel_timeout: past every deadline here, so that it never fires first (it
        still guards a loop that is not ours: serve_until_drained outside the main thread)."""
        return math.ceil(max(self.idle_timeout, self.header_timeout, self.body_timeout)) + 1


def open_file_room(max_connections: int, say: Callable[[str], None]) -> int:
    """Raise the soft open-file limit so that `max_connections` fit (a soft limit of 1024 is common; past
    it accept() fails and waitress's loop spins on the listener). Returns the connections that fit,
    lower than asked only when the hard limit is too low, and then says so."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = max_connections + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return max_connections
    room = max(1, soft - SPARE_FILES)
    say(
        f"onnxport: warning: max_connections {max_connections} lowered to {room}: the open-file limit is {soft} "
        f"(raise it with `ulimit -n {need}`)"
    )
    return room


def apply(server: Any, limits: Limits) -> None:
    """waitress counts its listening sockets and its wake-up pipe against connection_limit: add them,
    so that max_connections counts clients only. Call before the first accept()."""
    sockets: dict = getattr(server, "map", None) or server._map
    server.adj.connection_limit = limits.max_connections + len(sockets)


class TimedParser(StrictParser):
    """The strict parser (framing.py), noting when its request began (its first byte) and when its head was whole."""

    def __init__(self, adj: Any) -> None:
        super().__init__(adj)
        self.began = time.monotonic()
        self.head_done: float | None = None

    def received(self, data: bytes) -> int:
        consumed = super().received(data)
        if self.head_done is None and self.headers_finished:
            self.head_done = time.monotonic()
        return consumed


class Timed(HTTPChannel):
    """waitress's channel with the clocks the sweep reads."""

    parser_class = TimedParser
    request: TimedParser | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.opened = time.monotonic()
        self.fresh = True  # nothing received yet: the first request's head is due from the opening
        self.held_at = 0.0  # when a request read whole here was last held: later clocks start no earlier
        self.serving = False  # a worker runs service(): set before waitress pops the request, cleared after
        super().__init__(*args, **kwargs)

    def service(self) -> None:
        """waitress's, noting when the request is done: the sweep wakes about once a second while nothing
        moves, so the last sweep that saw it held may be a second old when it ends, and the request
        pipelined behind it would start its clock that much late."""
        self.serving = True
        try:
            super().service()
        finally:
            self.held_at = time.monotonic()
            self.serving = False

    def received(self, data: bytes) -> bool:
        self.fresh = False
        return super().received(data)


class Guard:
    """The deadlines of `limits`, checked on a loop's channels; `log` writes a line for each request cut
    here or refused by waitress itself (None: no lines)."""

    def __init__(self, limits: Limits, log: Log | None = None) -> None:
        self.limits = limits
        self.log = log
        self.due = 0.0

    def channel_class(self, base: type[HTTPChannel]) -> type[HTTPChannel]:
        class Channel(Timed, base):
            pass

        return Channel

    def error_task_class(self, base: type[ErrorTask]) -> type[ErrorTask]:
        """waitress's answer to what it refuses itself (a malformed request line, 431, a body over its cap),
        with a request log line."""
        log = self.log

        class Logged(base):
            def execute(self) -> None:
                if log is not None:  # before the answer is written: whoever reads it finds the line written
                    _, _, body = self.request.error.to_response(self.channel.server.adj.ident)
                    log(*refusal(self.request), len(body))
                super().execute()

        return Logged

    def sweep(self, sockets: Iterable[Any], draining: bool = False) -> None:
        """Close the channels past a deadline, at most every SWEEP_SECONDS. While `draining`, the idle are
        left to the drain, which closes them its own way."""
        now = time.monotonic()
        if now < self.due:
            return
        self.due = now + SWEEP_SECONDS
        wall = time.time()  # waitress's last_activity is wall-clock time
        for channel in list(sockets):
            if isinstance(channel, Timed) and not (channel.will_close or channel.close_when_flushed):
                self._check(channel, now, wall, draining)

    def _check(self, channel: Timed, now: float, wall: float, draining: bool) -> None:
        limits = self.limits
        if channel.requests or channel.serving:  # read whole: never cut, and what follows it waits
            channel.held_at = now
            return
        request = channel.request
        idle = not draining and wall - channel.last_activity >= limits.idle_timeout
        if request is None and not channel.fresh:
            if idle and not _input_waiting(channel):
                channel.handle_close()
            return
        if channel.total_outbufs_len:  # an answer still going out: a 408 now would overtake it
            if idle:  # the client does not read it
                channel.handle_close()
            else:
                channel.held_at = now
            return
        if request is None or request.head_done is None:
            began = channel.opened if request is None else request.began
            if now - max(began, channel.held_at) >= limits.header_timeout:
                got = 0 if request is None else request.header_bytes_received
                self._cut(
                    channel,
                    f"request head incomplete after {limits.header_timeout:g} s (header_timeout): {got} bytes came",
                )
        elif now - max(request.head_done, channel.held_at) >= limits.body_timeout:
            expected = "" if request.chunked else f" of {request.content_length}"
            self._cut(
                channel,
                f"request body incomplete after {limits.body_timeout:g} s (body_timeout): "
                f"{request.body_bytes_received}{expected} bytes came",
            )

    def _cut(self, channel: Timed, error: str) -> None:
        """A log line, then a 408 (best effort: the socket takes it now or never) and a close."""
        request = channel.request
        body = json.dumps({"error": error}).encode()
        head = (
            f"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        if self.log is not None:  # first: whoever sees the close finds the line written
            method, path = _method_path(request) if request is not None and request.head_done else (None, None)
            received = 0 if request is None else request.header_bytes_received + request.body_bytes_received
            self.log(408, method, path, error, received, len(body))  # bodies, as in the app's lines
        try:
            channel.socket.send(head + body)
        except OSError:
            pass
        channel.request = None
        if request is not None:
            request.close()  # a large body may be buffered in a temporary file
        channel.handle_close()


def refusal(request: HTTPRequestParser) -> tuple[int, str | None, str | None, str, int]:
    """status, method, path, error and bytes received of a request waitress refused itself."""
    error = request.error
    # For 431 waitress parses a stand-in request line (GET /): the real one is not known.
    method, path = (None, None) if isinstance(error, RequestHeaderFieldsTooLarge) else _method_path(request)
    return (
        error.code,
        method,
        path,
        f"{error.reason}: {error.body}".strip(),
        request.header_bytes_received + request.body_bytes_received,
    )


def _method_path(request: HTTPRequestParser) -> tuple[str | None, str | None]:
    method, path = getattr(request, "command", None), getattr(request, "path", None)
    if isinstance(path, str):  # WSGI's latin-1 string of the path's bytes: decoded as werkzeug does
        path = path.encode("latin-1", "replace").decode("utf-8", "replace")
    return method, path


def _input_waiting(channel: HTTPChannel) -> bool:
    """Whether the client has just sent something (its next request): the loop reads it next."""
    try:
        return bool(channel.socket.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    except OSError:
        return False
