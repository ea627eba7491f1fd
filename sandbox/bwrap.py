"""The bubblewrap backend: fast local isolation, host system directories read-only, the workspace writable.

Layout inside a sandbox (built on bwrap's own tmpfs root, remounted read-only at the end):

- /usr, /etc, /opt, /srv and the /bin, /lib... links: read-only binds of the host's -- or, in an environment
  (environments/), of its base's root filesystem, with the environment's own directory (virtualenv, seed)
  bound read-only at /opt/bosun-env; /sys/devices/system/cpu only.
  Files and directories there that are not world-readable (/etc/shadow, ssh host keys...) are masked: the
  sandbox may run as the worker's uid (without capabilities) and must still not see what only that uid may read.
- NOT present at all: /root, /home, $HOME, /run, /var (but /var/tmp), the host's /tmp, /mnt, /media, /boot and
  every other top-level directory of the host. Host unix sockets (the Docker socket) are therefore unreachable.
- /tmp, /var/tmp, /run, /dev/shm: private tmpfs; /tmp has the size cap of the limits profile.
- /proc: the sandbox's own (PID namespace); /proc/sys read-only (sysctls check only file ownership: uid 0 could
  otherwise set kernel.core_pattern, i.e. run code as host root), sysrq-trigger, keys... masked.
- /workspace: the workspace, read-write; its .git/hooks and .git/config re-bound read-only (a sandboxed process
  must not plant code the host's git would run); ``.git`` itself is a mount point so it cannot be swapped.
- own user, PID, network (none: a loopback, the private ranges routed to it, sandbox/netns.py), IPC, UTS and
  cgroup namespaces; no capabilities; no_new_privs; a new session (no terminal injection); a seccomp filter
  (sandbox/seccomp.py) refusing set-id chmod, new namespaces, keyrings, bpf...; dies with the worker.
- bwrap itself is started from a scrubbed environment, so nothing of the worker's environment is visible, even at
  /proc/1/environ; memory/pids/CPU limits through a cgroup per sandbox where the host allows it (the sandbox is
  put in it before anything of it runs: --info-fd/--block-fd); RLIMIT_NOFILE set by the tool server.
- it runs as the workspace's owner when the worker is root and the owner can reach the workspace (bwrap is then
  unprivileged); otherwise as the worker's uid, capabilities dropped.

The tool server (host ``python3`` running sandbox/toolserver/, compiled to a folder of bytecode, bound read-only at
/run/bosun/toolserver) is the sandbox's main process; when it dies, the sandbox dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import secrets
import select
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from infra.errors import UnexpectedEnvironment
from sandbox import cgroups, netns, seccomp
from sandbox.base import (  # noqa: F401  (SANDBOX_PATH: bwrap's PATH, imported from here by others)
    ENV_ROOT,
    OBJECTS_IN_SANDBOX,
    SANDBOX_ENV,
    SANDBOX_PATH,
    WORKSPACE_PATH,
    Limits,
    SandboxProvider,
)
from sandbox.client import STREAM_LIMIT, TOOLSERVER_PATH, ClientSandbox, ProcessChannel, ToolClient, scrubbed_env
from sandbox.gitguard import git_mounts
from sandbox.toolserver_bytecode import COMPILE, compile_into, compiled_target, compiled_toolserver

SERVER_IN_SANDBOX = "/run/bosun/toolserver"
ENV_DIR_IN_SANDBOX = ENV_ROOT
"""Where an environment's own directory (virtualenv, seed) appears."""
RO_TOP_DIRS = ("usr", "etc", "opt", "srv", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
"""Top-level host directories visible (read-only) in the sandbox; everything else at / is absent."""
SCAN_FOR_SECRETS = ("etc", "opt", "srv")
"""Directories scanned once for non-world-readable entries to mask."""
ALWAYS_MASK_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/docker", "/etc/sudoers.d")


def _join_cgroup(cg: cgroups.SandboxCgroup, bwrap_pid: int, info_r: int, block_w: int, timeout_s: float) -> None:
    """Move bwrap and its sandbox child into ``cg``, then let the child go on (``--info-fd``/``--block-fd``).
    Closes both pipe ends when it is done: it owns them (a start cancelled meanwhile leaves this thread running
    until bwrap is gone; nobody else may close them under it)."""
    try:
        cg.add(bwrap_pid)
        data = b""
        deadline = time.monotonic() + timeout_s
        while b"child-pid" not in data or b"}" not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([info_r], [], [], left)[0]:
                raise TimeoutError(110, "bwrap did not report its child's pid")
            chunk = os.read(info_r, 4096)
            if not chunk:
                raise OSError(5, "bwrap exited before reporting its child's pid")
            data += chunk
        child_pid = int(json.loads(data[:data.index(b"}") + 1])["child-pid"])
        cg.add(child_pid)
        os.write(block_w, b"g")
    finally:
        os.close(info_r)
        os.close(block_w)


async def _uncancelled(fut: asyncio.Future[Any]) -> Any:
    """``fut``'s result, waited for whatever cancels the waiter meanwhile (a cleanup that must see it done)."""
    while not fut.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(fut)
    return fut.result()


def _drop_target(user: str) -> str | None:
    """The ``uid:gid`` the tool server switches to when root starts the sandbox for another user; None when the
    worker is that user already. Another uid without root: UnexpectedEnvironment."""
    uid, _, gid = user.partition(":")
    if os.geteuid() == 0 and int(uid) != 0:  # root starts it; the tool server switches to that uid first
        return f"{int(uid)}:{int(gid or uid)}"
    if int(uid) != os.geteuid():
        raise UnexpectedEnvironment(f"a bwrap sandbox can run as uid {uid} only when the worker is root "
                                    f"(the worker runs as uid {os.geteuid()})")
    return None


def _children(pid: int) -> list[int]:
    """The children of process ``pid`` as the kernel lists them (bwrap's first is the sandbox's, in its
    namespaces); empty when it has none or is gone."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and its children (as the kernel lists them: read before, since they are reparented after)."""
    for victim in [*_children(pid), pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, signal.SIGKILL)


async def _stop_half_started(proc: asyncio.subprocess.Process, joining: asyncio.Future[None] | None,
                             cg: cgroups.SandboxCgroup | None) -> None:
    """Stop a sandbox whose start was cancelled or failed: its cgroup join let end (it owns its pipe ends); bwrap
    and its children killed, and whatever got into the cgroup; then the process reaped and its pipes closed now,
    stdin first (a sandbox child that outlived bwrap ends on that). Left to garbage collection,
    the pipes would be closed on an event loop that may be gone by then, and waiting for a child that never got
    its go would hang."""
    # The join is let end first: bwrap killed before it reports its child would leave that child outside the
    # cgroup, waiting for bwrap for good (it has no parent-death signal yet); let go, it is in the cgroup.
    if joining is not None:
        with contextlib.suppress(Exception):
            await _uncancelled(joining)
    _kill_tree(proc.pid)  # (bwrap's children too: one the cgroup does not hold)
    if cg is not None:
        await _uncancelled(asyncio.ensure_future(asyncio.to_thread(cg.destroy)))
    await _uncancelled(asyncio.ensure_future(ProcessChannel(proc).kill()))


@functools.lru_cache(maxsize=8)
def _host_layout(root: str = "/") -> tuple[list[str], list[str]]:
    """bwrap arguments for the read-only system part, and the list of masked paths (computed once per process
    and root). ``root``: the host's own ``/``, or an environment's base root filesystem (environments/),
    whose directories then take the place of the host's."""
    args: list[str] = []
    masked: list[str] = []
    base = root.rstrip("/")
    for name in RO_TOP_DIRS:
        path = f"{base}/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, f"/{name}"]
    if os.path.isdir("/sys/devices/system/cpu"):  # CPU topology for nproc/os.cpu_count; the rest of /sys stays out
        args += ["--ro-bind", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    for top in SCAN_FOR_SECRETS:
        scan = f"{base}/{top}"
        if os.path.isdir(scan) and not os.path.islink(scan):
            masked += ["/" + os.path.relpath(p, root) if base else p for p in _unreadable_entries(scan)]
    for d in ALWAYS_MASK_DIRS:
        if os.path.isdir(f"{base}{d}") and d not in masked:
            masked.append(d)
    masked = sorted(set(masked))
    top_level = [p for p in masked if not any(p.startswith(d + "/") for d in masked if d != p)]
    for path in top_level:
        if os.path.isdir(f"{base}{path}"):
            args += ["--tmpfs", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    for path in top_level:
        if os.path.isdir(f"{base}{path}"):
            args += ["--remount-ro", path]
    return args, masked


@functools.lru_cache(maxsize=1)
def _proc_covers() -> tuple[str, ...]:
    """Make the global parts of the sandbox's /proc read-only or empty.

    The sandbox's uid 0 is the host's uid 0 (without capabilities), and many sysctls check only file ownership:
    a writable /proc/sys would let it set kernel.core_pattern, i.e. run code as host root. /proc/sys is therefore
    bound read-only (the host's values), and the informational leftovers docker also hides are masked.
    """
    args: list[str] = ["--ro-bind", "/proc/sys", "/proc/sys"]
    for name in ("sysrq-trigger", "keys", "timer_list", "sched_debug", "latency_stats", "kcore", "mtrr"):
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    for name in ("acpi", "scsi", "asound", "fs", "driver"):
        if os.path.isdir(f"/proc/{name}"):
            args += ["--tmpfs", f"/proc/{name}", "--remount-ro", f"/proc/{name}"]
    return tuple(args)


def _unreadable_entries(base: str, limit: int = 50_000) -> list[str]:
    """Files and directories under ``base`` that "other" may not read (what only their owner/group may see)."""
    found: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(base):
        for name in [*dirnames, *filenames]:
            seen += 1
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_mode & 0o005) != 0o005:
                    found.append(full)
            elif stat.S_ISREG(st.st_mode) and not st.st_mode & 0o004:
                found.append(full)
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in found]
        if seen > limit:
            break
    return found


def _git_binds(ws: Path) -> list[str]:
    """bwrap arguments protecting the workspace's git directory (see sandbox/gitguard.py)."""
    args: list[str] = []
    for src, dst, ro in git_mounts(ws):
        args += ["--ro-bind" if ro else "--bind", src, dst]
    return args


def reachable_by(path: Path, uid: int, gid: int) -> bool:
    """Whether ``uid``/``gid`` (no supplementary groups) may walk to ``path`` (and read it, if it is a file)."""
    p = Path(path)
    for d in [*reversed(p.parents), p]:
        try:
            st = d.stat()
        except OSError:
            return False
        bit = 0o1 if stat.S_ISDIR(st.st_mode) else 0o4  # search a directory, read a file
        shift = 6 if st.st_uid == uid else 3 if st.st_gid == gid else 0
        if not st.st_mode & (bit << shift):
            return False
    return True


def compiled_toolserver_in(rootfs: str, python: str, bwrap: str) -> Path:
    """The tool server compiled by the ``python`` of another root filesystem (an environment's base: its
    interpreter may not run on the host's libraries), inside a minimal bwrap of that root with no network.
    Cached by content and interpreter; falls back to the source folder."""
    version = Path(rootfs, "etc", "bosun-base").read_text().strip() if Path(rootfs, "etc", "bosun-base").is_file() \
        else rootfs

    def run(out: Path) -> None:
        args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
        args += _host_layout(rootfs)[0]
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--ro-bind", str(TOOLSERVER_PATH), "/in", "--bind", str(out), "/out",
                 "--", python, "-I", "-S", "-c", COMPILE, "/in", "/out"]
        subprocess.run(args, check=True, capture_output=True, timeout=60, env=scrubbed_env())

    return compile_into(compiled_target(f"{rootfs}\0{version}\0{python}".encode()), run)


class BwrapSandbox(ClientSandbox):
    """One bwrap sandbox: its tool server, its cgroup; close() kills all of it."""

    backend = "bwrap"

    def __init__(self, sandbox_id: str, workspace: Path, client: ToolClient,
                 cgroup: cgroups.SandboxCgroup | None) -> None:
        super().__init__(sandbox_id, workspace, client)
        self._cgroup = cgroup

    async def _destroy(self) -> None:
        if self._cgroup is not None:
            await asyncio.to_thread(self._cgroup.destroy)

    @property
    def pid(self) -> int:
        """Host pid of the bwrap process."""
        return self._client.channel.proc.pid  # type: ignore[attr-defined]


class BwrapProvider(SandboxProvider):
    """Starts bwrap sandboxes (one per ``acquire``) with the given limits profile.

    ``python``: the interpreter inside the sandbox that runs the tool server (must live under a read-only bound
    directory such as /usr). ``cgroups``: put each sandbox in its own cgroup for memory/pids/CPU limits when the
    host allows it. ``extra_ro_binds``: more host paths made visible read-only at the same place.

    ``user``: "uid:gid" the sandbox runs as. Default: the workspace's owner when the worker is root and the owner
    can reach the workspace (a root-owned or unreachable workspace keeps uid 0, without capabilities); the
    worker's own uid otherwise. Running as an unprivileged uid
    needs unprivileged user namespaces (bwrap then runs without any privilege at all).
    """

    backend = "bwrap"

    def __init__(self, limits: Limits | None = None, *, python: str = "/usr/bin/python3",
                 bwrap: str | None = None, use_cgroups: bool = True, use_seccomp: bool = True,
                 start_timeout_s: float = 15.0, extra_ro_binds: Sequence[str] = (), user: str | None = None,
                 rootfs: Path | None = None, env_dir: Path | None = None, env: dict[str, str] | None = None
                 ) -> None:
        self.limits = limits or Limits()
        self.rootfs = str(rootfs) if rootfs else "/"
        """Whose system directories the sandbox sees: the host's, or an environment base's root filesystem."""
        self.env_dir = env_dir
        """An environment's own directory, bound read-only at ENV_DIR_IN_SANDBOX."""
        self.env = dict(env or {})
        """More variables for the tool server (and so every command): an environment's PATH, VIRTUAL_ENV..."""
        self.user = user
        self.python = python
        self.bwrap = bwrap or shutil.which("bwrap") or "/usr/bin/bwrap"
        self.use_seccomp = use_seccomp
        self.start_timeout_s = start_timeout_s
        self.extra_ro_binds = list(extra_ro_binds)
        self.server_file = compiled_toolserver(python) if rootfs is None else compiled_toolserver_in(
            self.rootfs, python, self.bwrap)
        """What runs as the tool server: its folder compiled to bytecode (or the source folder as a fallback)."""
        self._cg_support = cgroups.detect() if use_cgroups else cgroups.CgroupSupport(
            problems=["cgroups disabled by configuration"])
        self._cg_probe: dict[str, str] | None = None
        self._seccomp_problem: str | None = None
        if use_seccomp:
            try:
                seccomp.build_filter()
            except ValueError as exc:
                self._seccomp_problem = str(exc)
        if self._cg_support.dirs:
            with contextlib.suppress(OSError):
                cgroups.reap_stale(self._cg_support)

    # -- building the command line ---------------------------------------------------------------------------

    def bwrap_args(self, workspace: Path, *, seccomp_fd: int | None = None, git_binds: bool = True,
                   info_fd: int | None = None, block_fd: int | None = None, objects: Path | None = None,
                   drop_to: str | None = None) -> list[str]:
        """The full bwrap argument list for ``workspace`` (absolute, resolved). Order matters: later mounts win.

        ``objects``: a repository object store bound read-only at /run/bosun/objects. ``drop_to``: "uid:gid" the
        tool server switches to before it serves anything (bwrap started by root without a user namespace, so
        that uid is the host's; only CAP_SETUID/CAP_SETGID are kept for that switch, and it clears them).
        """
        ro_args, _masked = _host_layout(self.rootfs)
        lim = self.limits
        if drop_to:
            args = [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                    "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                    "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += ["--clearenv", "--hostname", "sandbox"]
        args += ro_args
        for extra in self.extra_ro_binds:
            args += ["--ro-bind", extra, extra]
        # World-writable scratch space (sticky): a sandbox that switches to an unprivileged uid must write there.
        # HOME (/tmp/home) is made by the tool server, as that uid.
        args += ["--dev", "/dev", "--proc", "/proc", *_proc_covers(),
                 "--perms", "1777", "--size", str(lim.tmp_mb << 20), "--tmpfs", "/tmp",
                 "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
                 "--size", str(16 << 20), "--tmpfs", "/run",
                 "--perms", "1777", "--size", str(lim.tmp_mb << 20), "--tmpfs", "/var/tmp",
                 "--symlink", "../run", "/var/run",
                 "--perms", "0755", "--dir", "/run/bosun",  # bwrap would make it 0700: the tool server is in it
                 ]
        # The workspace comes after the tmpfs mounts: a workspace under the host's /tmp must not be hidden.
        args += ["--bind", str(workspace), WORKSPACE_PATH]
        if git_binds:
            args += _git_binds(workspace)
        if objects is not None:
            args += ["--ro-bind", str(objects), OBJECTS_IN_SANDBOX]
        if self.env_dir is not None:
            args += ["--ro-bind", str(self.env_dir), ENV_DIR_IN_SANDBOX]
        args += ["--ro-bind", str(self.server_file), SERVER_IN_SANDBOX,
                 "--remount-ro", "/",
                 "--chdir", WORKSPACE_PATH]
        for key, value in {"PATH": SANDBOX_PATH, **SANDBOX_ENV, **self.env}.items():
            args += ["--setenv", key, value]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        if block_fd is not None:
            args += ["--block-fd", str(block_fd)]
        args += ["--", self.python, "-I", "-S", SERVER_IN_SANDBOX, WORKSPACE_PATH, "--nofile", str(lim.nofile)]
        if drop_to:
            args += ["--user", drop_to]
        return args

    # -- acquire ---------------------------------------------------------------------------------------------

    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> BwrapSandbox:
        ws = Path(workspace).resolve()
        if not ws.is_dir():
            raise UnexpectedEnvironment(f"workspace {workspace} is not a directory on this host; "
                                        f"create it (or clone the repository) before acquiring a sandbox")
        return await self._launch(ws, self.user_for(ws), git_binds=True, objects=objects)

    async def start_unbound(self, slot: Path, key: str = "", *, objects_slot: Path | None = None) -> BwrapSandbox:
        """Start a sandbox whose /workspace is ``slot`` (a workspace slot, see sandbox/slots.py), as ``key``
        (a uid:gid from pool_key), and whose object store, if ``objects_slot``, is that slot."""
        return await self._launch(slot, key or f"{os.geteuid()}:{os.getegid()}", git_binds=False,
                                  objects=objects_slot)

    def user_for(self, workspace: Path) -> str:
        """uid:gid the sandbox for ``workspace`` runs as (see the class docstring)."""
        if self.user or os.geteuid() != 0:
            return self.owner_key(0, 0)
        st = workspace.stat()
        return self.owner_key(st.st_uid, st.st_gid)

    def owner_key(self, uid: int, gid: int) -> str:
        """The pool key of a workspace owned by ``uid``:``gid`` (see user_for)."""
        if self.user:
            return self.user
        if os.geteuid() == 0:
            return f"{uid}:{gid}"
        return f"{os.geteuid()}:{os.getegid()}"

    def pool_key(self, workspace: Path) -> str:
        """Warm sandboxes are interchangeable only for the same user."""
        return self.user_for(Path(workspace).resolve())

    async def _launch(self, ws: Path, user: str, *, git_binds: bool, objects: Path | None = None) -> BwrapSandbox:
        if not os.access(self.bwrap, os.X_OK):
            raise UnexpectedEnvironment(f"bubblewrap not found at {self.bwrap}; install the 'bubblewrap' package "
                                        f"or use the docker backend")
        sandbox_id = f"bw-{os.getpid()}-{secrets.token_hex(5)}"
        drop_to = _drop_target(user)  # (checked before anything is made that would need undoing)
        cg: cgroups.SandboxCgroup | None = None
        if self._cg_support.dirs:
            try:
                cg = cgroups.SandboxCgroup(self._cg_support, sandbox_id, self.limits)
            except OSError as exc:
                raise UnexpectedEnvironment(f"cannot create the cgroup of sandbox {sandbox_id}: {exc}") from None
        sec_fd = seccomp.filter_fd() if self.use_seccomp and self._seccomp_problem is None else None
        # With a cgroup: bwrap reports its child's pid on info_w and waits on block_r after setting up the
        # mounts; meanwhile both processes are moved into the cgroup. Nothing of the sandbox runs before that.
        info_r, info_w = os.pipe() if cg else (None, None)
        block_r, block_w = os.pipe() if cg else (None, None)
        args = self.bwrap_args(ws, seccomp_fd=sec_fd, git_binds=git_binds, info_fd=info_w, block_fd=block_r,
                               objects=objects, drop_to=drop_to)
        child_fds = tuple(fd for fd in (sec_fd, info_w, block_r) if fd is not None)
        proc, cancelled = await self._spawn(args, child_fds, (info_r, block_w), cg)
        await self._join(ws, proc, cg, info_r, block_w, cancelled)
        client = ToolClient(ProcessChannel(proc), label=f"bwrap sandbox {sandbox_id}")
        sandbox = BwrapSandbox(sandbox_id, ws, client, cg)
        sandbox.user = user
        await sandbox.wait_ready(f"bwrap sandbox for {ws}", self.start_timeout_s)  # (it closes what fails)
        if children := _children(proc.pid):  # (ready: bwrap's child is there, in the sandbox's namespaces)
            blackholing = asyncio.ensure_future(asyncio.to_thread(netns.blackhole_private_ranges, children[0]))
            try:
                await asyncio.shield(blackholing)
            except BaseException:  # (cancelled here, the sandbox was left running: nobody held it)
                with contextlib.suppress(Exception):
                    await _uncancelled(blackholing)  # (its nsenter let end: the namespace it enters is going)
                await _uncancelled(asyncio.ensure_future(sandbox.close()))
                raise
        return sandbox

    async def _spawn(self, args: list[str], child_fds: tuple[int, ...], own_fds: tuple[int | None, int | None],
                     cg: cgroups.SandboxCgroup | None) -> tuple[asyncio.subprocess.Process,
                                                                asyncio.CancelledError | None]:
        """Start bwrap, and the cancellation that came meanwhile (raised once the start is cleaned up, by
        ``_join``). A start that fails closes our ends of the pipes and the cgroup."""
        cancelled: asyncio.CancelledError | None = None
        creating = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=scrubbed_env(), pass_fds=child_fds, limit=STREAM_LIMIT, start_new_session=True, cwd="/"))
        try:
            try:
                proc = await asyncio.shield(creating)
            except asyncio.CancelledError as exc:  # (it is started, or nearly: finished starting, then stopped)
                cancelled = exc
                proc = await _uncancelled(creating)
        except OSError as exc:
            for fd in own_fds:
                if fd is not None:
                    os.close(fd)
            if cg:
                await asyncio.shield(asyncio.to_thread(cg.destroy))
            if cancelled is not None:
                raise cancelled from None
            raise UnexpectedEnvironment(f"cannot start bubblewrap ({self.bwrap}): {exc}") from None
        finally:
            for fd in child_fds:
                os.close(fd)
        return proc, cancelled

    async def _join(self, ws: Path, proc: asyncio.subprocess.Process, cg: cgroups.SandboxCgroup | None,
                    info_r: int | None, block_w: int | None, cancelled: asyncio.CancelledError | None) -> None:
        """Put the started bwrap and its child into the cgroup (``_join_cgroup``), then let it go on; a cancel
        or a failed join stops what was started."""
        joining = None
        if cg is not None:
            assert info_r is not None and block_w is not None
            joining = asyncio.ensure_future(asyncio.to_thread(_join_cgroup, cg, proc.pid, info_r, block_w,
                                                              self.start_timeout_s))
        try:
            if cancelled is not None:
                raise cancelled
            if joining is not None:
                await asyncio.shield(joining)
        except asyncio.CancelledError:
            await _stop_half_started(proc, joining, cg)
            raise
        except OSError as exc:  # (the join failed: bwrap gone, or it never reported its child)
            _kill_tree(proc.pid)
            assert proc.stdin is not None and proc.stderr is not None
            proc.stdin.close()  # (a child left behind ends on that, and with it the stderr read)
            err = b""
            with contextlib.suppress(Exception):
                err = await asyncio.wait_for(proc.stderr.read(), 10.0)
            await _stop_half_started(proc, joining, cg)
            detail = err.decode("utf-8", "replace").strip()[-1000:]
            if detail:
                raise UnexpectedEnvironment(f"bwrap sandbox for {ws} did not start: {detail}") from None
            raise UnexpectedEnvironment(f"bwrap sandbox for {ws} did not start: cannot put it in its cgroup "
                                        f"({exc})") from None

    # -- reporting -------------------------------------------------------------------------------------------

    def limits_report(self) -> dict[str, Any]:
        """Which limits are in force here, and how (cgroup controller, tmpfs size, rlimit, seccomp)."""
        if self._cg_probe is None:
            self._cg_probe = {}
            if self._cg_support.dirs:
                try:
                    probe = cgroups.SandboxCgroup(self._cg_support, f"probe-{secrets.token_hex(4)}", self.limits)
                    self._cg_probe = dict(probe.enforced)
                    probe.destroy()
                except OSError:
                    pass
        lim = self.limits
        report: dict[str, Any] = {"backend": "bwrap"}
        for name, value in (("memory_mb", lim.memory_mb), ("pids", lim.pids), ("cpus", lim.cpus)):
            key = {"memory_mb": "memory"}.get(name, name)
            how = self._cg_probe.get(key)
            report[name] = {"value": value, "enforced": how is not None,
                            "how": how or "; ".join(self._cg_support.problems) or "no cgroup support"}
        report["tmp_mb"] = {"value": lim.tmp_mb, "enforced": True, "how": "tmpfs size"}
        report["nofile"] = {"value": lim.nofile, "enforced": True, "how": "RLIMIT_NOFILE"}
        report["network"] = {"value": "none", "enforced": True,
                             "how": "own network namespace; private addresses time out (sandbox/netns.py)"}
        report["seccomp"] = {"value": "no set-id chmod, no new namespaces", "enforced": self.use_seccomp and
                             self._seccomp_problem is None,
                             "how": self._seccomp_problem or ("bwrap --seccomp" if self.use_seccomp else "disabled")}
        report["masked_paths"] = _host_layout(self.rootfs)[1]
        report["root"] = self.rootfs
        return report
