"""Workspace slots: start a sandbox before its workspace is known, bind the workspace in later (warm pools).

A slot is an empty directory under a shared mount (``/run/bosun-slots``). A warm sandbox binds its slot at
/workspace with slave propagation (bwrap makes every mount a slave of the host's; docker uses ``rslave``). When the
sandbox is handed out, the host bind-mounts the workspace onto the slot and the mount propagates into the running
sandbox: the tool server is already up, the hand-out costs a few mount syscalls.

Read-only sub-mounts (.git/hooks, .git/config...) and the workspace bind itself (nosuid, nodev) are prepared in a
private staging mount and then moved into the slot, because a flag change by remount does not propagate but a
moved mount arrives with its flags. Needs root (CAP_SYS_ADMIN) on the host; ``SlotManager.usable()`` says whether
the host allows it, and pools fall back to cold starts when it does not.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import secrets
import threading
from pathlib import Path

from sandbox.base import WORKSPACE_PATH
from sandbox.gitguard import git_mounts

SLOTS_ROOT = Path("/run/bosun-slots")
STAGING_ROOT = Path("/run/bosun-staging")

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SHARED = 1 << 20
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def mount_points() -> set[str]:
    """Every mount point of this mount namespace (os.path.ismount misses binds within one file system)."""
    points = set()
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            field = line.split(b" ")[4]
            points.add(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), field).decode(
                "utf-8", "surrogateescape"))
    return points


def _starttime(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        return raw[raw.rfind(")") + 2:].split()[19]
    except (OSError, IndexError):
        return "gone"


def _owner_dir_name(pid: int) -> str:
    return f"{pid}-{_starttime(pid)}"


def _owner_alive(name: str) -> bool:
    pid, _, start = name.partition("-")
    return pid.isdigit() and _starttime(int(pid)) == start


def is_mount(path: Path | str) -> bool:
    return str(path) in mount_points()


def _mount(source: str | None, target: str, flags: int) -> None:
    if _libc.mount(source.encode() if source else None, target.encode(), None, flags, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount({source!r}, {target!r}, flags={flags:#x}): {os.strerror(err)}")


def _umount(target: str, flags: int = MNT_DETACH) -> None:
    if _libc.umount2(target.encode(), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount({target!r}): {os.strerror(err)}")


class SlotManager:
    """Creates slots under a shared mount and binds workspaces into them (host side; needs root)."""

    def __init__(self, root: Path = SLOTS_ROOT, staging: Path = STAGING_ROOT) -> None:
        self.root = root
        self.staging = staging
        self._ready: bool | None = None
        self._problem = ""
        self._lock = threading.Lock()
        self.mine = self.root / _owner_dir_name(os.getpid())
        """This process's slots (per process: another worker's stale-slot cleanup must never touch ours)."""

    def usable(self) -> tuple[bool, str]:
        """Set up the shared slot mount once; (True, "") when warm binding works on this host."""
        with self._lock:
            if self._ready is None:
                try:
                    self._setup()
                    self._ready = True
                except OSError as exc:
                    self._ready = False
                    self._problem = f"workspace slots unavailable ({exc}); warm pools start sandboxes cold"
            return self._ready, self._problem

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise PermissionError(1, "needs root to bind-mount workspaces")
        self.root.parent.mkdir(parents=True, exist_ok=True)
        with open(self.root.parent / ".bosun-slots.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # several workers on one host: one of them sets up the mounts
            for d, flag in ((self.root, MS_SHARED), (self.staging, MS_PRIVATE)):
                d.mkdir(parents=True, exist_ok=True)
                if not is_mount(d):
                    _mount(str(d), str(d), MS_BIND)
                    _mount(None, str(d), flag)
            self.cleanup_stale()
            self.mine = self.root / _owner_dir_name(os.getpid())
            self.mine.mkdir(exist_ok=True)

    def cleanup_stale(self) -> int:
        """Unmount and remove the slots of worker processes that are gone; returns how many slots."""
        removed = 0
        for owner in list(self.root.iterdir()):
            if not owner.is_dir() or _owner_alive(owner.name):
                continue
            for slot in list(owner.iterdir()):
                self._release_path(slot)
                removed += 1
            with contextlib.suppress(OSError):
                owner.rmdir()
        points = mount_points()
        for d in list(self.staging.iterdir()):
            with contextlib.suppress(OSError):
                if str(d) in points:
                    _umount(str(d))
                d.rmdir() if d.is_dir() else d.unlink()
        return removed

    def new_slot(self) -> Path:
        usable, why = self.usable()
        if not usable:
            raise OSError(why)
        slot = self.mine / secrets.token_hex(8)
        slot.mkdir(mode=0o755)
        return slot

    @staticmethod
    def supports(workspace: Path) -> bool:
        """Whether ``workspace`` can go into a slot: every extra mount it needs lies under /workspace."""
        return all(dst == WORKSPACE_PATH or dst.startswith(WORKSPACE_PATH + "/") for _s, dst, _ro in
                   git_mounts(workspace))

    def attach(self, slot: Path, workspace: Path) -> None:
        """Bind ``workspace`` (nosuid, nodev) onto ``slot``, then its git protections (read-only) inside it."""
        self._move_in(str(workspace), slot, MS_NOSUID | MS_NODEV)
        try:
            for src, dst, ro in git_mounts(workspace):
                target = slot / dst[len(WORKSPACE_PATH):].lstrip("/")
                self._move_in(src, target, MS_NOSUID | MS_NODEV | (MS_RDONLY if ro else 0))
        except BaseException:
            self.detach(slot, remove=False)
            raise

    def attach_read_only(self, slot: Path, directory: Path) -> None:
        """Bind ``directory`` (read-only, nosuid, nodev) onto ``slot``: a task's object store."""
        self._move_in(str(directory), slot, MS_NOSUID | MS_NODEV | MS_RDONLY)

    def _move_in(self, source: str, target: Path, flags: int) -> None:
        stage = self.staging / secrets.token_hex(6)
        if os.path.isdir(source):
            stage.mkdir()
        else:
            stage.touch()
        try:
            _mount(source, str(stage), MS_BIND)
            _mount(None, str(stage), MS_REMOUNT | MS_BIND | flags)
            _mount(str(stage), str(target), MS_MOVE)
        except BaseException:
            with contextlib.suppress(OSError):
                _umount(str(stage))
            raise
        finally:
            with contextlib.suppress(OSError):
                stage.rmdir() if stage.is_dir() else stage.unlink()

    def detach(self, slot: Path, *, remove: bool = True) -> None:
        """Unmount everything in ``slot`` (lazily: propagates to the sandbox) and remove it."""
        if remove:
            self._release_path(slot)
            return
        with contextlib.suppress(OSError):
            while is_mount(slot):
                _umount(str(slot))

    def _release_path(self, slot: Path) -> None:
        with contextlib.suppress(OSError):
            for _ in range(16):
                if not is_mount(slot):
                    break
                _umount(str(slot))
        with contextlib.suppress(OSError):
            slot.rmdir()
