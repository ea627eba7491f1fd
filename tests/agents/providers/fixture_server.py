"""A tiny scripted HTTP/1.1 server on 127.0.0.1 for the provider tests.

Raw asyncio, so a test controls every byte: status, headers, a chunked SSE body sent piece by piece,
pauses (for timeouts) and dropping the connection mid-body (for disconnects). Each request takes the
next queued Reply and is recorded (method, path, headers, body) for assertions. Every response closes
its connection, so no keep-alive state leaks between tests, unless the server is made with ``keep_alive``
(then a connection serves requests until the client closes it). With ``ssl`` it speaks HTTPS (HTTP/1.1 only:
it offers no HTTP/2 by ALPN). ``connections`` counts the connections it accepted.
"""

from __future__ import annotations

import asyncio
import json
import ssl as ssl_lib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """One scripted response."""

    status: int = 200
    body: Any = None
    """bytes/str sent as is; anything else JSON-encoded. Ignored when ``chunks`` is set."""
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes | str] | None = None
    """Sent with ``transfer-encoding: chunked``, one HTTP chunk each."""
    delay_s: float = 0.0
    """Pause before the status line."""
    chunk_delay_s: float = 0.0
    """Pause before each chunk."""
    drop_after: int | None = None
    """Close the connection after this many chunks, without the terminating chunk."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def sse(data: Any, event: str | None = None) -> str:
    """One SSE event: optional ``event:`` line, a ``data:`` line (JSON unless a str), a blank line."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def sse_reply(events: list[str], *, split: int | None = None, **kwargs: Any) -> Reply:
    """A text/event-stream Reply; ``split`` re-cuts the whole body into chunks of that many bytes."""
    body = "".join(events).encode()
    chunks: list[bytes | str] = ([body[i:i + split] for i in range(0, len(body), split)] if split
                                 else [e.encode() for e in events])
    headers = {"content-type": "text/event-stream", **kwargs.pop("headers", {})}
    return Reply(chunks=chunks, headers=headers, **kwargs)


class FixtureServer:
    """Start with ``await start()``; queue replies with ``enqueue``; read ``requests``; ``await close()``."""

    def __init__(self, *, keep_alive: bool = False, ssl: ssl_lib.SSLContext | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: list[Reply] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self.keep_alive = keep_alive
        self.ssl = ssl
        self.connections = 0
        """Connections accepted so far."""
        self.default: Reply | None = None
        """Answered when no reply is queued (else a 500)."""

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl else 'http'}://127.0.0.1:{self.port}"

    def enqueue(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ssl)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                reply = self._replies.pop(0) if self._replies else self.default or Reply(
                    500, {"error": "no reply scripted"})
                await self._respond(reply, writer, keep_alive=self.keep_alive)
                if not self.keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError, ssl_lib.SSLError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return RecordedRequest(method, path, headers, body)

    @staticmethod
    async def _respond(reply: Reply, writer: asyncio.StreamWriter, *, keep_alive: bool = False) -> None:
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        headers = {"connection": "keep-alive" if keep_alive else "close",
                   **{k.lower(): v for k, v in reply.headers.items()}}
        if reply.chunks is None:
            body = reply.body
            if body is None:
                body = b""
            elif isinstance(body, str):
                body = body.encode()
            elif not isinstance(body, bytes):
                body = json.dumps(body).encode()
                headers.setdefault("content-type", "application/json")
            headers["content-length"] = str(len(body))
        else:
            headers["transfer-encoding"] = "chunked"
        head = f"HTTP/1.1 {reply.status} Status\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(head.encode("latin-1") + b"\r\n")
        if reply.chunks is None:
            writer.write(body)
            await writer.drain()
            return
        for count, chunk in enumerate(reply.chunks):
            if reply.drop_after is not None and count >= reply.drop_after:
                await writer.drain()
                return  # the caller closes the socket: the body stays incomplete
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
            data = chunk.encode() if isinstance(chunk, str) else chunk
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
