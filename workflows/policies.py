"""Retries by error class, in one place (the table in docs/ARCHITECTURE.md, "Retries", mirrors this module), and
what a cancelled run does (it stops: ``cancelling``, ``gather``).

Whether a failure is retried at all is decided by its class: activities raise bosun's error classes and the
worker's interceptor marks each failure non-retryable unless the class (or a provider/service error instance)
says ``retryable`` (activities/errors.py). These policies only say how often and how fast retryable failures are
tried again. Agents (child workflows) have no retry policy: a failed agent is a result the coordinator acts on.

Each policy below names what it is for; docs/ARCHITECTURE.md ("Retries") has the table of which classes retry,
how often, and what is final.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import is_cancelled_exception

MODEL_CALL = RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0,
                         maximum_interval=timedelta(seconds=60), maximum_attempts=6)
TOOL_CALL = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                        maximum_attempts=4)
WORKSPACE = RetryPolicy(maximum_attempts=3)
REPORT = RetryPolicy(initial_interval=timedelta(seconds=5), backoff_coefficient=2.0,
                     maximum_interval=timedelta(minutes=5), maximum_attempts=8)
CLEANUP = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30),
                      maximum_attempts=5)
ONCE = RetryPolicy(maximum_attempts=1)
KEEP = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                   maximum_interval=timedelta(minutes=2), maximum_attempts=0)
"""Keeping an evaluation's outcomes (content-addressed, so any attempt is safe): tried until it succeeds; every
instance was judged, and giving up would fail the evaluation and lose all of it."""


def innermost_message(e: BaseException) -> str:
    """The innermost message of a failure chain (what the activity said, under the activity and child workflow
    failures that wrap it)."""
    while getattr(e, "cause", None) is not None:
        e = e.cause  # type: ignore[assignment]
    return str(getattr(e, "message", None) or e)


def stopping() -> bool:
    """Whether this workflow is being cancelled (a person asked: the server's cancel request): it stops for it, and
    nothing new may start. Inside a workflow only."""
    return workflow.cancellation_reason() is not None


def cancelling(e: BaseException) -> bool:
    """Whether ``e`` is this workflow's own cancellation (a person cancelled the run) reaching it through a step it
    awaited: an activity or child workflow cancelled with it. Such a failure is never a step's result: the workflow
    stops (re-raise it as asyncio.CancelledError). Inside a workflow only."""
    return is_cancelled_exception(e) and stopping()


def stop_if_cancelled() -> None:
    """Before anything new starts (an agent, a slot claim, a model call): raise asyncio.CancelledError when the run
    is being cancelled, whatever swallowed the cancel on its way (a step that ended otherwise meanwhile)."""
    if stopping():
        raise asyncio.CancelledError()


async def gather(*steps: Awaitable[Any]) -> list[Any]:
    """``asyncio.gather`` of a fan-out (agents, instances, tool calls) that, when the run is cancelled, returns only
    once every branch has stopped. asyncio's gather gives up at the first branch that fails, and a cancelled
    branch fails at once when it was queued or in an activity (its cancel resolves at once), while the branches
    in child workflows are still stopping (each cancels its agent, which releases its sandbox): the workflow would
    close with its children cut off. Inside a workflow only."""
    tasks = [asyncio.ensure_future(step) for step in steps]
    try:
        return await asyncio.gather(*tasks)
    except BaseException as e:
        if not ((isinstance(e, asyncio.CancelledError) or is_cancelled_exception(e)) and stopping()):
            raise
        for task in tasks:
            task.cancel()
        await workflow.wait_condition(lambda: all(t.done() for t in tasks))
        for task in tasks:  # (retrieved: none is left "never retrieved")
            if not task.cancelled():
                task.exception()
        raise asyncio.CancelledError() from None
