"""Hosts, slots and host loss: the activities a task uses to place its agents by free capacity and to notice a
lost host (workflows/task.py). Everything goes through Temporal and JetStream; nothing here schedules.

- ``hold_slot`` runs on the slots queue (``<task_queue>-slots``), which each host polls with as many activity slots as
  it has agent slots (BOSUN_WORKER_SLOTS): only a host with a free slot takes it. It tells the task which host it
  is (signal ``slot_granted``) and then holds the slot, heartbeating, until the task cancels it when the agent is
  done. A host whose slots are all held does not poll, so the next agent goes to a host with room.
- ``watch_host`` runs on the shared queue (any live host) and returns when the watched host's heartbeat in the
  ``bosun-hosts`` bucket (infra/hosts.py) is older than BOSUN_HOST_LOSS_S: the host is lost.
- ``terminate_agent`` ends an agent that was running on a lost host (its workflow could never run there again).
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from activities.models import HostLost, SlotGrant, SlotInput, TerminateInput, WatchInput
from infra.hosts import HostRegistry
from infra.settings import Settings

HOLD_BEAT_S = 1.0
"""How often a held slot heartbeats (and so how soon it sees the task's cancellation)."""
WATCH_EVERY_S = 2.0


class HostActivities:
    """Given: the settings and, on a host that shares its state, the host registry."""

    def __init__(self, settings: Settings, registry: HostRegistry | None) -> None:
        self.settings = settings
        self.registry = registry
        self.in_use = 0
        """Slots held now (the host's heartbeat and `bosun status` show it)."""

    def slot_activities(self) -> list:
        return [self.hold_slot]

    def shared_activities(self) -> list:
        return [self.watch_host, self.terminate_agent]

    @activity.defn
    async def hold_slot(self, inp: SlotInput) -> None:
        """Take one of this host's slots for a task's agent: tell the task which host, then hold it until the task
        cancels this activity (the agent is done) or the task is gone."""
        grant = SlotGrant(claim=inp.claim, queue=self.settings.worker_queue, worker_id=self.settings.worker_id)
        handle = activity.client().get_workflow_handle(inp.workflow_id)
        self.in_use += 1
        try:
            try:
                await handle.signal("slot_granted", grant)
            except RPCError:  # the task is over: nothing to hold the slot for
                return
            while True:
                activity.heartbeat()
                await asyncio.sleep(HOLD_BEAT_S)
        except asyncio.CancelledError:
            return  # the task is done with the slot
        finally:
            self.in_use -= 1

    @activity.defn
    async def watch_host(self, inp: WatchInput) -> HostLost:
        """Return once the host ``inp.worker_id`` is lost: its heartbeat older than BOSUN_HOST_LOSS_S, or gone.
        This host's own trouble reading the registry never counts as a loss (it keeps watching)."""
        while True:
            activity.heartbeat()
            if self.registry is not None:
                try:
                    beat = await self.registry.aget(inp.worker_id)
                except Exception:  # noqa: BLE001 - NATS unreachable from here: no verdict
                    beat = ...
                if beat is None:
                    return HostLost(worker_id=inp.worker_id, why="it has no heartbeat in the host registry")
                if beat is not ... and beat.age() > self.settings.host_loss_s:
                    return HostLost(worker_id=inp.worker_id, last_seen=beat.ts,
                                    why=f"no heartbeat for {beat.age():.0f} s (BOSUN_HOST_LOSS_S="
                                        f"{self.settings.host_loss_s:g})")
            await asyncio.sleep(WATCH_EVERY_S)

    @activity.defn
    async def terminate_agent(self, inp: TerminateInput) -> bool:
        """End an agent's workflow (it ran on a lost host); False when it was over already."""
        handle = activity.client().get_workflow_handle(inp.workflow_id)
        try:
            desc = await handle.describe()
            if desc.status != WorkflowExecutionStatus.RUNNING:
                return False
            await handle.terminate(reason=inp.reason[:500])
        except RPCError:
            return False
        return True
