"""Per-sandbox cgroups for the bwrap backend: memory (no swap beyond it), pids and CPU quota.

Works with cgroup v1 (one hierarchy per controller, e.g. /sys/fs/cgroup/memory) and with a cgroup v2 unified
hierarchy. Needs write access to the hierarchy (root, or a delegated subtree); without it the limits are reported
as not in force and the sandbox still starts (isolation does not depend on cgroups, resource caps do).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.base import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT = "bosun"


@dataclass
class CgroupSupport:
    """What the host lets us limit: controller -> directory of bosun's parent cgroup."""

    version: int | None = None
    dirs: dict[str, Path] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def has(self, controller: str) -> bool:
        return controller in self.dirs


def detect(root: Path = CGROUP_ROOT) -> CgroupSupport:
    """Find writable memory/pids/cpu controllers and create bosun's parent cgroup in each."""
    sup = CgroupSupport()
    if (root / "cgroup.controllers").exists():
        sup.version = 2
        available = (root / "cgroup.controllers").read_text().split()
        parent = root / PARENT
        try:
            parent.mkdir(exist_ok=True)
            wanted = [c for c in ("memory", "pids", "cpu") if c in available]
            with contextlib.suppress(OSError):
                (root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            for c in wanted:
                if c in enabled:
                    sup.dirs[c] = parent
                else:
                    sup.problems.append(f"cgroup v2 controller {c} could not be enabled under {parent}")
        except OSError as exc:
            sup.problems.append(f"cannot create {parent}: {exc.strerror}")
        return sup
    for controller in ("memory", "pids", "cpu"):
        base = root / controller
        if not (base / "cgroup.procs").exists():
            sup.problems.append(f"cgroup v1 controller {controller} is not mounted at {base}")
            continue
        sup.version = 1
        parent = base / PARENT
        try:
            parent.mkdir(exist_ok=True)
            if not os.access(parent / "cgroup.procs", os.W_OK):
                raise PermissionError(13, "permission denied")
            sup.dirs[controller] = parent
        except OSError as exc:
            sup.problems.append(f"cannot use {parent}: {exc.strerror or exc}")
    return sup


class SandboxCgroup:
    """The cgroup(s) of one sandbox: created with limits before start, emptied and removed on close."""

    def __init__(self, support: CgroupSupport, name: str, limits: Limits) -> None:
        self.support = support
        self.name = name
        self.dirs: list[Path] = []
        self.enforced: dict[str, str] = {}
        self.problems: list[str] = []
        for d in sorted({p / name for p in support.dirs.values()}):
            d.mkdir(exist_ok=True)
            self.dirs.append(d)
        if support.version == 2 and self.dirs:
            d = self.dirs[0]
            self._set(d / "memory.max", str(limits.memory_mb << 20), "memory", "memory")
            self._set(d / "memory.swap.max", "0", "memory", "memory", optional=True)
            self._set(d / "pids.max", str(limits.pids), "pids", "pids")
            self._set(d / "cpu.max", f"{int(limits.cpus * 100_000)} 100000", "cpu", "cpus")
        elif support.version == 1:
            if support.has("memory"):
                d = support.dirs["memory"] / name
                self._set(d / "memory.limit_in_bytes", str(limits.memory_mb << 20), "memory", "memory")
                self._set(d / "memory.memsw.limit_in_bytes", str(limits.memory_mb << 20), "memory", "memory",
                          optional=True)
                self._set(d / "memory.swappiness", "0", "memory", "memory", optional=True)
            if support.has("pids"):
                self._set(support.dirs["pids"] / name / "pids.max", str(limits.pids), "pids", "pids")
            if support.has("cpu"):
                d = support.dirs["cpu"] / name
                self._set(d / "cpu.cfs_period_us", "100000", "cpu", "cpus")
                self._set(d / "cpu.cfs_quota_us", str(int(limits.cpus * 100_000)), "cpu", "cpus")

    def _set(self, path: Path, value: str, controller: str, limit: str, *, optional: bool = False) -> None:
        try:
            path.write_text(value)
            self.enforced.setdefault(limit, f"cgroup v{self.support.version} {controller}")
        except OSError as exc:
            if not optional:
                self.problems.append(f"{path}: {exc.strerror or exc}")
                self.enforced.pop(limit, None)

    def procs_files(self) -> list[str]:
        """The files a process writes its pid to in order to join this sandbox's cgroup(s)."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def add(self, pid: int) -> None:
        """Move process ``pid`` into every hierarchy of this cgroup (OSError when the kernel refuses)."""
        for d in self.dirs:
            with open(d / "cgroup.procs", "w") as f:
                f.write(str(pid))

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                out |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
        return out

    def destroy(self, timeout_s: float = 5.0) -> None:
        """Kill whatever is left in the cgroup(s) and remove them."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.pids()
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            for d in list(self.dirs):
                try:
                    d.rmdir()
                    self.dirs.remove(d)
                except FileNotFoundError:
                    self.dirs.remove(d)
                except OSError:
                    pass
            if not self.dirs or time.monotonic() > deadline:
                return
            time.sleep(0.01)


def reap_stale(support: CgroupSupport) -> int:
    """Remove sandbox cgroups (``bw-<owner pid>-...``) whose owner process is gone; returns how many."""
    removed = 0
    for parent in set(support.dirs.values()):
        for d in parent.iterdir():
            parts = d.name.split("-")
            if not d.is_dir() or len(parts) < 3 or not parts[1].isdigit():
                continue
            if Path(f"/proc/{parts[1]}").exists():
                continue
            cg = SandboxCgroup.__new__(SandboxCgroup)
            cg.dirs = [d]
            cg.destroy(timeout_s=1.0)
            removed += 1
    return removed
