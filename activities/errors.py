"""One place that turns bosun's error classes into Temporal failures (docs/ARCHITECTURE.md, "Errors").

An activity raises a :class:`~infra.errors.BosunError`; the worker's :class:`ErrorInterceptor` turns it into an
``ApplicationError`` whose ``type`` is the error's ``kind``, non-retryable unless the class (or the instance, for
provider and service errors) says ``retryable``, with ``next_retry_delay`` from a ``retry_after`` hint. Workflows
then decide by ``type``; no activity maps errors by hand.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from infra.errors import BosunError


def to_failure(e: BosunError) -> ApplicationError:
    """The Temporal failure for ``e``: type = its kind, retryable as its class says, retry-after honoured."""
    delay = getattr(e, "retry_after", None)
    return ApplicationError(str(e), type=e.kind, non_retryable=not e.retryable,
                            next_retry_delay=timedelta(seconds=delay) if delay else None)


class _Inbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput):
        try:
            return await super().execute_activity(input)
        except BosunError as e:
            raise to_failure(e) from None


class ErrorInterceptor(Interceptor):
    """Maps every BosunError an activity raises (see the module docstring)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next)
