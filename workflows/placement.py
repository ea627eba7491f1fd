"""Placement by free capacity and host watches, for the workflows that put work on hosts (a task's agents, an
evaluation's instances). Deterministic: everything here is workflow code over activities/hosts.py.

- ``claim``: a slot, taken by the first host with a free one (``hold_slot`` on ``<task_queue>-slots``, which tells
  the workflow which host by the ``slot_granted`` signal, handed to ``granted``); held until the lease is dropped.
- ``on``: await a step on a host unless the host is lost first (its watch, ``watch_host``, returns): HostGone.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.hosts import HostActivities
    from activities.models import HostLost, SlotGrant, SlotInput, WatchInput
    from workflows import policies




def drop(task: asyncio.Task) -> None:
    """Cancel a long-running activity the workflow no longer needs (a held slot, a host watch) without waiting for
    it; how it ends is of no interest."""
    task.cancel()
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


class HostGone(Exception):
    """A host the workflow uses is lost (its heartbeat absent for BOSUN_HOST_LOSS_S)."""

    def __init__(self, lost: HostLost, step: asyncio.Future) -> None:
        super().__init__(lost.why)
        self.lost = lost
        self.step = step


class Placement:
    """A workflow's slot claims and host watches."""

    def __init__(self) -> None:
        self.shared = False
        """The hosts share their state (BOSUN_ARTIFACT_STORE=nats): hosts are watched, work moves off lost ones."""
        self.watches: dict[str, asyncio.Task] = {}
        self.lost: set[str] = set()
        self.grants: dict[str, SlotGrant] = {}
        self.claims = 0

    def granted(self, grant: SlotGrant) -> None:
        """The ``slot_granted`` signal: a host took one of the claims."""
        self.grants[grant.claim] = grant

    async def claim(self, name: str) -> tuple[SlotGrant, asyncio.Task]:
        """A slot for ``name``: the first host with a free slot takes the claim and holds it until the returned
        lease is dropped (``drop``)."""
        while True:
            self.claims += 1
            claim = f"{name}#{self.claims}"
            lease = asyncio.ensure_future(workflow.execute_activity_method(
                HostActivities.hold_slot, SlotInput(workflow_id=workflow.info().workflow_id, claim=claim),
                task_queue=f"{workflow.info().task_queue}-slots", summary=f"slot for {name}", **policies.HOLD_SLOT))
            try:
                await workflow.wait_condition(lambda c=claim, t=lease: c in self.grants or t.done())
            except asyncio.CancelledError:  # the run is cancelled while it waits for a slot: give the claim up
                if policies.stopping():
                    drop(lease)
                raise
            if claim in self.grants:
                return self.grants.pop(claim), lease
            # (the holding host went away before it said so: claim again)

    def watch(self, worker_id: str) -> asyncio.Task | None:
        """The watch of a host (one per host, started at its first use): done when the host is lost. None when
        the hosts do not share their state (nothing could move)."""
        if not self.shared:
            return None
        watch = self.watches.get(worker_id)
        if watch is None or (watch.done() and watch.exception() is not None):
            watch = asyncio.ensure_future(workflow.execute_activity_method(
                HostActivities.watch_host, WatchInput(worker_id=worker_id), task_queue=workflow.info().task_queue,
                summary=f"watch host {worker_id}", **policies.WATCH_HOST))
            self.watches[worker_id] = watch
        return watch

    async def on(self, worker_id: str, step, *, cancel: bool = True):
        """Await ``step`` (an activity or a child workflow on the host ``worker_id``) unless the host is lost first:
        then HostGone (the step is cancelled, unless ``cancel`` is false: the caller ends it)."""
        watch = self.watch(worker_id)
        if watch is None:
            return await step
        task = asyncio.ensure_future(step)
        while True:
            try:
                await workflow.wait([task, watch], return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                if policies.stopping():
                    await self._stop(task, worker_id, watch)
                raise
            if task.done():
                return task.result()
            if watch.exception() is None:
                break
            watch = self.watch(worker_id)  # (the watch itself failed: watch again)
        self.lost.add(worker_id)
        if cancel:
            task.cancel()
        raise HostGone(watch.result(), task)

    async def _stop(self, task: asyncio.Future, worker_id: str, watch: asyncio.Task) -> None:
        """The run is cancelled: so is the step, and it stops before the run does, unless its host is lost
        meanwhile (a step there never hears of the cancel: the run's end ends it)."""
        task.cancel()
        while not task.done():
            await workflow.wait([task, watch], return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                break
            if watch.exception() is None:
                self.lost.add(worker_id)
                break
            watch = self.watch(worker_id)  # (the watch itself failed: watch again)
        if task.done() and not task.cancelled():
            task.exception()  # (retrieved: how it ended is of no interest now)

    def stop_watching(self) -> None:
        for watch in self.watches.values():
            drop(watch)
