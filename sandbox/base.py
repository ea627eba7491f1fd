"""The sandbox interface every backend implements (docker, bwrap).

A ``SandboxProvider`` hands out a ``Sandbox`` bound to one workspace directory on the host. Inside the sandbox one
long-lived tool server (``sandbox/toolserver.py``) answers requests over its stdio: a tool call costs a round trip,
not a process start. Nothing the model asks for touches the host directly.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

WORKSPACE_PATH = "/workspace"
"""Where the workspace appears inside every sandbox."""
OBJECTS_IN_SANDBOX = "/run/bosun/objects"
"""Where a sandbox sees the task repository's object store, read-only (sandbox/hostrepo.py): a workspace's scratch
``.git`` borrows its objects from there."""


class Limits(BaseModel):
    """Resource limits of one sandbox (a "limits profile")."""

    memory_mb: int = 2048
    """Memory limit; swap is not allowed beyond it (docker: memswap = memory)."""
    pids: int = 512
    """Maximum number of processes/threads inside the sandbox."""
    cpus: float = 1.0
    """CPU quota in cores."""
    tmp_mb: int = 256
    """Size of the tmpfs mounted at /tmp."""
    nofile: int = 4096
    """Open file descriptors per process."""


class ExecResult(BaseModel):
    """The outcome of one command run in a sandbox."""

    exit_code: int | None
    """The command's exit code; None when it was killed by the timeout."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False
    """Output went past the cap and was cut (a marker line says so in the text)."""
    duration_s: float = 0.0


class Sandbox(abc.ABC):
    """One isolated environment bound to one workspace. Release destroys it (never reused)."""

    id: str
    backend: str
    workspace: Path
    """The workspace directory on the host (bind-mounted at WORKSPACE_PATH inside)."""

    @abc.abstractmethod
    async def request(self, op: str, args: dict[str, Any] | None = None, *, timeout_s: float | None = None
                      ) -> dict[str, Any]:
        """One tool-server round trip. Ops: ping, read, write, list, glob, grep, exec (see toolserver.py).

        Raises ToolFailed for an error the op reported (path outside the workspace, file not found...),
        UnexpectedEnvironment when the sandbox or its tool server is gone.
        """

    async def exec(self, cmd: list[str] | str, *, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_s: float = 60.0, output_cap: int = 1_000_000) -> ExecResult:
        """Run a command (argv list, or a shell string run by /bin/sh -c) inside the sandbox."""
        args: dict[str, Any] = {"cmd": cmd, "cwd": cwd, "env": env or {}, "timeout_s": timeout_s,
                                "output_cap": output_cap}
        return ExecResult.model_validate(await self.request("exec", args, timeout_s=timeout_s + 30))

    @abc.abstractmethod
    async def close(self) -> None:
        """Destroy the sandbox and every process in it. Idempotent."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """False once the sandbox or its tool server has exited."""


class SandboxProvider(abc.ABC):
    """Hands out sandboxes of one backend and limits profile."""

    backend: str

    @abc.abstractmethod
    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> Sandbox:
        """Start (or take from the warm pool) a sandbox bound to ``workspace``; ``objects``: a repository object
        store to bind read-only at OBJECTS_IN_SANDBOX.

        Fails closed: raises UnexpectedEnvironment if it cannot start; never falls back to running unsandboxed.
        """

    def limits_report(self) -> dict[str, Any]:
        """Which limits are actually in force on this host (e.g. bwrap without cgroups cannot cap memory)."""
        return {}


class ExecRequestModel(BaseModel):
    """Arguments of the ``exec`` op (validated by callers before they reach the tool server)."""

    cmd: list[str] | str
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 60.0
    output_cap: int = 1_000_000
