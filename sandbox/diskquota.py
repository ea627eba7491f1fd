"""A disk quota per sandbox workspace: the workspace is a small ext4 file system of its own, loop-mounted.

A sandbox writes only to its workspace and to its size-capped tmpfs ``/tmp``. Giving the workspace a file system
of its own caps both its bytes and its inodes (file count) whatever the backend, so a runaway command fills its
own disk, not the worker's. The image is a sparse file beside the mount point (``<workspace>.img``); it takes the
space actually written. Needs root and loop devices; :func:`support` says whether this host has them, and where
it does not the workspace is a plain directory (``bosun status`` shows the quota as not enforced).

After a host reboot the image is still there and :func:`ensure_mounted` mounts it again; :func:`remove` unmounts
and deletes it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from pathlib import Path

from infra.errors import UnexpectedEnvironment
from sandbox.slots import is_mount, mount_points

MKFS = "mkfs.ext4"


@functools.lru_cache(maxsize=1)
def support() -> tuple[bool, str]:
    """(usable, reason): root, mkfs.ext4, mount and a loop device are available."""
    if os.geteuid() != 0:
        return False, "needs root (loop mounts)"
    for tool in (MKFS, "mount", "umount", "losetup"):
        if not shutil.which(tool, path="/usr/sbin:/sbin:/usr/bin:/bin"):
            return False, f"{tool} not found (apt-get install e2fsprogs mount)"
    if not Path("/dev/loop-control").exists():
        return False, "no /dev/loop-control (loop devices unavailable)"
    probe = subprocess.run(["losetup", "-f"], capture_output=True, text=True)
    if probe.returncode != 0:
        return False, f"no free loop device: {probe.stderr.strip()[:200]}"
    return True, "ext4 image per workspace, loop-mounted"


def image_of(mount_point: Path) -> Path:
    return mount_point.with_name(mount_point.name + ".img")


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"})
    if proc.returncode != 0:
        raise UnexpectedEnvironment(f"{what} failed: {(proc.stderr or proc.stdout).strip()[:300]}")


def create(mount_point: Path, size_mb: int, inodes: int, owner: tuple[int, int] | None) -> None:
    """Make an empty ext4 file system of ``size_mb`` MB and ``inodes`` inodes, mounted (nosuid, nodev) at
    ``mount_point`` (an empty directory is created), its root owned by ``owner``."""
    img = image_of(mount_point)
    remove(mount_point)
    mount_point.mkdir(parents=True)
    inodes = max(inodes, 1024)
    size_mb += (inodes * 256 >> 20) + 8  # the inode tables and the file system's own metadata come on top
    with open(img, "wb") as f:
        f.truncate(size_mb * 1024 * 1024)
    uid, gid = owner or (0, 0)
    _run([MKFS, "-q", "-F", "-O", "^has_journal", "-m", "0", "-b", "4096", "-N", str(inodes),
          "-E", f"lazy_itable_init=1,root_owner={uid}:{gid}", str(img)], f"making the workspace file system {img}")
    ensure_mounted(mount_point)
    with contextlib.suppress(OSError):
        (mount_point / "lost+found").rmdir()


def create_from(mount_point: Path, image: Path) -> None:
    """A workspace file system that starts as a copy of ``image`` (an unmounted one made by :func:`create`),
    mounted (nosuid, nodev) at ``mount_point``. The copy is block for block (sparse): inode numbers and times
    are the image's, so a git index saved in it stays valid."""
    remove(mount_point)
    mount_point.mkdir(parents=True)
    _run(["cp", "--sparse=auto", "--", str(image), str(image_of(mount_point))],
         f"copying the workspace file system {image}")
    ensure_mounted(mount_point)


def unmount(mount_point: Path) -> Path:
    """Unmount a workspace made by :func:`create` and remove its mount point; returns its image (kept)."""
    _run(["umount", str(mount_point)], f"unmounting {mount_point}")
    mount_point.rmdir()
    return image_of(mount_point)


def ensure_mounted(mount_point: Path) -> bool:
    """Mount the workspace's image if it has one and is not mounted (after a reboot). True if it is mounted."""
    img = image_of(mount_point)
    if not img.exists():
        return False
    if is_mount(mount_point):
        return True
    mount_point.mkdir(parents=True, exist_ok=True)
    _run(["mount", "-o", "loop,nosuid,nodev,noatime", str(img), str(mount_point)],
         f"mounting the workspace file system {img}")
    return True


def remove(mount_point: Path) -> None:
    """Unmount and delete a workspace made by :func:`create` (or a plain directory there). Never raises for what
    is already gone."""
    if is_mount(mount_point):
        proc = subprocess.run(["umount", str(mount_point)], capture_output=True)
        if proc.returncode != 0:  # still busy (a process of a sandbox being killed): detach it
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
    if mount_point.is_symlink():
        mount_point.unlink()
    elif mount_point.exists():
        shutil.rmtree(mount_point, ignore_errors=True)
    image_of(mount_point).unlink(missing_ok=True)


def unmount_under(root: Path) -> int:
    """Unmount every workspace file system below ``root`` (their images stay: ``ensure_mounted`` mounts them again).
    For a worker that stops: no loop mount outlives it. Returns how many were unmounted."""
    prefix = str(Path(root).resolve()) + "/"
    done = 0
    for point in sorted(mount_points(), key=len, reverse=True):
        if point.startswith(prefix) and image_of(Path(point)).exists():
            proc = subprocess.run(["umount", point], capture_output=True)
            if proc.returncode != 0:
                subprocess.run(["umount", "-l", point], capture_output=True)
            done += 1
    return done
