"""The SSE parser: line endings, comments, multi-line data, chunk boundaries anywhere, bad JSON."""

from __future__ import annotations

import pytest

from agents.providers.sse import SSEDecoder, SSEEvent, aiter_sse, event_json
from infra.errors import ProviderError


def decode_all(text: str) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return decoder.feed(text) + decoder.close()


async def decode_bytes(chunks: list[bytes]) -> list[SSEEvent]:
    async def source():
        for chunk in chunks:
            yield chunk

    return [event async for event in aiter_sse(source())]


def test_events_fields_comments_and_multiline_data() -> None:
    text = (": keep-alive comment\n"
            "event: message_start\n"
            "data: {\"a\": 1}\n\n"
            "data: line one\n"
            "data:line two\n"
            "id: 7\n"
            "retry: 1500\n"
            "unknown: ignored\n\n"
            "event: lonely\n\n"  # no data: not dispatched
            "data:\n\n")  # empty data: dispatched with ""
    events = decode_all(text)
    assert events == [
        SSEEvent(event="message_start", data='{"a": 1}'),
        SSEEvent(event="message", data="line one\nline two", id="7", retry=1500),
        SSEEvent(event="message", data="", id="7"),
    ]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_every_line_ending(eol: str) -> None:
    text = f"event: x{eol}data: 1{eol}{eol}data: 2{eol}{eol}"
    assert [(e.event, e.data) for e in decode_all(text)] == [("x", "1"), ("message", "2")]


async def test_split_at_every_byte_including_inside_utf8_and_crlf() -> None:
    body = "\ufeffdata: héllo ✓\r\n\r\nevent: e\r\ndata: {\"k\": \"ü\"}\r\n\r\n".encode()
    expected = [SSEEvent(data="héllo ✓"), SSEEvent(event="e", data='{"k": "ü"}')]
    for size in range(1, len(body) + 1):
        chunks = [body[i:i + size] for i in range(0, len(body), size)]
        assert await decode_bytes(chunks) == expected, f"chunk size {size}"


async def test_pending_event_at_end_of_stream_is_dispatched() -> None:
    assert await decode_bytes([b"data: [DONE]"]) == [SSEEvent(data="[DONE]")]
    assert await decode_bytes([b"data: x\r"]) == [SSEEvent(data="x")]


def test_event_json_rejects_bad_json_and_non_objects() -> None:
    assert event_json(SSEEvent(data='{"ok": true}'), source="p") == {"ok": True}
    with pytest.raises(ProviderError, match="malformed SSE stream.*not valid JSON") as bad:
        event_json(SSEEvent(event="content_block_delta", data="{not json"), source="p")
    assert bad.value.retryable
    with pytest.raises(ProviderError, match="expected a JSON object"):
        event_json(SSEEvent(data="[1, 2]"), source="p")
