"""W3C trace context from the webhook, through NATS headers, into Temporal.

The ingress continues an incoming ``traceparent`` (or starts a trace) and puts it in the NATS message headers; the
starter continues it and hands it to the workflow twice: in the memo (``traceparent``, readable in the Web UI and by
``describe``) and in the ``_tracer-data`` Temporal header, which is where
``temporalio.contrib.opentelemetry.TracingInterceptor`` on the worker looks for its parent context.

With an OpenTelemetry SDK tracer provider installed the spans are recorded; without one the ids are still made
and carried, so the chain can be followed in logs.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()
_TRACER = trace.get_tracer("bosun.events")
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")

TEMPORAL_HEADER = "_tracer-data"
"""The Temporal header key temporalio.contrib.opentelemetry.TracingInterceptor reads."""


def _child_of(parent: str | None) -> str:
    """A traceparent for a new span: same trace as ``parent`` when it is valid, else a new trace."""
    m = _TRACEPARENT.match(parent or "")
    trace_id = m.group(1) if m and m.group(1) != "0" * 32 else secrets.token_hex(16)
    flags = m.group(3) if m else "01"
    return f"00-{trace_id}-{secrets.token_hex(8)}-{flags}"


@contextmanager
def span(name: str, parent: Mapping[str, str] | None = None, **attributes: str) -> Iterator[dict[str, str]]:
    """Run a span named ``name`` as a child of the ``traceparent``/``tracestate`` in ``parent``.

    Yields the carrier (``traceparent`` and possibly ``tracestate``) to pass downstream.
    """
    ctx = _PROPAGATOR.extract(dict(parent or {}))
    with _TRACER.start_as_current_span(name, context=ctx, attributes=attributes) as current:
        carrier: dict[str, str] = {}
        if current.is_recording():
            _PROPAGATOR.inject(carrier)
        else:  # no tracer provider installed: keep the chain with ids of our own
            carrier["traceparent"] = _child_of((parent or {}).get("traceparent"))
            if parent and parent.get("tracestate"):
                carrier["tracestate"] = parent["tracestate"]
        yield carrier


def trace_id(traceparent: str | None) -> str | None:
    m = _TRACEPARENT.match(traceparent or "")
    return m.group(1) if m else None
