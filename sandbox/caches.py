"""On-disk caches of this host (environments, evaluation sources, checkout templates): locks across processes,
sizes, and which entries a prune may remove (by last use and size)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path


def strip_setid(path: Path, bits: int = 0o7000) -> int:
    """Drop ``bits`` (set-user-id, set-group-id and sticky) from everything below ``path`` (a folder a build wrote,
    a base's root filesystem; links are not followed); returns how many entries had them."""
    found = 0
    for dirpath, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                mode = os.lstat(full).st_mode
                if stat.S_ISLNK(mode) or not mode & bits:
                    continue
                os.chmod(full, stat.S_IMODE(mode) & ~bits, follow_symlinks=False)
                found += 1
    return found


KEEP_RECENT_S = 3600.0
"""A cached thing (an environment, an image, an evaluation's source store) used within this long is never
pruned."""


def prunable(used: float, total_mb: float, *, now: float, older_than_days: float | None,
             max_gb: float | None, short_of_space: bool = False, outdated: bool = False) -> bool:
    """Whether a prune removes a cached thing last used at ``used``: not used for ``older_than_days``, the cache
    (``total_mb`` so far) over ``max_gb`` (0 or None: no size bound), its file system ``short_of_space``, or it is
    ``outdated`` (and outdated ones are to go); never one used within ``KEEP_RECENT_S``."""
    if now - used < KEEP_RECENT_S:
        return False
    too_old = older_than_days is not None and now - used > older_than_days * 86400
    too_big = max_gb is not None and max_gb > 0 and total_mb > max_gb * 1000
    return too_old or too_big or short_of_space or outdated


def free_mb(path: Path) -> float:
    """Free space (MB) of the file system ``path`` is on (its nearest existing folder)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free / 1e6


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created with its folder) across processes of this host. ``wait=False``:
    do not wait for another holder; the value is then False (and nothing is held) when there is one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


def dir_size_mb(path: Path) -> float:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return round(total / 1e6, 1)
