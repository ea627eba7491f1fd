"""Placement by free capacity and host watches, for the workflows that put work on hosts (a task's agents, an
evaluation's instances). Deterministic: everything here is workflow code over activities/hosts.py.

- ``claim``: a slot, taken by the first host with a free one (``hold_slot`` on ``<task_queue>-slots``, which tells
  the workflow which host by the ``slot_granted`` signal, handed to ``granted``); held until the lease is dropped.
- ``on``: await a step on a host unless the host is lost first (its watch, ``watch_host``, returns): HostGone.
- ``TaskPlacement``: a task's home host, the checkpoints that let another host restore its repository, the moves
  off lost hosts (``act``: a coordinator's step on the home host, moved when it is lost).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.hosts import HostActivities
    from activities.models import (
        BindResult,
        Checkpoint,
        EnvironmentState,
        HostLost,
        PrepareResult,
        RestoreInput,
        SlotGrant,
        SlotInput,
        WatchInput,
    )
    from activities.workspace import WorkspaceActivities
    from workflows import policies
    from workflows.models import HostMove, branch_name

BUILD_MINUTES_DEFAULT = 150
"""The build activity's time limit when the prepare step did not say (a worker from before it did)."""


def build_minutes(env: EnvironmentState) -> float:
    """The build activity's time limit: what the worker's settings gave in the prepare result (pure: workflows
    do no I/O)."""
    return env.build_timeout_s / 60 if env.build_timeout_s > 0 else BUILD_MINUTES_DEFAULT


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


class TaskPlacement(Placement):
    """A task's placement: its home host (where the coordinator's steps run), and, when the hosts share their
    state, the checkpoints that let any host restore the task's repository, and the moves off lost hosts."""

    def __init__(self, enter: Callable[[str], None]) -> None:
        super().__init__()
        self.enter = enter
        """Says the task's phase (a move is one)."""
        self.home: BindResult | None = None
        """The host of the coordinator's steps (it changes when the host is lost)."""
        self.repo = self.ref = ""
        self.checkpoints: list[Checkpoint] = []
        self.synced: dict[str, int] = {}
        """Host (worker id) -> how many of the checkpoints its copy of the repository holds."""
        self.branch_at: dict[str, str] = {}
        """Host (worker id) -> the head its copy of the task branch was last set to (a restore or a step there)."""
        self.hosts: dict[str, str] = {}
        """Every host (worker id -> queue) that held a copy of the task's repository."""
        self.moves: list[HostMove] = []
        self.head: str | None = None
        """The task branch's head (what a host the task moves to sets its branch to)."""
        self.prepared: PrepareResult | None = None
        self.environment_state: EnvironmentState | None = None

    def view(self) -> dict:
        """The ``placement`` query: the home host, the hosts that held the repository, the lost ones, the moves."""
        return {"home": self.home.worker_id if self.home else None, "hosts": sorted(self.hosts),
                "lost": sorted(self.lost), "moves": [m.model_dump() for m in self.moves],
                "checkpoints": len(self.checkpoints)}

    async def bind(self, why: str = "") -> BindResult:
        return await workflow.execute_activity_method(
            WorkspaceActivities.bind_host, summary="bind worker host" + (f" ({why})" if why else ""),
            **policies.BIND)

    async def act(self, fn, arg, *, summary: str, config: workflow.ActivityConfig = policies.WORKSPACE_STEP):
        """One step of the coordinator on the task's home host. When the hosts share their state, the step races
        the home host's watch: if the host is lost, the task moves (binds a live host, restores its repository
        there from the checkpoints) and the step runs again there."""
        if not self.shared:
            return await workflow.execute_activity_method(fn, arg, summary=summary, task_queue=self.home.queue,
                                                          **config)
        while True:
            home = self.home
            try:
                await self.sync(home, branch=True)
                return await self.on(home.worker_id, workflow.execute_activity_method(
                    fn, arg, summary=summary, task_queue=home.queue, **config))
            except HostGone as gone:
                await self._move_home(gone.lost)

    def checkpointed(self, checkpoint: Checkpoint | None, worker_id: str) -> None:
        """Keep a step's checkpoint; the host that made it holds it (and all before, if it held those)."""
        if checkpoint is None:
            return
        held = self.synced.get(worker_id, 0) == len(self.checkpoints)
        self.checkpoints.append(checkpoint)
        if held:
            self.synced[worker_id] = len(self.checkpoints)

    async def sync(self, host: BindResult, branch: bool = False) -> None:
        """Make ``host``'s copy of the task's repository current (restore_task) when it lacks checkpoints, or
        (``branch``: the host runs the coordinator's steps) when its task branch is not at the task's head."""
        self.hosts.setdefault(host.worker_id, host.queue)
        if not self.shared or self.prepared is None:
            return
        behind = self.synced.get(host.worker_id, 0) < len(self.checkpoints)
        stale = branch and self.head is not None and self.branch_at.get(host.worker_id) != self.head
        if not behind and not stale:
            return
        n, env = len(self.checkpoints), self.environment_state
        restored = await self.on(host.worker_id, workflow.execute_activity_method(
            WorkspaceActivities.restore_task,
            RestoreInput(workflow_id=workflow.info().workflow_id, source=self.repo, ref=self.ref,
                         base_commit=self.prepared.base_commit, checkpoints=self.checkpoints[:n],
                         branch=branch_name(workflow.info().workflow_id), head=self.head, environment=env),
            summary=f"restore the task on {host.worker_id} ({n} checkpoints)", task_queue=host.queue,
            **policies.longer(policies.LONG_STEP, build_minutes(env) if env else 30)))
        self.synced[host.worker_id] = max(self.synced.get(host.worker_id, 0), n)
        if self.head is not None:
            self.branch_at[host.worker_id] = self.head
        if restored.environment is not None and restored.environment.status != "ready" and \
                env is not None and env.status == "ready":
            workflow.logger.warning("host %s: the task's environment is %s there (%s)", host.worker_id,
                                    restored.environment.status, restored.environment.reason)

    async def _move_home(self, lost: HostLost) -> None:
        """The home host is lost: bind a live host; the next step restores the repository there."""
        before = self.home.worker_id if self.home else ""
        self.enter(f"moving: host {before} lost ({lost.why})")
        self.home = await self.bind(f"after {before} was lost")
        self.moves.append(HostMove(what="task", from_worker=before, to_worker=self.home.worker_id,
                                   at=workflow.now().isoformat(), why=lost.why))
