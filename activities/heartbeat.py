"""Heartbeats for long activity steps, so a dead worker is noticed within the heartbeat timeout."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from temporalio import activity


class Progress:
    """The latest progress line of work done in a thread (a build's steps), for the heartbeats to carry: a
    thread must not heartbeat itself (the heartbeat needs the activity's event loop)."""

    def __init__(self, line: str = "starting") -> None:
        self.line = line

    def __call__(self, line: str) -> None:
        self.line = line

    def details(self) -> str:
        return self.line[:300]


@contextlib.asynccontextmanager
async def heartbeating(every_s: float = 2.0, details: Callable[[], str] | None = None):
    """Heartbeat every ``every_s`` while the block runs, with ``details()`` when given (nothing for local
    activities, which have no heartbeat, nor outside an activity)."""

    async def beat() -> None:
        if not activity.in_activity() or activity.info().is_local:
            return
        while True:  # the first beat after every_s: a quick step sends none
            await asyncio.sleep(every_s)
            if details is None:
                activity.heartbeat()
            else:
                activity.heartbeat(details())

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
