"""Shared httpx plumbing of the model providers: requests, error classification, retry-after, redaction.

Error classes (every failure becomes a ``ProviderError``):

* HTTP 408, 409, 429 and every 5xx (Anthropic's 529 "overloaded" included) are retryable;
  ``retry_after`` comes from ``retry-after-ms`` (milliseconds) or ``retry-after`` (seconds or an
  HTTP date).
* Every other 4xx (400, 401, 403, 404, 413, 422, ...) is not retryable; the message carries the
  provider's own error message from the JSON body.
* Connection failures, timeouts and a connection lost mid-stream are retryable.
* A malformed stream (bad JSON in a data line, no terminal event) is retryable.

API keys never leave this module in clear: every message built here goes through ``redact`` with the
provider's secrets, exceptions are raised ``from None`` (so no httpx exception with the request
attached is chained), and ``ProviderHTTP``'s repr shows no headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from agents.providers.sse import SSEEvent, aiter_sse, event_json
from infra.errors import ConfigError, ProviderError

log = logging.getLogger("bosun.providers")

REDACTED = "[REDACTED]"

# Key-shaped strings redacted even when they are not one of the provider's own secrets.
_KEY_SHAPES = (
    re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"),  # OpenAI, Anthropic (sk-ant-...), OpenRouter (sk-or-...)
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=\-]{8,}"),
)
# Header names whose values are treated as secrets (extra_headers may carry credentials).
_SECRET_HEADER = re.compile(r"(?i)authorization|api[-_]?key|token|secret|cookie")

_RETRYABLE_STATUSES = frozenset({408, 409, 429})
# Error "type"/"code" strings of in-stream error payloads that mean "try again".
_RETRYABLE_ERROR_TYPES = frozenset({
    "overloaded_error", "api_error", "rate_limit_error", "rate_limit_exceeded", "timeout_error",
    "server_error", "internal_server_error", "service_unavailable", "overloaded",
})
_FATAL_ERROR_TYPES = frozenset({
    "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
    "request_too_large", "billing_error", "invalid_api_key", "context_length_exceeded",
    "insufficient_quota", "model_not_found",
})
_HINTS = {
    401: "check the API key",
    403: "the API key may not have access to this model or endpoint",
    404: "check the base URL and the model name",
    413: "the request is too large; shorten the conversation",
}
_MAX_MESSAGE = 1000


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace every secret (and anything key-shaped: ``sk-...``, bearer tokens) in ``text``.

    A secret of 16+ characters is also caught when echoed truncated: any word starting with its first
    8 characters is redacted whole.
    """
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        if len(secret) < 4:
            continue  # too short to search for without mangling unrelated text
        text = text.replace(secret, REDACTED)
        if len(secret) >= 16:
            text = re.sub(re.escape(secret[:8]) + r"\S*", REDACTED, text)
    for shape in _KEY_SHAPES:
        text = shape.sub(REDACTED, text)
    return text


def secret_header_values(headers: Mapping[str, str] | None) -> list[str]:
    """Values of headers that look like credentials, including the bare token of ``Bearer <token>``."""
    values: list[str] = []
    for name, value in (headers or {}).items():
        if _SECRET_HEADER.search(name) and value:
            values.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in {"bearer", "basic", "token"}:
                values.append(token)
    return values


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait before retrying, from ``retry-after-ms`` or ``retry-after``; None if neither parses.

    ``retry-after`` may be delta-seconds or an HTTP date; a date in the past gives 0.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value / 1000
    raw = headers.get("retry-after")
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and 5xx (529 included) are worth retrying; everything else is not."""
    return status in _RETRYABLE_STATUSES or status >= 500


def extract_error(body: Any) -> tuple[str | None, str | None]:
    """(error type or code, message) from a provider's error payload, whatever its dialect.

    Understands OpenAI/OpenRouter/llama.cpp ``{"error": {"message", "type", "code"}}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}}``, Ollama ``{"error": "text"}``, vLLM
    ``{"object": "error", "message", "type"}`` and FastAPI ``{"detail": ...}``.
    """
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return None, None
    error = body.get("error")
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code")
        message = error.get("message")
        return (str(kind) if kind is not None else None), (str(message) if message is not None else None)
    if isinstance(error, str):
        return None, error
    if isinstance(body.get("message"), str):
        kind = body.get("type") or body.get("code")
        return (str(kind) if kind is not None else None), body["message"]
    if "detail" in body:
        detail = body["detail"]
        return None, detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
    return None, None


def _clip(text: str, limit: int = _MAX_MESSAGE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _status_code(value: Any) -> int | None:
    if isinstance(value, int) and 100 <= value <= 599:
        return value
    if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
        return int(value)
    return None


class ProviderHTTP:
    """One provider's HTTP client: JSON POSTs and SSE streams, with failures turned into ProviderError.

    ``label`` names the provider in messages (e.g. ``anthropic:claude-sonnet-4-5``). ``timeout_s``
    bounds connecting and every single read/write: a stream may run longer in total as long as data
    keeps arriving.
    """

    def __init__(self, *, label: str, base_url: str, headers: Mapping[str, str], timeout_s: float,
                 secrets: Iterable[str | None] = ()) -> None:
        scheme = urlsplit(base_url).scheme
        if scheme not in {"http", "https"}:
            raise ConfigError(f"{label}: base URL {base_url!r} must start with http:// or https://")
        self.label = label
        self.base_url = base_url.rstrip("/")
        self._secrets = [s for s in secrets if s] + secret_header_values(headers)
        self._timeout_s = timeout_s
        # One client per provider, kept by the worker's ProviderPool: its connections stay open between calls
        # (keep-alive), and concurrent calls to an https endpoint share one HTTP/2 connection where the server offers
        # it (ALPN; HTTP/1.1 otherwise).
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=dict(headers), http2=True,
                                         timeout=httpx.Timeout(timeout_s), follow_redirects=False)

    def __repr__(self) -> str:
        return f"ProviderHTTP(label={self.label!r}, base_url={self.redact(self.base_url)!r})"

    def redact(self, text: str) -> str:
        """``redact`` with this provider's secrets."""
        return redact(text, self._secrets)

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- requests -------------------------------------------------------------------------------

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body and return the JSON object of a 2xx answer; raise ProviderError otherwise."""
        url = self.base_url + path
        started = time.monotonic()
        try:
            response = await self._client.post(path, json=body, headers={"accept": "application/json"})
        except httpx.HTTPError as exc:
            raise self.transport_error(exc, url, mid_stream=False) from None
        log.debug("%s: POST %s -> %s in %.2fs", self.label, self.redact(url), response.status_code,
                  time.monotonic() - started)
        if not 200 <= response.status_code < 300:
            raise self.status_error(response.status_code, response.headers, response.content)
        try:
            data = response.json()
        except ValueError:
            raise self.malformed(f"the response to POST {url} is not valid JSON: "
                                 f"{_clip(response.text, 200)!r}") from None
        if not isinstance(data, dict):
            raise self.malformed(f"the response to POST {url} is not a JSON object")
        return data

    async def post_sse(self, path: str, body: dict[str, Any]) -> AsyncIterator[SSEEvent]:
        """POST a JSON body and yield the server-sent events of the answer.

        Non-2xx answers and transport failures raise ProviderError. Deciding whether the stream was
        complete (its terminal event arrived) is the caller's job; use ``malformed`` to report it.
        Use under ``contextlib.aclosing`` so an early exit releases the connection.
        """
        url = self.base_url + path
        started = time.monotonic()
        receiving = False
        try:
            async with self._client.stream("POST", path, json=body,
                                           headers={"accept": "text/event-stream"}) as response:
                log.debug("%s: POST %s -> %s (stream) after %.2fs", self.label, self.redact(url),
                          response.status_code, time.monotonic() - started)
                if not 200 <= response.status_code < 300:
                    raise self.status_error(response.status_code, response.headers, await response.aread())
                content_type = response.headers.get("content-type", "")
                if "json" in content_type:
                    raise self._json_instead_of_stream(await response.aread())
                receiving = True
                chunks = response.aiter_bytes()
                ended = False
                try:
                    async for event in aiter_sse(chunks):
                        yield event
                    ended = True
                finally:
                    if not ended:  # the caller stopped at the terminal event: read the body's end
                        await _drain(chunks)
        except httpx.HTTPError as exc:
            raise self.transport_error(exc, url, mid_stream=receiving) from None

    def event_json(self, event: SSEEvent) -> dict[str, Any]:
        """An event's data as a JSON object; a retryable, redacted ProviderError if it is not one."""
        try:
            return event_json(event, source=self.label)
        except ProviderError as exc:
            raise ProviderError(self.redact(str(exc)), retryable=True) from None

    # -- errors ---------------------------------------------------------------------------------

    def status_error(self, status: int, headers: Mapping[str, str], content: bytes) -> ProviderError:
        """The ProviderError for a non-2xx answer, with the provider's own message and retry-after."""
        text = content.decode("utf-8", errors="replace")
        try:
            kind, message = extract_error(json.loads(text))
        except ValueError:
            kind, message = None, None
        if message is None:
            message = text.strip() or httpx.codes.get_reason_phrase(status) or "no error message"
        retryable = is_retryable_status(status)
        retry_after = parse_retry_after(headers)
        parts = [f"{self.label}: HTTP {status}"]
        if kind:
            parts.append(f" {kind}")
        parts.append(f": {_clip(message)}")
        if not retryable and status in _HINTS:
            parts.append(f" ({_HINTS[status]})")
        if retryable and retry_after is not None:
            parts.append(f" (retry after {retry_after:g}s)")
        error = ProviderError(self.redact("".join(parts)), status=status, retryable=retryable,
                              retry_after=retry_after)
        log.warning("%s", error)
        return error

    def payload_error(self, payload: Mapping[str, Any]) -> ProviderError:
        """The ProviderError for an error event inside a 200 stream (Anthropic ``error``, OpenAI ``{"error"}``).

        Retryable unless its type says the request itself is bad (invalid_request_error and kin) or it
        carries a non-retryable HTTP status code.
        """
        kind, message = extract_error(dict(payload))
        error_obj = payload.get("error")
        status = _status_code(error_obj.get("code")) if isinstance(error_obj, dict) else None
        if status is not None:
            retryable = is_retryable_status(status)
        elif kind in _FATAL_ERROR_TYPES:
            retryable = False
        else:
            retryable = True  # overloaded/api errors, and unknown kinds: a failed generation, not a bad request
        text = f"{self.label}: error in the response stream"
        if kind:
            text += f" ({kind})"
        text += f": {_clip(message or json.dumps(dict(payload), ensure_ascii=False))}"
        error = ProviderError(self.redact(text), status=status, retryable=retryable)
        log.warning("%s", error)
        return error

    def transport_error(self, exc: httpx.HTTPError, url: str, *, mid_stream: bool) -> ProviderError:
        """A retryable ProviderError for a connection failure, a timeout or a connection lost mid-stream."""
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectTimeout):
            text = f"timed out after {self._timeout_s:g}s connecting to {url}"
        elif isinstance(exc, httpx.TimeoutException):
            waiting = "the next part of the stream" if mid_stream else "the response"
            text = f"timed out after {self._timeout_s:g}s waiting for {waiting} from {url}"
        elif isinstance(exc, httpx.ConnectError):
            text = f"could not connect to {url}: {detail}"
        elif mid_stream:
            text = f"the connection was lost mid-stream ({type(exc).__name__}: {detail})"
        elif isinstance(exc, httpx.UnsupportedProtocol):
            return ProviderError(self.redact(f"{self.label}: unsupported URL {url}: {detail}"), retryable=False)
        else:
            text = f"request to {url} failed ({type(exc).__name__}: {detail})"
        error = ProviderError(self.redact(f"{self.label}: {text}"), retryable=True)
        log.warning("%s", error)
        return error

    def malformed(self, what: str) -> ProviderError:
        """A retryable ProviderError for a response that breaks the documented format."""
        error = ProviderError(self.redact(f"{self.label}: malformed response: {what}"), retryable=True)
        log.warning("%s", error)
        return error

    def _json_instead_of_stream(self, content: bytes) -> ProviderError:
        try:
            payload = json.loads(content)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and "error" in payload:
            return self.payload_error(payload)
        return ProviderError(self.redact(
            f"{self.label}: asked for a streamed (text/event-stream) answer but got JSON; "
            "the server does not seem to support streaming, so configure this provider with stream=False"),
            retryable=False)


DRAIN_BYTES = 64 * 1024
DRAIN_S = 1.0


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of a stream whose reader stopped at its terminal event (``data: [DONE]``,
    ``message_stop``): usually just the body's last chunk. A response read to its end gives its connection back to
    the client's pool for the next call; one left unread is closed, and the next call pays a new TCP and TLS
    handshake. At most ``DRAIN_BYTES`` and ``DRAIN_S``: a server that goes on sending loses its connection."""
    read = 0
    with contextlib.suppress(Exception):
        async with asyncio.timeout(DRAIN_S):
            async for part in chunks:
                read += len(part)
                if read > DRAIN_BYTES:
                    return


def parse_tool_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict. Text that is not a JSON object comes back as ``{"__raw__": text}``.

    Empty text (a tool without parameters) is ``{}``; an already-decoded object is taken as is.
    """
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    if not isinstance(raw, str):
        return {"__raw__": json.dumps(raw, ensure_ascii=False)}
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"__raw__": raw}
    return value if isinstance(value, dict) else {"__raw__": raw}


def raw_arguments_text(arguments: Mapping[str, Any]) -> str | None:
    """The original text of unparseable arguments (``{"__raw__": text}``), else None."""
    if len(arguments) == 1 and isinstance(arguments.get("__raw__"), str):
        return arguments["__raw__"]
    return None
