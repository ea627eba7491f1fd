"""The worker hosts of a cluster and their heartbeats, in a JetStream key-value bucket (``bosun-hosts``).

Every worker that shares its state (``BOSUN_ARTIFACT_STORE=nats``) writes its entry every ``BEAT_S``: its worker id,
task queue, slots and slots in use, its store, and the time. A host whose entry is older than ``BOSUN_HOST_LOSS_S``
(or gone) is lost: the tasks using it move (workflows/task.py), and ``bosun status`` lists every host with its
slots. Nothing else is kept here: the work itself is in Temporal, the artifacts and checkpoints in the object store.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, NoKeysError
from pydantic import BaseModel

from infra.errors import UnexpectedEnvironment
from infra.events.bus import ensure_replicas
from infra.objectstore import NatsBridge
from infra.settings import Settings

BUCKET = "bosun-hosts"
BEAT_S = 2.0
"""How often a worker writes its entry."""
KEEP_S = 24 * 3600
"""Entries of hosts that stopped beating are dropped by the bucket after a day."""


class HostBeat(BaseModel):
    """One worker host's entry."""

    worker_id: str
    queue: str
    slots: int
    in_use: int
    store: str
    ts: float
    pid: int = 0
    hostname: str = ""

    def age(self, now: float | None = None) -> float:
        return max(0.0, (now or time.time()) - self.ts)


def _key(worker_id: str) -> str:
    """A KV key for a worker id (KV keys allow letters, digits and ``-_=./``; anything else is escaped)."""
    return "".join(c if c.isalnum() or c in "-_=" else f"={ord(c):02x}" for c in worker_id)[:200] or "="


class HostRegistry:
    """Reads and writes host entries through a :class:`NatsBridge` (callable from any thread)."""

    def __init__(self, settings: Settings, bridge: NatsBridge) -> None:
        self.settings = settings
        self.bridge = bridge
        self._kv: Any = None

    async def _bucket(self) -> Any:
        if self._kv is None:
            js = await self.bridge.js()
            try:
                self._kv = await js.key_value(BUCKET)
                await ensure_replicas(js, f"KV_{BUCKET}", self.settings.nats_replicas)
            except BucketNotFoundError:
                self._kv = await js.create_key_value(KeyValueConfig(
                    bucket=BUCKET, history=1, ttl=KEEP_S, storage=StorageType.FILE,
                    replicas=self.settings.nats_replicas, description="bosun: worker hosts and their heartbeats"))
        return self._kv

    async def abeat(self, beat: HostBeat) -> None:
        kv = await self._bucket()
        await kv.put(_key(beat.worker_id), beat.model_dump_json().encode())

    async def afirst_beat(self, beat: HostBeat, timeout_s: float = 60.0) -> None:
        """The host's first heartbeat, tried again while the bucket is not ready (a bucket another host just made
        with several replicas has no leader for a few seconds); UnexpectedEnvironment when it never is."""
        deadline = time.monotonic() + timeout_s
        delay = 0.2
        while True:
            try:
                await self.abeat(beat)
                return
            except Exception as e:  # noqa: BLE001 - no stream answer yet, a leader being elected
                if time.monotonic() > deadline:
                    raise UnexpectedEnvironment(f"cannot write this host's heartbeat to NATS ({BUCKET}): "
                                                f"{str(e) or type(e).__name__}") from None
                self._kv = None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def aget(self, worker_id: str) -> HostBeat | None:
        kv = await self._bucket()
        try:
            entry = await kv.get(_key(worker_id))
        except KeyNotFoundError:
            return None
        try:
            return HostBeat.model_validate(json.loads(entry.value or b"{}"))
        except ValueError:
            return None

    async def aall(self) -> list[HostBeat]:
        kv = await self._bucket()
        try:
            keys = await kv.keys()
        except NoKeysError:
            return []
        found = []
        for key in keys:
            try:
                entry = await kv.get(key)
                found.append(HostBeat.model_validate(json.loads(entry.value or b"{}")))
            except (KeyNotFoundError, ValueError):
                continue
        return sorted(found, key=lambda b: b.worker_id)

    def all(self) -> list[HostBeat]:
        return self.bridge.run(self.aall())

    def get(self, worker_id: str) -> HostBeat | None:
        return self.bridge.run(self.aget(worker_id))
