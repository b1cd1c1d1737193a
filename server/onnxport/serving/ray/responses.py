"""A replica's answer from the Flask app behind a2wsgi, as Ray Serve sends it on: a Server-Sent Events body (the
generation streams) as a StreamingResponse, event by event as the app yields it; every other answer whole, in one
Response, as before.

The app runs in a task of its own that nothing cancels, its messages put in an unbounded queue: a2wsgi's thread
waits on a queue of its own that only its sender task empties, so a client that goes away must not stop that
sender. Instead the request's `client gone` Event is set (the stream is closed early, or Ray Serve cancels the
request when its client disconnects), which the app sees as environ[CLIENT_GONE] (serving/generate/runs.py): a
generation then ends at its next token, freeing its KV cache and its slot, and the task runs out.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, MutableMapping
from contextvars import ContextVar
from typing import Any

from onnxport.serving.generate.runs import CLIENT_GONE

Message = MutableMapping[str, Any]
EVENT_STREAM = "text/event-stream"
# The request's Event: set before the app's task is made, so a2wsgi's thread (which runs the WSGI app in a copy of
# the task's context) finds it.
CLIENT: ContextVar[threading.Event | None] = ContextVar("onnxport_ray_client", default=None)


def with_client_check(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The WSGI app, with environ[CLIENT_GONE] telling whether this request's client has gone."""

    def checked(environ: Any, start_response: Any) -> Iterable[bytes]:
        gone = CLIENT.get()
        if gone is not None:
            environ[CLIENT_GONE] = gone.is_set
        return app(environ, start_response)

    return checked


class Responder:
    """Answers a replica's requests through an ASGI app (a2wsgi's adapter of the Flask app)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._running: set[asyncio.Task[None]] = set()  # the apps' tasks, held until they end

    async def answer(self, request: Any) -> Any:
        from starlette.responses import Response, StreamingResponse

        gone = threading.Event()
        messages: asyncio.Queue[Message | None] = asyncio.Queue()

        async def send(message: Message) -> None:
            messages.put_nowait(message)

        async def run() -> None:
            try:
                await self.app(request.scope, request.receive, send)
            finally:
                messages.put_nowait(None)  # the end, however it ended

        token = CLIENT.set(gone)
        try:
            task = asyncio.get_running_loop().create_task(run())
        finally:
            CLIENT.reset(token)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        streaming = False
        try:
            start = await messages.get()
            if start is None or start["type"] != "http.response.start":
                await task  # what the app raised
                raise RuntimeError("the app ended without starting an answer")
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in start.get("headers", [])}
            headers.pop("content-length", None)  # Starlette's Response sets its own
            if headers.get("content-type", "").startswith(EVENT_STREAM):
                streaming = True
                return StreamingResponse(_events(messages, gone, task), start["status"], headers=headers)
            body = b"".join([m.get("body", b"") async for m in _until_end(messages)])
            await task
            return Response(body, start["status"], headers=headers)
        finally:
            if not streaming and not task.done():  # cancelled: Ray Serve's client went away
                gone.set()


async def _until_end(messages: asyncio.Queue[Message | None]) -> AsyncIterator[Message]:
    while (message := await messages.get()) is not None:
        if message["type"] == "http.response.body":
            yield message


async def _events(messages: asyncio.Queue[Message | None], gone: threading.Event, task: asyncio.Task[None]):
    """The body's chunks as the app sends them; closed before the end (the client gone), the app is told."""
    try:
        async for message in _until_end(messages):
            if message.get("body"):
                yield message["body"]
    finally:
        if not task.done():
            gone.set()
