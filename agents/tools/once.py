"""Tool calls with one effect each, however often their activity runs.

Temporal runs an activity at least once. A worker that dies after a tool call changed a file, but before the
server recorded the result, runs the call again; a local activity (read-only and file-editing calls run as
such) runs again when the workflow task that ran it did not complete. Running ``str_replace`` a second time on
the already edited file would apply it twice or fail. So every tool call goes through a :class:`CallLedger`:

1. a call that already completed returns its recorded result (``<call>.json``) and runs nothing;
2. a call whose earlier attempt began writing files (``<call>.intent.json`` names each file it touched and its
   content before) first puts those files back, then runs from scratch, so it sees what the first attempt saw;
3. before a call's first write or delete of a path, the path's previous content (in the artifact store) or its
   absence is recorded; when the call is done, its result is recorded.

What a command changes (``run_command``) cannot be put back: a command that is cut off and re-run runs again.
The records of an agent, and its state kept here (its checklist, so a worker restart does not lose it), are
dropped when its sandbox is released.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents.tools.files import read_text_or_none
from infra.artifacts import ArtifactStore, write_json_atomically
from infra.errors import ToolFailed
from infra.names import shown
from sandbox.base import Sandbox

ABSENT = None
"""Intent value: the path did not exist before the call."""
UNKNOWN = "?"
"""Intent value: the previous content could not be kept (not UTF-8 text, a directory): not put back."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class _RecordingSandbox(Sandbox):
    """The agent's sandbox as the tool sees it: every ``write``/``delete`` (typed methods go through ``request``)
    first records the path's previous content in the call's intent. A path the call has read already is recorded
    from that read (an edit reads, then writes: two round trips, not three); the call's own tool holds the file
    meanwhile (writes to a path are serialized: agents/tools/scheduling.py)."""

    def __init__(self, sandbox: Sandbox, intent: dict[str, Any], save: Callable[[], None], store: ArtifactStore):
        self._sandbox = sandbox
        self._intent = intent
        self._save = save
        self._store = store
        self._read: dict[str, str] = {}
        """path -> its whole text as this call read it, before any write of the call."""
        self.id, self.backend, self.workspace = sandbox.id, sandbox.backend, sandbox.workspace

    async def request(self, op: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        path = args.get("path") if isinstance(args, dict) else None
        path = shown(path) if isinstance(path, str) else None  # requests hold the process form (infra.names)
        if op in ("write", "delete") and path is not None and path not in self._intent["files"]:
            self._intent["files"][path] = await self._previous(path)
            self._save()
        result = await self._sandbox.request(op, args, **kw)
        if op == "read" and path is not None and isinstance(result.get("text"), str):
            self._read.setdefault(path, result["text"])
        return result

    async def close(self) -> None:
        await self._sandbox.close()

    @property
    def alive(self) -> bool:
        return self._sandbox.alive

    async def _previous(self, path: str) -> str | None:
        if path in self._read:
            return self._store.put_text(self._read[path])
        try:
            text = await read_text_or_none(self._sandbox, path)
        except ToolFailed:
            return UNKNOWN
        return ABSENT if text is None else self._store.put_text(text)


class CallLedger:
    """Results and write intents of tool calls, one directory per agent under ``root``."""

    def __init__(self, root: Path, store: ArtifactStore) -> None:
        self.root = root
        self.store = store

    def _dir(self, agent_id: str) -> Path:
        return self.root / _digest(agent_id)

    async def run(self, agent_id: str, call_key: str, get_sandbox: Callable[[], Awaitable[Any]],
                  execute: Callable[[Any], Awaitable[dict[str, Any]]]) -> tuple[dict[str, Any], bool]:
        """Run ``execute(sandbox)`` once for ``call_key`` (unique within the agent, e.g. run id + call id).

        ``get_sandbox()`` is awaited only when the call has to run (a replay needs no sandbox). Returns the JSON
        result and whether it was replayed from the record (the call had already completed).
        """
        d = self._dir(agent_id)
        d.mkdir(parents=True, exist_ok=True)
        key = _digest(call_key)
        done, intent_path = d / f"{key}.json", d / f"{key}.intent.json"
        if done.exists():
            return json.loads(done.read_text(encoding="utf-8")), True
        sandbox = await get_sandbox()
        if intent_path.exists():
            await self._put_back(sandbox, json.loads(intent_path.read_text(encoding="utf-8")))
        intent: dict[str, Any] = {"call": call_key, "files": {}}
        result = await execute(_RecordingSandbox(sandbox, intent, lambda: write_json_atomically(intent_path, intent),
                                                 self.store))
        write_json_atomically(done, result)
        intent_path.unlink(missing_ok=True)
        return result, False

    async def _put_back(self, sandbox: Any, intent: dict[str, Any]) -> None:
        for path, before in intent.get("files", {}).items():
            if before == UNKNOWN:
                continue
            if before is ABSENT:
                try:
                    await sandbox.delete(path)
                except ToolFailed:
                    pass  # never written, or already gone
            else:
                await sandbox.write(path, self.store.get_text(before), create_dirs=True)

    def load_state(self, agent_id: str, name: str, default: Any) -> Any:
        """An agent's own state kept next to its records (e.g. its checklist), or ``default``."""
        try:
            return json.loads((self._dir(agent_id) / f"{name}.state").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return default

    def save_state(self, agent_id: str, name: str, value: Any) -> None:
        d = self._dir(agent_id)
        d.mkdir(parents=True, exist_ok=True)
        write_json_atomically(d / f"{name}.state", value)

    def forget(self, agent_id: str) -> None:
        """Drop an agent's records (its run is over)."""
        shutil.rmtree(self._dir(agent_id), ignore_errors=True)

    def prune(self, max_age_s: float) -> int:
        """Drop the records of agents that wrote nothing for ``max_age_s`` (runs that never released their
        sandbox: terminated, or lost with their data). Returns how many agents' records were dropped."""
        dropped = 0
        for d in self.root.glob("*") if self.root.is_dir() else []:
            newest = max((p.stat().st_mtime for p in [d, *d.iterdir()]), default=0.0)
            if time.time() - newest > max_age_s:
                shutil.rmtree(d, ignore_errors=True)
                dropped += 1
        return dropped
