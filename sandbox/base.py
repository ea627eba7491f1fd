"""The sandbox interface every backend implements (docker, bwrap).

A ``SandboxProvider`` hands out a ``Sandbox`` bound to one workspace directory on the host. Inside the sandbox one
long-lived tool server (``sandbox/toolserver/``) answers requests over its stdio: a tool call costs a round trip,
not a process start. Nothing the model asks for touches the host directly.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from infra.errors import InvalidArguments
from infra.names import os_name, shown
from sandbox.toolserver import ts_protocol as wire

WORKSPACE_PATH = "/workspace"
"""Where the workspace appears inside every sandbox."""
SANDBOX_ENV = {"HOME": "/tmp/home", "LANG": "C.UTF-8", "TMPDIR": "/tmp", "USER": "sandbox", "HOSTNAME": "sandbox",
               "PYTHONDONTWRITEBYTECODE": "1"}
"""The variables a sandbox's commands get on both backends (besides PATH, and a provider's own): what a test reads
must not depend on the backend. USER: getpass.getuser(), which pytest's tmp_path goes by, fails for a uid without
a passwd entry; HOSTNAME: what docker sets for the container's host name."""
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


SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH in every sandbox (an environment's puts its own tools first)."""
ENV_ROOT = "/opt/bosun-env"
"""Where a sandbox of an environment sees the environment's own directory (environments/)."""
VENV = f"{ENV_ROOT}/venv"
SEED = f"{ENV_ROOT}/seed.tar"
"""Files the build left in the source tree (compiled extensions, generated version files): put into a workspace
(never over an existing file) before its sandbox serves anything."""
SEED_EXCLUDE = f"{ENV_ROOT}/seed-exclude"
"""Git exclude patterns for the seed's files that git does not ignore: every scratch ``.git`` the host makes names it
as ``core.excludesFile`` (sandbox/checkouts.py), so that git in the sandbox leaves them out as the host's import does
(``EnvRecord.seed_unignored``)."""


class TestPart(BaseModel):
    """A part of a polyglot repository whose tests run after the main ecosystem's (environments/parts.py)."""

    __test__ = False  # not a pytest test class

    root: str
    """Its folder in the workspace ("": the top)."""
    command: str
    """Its test command, one shell line run in that folder."""
    runner: str = ""
    """How its results read (environments/results.py)."""
    test_separator: bool = False
    """Test ids go after ``--`` (``npm test -- FILE``)."""


class EnvironmentInfo(BaseModel):
    """The environment a sandbox runs in (environments/): what an agent and the test runs need to know."""

    env_id: str
    python: str
    """The interpreter's full version."""
    test_kind: str = "pytest"
    """pytest: ``test_argv`` + test ids (or ``test_paths``); command: a runner of the project's own."""
    test_argv: list[str] = Field(default_factory=lambda: ["python", "-m", "pytest"])
    test_paths: list[str] = []
    test_command: str = "python -m pytest"
    """The whole command as one shell line (for people)."""
    venv: str = "/opt/bosun-env/venv"
    standins: list[str] = []
    """Public test services answered by a local stand-in while the tests run (environments/standins.py)."""
    runner: str = ""
    """The test runner the test command calls, for reading its results (environments/results.py: ``RUNNERS``;
    "": pytest's output; ``unknown``: the exit code only)."""
    test_separator: bool = False
    """Test ids given to the test command go after ``--`` (``npm test -- FILE``)."""
    parts: list[TestPart] = []
    """The parts whose tests run after the main ones (a polyglot repository's front end)."""


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


class FileText(BaseModel):
    """A text file read through the tool server (bytes kept exactly: CRLF, BOM)."""

    text: str
    size: int
    mtime_ns: int = 0


class DirEntry(BaseModel):
    name: str
    type: str
    """file, dir, symlink or other."""
    size: int = 0


class Listing(BaseModel):
    path: str
    entries: list[DirEntry]


class Deleted(BaseModel):
    deleted: str
    type: str


class GlobResult(BaseModel):
    paths: list[str]
    truncated: bool = False


class GrepMatch(BaseModel):
    path: str
    line: int | None
    text: str


class GrepResult(BaseModel):
    matches: list[GrepMatch]
    truncated: bool = False


class Sandbox(abc.ABC):
    """One isolated environment bound to one workspace. Release destroys it (never reused).

    The typed methods (``read``, ``write``, ``delete``, ``list``, ``glob``, ``grep``, ``exec``) are the API; each is
    one round trip of the tool server's JSON protocol (``request``), which stays inside the sandbox package. Paths
    are relative to the workspace; the tool server resolves them inside the sandbox and refuses any that leave it.
    Paths go in and come out in their shown form (``infra.names``: a name that is not UTF-8 quoted as git quotes
    it), so every name in a result can cross an activity and be given back as it was shown.
    Errors: ToolFailed for what the operation reports (no such file, outside the workspace), InvalidArguments for
    malformed arguments, UnexpectedEnvironment when the sandbox is gone.
    """

    id: str
    backend: str
    workspace: Path
    """The workspace directory on the host (bind-mounted at WORKSPACE_PATH inside)."""
    environment: EnvironmentInfo | None = None
    """The environment it runs in; None: the plain sandbox image (python3, pytest, git)."""

    @abc.abstractmethod
    async def request(self, op: str, args: dict[str, Any] | None = None, *, timeout_s: float | None = None
                      ) -> dict[str, Any]:
        """One tool-server round trip on the wire (``call`` is the typed form). Ops: ping, read, write, list, glob,
        grep, exec (see sandbox/toolserver/).

        Raises ToolFailed for an error the op reported (path outside the workspace, file not found...),
        UnexpectedEnvironment when the sandbox or its tool server is gone.
        """

    async def call(self, request: wire.Request, *, timeout_s: float | None = None) -> dict[str, Any]:
        """One typed round trip: a ``ts_protocol`` request, its result's fields as the tool server sent them."""
        return await self.request(request.OP, request.wire(), timeout_s=timeout_s)

    async def read(self, path: str) -> FileText:
        """A UTF-8 text file of the workspace."""
        return FileText.model_validate(await self.call(wire.Read(path=_os_path(path))))

    async def write(self, path: str, text: str, *, create_dirs: bool = False) -> int:
        """Write a text file atomically (its mode kept); returns its size in bytes."""
        return int((await self.call(wire.Write(path=_os_path(path), text=text, create_dirs=create_dirs)))["size"])

    async def delete(self, path: str, *, recursive: bool = False) -> Deleted:
        """Delete a file or symlink (never its target); a directory only if empty unless ``recursive``."""
        done = Deleted.model_validate(await self.call(wire.Delete(path=_os_path(path), recursive=recursive)))
        return done.model_copy(update={"deleted": shown(done.deleted)})

    async def list(self, path: str = ".") -> Listing:
        """One directory's entries, sorted by name."""
        listing = Listing.model_validate(await self.call(wire.List(path=_os_path(path))))
        return Listing(path=shown(listing.path), entries=[e.model_copy(update={"name": shown(e.name)})
                                                          for e in listing.entries])

    async def glob(self, pattern: str, path: str = ".", *, max_results: int = 1000) -> GlobResult:
        """Paths matching ``pattern`` below ``path`` (``**`` spans directories; .git is skipped), sorted."""
        found = GlobResult.model_validate(await self.call(wire.Glob(pattern=pattern, path=_os_path(path),
                                                                    max_results=max_results)))
        return GlobResult(paths=[shown(p) for p in found.paths], truncated=found.truncated)

    async def grep(self, pattern: str, path: str = ".", *, glob: str | None = None, ignore_case: bool = False,
                   fixed: bool = False, max_results: int = 200) -> GrepResult:
        """Lines matching ``pattern`` (a regular expression, or a literal with ``fixed``)."""
        found = GrepResult.model_validate(await self.call(wire.Grep(
            pattern=pattern, path=_os_path(path), glob=glob, ignore_case=ignore_case, fixed=fixed,
            max_results=max_results)))
        return GrepResult(matches=[m.model_copy(update={"path": shown(m.path)}) for m in found.matches],
                          truncated=found.truncated)

    async def exec(self, cmd: list[str] | str, *, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_s: float = 60.0, output_cap: int = 1_000_000, shell: str = "sh") -> ExecResult:
        """Run a command (argv list, or a shell string run by ``/bin/sh -c``, or ``/bin/bash -c`` with ``shell="bash"``)
        inside the sandbox."""
        request = wire.Exec(cmd=cmd, cwd=cwd, env=env or {}, timeout_s=timeout_s, output_cap=output_cap, shell=shell)
        return ExecResult.model_validate(await self.call(request, timeout_s=timeout_s + 30))

    @abc.abstractmethod
    async def close(self) -> None:
        """Destroy the sandbox and every process in it. Idempotent."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """False once the sandbox or its tool server has exited."""


def _os_path(path: str) -> str:
    """A path given in its shown form, as the tool server takes it; InvalidArguments for a malformed quoted one."""
    try:
        return os_name(path)
    except ValueError as e:
        raise InvalidArguments(f"path {e}") from None


class SandboxProvider(abc.ABC):
    """Hands out sandboxes of one backend and limits profile."""

    backend: str

    @property
    def writes_on_start(self) -> bool:
        """Whether ``acquire`` runs something in the new sandbox that writes the workspace (an environment's build
        files): then the workspace must be complete before the sandbox starts."""
        return False

    @abc.abstractmethod
    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> Sandbox:
        """Start (or take from the warm pool) a sandbox bound to ``workspace``; ``objects``: a repository object
        store to bind read-only at OBJECTS_IN_SANDBOX.

        Fails closed: raises UnexpectedEnvironment if it cannot start; never falls back to running unsandboxed.
        """

    def limits_report(self) -> dict[str, Any]:
        """Which limits are actually in force on this host (e.g. bwrap without cgroups cannot cap memory)."""
        return {}

