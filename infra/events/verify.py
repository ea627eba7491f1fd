"""Checks on an incoming webhook before anything is published: signature, headers, timestamp, body.

Every failure is a :class:`Rejected` with the HTTP status and a message that names the header or field and says
what was expected, so whoever configures the webhook can fix it from the delivery log alone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import time
from typing import Any

HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""An event name usable as one NATS subject token."""
DELIVERY = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class Rejected(Exception):
    """A webhook delivery that is refused with ``status`` and ``message`` (nothing is published)."""

    def __init__(self, status: int, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


def _digest(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def sign_github(secret: str, body: bytes) -> str:
    """The X-Hub-Signature-256 value GitHub sends for ``body`` (for tests and tools)."""
    return "sha256=" + _digest(secret, body)


def sign_linear(secret: str, body: bytes) -> str:
    """The Linear-Signature value Linear sends for ``body``."""
    return _digest(secret, body)


def verify_github_signature(secret: str, body: bytes, header: str | None, *, sha1_header: str | None = None) -> None:
    name = "X-Hub-Signature-256"
    if header is None:
        hint = (" (only the legacy SHA-1 header X-Hub-Signature was sent; bosun accepts SHA-256 only)"
                if sha1_header else "")
        raise Rejected(401, f"missing header {name}: expected 'sha256=<64 hex digits>', the HMAC-SHA256 of the raw "
                            f"body keyed with the webhook secret{hint}", field=name)
    algo, sep, hexdigest = header.strip().partition("=")
    if not sep or algo != "sha256":
        shown = algo if sep else header[:16]
        raise Rejected(401, f"header {name} uses {shown!r}: expected the form 'sha256=<64 hex digits>' "
                            "(HMAC-SHA256; SHA-1 signatures are not accepted)", field=name)
    if not HEX64.match(hexdigest):
        raise Rejected(401, f"header {name} is malformed: expected 'sha256=' followed by 64 hex digits, got "
                            f"{len(hexdigest)} characters", field=name)
    if not hmac.compare_digest(_digest(secret, body).encode(), hexdigest.lower().encode()):
        raise Rejected(401, f"header {name} does not match the body: the HMAC-SHA256 of the raw body with the "
                            "configured secret (BOSUN_GITHUB_WEBHOOK_SECRET) differs; check the webhook's secret",
                       field=name)


def verify_linear_signature(secret: str, body: bytes, header: str | None) -> None:
    name = "Linear-Signature"
    if header is None:
        raise Rejected(401, f"missing header {name}: expected 64 hex digits, the HMAC-SHA256 of the raw body keyed "
                            "with the webhook's signing secret", field=name)
    value = header.strip()
    if not HEX64.match(value):
        raise Rejected(401, f"header {name} is malformed: expected 64 hex digits (HMAC-SHA256, no prefix), got "
                            f"{len(value)} characters", field=name)
    if not hmac.compare_digest(_digest(secret, body).encode(), value.lower().encode()):
        raise Rejected(401, f"header {name} does not match the body: the HMAC-SHA256 of the raw body with the "
                            "configured secret (BOSUN_LINEAR_WEBHOOK_SECRET) differs; check the signing secret",
                       field=name)


def verify_gitlab_token(secret: str, header: str | None) -> None:
    """GitLab sends the webhook's secret token back as it is (no signature over the body): compared in constant
    time."""
    name = "X-Gitlab-Token"
    if header is None:
        raise Rejected(401, f"missing header {name}: expected the webhook's secret token (set 'Secret token' in the "
                            "GitLab webhook to the value of BOSUN_GITLAB_WEBHOOK_SECRET)", field=name)
    # (HTTP headers arrive decoded as latin-1: their bytes are compared with the secret's UTF-8 bytes; hashing both
    # first makes the comparison's time independent of the lengths too)
    if not hmac.compare_digest(hashlib.sha256(secret.encode()).digest(),
                               hashlib.sha256(header.encode("latin-1", "replace")).digest()):
        raise Rejected(401, f"header {name} does not match the configured secret (BOSUN_GITLAB_WEBHOOK_SECRET); "
                            "check the webhook's secret token", field=name)


GITLAB_EVENT = re.compile(r"^[A-Za-z][A-Za-z ]{0,63}$")


def require_gitlab_event(value: str | None) -> str:
    """X-Gitlab-Event ("Issue Hook", "Note Hook", ...) as one NATS subject token: ``issue_hook``, ``note_hook``."""
    name = "X-Gitlab-Event"
    if value is None or not value.strip():
        raise Rejected(400, f"missing header {name}: expected the event name, e.g. 'Issue Hook'", field=name)
    value = value.strip()
    if not GITLAB_EVENT.match(value):
        raise Rejected(400, f"header {name}={value[:80]!r} is not an event name: expected words of letters, e.g. "
                            "'Issue Hook' or 'Note Hook'", field=name)
    return "_".join(value.lower().split())


def require_token(name: str, value: str | None, example: str) -> str:
    """A required header usable as a NATS subject token (the event name)."""
    if value is None or not value.strip():
        raise Rejected(400, f"missing header {name}: expected the event name, e.g. {example!r}", field=name)
    value = value.strip()
    if not TOKEN.match(value):
        raise Rejected(400, f"header {name}={value[:80]!r} is not an event name: expected 1-64 characters from "
                            f"A-Z a-z 0-9 _ -, e.g. {example!r}", field=name)
    return value


def require_delivery(name: str, value: str | None) -> str:
    if value is None or not value.strip():
        raise Rejected(400, f"missing header {name}: expected the delivery id (a GUID) that identifies this delivery "
                            "and its redeliveries", field=name)
    value = value.strip()
    if not DELIVERY.match(value):
        raise Rejected(400, f"header {name}={value[:80]!r} is not a delivery id: expected 1-128 characters from "
                            "A-Z a-z 0-9 . _ : - (a GUID)", field=name)
    return value


def require_json_content_type(value: str | None) -> None:
    media = (value or "").split(";")[0].strip().lower()
    if media != "application/json":
        raise Rejected(415, f"header Content-Type is {value!r}: expected 'application/json' (in GitHub's webhook "
                            "settings choose content type application/json)", field="Content-Type")


MAX_NUMBER_CHARS = 100
"""Longest number literal accepted in a webhook body (GitHub and Linear ids have at most ~20 digits)."""


def _strict_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Unacceptable(f"a number of {len(text)} digits (at most {MAX_NUMBER_CHARS} are accepted)")
    return int(text)


def _strict_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Unacceptable(f"a number of {len(text)} characters (at most {MAX_NUMBER_CHARS} are accepted)")
    value = float(text)
    if not math.isfinite(value):
        raise _Unacceptable(f"the number {text[:40]} overflows a double")
    return value


def _no_constant(name: str) -> Any:
    raise _Unacceptable(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


class _Unacceptable(ValueError):
    """A value the JSON grammar of RFC 8259 does not allow, or one beyond bosun's limits."""


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, strictly (RFC 8259): no NaN/Infinity, no number that overflows a double, number
    literals of at most ``MAX_NUMBER_CHARS``, nesting as deep as the parser allows. Anything else is a 400."""
    if not body:
        raise Rejected(400, "the body is empty: expected a JSON object", field="body")
    try:
        value = json.loads(body, parse_int=_strict_int, parse_float=_strict_float, parse_constant=_no_constant)
    except UnicodeDecodeError as e:
        raise Rejected(400, f"the body is not UTF-8 ({e.reason} at byte {e.start}): expected a JSON object",
                       field="body") from None
    except json.JSONDecodeError as e:
        raise Rejected(400, f"the body is not valid JSON: {e.msg} at line {e.lineno} column {e.colno} "
                            f"(byte {e.pos})", field="body") from None
    except _Unacceptable as e:
        raise Rejected(400, f"the body is not acceptable JSON: {e}", field="body") from None
    except RecursionError:
        raise Rejected(400, "the body is nested too deeply: expected a JSON object nested at most a few hundred "
                            "levels (webhook payloads are far shallower)", field="body") from None
    except ValueError as e:  # anything else the decoder refuses on a value (never a 500)
        raise Rejected(400, f"the body is not acceptable JSON: {str(e)[:200]}", field="body") from None
    if not isinstance(value, dict):
        raise Rejected(400, f"the body is JSON {type(value).__name__}: expected a JSON object", field="body")
    return value


MAX_TIMESTAMP_MS = 10**15
"""Milliseconds since the epoch beyond this (the year 33658) are not a delivery time."""


def check_linear_timestamp(payload: dict[str, Any], tolerance_s: float, now: float | None = None) -> int:
    """``webhookTimestamp`` (ms since the epoch) must be within ``tolerance_s`` of now. Returns it."""
    field = "webhookTimestamp"
    if field not in payload:
        raise Rejected(400, f"field {field} is missing from the body: expected the delivery time in milliseconds "
                            "since the epoch", field=field)
    ts = payload[field]
    if isinstance(ts, bool) or not isinstance(ts, int | float):
        raise Rejected(400, f"field {field}={str(ts)[:40]!r} is not a number: expected milliseconds since the epoch",
                       field=field)
    if not (isinstance(ts, int) or math.isfinite(ts)) or abs(ts) > MAX_TIMESTAMP_MS:
        raise Rejected(400, f"field {field}={str(ts)[:40]} is not a time: expected milliseconds since the epoch "
                            "(13 digits today)", field=field)
    now = time.time() if now is None else now
    skew = now - ts / 1000.0
    if skew > tolerance_s:
        raise Rejected(401, f"field {field} is {skew:.1f} s in the past: deliveries older than {tolerance_s:.0f} s "
                            "are refused as replays", field=field)
    if skew < -tolerance_s:
        raise Rejected(401, f"field {field} is {-skew:.1f} s in the future: more than {tolerance_s:.0f} s ahead "
                            "of this server's clock (check the clock, or a forged delivery)", field=field)
    return int(ts)
