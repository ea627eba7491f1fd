"""The in-process sandbox: the tool server's own operations, run in this process. **No isolation at all.**

For bosun's tests of tools and agents, which need what the tool server does (its path rule, its results, its
errors) and not a real sandbox. Nothing selects it: no setting names it, and no code outside tests constructs it
(``tests/test_layers.py`` checks that), so a worker can never fall back to it. The bwrap and docker parity tests
keep the real backends.

The tool server (sandbox/toolserver/) is loaded as a module, and each sandbox gets a ``Server`` of its own bound to
its workspace. Requests take the same path as on a real backend: ``ToolClient`` writes a JSON line, the server
answers it in a thread of its own, and the response line comes back through a stream reader. The same errors and
spans result. ``exec`` runs commands as children of this process, each in a session of its own. A guest
``ProcessTracker`` kills only its own commands' processes and reaps no one else's. The commands get the sandboxes'
variables (``SANDBOX_ENV``, ``SANDBOX_PATH``), with a private home. Paths under ``/workspace`` name the workspace,
as inside a sandbox; but a command runs in the workspace's real directory.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

from sandbox.base import SANDBOX_ENV, SANDBOX_PATH, WORKSPACE_PATH, Sandbox, SandboxProvider
from sandbox.client import STREAM_LIMIT, TOOLSERVER_PATH, ClientSandbox, ToolClient

_LOAD = threading.Lock()
_ids = itertools.count(1)


def toolserver() -> ModuleType:
    """The tool server's ``__main__`` as the module ``ts_server`` (its siblings under the names it imports them by)."""
    with _LOAD:
        if "ts_server" in sys.modules:
            return sys.modules["ts_server"]
        spec = importlib.util.spec_from_file_location("ts_server", TOOLSERVER_PATH / "__main__.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(TOOLSERVER_PATH))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(TOOLSERVER_PATH))
        sys.modules["ts_server"] = module
        return module


class _Lines:
    """The server's stdout: each response line handed to a stream reader on the event loop's thread."""

    def __init__(self, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
        self.reader = reader
        self.loop = loop
        self.open = True

    def write(self, data: bytes) -> None:
        if self.open and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._feed, data)

    def flush(self) -> None:
        pass

    def _feed(self, data: bytes) -> None:
        if self.open:
            self.reader.feed_data(data)

    def close(self) -> None:
        self.open = False
        self.reader.feed_eof()


class LocalChannel:
    """A tool server in this process, as a ``Channel``: ``send`` dispatches request lines to it."""

    def __init__(self, workspace: Path, env: dict[str, str]) -> None:
        ts = toolserver()
        loop = asyncio.get_running_loop()
        self.stdout = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
        self.stderr = asyncio.StreamReader(loop=loop)
        self.stderr.feed_eof()  # the server writes nothing to stderr while it serves
        self._out = _Lines(self.stdout, loop)
        self.server = ts.Server(str(workspace), ts.ProcessTracker(guest=True, env=env), self._out)
        self.server.ws.display = WORKSPACE_PATH  # what a model is told, and absolute paths it may give
        self._stopped = False

    async def send(self, data: bytes) -> None:
        if self._stopped:
            raise ConnectionError("the in-process tool server is stopped")
        for raw in data.splitlines():
            self.server.dispatch(raw)

    def running(self) -> bool:
        return not self._stopped

    def exit_info(self) -> str:
        return "stopped" if self._stopped else "running"

    async def kill(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await asyncio.to_thread(self.server.tracker.stop)
        self._out.close()


class InProcessSandbox(ClientSandbox):
    """One in-process "sandbox": a tool server of its own in this process (no isolation)."""

    backend = "inprocess"

    def __init__(self, sandbox_id: str, workspace: Path, client: ToolClient, home: str) -> None:
        super().__init__(sandbox_id, workspace, client)
        self._home = home

    async def _destroy(self) -> None:
        await asyncio.to_thread(shutil.rmtree, self._home, True)


class InProcessProvider(SandboxProvider):
    """Hands out in-process sandboxes (tests only; see the module's docstring)."""

    backend = "inprocess"

    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> Sandbox:
        if objects is not None:
            raise ValueError("the in-process sandbox cannot bind an object store; use bwrap or docker")
        if not workspace.is_dir():
            raise ValueError(f"workspace {workspace} is not a directory")
        home = tempfile.mkdtemp(prefix="bosun-inprocess-home-")
        env = {"PATH": SANDBOX_PATH, **SANDBOX_ENV, "HOME": home}
        sandbox_id = f"inprocess-{next(_ids)}"
        client = ToolClient(LocalChannel(workspace, env), label=f"in-process sandbox {sandbox_id}")
        box = InProcessSandbox(sandbox_id, workspace, client, home)
        await box.wait_ready(f"in-process sandbox for {workspace}", 10.0)
        return box
