"""Server-sent events (SSE) parsing shared by the streaming providers.

Follows the WHATWG "event stream" interpretation rules: lines end in CRLF, LF or CR; a blank line
dispatches the pending event; lines starting with ``:`` are comments (keep-alives); ``field: value``
with one optional space after the colon; several ``data`` lines join with ``\\n``; a leading UTF-8 BOM
is dropped. One deliberate leniency: an event still pending when the stream ends (no trailing blank
line) is dispatched instead of discarded, so a server that omits the final blank line after
``data: [DONE]`` still works.

The decoder only splits the stream into events; what the events mean (and which one is terminal) is
the provider's business. ``event_json`` turns a data payload into a dict and raises a retryable
ProviderError for malformed JSON.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any

from infra.errors import ProviderError

_EOL = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched server-sent event."""

    event: str = "message"
    """The ``event:`` field, or ``message`` when the server sent none."""
    data: str = ""
    """The ``data:`` lines joined with newlines."""
    id: str | None = None
    """The last event id seen on the stream, if any."""
    retry: int | None = None
    """The ``retry:`` reconnection time in milliseconds, if this event carried one."""


class SSEDecoder:
    """Incremental SSE parser: feed it text as it arrives, get back the events it completes."""

    def __init__(self) -> None:
        self._buffer = ""
        self._at_start = True
        self._event = ""
        self._data: list[str] = []
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, text: str) -> list[SSEEvent]:
        """Add decoded text; return the events completed by it (possibly none)."""
        if self._at_start and text:
            text = text.removeprefix(_BOM)
            self._at_start = False
        self._buffer += text
        events: list[SSEEvent] = []
        pos = 0
        while True:
            match = _EOL.search(self._buffer, pos)
            if match is None:
                break
            if match.group() == "\r" and match.end() == len(self._buffer):
                break  # maybe the first half of a CRLF split across chunks: wait for more
            event = self._process_line(self._buffer[pos:match.start()])
            pos = match.end()
            if event is not None:
                events.append(event)
        self._buffer = self._buffer[pos:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: process an unterminated last line and dispatch a pending event."""
        events: list[SSEEvent] = []
        rest, self._buffer = self._buffer, ""
        for line in _EOL.split(rest.removesuffix("\r")) if rest else []:
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _process_line(self, line: str) -> SSEEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # comment / keep-alive
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            self._last_id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
        return None  # unknown fields are ignored

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event, self._retry = "", None
            return None
        event = SSEEvent(event=self._event or "message", data="\n".join(self._data), id=self._last_id,
                         retry=self._retry)
        self._event, self._data, self._retry = "", [], None
        return event


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Decode a byte stream (UTF-8, split anywhere, even inside a character) into SSE events."""
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(text_decoder.decode(chunk)):
            yield event
    for event in decoder.feed(text_decoder.decode(b"", final=True)) + decoder.close():
        yield event


def event_json(event: SSEEvent, *, source: str) -> dict[str, Any]:
    """Parse an event's data as a JSON object; a retryable ProviderError says what was wrong otherwise.

    ``source`` names the provider/endpoint for the message. The data snippet in the message is cut
    short; callers redact it (see ``http.ProviderHTTP.malformed``) before it leaves the provider.
    """
    try:
        value = json.loads(event.data)
    except ValueError as exc:
        raise ProviderError(
            f"{source}: malformed SSE stream: the data of a {event.event!r} event is not valid JSON "
            f"({exc.msg} at position {exc.pos}): {_snippet(event.data)}", retryable=True) from None
    if not isinstance(value, dict):
        raise ProviderError(
            f"{source}: malformed SSE stream: expected a JSON object in a {event.event!r} event, got "
            f"{type(value).__name__}: {_snippet(event.data)}", retryable=True)
    return value


def _snippet(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
