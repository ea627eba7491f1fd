"""Temporal wiring: the client bosun uses everywhere (pydantic payloads; OpenTelemetry tracing when telemetry is
on, so a task's spans from the CLI or the webhook through every workflow and activity form one trace)."""

from __future__ import annotations

import asyncio

from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime

from infra.errors import ConfigError
from infra.settings import Settings


async def connect(settings: Settings, *, timeout_s: float = 10.0, tracing: bool = False,
                  runtime: Runtime | None = None) -> Client:
    """Connect to Temporal; a clear ConfigError when nothing answers at the configured address. ``tracing``: add
    temporalio's TracingInterceptor (client and the workers made from this client); ``runtime``: the SDK runtime
    (its telemetry: Temporal's own metrics)."""
    try:
        return await asyncio.wait_for(
            Client.connect(settings.temporal_target, namespace=settings.temporal_namespace,
                           data_converter=pydantic_data_converter,
                           interceptors=[TracingInterceptor()] if tracing else [], runtime=runtime), timeout_s)
    except (TimeoutError, RuntimeError, OSError) as e:
        raise ConfigError(f"cannot reach Temporal at {settings.temporal_target} ({str(e).splitlines()[0][:200]}); "
                          "start the embedded stack with `bosun up`, or set BOSUN_TEMPORAL_ADDRESS") from None
