"""Whether a request's client has gone, as waitress 3.0 (pinned in pyproject.toml) cannot say in time.

waitress puts `waitress.client_disconnected` in the WSGI environ, but it only ever turns true with its
setting channel_request_lookahead above 0: otherwise the loop does not read a connection while its request
runs, so it never sees the client's close. And with that setting waitress drops the answer of every client
that half-closes (sends its request, then shuts its own side: the answer is still wanted) on every route,
since it takes that EOF for a disconnect. So instead the routes that can run long and write nothing until
they end (a generation answered whole, serving/http/generate.py) ask this check, between two tokens: a peek
at the socket, which consumes nothing, reads EOF or a reset when the client has closed. A client that
half-closes after a generation request is therefore taken as gone (TCP cannot tell the two apart before
anything is written); docs/notes/limits.md says so.
"""

from __future__ import annotations

import socket
from typing import Any, Callable

from onnxport.serving.generate.runs import CLIENT_GONE

__all__ = ["CLIENT_GONE", "probe"]


def probe(channel: Any) -> Callable[[], bool]:
    """The check for the client of `channel` (a waitress HTTPChannel): True once the connection is closed."""

    def gone() -> bool:
        sock = channel.socket
        if not channel.connected or sock is None:
            return True
        try:
            # Safe beside the loop: it does not read a connection whose request is running (no lookahead).
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):  # nothing to read: still there
            return False
        except OSError:  # reset, or the socket closed under us
            return True

    return gone
