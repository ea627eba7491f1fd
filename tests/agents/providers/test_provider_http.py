"""Shared plumbing: retry-after parsing, status classification, error extraction, redaction."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import httpx
import pytest

from agents.providers.http import (
    REDACTED,
    ProviderHTTP,
    extract_error,
    is_retryable_status,
    parse_retry_after,
    parse_tool_arguments,
    redact,
)
from infra.errors import ConfigError

KEY = "sk-test-0123456789abcdefSECRET"


def test_parse_retry_after() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "7"}) == 7
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25  # ms wins
    assert parse_retry_after({"retry-after-ms": "junk", "retry-after": "9"}) == 9
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, now=now) == 30
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 11:00:00 GMT"}, now=now) == 0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(httpx.Headers({"Retry-After": "3"})) == 3  # case-insensitive headers


@pytest.mark.parametrize(("status", "retryable"), [
    (400, False), (401, False), (403, False), (404, False), (413, False), (422, False),
    (408, True), (409, True), (429, True), (500, True), (502, True), (503, True), (529, True),
])
def test_status_classification(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable


@pytest.mark.parametrize(("body", "expected"), [
    ({"error": {"message": "bad model", "type": "invalid_request_error", "code": None}},
     ("invalid_request_error", "bad model")),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
     ("overloaded_error", "Overloaded")),
    ({"error": "model 'x' not found"}, (None, "model 'x' not found")),  # Ollama
    ({"object": "error", "message": "too long", "type": "BadRequestError", "code": 400},
     ("BadRequestError", "too long")),  # vLLM
    ({"detail": [{"loc": ["body"], "msg": "field required"}]},
     (None, '[{"loc": ["body"], "msg": "field required"}]')),
    ([{"error": {"code": 429, "message": "quota"}}], ("429", "quota")),
    ("plain", (None, None)),
])
def test_extract_error_dialects(body: object, expected: tuple[str | None, str | None]) -> None:
    assert extract_error(body) == expected


def test_redact_exact_truncated_and_key_shaped() -> None:
    assert redact(f"bad key {KEY}!", [KEY]) == f"bad key {REDACTED}!"
    assert KEY[:20] not in redact(f"key starts {KEY[:20]}... wrong", [KEY])
    assert redact("Authorization: Bearer abcdefgh12345678", []) == f"Authorization: Bearer {REDACTED}"
    assert redact("got sk-ant-api03-zzzzzzzzzzzz", []) == f"got {REDACTED}"
    assert redact("nothing secret here", [None, ""]) == "nothing secret here"


def test_parse_tool_arguments() -> None:
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments("") == {}
    assert parse_tool_arguments(None) == {}
    assert parse_tool_arguments({"b": 2}) == {"b": 2}
    assert parse_tool_arguments('{"a": ') == {"__raw__": '{"a": '}
    assert parse_tool_arguments("[1]") == {"__raw__": "[1]"}


def test_status_error_is_redacted_and_logged_redacted(caplog: pytest.LogCaptureFixture) -> None:
    http = ProviderHTTP(label="p", base_url="http://127.0.0.1:1", headers={"x-api-key": KEY},
                        timeout_s=1, secrets=[KEY])
    body = json.dumps({"error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"}})
    with caplog.at_level(logging.DEBUG, logger="bosun.providers"):
        error = http.status_error(401, {}, body.encode())
    assert not error.retryable and error.status == 401
    assert "authentication_error" in str(error) and "invalid x-api-key" in str(error)
    assert KEY not in str(error) and KEY not in caplog.text and REDACTED in caplog.text
    assert KEY not in repr(http)


def test_base_url_needs_a_scheme() -> None:
    with pytest.raises(ConfigError, match="must start with http"):
        ProviderHTTP(label="p", base_url="localhost:8000/v1", headers={}, timeout_s=1)
