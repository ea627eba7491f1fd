"""What the two providers on the vendors' SDKs share: their HTTP client, the one map from the SDKs' errors to
``ProviderError``, retry-after, redaction, and tool-argument text.

Both SDKs (``openai``, ``anthropic``) run on httpx2 and are built with ``max_retries=0``: Temporal owns retries,
reading ``ProviderError.retryable`` and ``retry_after``. Their exceptions come from one generator (Stainless) and
share one tree, so :class:`Failures` maps both:

* HTTP 408, 409, 429 and every 5xx (Anthropic's 529 "overloaded" included) are retryable;
  ``retry_after`` comes from ``retry-after-ms`` (milliseconds) or ``retry-after`` (seconds or an
  HTTP date).
* Every other 4xx (400, 401, 403, 404, 413, 422, ...) is not retryable; the message carries the
  provider's own error message from the JSON body.
* Connection failures, timeouts and a connection lost mid-stream are retryable.
* A malformed stream (bad JSON in a data line, no terminal event) is retryable.
* An error event inside a 200 stream is retryable unless its type says the request itself is bad.

API keys never leave this module in clear: every message built here goes through ``redact`` with the
provider's secrets, exceptions are raised ``from None`` (so no SDK exception with the request attached is
chained), and the providers' reprs show no headers.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import httpx2

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


def http_client(timeout_s: float, transport: httpx2.AsyncBaseTransport | None = None) -> httpx2.AsyncClient:
    """The client an SDK runs on. One per provider, kept by the worker's ProviderPool: its connections stay open
    between calls (keep-alive), and concurrent calls to an https endpoint share one HTTP/2 connection where the
    server offers it (ALPN; HTTP/1.1 otherwise). ``timeout_s`` bounds connecting and every single read or write, so a
    stream may run longer in total as long as data keeps arriving. ``transport`` replaces the network (tests:
    ``httpx2.MockTransport``)."""
    return httpx2.AsyncClient(http2=True, timeout=httpx2.Timeout(timeout_s), follow_redirects=False,
                              transport=transport)


SHAPE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError)
"""What reading a server's answer raises when it is not of the documented shape (bad JSON included): a retryable
ProviderError ("malformed response"), never a crash of the activity."""


def plain(answer: Any) -> dict[str, Any]:
    """An SDK object (a completion, a message, a stream's chunk or event) as plain data. The SDKs build them without
    validating, so what a server sent comes through, also when it is not an object (a text, a list): a TypeError."""
    if not hasattr(answer, "to_dict"):
        raise TypeError(f"the answer is not a JSON object but {type(answer).__name__}: {_clip(repr(answer), 200)}")
    return answer.to_dict(warnings=False)


def checked_base_url(label: str, base_url: str) -> str:
    """``base_url`` without its trailing slash; a ConfigError unless it is http(s)."""
    if urlsplit(base_url).scheme not in {"http", "https"}:
        raise ConfigError(f"{label}: base URL {base_url!r} must start with http:// or https://")
    return base_url.rstrip("/")


class Failures:
    """One provider's map from its SDK's exceptions (and from what breaks a stream's format) to ProviderError.

    ``label`` names the provider in messages (e.g. ``anthropic:claude-sonnet-4-5``); ``url`` is the endpoint the
    messages name; ``sdk`` is the SDK module whose exception tree (``APIStatusError``, ``APITimeoutError``,
    ``APIConnectionError``, ``APIError``) it reads; every message is redacted with ``secrets``.
    """

    def __init__(self, *, label: str, url: str, timeout_s: float, sdk: ModuleType,
                 secrets: Iterable[str | None] = ()) -> None:
        self.label, self.url, self._timeout_s, self._sdk = label, url, timeout_s, sdk
        self._secrets = [s for s in secrets if s]
        self.errors: tuple[type[BaseException], ...] = (sdk.APIError, httpx2.HTTPError, *SHAPE_ERRORS)
        """What a call through the SDK, and the reading of its answer, may raise that :meth:`error` maps."""
        self.call_errors: tuple[type[BaseException], ...] = (sdk.APIError, httpx2.HTTPError, ValueError)
        """Of those, what the call itself may raise before an answer is in hand (bad JSON is a ValueError): a
        TypeError or AttributeError there is a bug of bosun's request, not the server's, and is not mapped."""

    def redact(self, text: str) -> str:
        """``redact`` with this provider's secrets."""
        return redact(text, self._secrets)

    def error(self, exc: BaseException, *, mid_stream: bool) -> ProviderError:
        """The ProviderError of whatever a call raised: a status, a timeout, a lost connection, an error event in
        a stream (a status error of a 200 answer, or a bare APIError), bad JSON in a stream."""
        sdk = self._sdk
        if isinstance(exc, sdk.APIStatusError):
            if 200 <= exc.status_code < 300:  # anthropic: an ``error`` event in a 200 stream
                body = exc.body if isinstance(exc.body, Mapping) else {"error": {"message": str(exc)}}
                return self.payload_error(body)
            return self.status_error(exc.status_code, exc.response.headers, exc.body, str(exc))
        if isinstance(exc, sdk.APIConnectionError):  # the SDK's wrapper of the transport's own error
            return self.transport_error(exc.__cause__ or exc, mid_stream=mid_stream)
        if isinstance(exc, httpx2.HTTPError):
            return self.transport_error(exc, mid_stream=mid_stream)
        if isinstance(exc, sdk.APIError):  # openai: an error object in a stream; its body is the inner error
            return self.payload_error({"error": exc.body if exc.body is not None else str(exc)})
        if isinstance(exc, json.JSONDecodeError):
            where = "malformed SSE stream: an event's data" if mid_stream else "the answer"
            return self.malformed(f"{where} is not valid JSON ({exc.msg} at position {exc.pos}): "
                                  f"{_clip(exc.doc, 200)!r}")
        return self.malformed(f"the answer does not have the documented shape ({type(exc).__name__}: "
                              f"{_clip(str(exc), 200)})")

    def status_error(self, status: int, headers: Mapping[str, str], body: Any, text: str = "") -> ProviderError:
        """The ProviderError for a non-2xx answer, with the provider's own message and retry-after."""
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except ValueError:
                pass
        kind, message = extract_error(body)  # anthropic's whole payload; vLLM; FastAPI
        if message is None:  # openai's SDK hands over the inner error object (or a string, Ollama's)
            kind, message = extract_error({"error": body})
        if message is None:
            message = text.strip() or httpx2.codes.get_reason_phrase(status) or "no error message"
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

    def transport_error(self, exc: BaseException, *, mid_stream: bool) -> ProviderError:
        """A retryable ProviderError for a connection failure, a timeout or a connection lost mid-stream."""
        detail = str(exc) or type(exc).__name__
        url = self.url
        if isinstance(exc, httpx2.ConnectTimeout):
            text = f"timed out after {self._timeout_s:g}s connecting to {url}"
        elif isinstance(exc, httpx2.TimeoutException | self._sdk.APITimeoutError):
            waiting = "the next part of the stream" if mid_stream else "the response"
            text = f"timed out after {self._timeout_s:g}s waiting for {waiting} from {url}"
        elif isinstance(exc, httpx2.ConnectError):
            text = f"could not connect to {url}: {detail}"
        elif mid_stream:
            text = f"the connection was lost mid-stream ({type(exc).__name__}: {detail})"
        elif isinstance(exc, httpx2.UnsupportedProtocol):
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

    def json_instead_of_stream(self, content: bytes) -> ProviderError:
        """A streamed answer was asked for and JSON came: an error object, or a server that cannot stream."""
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
