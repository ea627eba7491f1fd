"""Uploads to the shared artifact store settle before an activity's result is recorded (infra/objectstore.py:
``uploads_settled``): an activity's puts upload together in the background, and its result, with the refs it hands
on, is given to Temporal only once the bucket has them all."""

from __future__ import annotations

from typing import Any

from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from infra.objectstore import uploads_settled


class _Inbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        async with uploads_settled():
            return await super().execute_activity(input)


class UploadsInterceptor(Interceptor):
    """Every activity's uploads settle before its result is recorded (see the module docstring)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next)
