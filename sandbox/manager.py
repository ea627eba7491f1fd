"""The live sandboxes of one worker: one per key (an agent run, a test run), started on first use and again after
it died, released by key or by key prefix (a task's agents)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sandbox import diskquota, get_provider
from sandbox.base import Sandbox, SandboxProvider
from sandbox.hostrepo import TaskRepo


class SandboxManager:
    def __init__(self, backend: str, image: str) -> None:
        self.backend = backend
        self.image = image
        self._boxes: dict[str, Sandbox] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._provider: SandboxProvider | None = None

    def provider(self) -> SandboxProvider:
        if self._provider is None:
            self._provider = get_provider(self.backend, image=self.image)
        return self._provider

    async def get(self, key: str, workspace: str) -> Sandbox:
        """The live sandbox of ``key``, bound to ``workspace``; a new one when there is none or it died."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            box = self._boxes.get(key)
            if box is not None and box.alive:
                return box
            if box is not None:
                await box.close()
            # A run workspace on a file system of its own is mounted again if a stopped worker unmounted it.
            await asyncio.to_thread(diskquota.ensure_mounted, Path(workspace))
            # Its scratch .git borrows the task repository's objects (read-only in the sandbox); which store is
            # derived from the path bosun chose, never from the workspace's content.
            box = await self.provider().acquire(Path(workspace), objects=TaskRepo.objects_for(workspace))
            self._boxes[key] = box
            return box

    async def release(self, key: str) -> bool:
        """Destroy the sandbox of ``key``; False when there was none."""
        box = self._boxes.pop(key, None)
        self._locks.pop(key, None)
        if box is not None:
            await box.close()
        return box is not None

    async def release_prefix(self, prefix: str) -> list[str]:
        """Release every sandbox whose key starts with ``prefix``; returns their keys."""
        keys = [k for k in list(self._boxes) if k.startswith(prefix)]
        for key in keys:
            await self.release(key)
        return keys

    def keys(self) -> list[str]:
        return list(self._boxes)

    async def close_all(self) -> None:
        for key in list(self._boxes):
            await self.release(key)
