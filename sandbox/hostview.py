"""A safe host-side view of a workspace, for code-search indexing (the sandbox has no tree-sitter).

The model controls the workspace's contents, so it could plant a symlink to a host secret (``key.py ->
~/.ssh/id_rsa``) or a FIFO that blocks a reader. This module never follows a symlink: directories are walked and
files opened relative to directory file descriptors with ``O_NOFOLLOW`` at every component, only regular files are
read, and every path is checked to stay inside the workspace. Hard links cannot point out of the workspace from
inside the sandbox (links across mount points fail), so they need no special handling.

``Mirror`` copies the code files it reads into a private directory (regular files only), which is what the search
index is built from; the index therefore never sees anything but the safe copies.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import os
import posixpath
import shutil
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.client import pid_alive

MAX_FILE_BYTES = 1_000_000
MAX_FILES = 50_000
MAX_TOTAL_BYTES = 256 << 20
"""Code files mirrored (and so indexed) per workspace at most: the mirror's disk and the index's memory."""
SKIP_DIRS = frozenset(
    "node_modules .git .hg .svn __pycache__ .venv venv .tox .nox .mypy_cache .pytest_cache .ruff_cache "
    "site-packages dist build target .idea .vscode .next .cache coverage htmlcov .eggs bower_components".split()
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafePath(Exception):
    """A path that leaves the workspace, goes through a symlink, or is not a regular file."""


def split_rel(rel: str) -> list[str]:
    """Components of a workspace-relative path; UnsafePath for absolute paths and ``..``."""
    if not rel or "\x00" in rel:
        raise UnsafePath(f"bad path {rel!r}")
    norm = posixpath.normpath(rel.replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise UnsafePath(f"path {rel!r} leaves the workspace")
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if not parts:
        raise UnsafePath(f"path {rel!r} names the workspace root, not a file")
    return parts


def read_file(root: Path, rel: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """Bytes of the regular file ``rel`` under ``root``, never following a symlink at any component."""
    parts = split_rel(rel)
    fd = os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                raise UnsafePath(f"{rel}: cannot open directory {part!r} ({_why(e)})") from None
            os.close(fd)
            fd = nfd
        try:
            ffd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as e:
            raise UnsafePath(f"{rel}: cannot open ({_why(e)})") from None
    finally:
        os.close(fd)
    try:
        st = os.fstat(ffd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{rel}: not a regular file")
        if st.st_size > max_bytes:
            raise UnsafePath(f"{rel}: larger than {max_bytes} bytes")
        with os.fdopen(ffd, "rb", closefd=False) as f:
            return f.read(max_bytes + 1)[:max_bytes]
    finally:
        os.close(ffd)


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "it is a symlink, which is never followed"
    if e.errno == errno.ENOTDIR:
        return "not a directory (or a symlink)"
    return e.strerror or str(e)


@dataclass(frozen=True)
class Entry:
    rel: str
    size: int
    mtime_ns: int
    ino: int


def walk(root: Path, extensions: frozenset[str] | None = None, max_files: int = MAX_FILES,
         max_bytes: int = MAX_TOTAL_BYTES, stopped: list[str] | None = None) -> Iterator[Entry]:
    """Regular files under ``root`` (sorted, relative POSIX paths), skipping symlinks, hidden and vendored dirs; at
    most ``max_files`` of them and ``max_bytes`` in all (then the walk ends, saying why in ``stopped``)."""
    top = os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    count = total = 0
    stack: list[tuple[int, str]] = [(top, "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            subdirs: list[tuple[int, str]] = []
            try:
                with os.scandir(fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISLNK(st.st_mode):
                        continue
                    rel = f"{prefix}{entry.name}"
                    if stat.S_ISDIR(st.st_mode):
                        if entry.name in SKIP_DIRS or entry.name.startswith("."):
                            continue
                        try:
                            subdirs.append((os.open(entry.name, _DIR_FLAGS, dir_fd=fd), rel + "/"))
                        except OSError:
                            continue
                    elif stat.S_ISREG(st.st_mode) and st.st_size <= MAX_FILE_BYTES:
                        if extensions is not None and os.path.splitext(entry.name)[1].lower() not in extensions:
                            continue
                        count += 1
                        total += st.st_size
                        if count > max_files or total > max_bytes:
                            if stopped is not None:
                                stopped.append(f"more than {max_files} code files" if count > max_files else
                                               f"more than {max_bytes >> 20} MB of code")
                            return
                        yield Entry(rel, st.st_size, st.st_mtime_ns, st.st_ino)
                stack.extend(reversed(subdirs))
                subdirs = []
            finally:
                for sub, _ in subdirs:  # opened, but the walk stopped before descending
                    os.close(sub)
                if fd != top:
                    os.close(fd)
    finally:
        for fd, _ in stack:
            if fd != top:
                os.close(fd)
        os.close(top)


def mirror_base() -> Path:
    """Private (0700) directory holding the mirrors and the symbol cache of this user."""
    base = Path(os.environ.get("BOSUN_SEARCH_MIRROR") or Path(tempfile.gettempdir()) / f"bosun-search-{os.getuid()}")
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(base)
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
        raise UnsafePath(f"search mirror directory {base} is not a private directory of this user")
    os.chmod(base, 0o700)
    return base


@dataclass
class Mirror:
    """Regular-file copies of a workspace's code files, kept in sync by ``sync``."""

    root: Path
    dest: Path
    extensions: frozenset[str] | None = None
    seen: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    generation: int = 0
    """Bumped by every sync that changed something."""
    left_out: str = ""
    """Why the mirror holds only part of the workspace's code files (empty: it holds them all)."""
    token: str = field(default_factory=lambda: os.urandom(8).hex())
    """Unique per mirror object (a re-created mirror of the same workspace gets a new one)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sync(self) -> bool:
        """Copy new and changed files, remove vanished ones; True when anything changed."""
        changed = False
        current: dict[str, tuple[int, int, int]] = {}
        stopped: list[str] = []
        for entry in walk(self.root, self.extensions, stopped=stopped):
            sig = (entry.size, entry.mtime_ns, entry.ino)
            current[entry.rel] = sig
            if self.seen.get(entry.rel) == sig:
                continue
            try:
                data = read_file(self.root, entry.rel)
            except (UnsafePath, OSError):
                current.pop(entry.rel, None)
                continue
            target = self.dest.joinpath(*split_rel(entry.rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".bosun-tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
            changed = True
        for rel in set(self.seen) - set(current):
            try:
                self.dest.joinpath(*split_rel(rel)).unlink()
            except (OSError, UnsafePath):
                pass
            changed = True
        self.seen = current
        self.left_out = stopped[0] if stopped else ""
        if changed:
            self.generation += 1
        return changed


MAX_MIRRORS = 32
"""Mirrors kept per process; the least recently used one is deleted beyond this."""
_mirrors: OrderedDict[str, Mirror] = OrderedDict()
_mirrors_lock = threading.Lock()


def mirror_for(workspace: Path, extensions: frozenset[str] | None = None) -> Mirror:
    """The (process-wide) mirror of ``workspace``; created empty on first use."""
    real = os.path.realpath(workspace)
    with _mirrors_lock:
        m = _mirrors.get(real)
        if m is not None:
            _mirrors.move_to_end(real)
        else:
            digest = hashlib.sha256(real.encode()).hexdigest()[:16]
            trees = mirror_base() / "trees"
            trees.mkdir(exist_ok=True)
            for old in trees.iterdir():  # left over by processes that are gone
                pid = old.name.rsplit("-", 1)[-1]
                if pid.isdigit() and not pid_alive(int(pid)):
                    shutil.rmtree(old, ignore_errors=True)
            dest = trees / f"{digest}-{os.getpid()}"
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir()
            if not _mirrors:
                atexit.register(_remove_mirrors)
            m = _mirrors[real] = Mirror(Path(real), dest, extensions)
            while len(_mirrors) > MAX_MIRRORS:
                _, evicted = _mirrors.popitem(last=False)
                shutil.rmtree(evicted.dest, ignore_errors=True)
        return m


def _remove_mirrors() -> None:
    """Delete this process's mirrors (at exit)."""
    for m in list(_mirrors.values()):
        shutil.rmtree(m.dest, ignore_errors=True)
    _mirrors.clear()


def drop_mirror(workspace: Path) -> None:
    """Forget and delete the mirror of ``workspace`` (when its sandbox is released)."""
    with _mirrors_lock:
        m = _mirrors.pop(os.path.realpath(workspace), None)
    if m is not None:
        shutil.rmtree(m.dest, ignore_errors=True)


