"""Heartbeats for long activity steps, so a dead worker is noticed within the heartbeat timeout."""

from __future__ import annotations

import asyncio
import contextlib

from temporalio import activity


@contextlib.asynccontextmanager
async def heartbeating(every_s: float = 2.0):
    """Heartbeat every ``every_s`` while the block runs (nothing for local activities: they have no heartbeat)."""

    async def beat() -> None:
        if activity.info().is_local:
            return
        while True:  # the first beat after every_s: a quick step sends none
            await asyncio.sleep(every_s)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
