"""Temporal wiring: the client bosun uses everywhere (pydantic payloads)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from infra.errors import ConfigError
from infra.settings import Settings


async def connect(settings: Settings, *, timeout_s: float = 10.0) -> Client:
    """Connect to Temporal; a clear ConfigError when nothing answers at the configured address."""
    import asyncio

    try:
        return await asyncio.wait_for(
            Client.connect(settings.temporal_target, namespace=settings.temporal_namespace,
                           data_converter=pydantic_data_converter), timeout_s)
    except (TimeoutError, RuntimeError, OSError) as e:
        raise ConfigError(f"cannot reach Temporal at {settings.temporal_target} ({str(e).splitlines()[0][:200]}); "
                          "start the embedded stack with `bosun up`, or set BOSUN_TEMPORAL_ADDRESS") from None
