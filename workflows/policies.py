"""Retries by error class, in one place (the table in docs/ARCHITECTURE.md, "Retries", mirrors this module), and
what a cancelled run does (it stops: ``cancelling``, ``gather``).

Whether a failure is retried at all is decided by its class: activities raise bosun's error classes and the
worker's interceptor marks each failure non-retryable unless the class (or a provider/service error instance)
says ``retryable`` (activities/interceptor.py). These policies only say how often and how fast retryable failures are
tried again. Agents (child workflows) have no retry policy: a failed agent is a result the coordinator acts on.

Each policy below names what it is for; docs/ARCHITECTURE.md ("Retries") has the table of which classes retry,
how often, and what is final.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, NamedTuple

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, is_cancelled_exception

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



def _step(policy: RetryPolicy | None, limit: timedelta, heartbeat: timedelta | None = None,
          **more: Any) -> workflow.ActivityConfig:
    return workflow.ActivityConfig(start_to_close_timeout=limit, heartbeat_timeout=heartbeat, retry_policy=policy,
                                   **more)  # type: ignore[typeddict-item]


def longer(config: workflow.ActivityConfig, minutes: float) -> workflow.ActivityConfig:
    """``config`` with a time limit of ``minutes`` (a build or a test run: what the settings give)."""
    return workflow.ActivityConfig(**{**config, "start_to_close_timeout": timedelta(minutes=minutes)})


# The steps' activity options (time limit, heartbeat, retries), one value per kind of step; a call site adds its
# task queue and summary. The time limits are the longest a single attempt may run.
MODEL_TURN = _step(MODEL_CALL, timedelta(minutes=10), timedelta(seconds=30))
"""A model call. It heartbeats while it waits for its model: a cancel reaches it within seconds (and ends the
request), and a worker that died mid-call is noticed within 30 s, not after the call's 10 minutes."""
AGENT_STEP = _step(TOOL_CALL, timedelta(seconds=60))
"""An agent's own bookkeeping: init, checking a spawn, handing subagents' results back."""
COMMAND = _step(TOOL_CALL, timedelta(minutes=70), timedelta(seconds=10))
"""A tool call that runs a command in the sandbox (it can run for an hour and heartbeats)."""
FILE_TOOL = workflow.LocalActivityConfig(start_to_close_timeout=timedelta(minutes=5), retry_policy=TOOL_CALL)
"""A file tool (read, search, edit), run as a local activity in the worker that holds the sandbox."""
ESCALATED = _step(ONCE, timedelta(minutes=70))
"""A command a person approved to run outside the sandbox: never run twice."""
MERGE = _step(TOOL_CALL, timedelta(minutes=5))
"""Merging a subagent's work into its parent's workspace."""
RELEASE = _step(CLEANUP, timedelta(seconds=60))
"""Releasing an agent's sandbox."""
ROUTE = _step(WORKSPACE, timedelta(minutes=1))
"""Choosing an agent's model (the router); a prediction of an evaluation instance."""
BIND = _step(None, timedelta(seconds=30))
"""Binding a worker host (the server's default retries: a host comes)."""
END_AGENT = _step(CLEANUP, timedelta(seconds=30))
"""Ending the workflow of an agent whose host is lost."""
WORKSPACE_STEP = _step(WORKSPACE, timedelta(minutes=10))
"""A workspace step on a host: an agent's checkout, reading its work back, a commit."""
DELIVER = _step(WORKSPACE, timedelta(minutes=5))
"""Delivering a task's branch (to the repository it came from, or a push)."""
LONG_STEP = _step(WORKSPACE, timedelta(minutes=70), timedelta(seconds=10))
"""A workspace step that runs the repository's code (tests, builds); its time limit is usually ``longer``."""
TIDY = _step(CLEANUP, timedelta(minutes=5))
"""Cleaning up a task's sandboxes and workspaces."""
REPORT_BACK = _step(REPORT, timedelta(minutes=5))
"""Telling the forge (an issue, a PR, Linear) how the run went."""
BIND_TO_KEEP = _step(KEEP, timedelta(seconds=30))
"""Binding a worker to keep an evaluation's outcomes on: tried until one is bound (``KEEP``)."""
KEEP_OUTCOMES = _step(KEEP, timedelta(minutes=2), schedule_to_start_timeout=timedelta(minutes=10))
"""Keeping a chunk of an evaluation's outcomes; a worker that does not take it within 10 minutes is replaced."""
EVAL_STEP = _step(WORKSPACE, timedelta(minutes=150), timedelta(seconds=30))
"""An evaluation instance's repository and environment, a fetch of commits, an apply-and-test (``longer``)."""
HOLD_SLOT = _step(ONCE, timedelta(days=30), timedelta(seconds=30),
                  cancellation_type=workflow.ActivityCancellationType.TRY_CANCEL)
"""A held slot of a host: for the agent's lifetime (a month at most), given back when its lease is dropped."""
WATCH_HOST = _step(KEEP, timedelta(days=30), timedelta(seconds=10))
"""A host watch: runs on any host, the watched one included; if that host dies, another takes the watch up within
its 10 s heartbeat."""


class Failure(NamedTuple):
    """What failed, read from a failure chain (an activity's or a child workflow's, as Temporal hands it on)."""

    kind: str
    """The error class bosun raised (the ``type`` of the outermost ApplicationError: activities/interceptor.py), else
    the class of the innermost failure without its ``Error`` suffix (``Timeout``, ``Terminated``, ``Cancelled``)."""
    message: str
    """The innermost message: what the activity said, under the failures that wrap it."""


def failure(e: BaseException) -> Failure:
    """The one reading of a failure chain (see :class:`Failure`)."""
    kind = ""
    while True:
        if not kind and isinstance(e, ApplicationError) and e.type:
            kind = e.type
        if getattr(e, "cause", None) is None:
            break
        e = e.cause  # type: ignore[assignment]
    kind = kind or type(e).__name__.removesuffix("Error") or "Unknown"
    return Failure(kind, str(getattr(e, "message", None) or e))


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
