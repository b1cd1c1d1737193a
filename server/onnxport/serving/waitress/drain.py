"""A clean drain for `onnxport serve` on waitress: on SIGTERM or Ctrl-C (SIGINT), stop accepting, answer
every request already accepted, close, and say how many were drained; bounded by the drain_seconds setting.

waitress 3.0 (pinned in pyproject.toml) has no drain of its own: its run() ends on KeyboardInterrupt and
drops what is in flight. So this module runs waitress's loop (wasyncore, in the main thread) itself. The
signal handler only records the signal and wakes the loop through waitress's trigger pipe; the loop does
the rest, in this order:

1. New handshakes are refused while the ones the kernel has already completed are accepted: a closed
   listening socket resets the connections in its backlog that accept() has not taken yet, although their
   clients saw connect() succeed. On Linux a socket filter on the listener drops new SYNs (the clients
   retry a second later and then meet the closed port: connection refused), handshakes already under way
   finish (their ACK passes) and are accepted; then the listener closes.
2. Every response written from now on carries `Connection: close`, so no client sends another request on a
   connection that is about to close.
3. Connections holding a request (read whole or in part, running, or its answer still being written) are
   left to finish. A connection idle at the signal may carry the client's next request at any moment: it
   gets a short grace to send one (answered like the rest), then a staged close (FIN first, then what
   still arrives is read and dropped): closing a socket with unread data would send a reset.
4. When nothing is held, or the bound passes, the loop ends. What was still held is reported as abandoned.
"""

from __future__ import annotations

import ctypes
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer
from waitress.task import ErrorTask, WSGITask

from onnxport.serving.waitress import client_gone
from onnxport.serving.waitress.connections import Guard

SIGNALS = (signal.SIGTERM, signal.SIGINT)
# How long a connection idle at the signal may take to send one more request (a client that has just read
# a keep-alive answer sends its next request within milliseconds; the rest covers a stalled client).
IDLE_GRACE = 0.5
# How long a staged close waits for the client's own close before the socket is closed anyway.
LINGER = 0.5
# Longest wait for handshakes that were under way when new ones were refused (a round trip; 1 s covers
# a slow network, loopback takes microseconds).
HANDSHAKE_GRACE = 1.0
LOOP_TIMEOUT = 0.05  # the loop's tick during the drain: how often the bound is checked


@dataclass
class DrainReport:
    signal: str  # SIGTERM or SIGINT
    in_flight: int  # requests held (read whole or in part) at the signal
    connections: int  # connections open once accepting stopped (the backlog's included)
    drained: int  # answers finished after the signal
    abandoned: int  # requests not answered in full when the bound passed (or a second signal came)
    seconds: float


def serve_until_drained(
    server: Any, drain_seconds: float, say: Callable[[str], None] | None = None, guard: Guard | None = None
) -> DrainReport | None:
    """Run waitress `server` (create_server()'s result) until SIGTERM or SIGINT, then drain it; `guard`
    (connections.py) holds its connections to their deadlines meanwhile. Returns the drain's report
    (None when run outside the main thread, where signals cannot be handled: then it runs waitress's own
    loop, where only waitress's channel_timeout applies)."""
    if threading.current_thread() is not threading.main_thread():
        server.run()
        return None
    return _Drain(server, drain_seconds, say or _say, guard).run()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Drain:
    def __init__(self, server: Any, seconds: float, say: Callable[[str], None], guard: Guard | None) -> None:
        # One listening socket gives a BaseWSGIServer, several (a host name with two addresses) a
        # MultiSocketServer; both keep every socket, listeners included, in one map.
        self.map: dict = getattr(server, "map", None) or server._map
        self.adj = server.adj
        self.dispatcher = server.task_dispatcher
        self.listeners = [obj for obj in self.map.values() if isinstance(obj, BaseWSGIServer)]
        self.seconds = max(0.0, float(seconds))
        self.say = say
        self.signal: int | None = None
        self.hurry = False  # a second signal: stop waiting
        self.lock = threading.Lock()
        self.drained = 0
        self.guard = guard
        channel = _channel_class(self)
        for listener in self.listeners:
            listener.channel_class = channel  # before the first accept(): every channel is ours

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def answered(self) -> None:
        with self.lock:
            self.drained += 1

    def on_signal(self, signum: int, frame: Any) -> None:
        # Runs in the main thread between two bytecodes of the loop: no blocking, no locks. A trigger pull
        # without a thunk is one os.write() to waitress's pipe; it wakes select() at once.
        if self.signal is None:
            self.signal = signum
        else:
            self.hurry = True
        self.listeners[0].trigger.pull_trigger()

    def run(self) -> DrainReport:
        previous = {signum: signal.signal(signum, self.on_signal) for signum in SIGNALS}
        report = None
        try:
            while not self.requested:
                self._poll(self.adj.asyncore_loop_timeout)
            report = self._drain()
            return report
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if report is not None and not report.abandoned:
                self.dispatcher.shutdown()  # its threads are idle: they stop at once
            wasyncore.close_all(self.map, ignore_all=True)

    def _poll(self, timeout: float) -> None:
        wasyncore.loop(timeout=timeout, map=self.map, use_poll=self.adj.asyncore_use_poll, count=1)
        if self.guard is not None:
            self.guard.sweep(self.map.values(), draining=self.requested)

    def _drain(self) -> DrainReport:
        start = time.monotonic()
        deadline = start + self.seconds
        name = signal.Signals(self.signal or signal.SIGTERM).name
        in_flight = sum(_held(channel) for channel in self._channels())
        self._stop_accepting(deadline)
        connections = len(self._channels())
        self.say(
            f"onnxport: {name}: stopped accepting; draining {in_flight} requests in flight on "
            f"{connections} connections (up to {self.seconds:g} s)"
        )
        signalled_at = time.time()  # waitress's last_activity is wall-clock time
        lingering: list[tuple[socket.socket, float]] = []
        while True:
            channels = self._channels()
            busy = [channel for channel in channels if _busy(channel)]
            now = time.monotonic()
            for channel in channels:
                if channel not in busy and time.time() - max(channel.last_activity, signalled_at) >= IDLE_GRACE:
                    kept = _staged_close(channel)
                    if kept is not None:
                        lingering.append((kept, min(now + LINGER, deadline)))
            lingering = _linger(lingering, now)
            if not busy and not self._channels() and not lingering:
                break
            if now >= deadline or self.hurry:
                break
            self._poll(LOOP_TIMEOUT)
        for sock, _ in lingering:
            sock.close()
        unfinished = [channel for channel in self._channels() if _unfinished(channel)]
        report = DrainReport(
            name, in_flight, connections, self.drained, sum(map(_unfinished, unfinished)), time.monotonic() - start
        )
        if report.abandoned:
            self.say(
                f"onnxport: drained {report.drained} requests in {report.seconds:.2f} s; "
                f"{'a second signal came' if self.hurry else f'drain_seconds ({self.seconds:g}) passed'} with "
                f"{report.abandoned} requests unanswered on {len(unfinished)} connections: abandoned, exiting"
            )
        else:
            self.say(f"onnxport: drained {report.drained} requests in {report.seconds:.2f} s, exiting")
        return report

    def _channels(self) -> list[HTTPChannel]:
        return [obj for obj in list(self.map.values()) if isinstance(obj, HTTPChannel)]

    def _stop_accepting(self, deadline: float) -> None:
        filtered = all(_refuse_new_handshakes(listener.socket) for listener in self.listeners)
        if filtered:
            ports = {
                listener.socket.getsockname()[1]
                for listener in self.listeners
                if listener.socket.family in (socket.AF_INET, socket.AF_INET6)
            }
            until = min(time.monotonic() + HANDSHAKE_GRACE, deadline)
            while True:
                for listener in self.listeners:
                    _accept_all(listener)
                if not _half_open(ports) or time.monotonic() >= until:
                    break
                self._poll(0.005)  # the channels' answers go on meanwhile
        for listener in self.listeners:
            _accept_all(listener)
            # Only the listening socket: BaseWSGIServer.close() would close the trigger too, which the
            # request threads pull to wake the loop when an answer is ready.
            wasyncore.dispatcher.close(listener)


def _channel_class(drain: _Drain) -> type[HTTPChannel]:
    """waitress's channel, whose responses carry `Connection: close` once the drain began, and which counts
    the answers finished after the signal."""

    class Closing:  # waitress's Task has these
        close_on_finish: bool
        set_close_on_finish: Callable[[], None]

        def build_response_header(self) -> bytes:
            if drain.requested and not self.close_on_finish:
                self.set_close_on_finish()  # adds the header, and closes the channel once the answer is out
            return super().build_response_header()  # type: ignore[misc]

        # Whether the answer's last bytes were handed over before the signal: such an answer may already be
        # read by its client while this thread has not yet returned, and it is not one the drain waited for.
        # Read before each write, as the client may have the bytes (and the server the signal) before it returns.
        queued_before_signal = False

        def write(self, data: bytes) -> None:
            before_signal = not drain.requested
            super().write(data)  # type: ignore[misc]
            length, written = getattr(self, "content_length", None), getattr(self, "content_bytes_written", 0)
            if before_signal and length is not None and written >= length:
                self.queued_before_signal = True

        def finish(self) -> None:
            if not drain.requested:
                self.queued_before_signal = True  # what finish() queues (a chunked end) was not read before
            super().finish()  # type: ignore[misc]

        def service(self) -> None:
            super().service()  # type: ignore[misc]
            if drain.requested and not self.queued_before_signal:
                drain.answered()

    class Task(Closing, WSGITask):
        def get_environment(self) -> Any:  # the WSGI environ, waitress's
            environ = super().get_environment()
            environ[client_gone.CLIENT_GONE] = client_gone.probe(self.channel)  # for the long generation routes
            return environ

    class Error(Closing, ErrorTask):
        pass

    class Channel(HTTPChannel):
        task_class = Task
        error_task_class = Error

    if drain.guard is not None:
        Channel.error_task_class = drain.guard.error_task_class(Error)
        return drain.guard.channel_class(Channel)
    return Channel


def _held(channel: HTTPChannel) -> int:
    """Requests `channel` holds: read and waiting or running, plus one being read."""
    return len(channel.requests) + (channel.request is not None)


def _unfinished(channel: HTTPChannel) -> int:
    """Requests on `channel` whose answer has not all been sent: those held, or the last one's answer."""
    return _held(channel) or int(channel.total_outbufs_len > 0)


def _busy(channel: HTTPChannel) -> bool:
    """Work left on `channel`: a request, an answer still being written, or a close under way."""
    return bool(_held(channel) or channel.total_outbufs_len or channel.will_close or channel.close_when_flushed)


def _accept_all(listener: BaseWSGIServer) -> None:
    """What BaseWSGIServer.handle_accept does for one connection, for every one the kernel holds, and
    past waitress's connection_limit: each of these clients saw its connect() succeed."""
    while True:
        try:
            pair = listener.accept()
        except OSError:
            return
        if pair is None:
            return
        conn, addr = pair
        try:
            listener.set_socket_options(conn)
        except OSError:  # the client has gone already
            conn.close()
            continue
        listener.channel_class(listener, conn, listener.fix_addr(addr), listener.adj, map=listener._map)


def _staged_close(channel: HTTPChannel) -> socket.socket | None:
    """Close an idle channel without a reset: FIN first, and a copy of the socket kept to read (and drop)
    what the client may still send. None when input is waiting (the loop reads it next) or the socket has
    gone."""
    sock = channel.socket
    try:
        if sock.recv(1, socket.MSG_PEEK):
            return None
    except BlockingIOError:
        pass
    except OSError:
        channel.handle_close()
        return None
    try:
        sock.shutdown(socket.SHUT_WR)
        kept = sock.dup()
    except OSError:
        kept = None
    channel.handle_close()
    return kept


def _linger(lingering: list[tuple[socket.socket, float]], now: float) -> list[tuple[socket.socket, float]]:
    """Read and drop what arrived on closed idle connections; close each at the client's EOF or its time."""
    left = []
    for sock, until in lingering:
        try:
            while sock.recv(65536):
                pass
        except BlockingIOError:
            if now < until:
                left.append((sock, until))
                continue
        except OSError:
            pass
        sock.close()
    return left


# Classic BPF, run on each packet for the listening socket (offset 0 is the TCP header): drop a SYN without
# ACK (a new handshake), pass everything else (the ACK that completes a handshake under way).
_BPF_LD_B_ABS, _BPF_JSET_K, _BPF_RET_K = 0x30, 0x45, 0x06
_TCP_FLAGS, _ACK, _SYN = 13, 0x10, 0x02
_SO_ATTACH_FILTER = 26  # Linux; the socket module has no name for it
_NO_NEW_HANDSHAKES = b"".join(
    struct.pack("HBBI", *instruction)
    for instruction in (
        (_BPF_LD_B_ABS, 0, 0, _TCP_FLAGS),
        (_BPF_JSET_K, 2, 0, _ACK),  # ACK set: pass
        (_BPF_JSET_K, 0, 1, _SYN),  # SYN alone: drop
        (_BPF_RET_K, 0, 0, 0),
        (_BPF_RET_K, 0, 0, 0xFFFFFFFF),
    )
)


def _refuse_new_handshakes(sock: socket.socket) -> bool:
    """Attach the filter above to listening `sock`; False where it cannot be (not Linux, not TCP)."""
    if not sys.platform.startswith("linux") or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    program = ctypes.create_string_buffer(_NO_NEW_HANDSHAKES)
    fprog = struct.pack("HL", len(_NO_NEW_HANDSHAKES) // 8, ctypes.addressof(program))
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)  # the kernel copies the program
    except OSError:
        return False
    return True


def _half_open(ports: set[int]) -> int:
    """Handshakes under way (SYN_RECV) on `ports`, from /proc/net/tcp{,6}; 0 when they cannot be read."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as lines:
                next(lines, None)
                for line in lines:
                    fields = line.split(None, 4)
                    if len(fields) > 3 and fields[3] == "03" and int(fields[1].rsplit(":", 1)[1], 16) in ports:
                        count += 1
        except (OSError, ValueError):
            continue
    return count
