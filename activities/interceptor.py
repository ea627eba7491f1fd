"""The one activity interceptor every worker installs, the same way (``plugin``, the SDK's worker plugin).

Around each activity, from the outside in:

1. **journal**: ``<data_dir>/logs/activity-journal.jsonl`` records its start, completion or failure with the
   attempt number (anyone can check after a crash that no completed activity ran twice). It sees the failure
   Temporal records, after the mapping below.
2. **errors**: a :class:`~infra.errors.BosunError` becomes an ``ApplicationError`` whose ``type`` is the error's
   ``kind``, non-retryable unless the class (or the instance, for provider and service errors) says
   ``retryable``, with ``next_retry_delay`` from a ``retry_after`` hint. Workflows decide by ``type``
   (``workflows.policies.failure``); no activity maps errors by hand.
3. **uploads**: an activity's puts to the shared artifact store upload together in the background; its result,
   with the refs it hands on, is given to Temporal only once the bucket has them all
   (``infra.objectstore.uploads_settled``). A failed upload is an error of the activity (mapped by 2).
4. **telemetry** (when it is on): the GenAI span, metrics and alert feed of model and tool calls
   (activities/telemetry.py); it sees bosun's own error classes.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.plugin import SimplePlugin
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities.telemetry import Observer, observed
from infra.errors import BosunError
from infra.objectstore import uploads_settled

LAYERS = ("journal", "errors", "uploads", "telemetry")
"""The layers, outermost first (the module docstring)."""


class Journal:
    """Append-only JSONL record of activity executions."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()

    def write(self, **record) -> None:
        line = json.dumps({"ts": round(time.time(), 3), "pid": os.getpid(), **record}) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)


def to_failure(e: BosunError) -> ApplicationError:
    """The Temporal failure for ``e``: type = its kind, retryable as its class says, retry-after honoured."""
    delay = getattr(e, "retry_after", None)
    return ApplicationError(str(e), type=e.kind, non_retryable=not e.retryable,
                            next_retry_delay=timedelta(seconds=delay) if delay else None)


class ActivityInterceptor(Interceptor):
    """The four layers of the module docstring; ``journal`` and ``observer`` are optional (a test's worker)."""

    def __init__(self, journal: Journal | None = None, observer: Observer | None = None) -> None:
        self.journal = journal
        self.observer = observer

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, layers: ActivityInterceptor) -> None:
        super().__init__(next)
        self.layers = layers

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        journal = self.layers.journal
        if journal is None:
            return await self._mapped(input)
        info = activity.info()
        rec = {"workflow_id": info.workflow_id, "activity_id": info.activity_id, "type": info.activity_type,
               "attempt": info.attempt, **({"local": True} if info.is_local else {})}
        journal.write(event="start", **rec)
        try:
            result = await self._mapped(input)
        except BaseException as e:
            journal.write(event="fail", error=type(e).__name__, **rec)
            raise
        if getattr(result, "replayed", False):
            rec["replayed"] = True  # a tool call that had already run: its recorded result, no effect repeated
        journal.write(event="complete", **rec)
        return result

    async def _mapped(self, input: ExecuteActivityInput) -> Any:
        try:
            async with uploads_settled():
                if self.layers.observer is None:
                    return await self.next.execute_activity(input)
                return await observed(self.layers.observer, input, lambda: self.next.execute_activity(input))
        except BosunError as e:
            raise to_failure(e) from None


def plugin(journal: Journal | None = None, observer: Observer | None = None) -> SimplePlugin:
    """The worker plugin that installs :class:`ActivityInterceptor`: ``Worker(..., plugins=[plugin(...)])``."""
    return SimplePlugin("bosun.activities", interceptors=[ActivityInterceptor(journal, observer)])
