"""Read an agent's workspace as data: a bounded, symlink-safe snapshot of the files git would take.

The workspace is hostile (docs/THREAT-MODEL.md): the model wrote it from inside a sandbox. The host never runs
git in it; it reads the files itself and hands their bytes to git (:mod:`sandbox.hostrepo`). Reading follows these
rules:

- Directories are opened component by component from the workspace root with ``O_NOFOLLOW | O_DIRECTORY``, files
  with ``O_NOFOLLOW | O_NONBLOCK``; a symlink is never followed, it is recorded as a symlink (its target string is
  the blob, as git stores it); FIFOs, sockets and device nodes are skipped and named in the notes.
- Every entry named ``.git`` (any case, any depth) is skipped: nested repositories are not imported, and the
  workspace's own ``.git`` is the agent's scratch copy, never read.
- Ignore rules are git's: each directory's ``.gitignore`` is copied (as a regular file) into a private staging
  tree and ``git check-ignore`` answers for untracked paths, level by level, so an ignored directory (a venv,
  ``node_modules``) is never walked. Tracked paths are never ignored, as with ``git add -A``.
- Bounds (:class:`Bounds`): entries, depth, bytes per file and in total. Past a bound the snapshot is refused
  (:class:`SnapshotRefused`) rather than imported incomplete: a missing file would look deleted.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from infra.errors import BosunError
from infra.names import shown

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class SnapshotRefused(BosunError):
    """The workspace cannot be imported as it is (too big, too deep, a file changed kind while read)."""


@dataclass(frozen=True)
class Bounds:
    """How much of a workspace the host reads at most."""

    max_entries: int = 500_000
    """Files, links and directories walked (ignored directories are not walked)."""
    max_depth: int = 64
    """Directory nesting below the workspace root."""
    max_file_bytes: int = 100 * 1024 * 1024
    """One file; larger files are left out of the import and named in the notes (GitHub refuses > 100 MB too)."""
    max_total_bytes: int = 4 * 1024 * 1024 * 1024
    """All imported files together."""


@dataclass(frozen=True)
class Entry:
    rel: str
    """Workspace-relative POSIX path (str; undecodable bytes kept with surrogateescape)."""
    mode: str
    """Git mode: ``100644``, ``100755`` or ``120000`` (symlink)."""
    size: int


@dataclass
class Snapshot:
    entries: dict[str, Entry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What was left out and why (special files, too-large files, nested repositories), names in their shown form
    (``infra.names``)."""
    left_out: set[str] = field(default_factory=set)
    """The paths the notes name (process form): left out, so a tracked one among them is not a deletion."""


def is_git_name(name: str) -> bool:
    """``.git`` and the spellings other file systems treat as it (``.GIT``, ``.git.``, ``git~1``)."""
    low = name.lower().rstrip(". ")
    return low == ".git" or low == "git~1"


def open_dir(root_fd: int, parts: list[str]) -> int:
    """An fd of the directory ``parts`` below ``root_fd``, never through a symlink (OSError otherwise)."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            nfd = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_entry(root_fd: int, entry: Entry, max_bytes: int) -> bytes:
    """The blob of ``entry`` as git would store it (file bytes, or a symlink's target), read without following
    any link. SnapshotRefused when it is no longer what the listing saw."""
    parts = entry.rel.split("/")
    try:
        dfd = open_dir(root_fd, parts[:-1])
    except OSError as e:
        raise SnapshotRefused(f"{shown(entry.rel)}: its directory changed while it was read ({e.strerror})") from None
    try:
        if entry.mode == "120000":
            try:
                return os.fsencode(os.readlink(parts[-1], dir_fd=dfd))
            except OSError as e:
                raise SnapshotRefused(f"{shown(entry.rel)}: the symlink changed while it was read "
                                      f"({e.strerror})") from None
        try:
            ffd = os.open(parts[-1], _FILE, dir_fd=dfd)
        except OSError as e:
            raise SnapshotRefused(f"{shown(entry.rel)}: changed while it was read ({e.strerror})") from None
        try:
            st = os.fstat(ffd)
            if not stat.S_ISREG(st.st_mode):
                raise SnapshotRefused(f"{shown(entry.rel)}: is no longer a regular file")
            chunks, total = [], 0
            while True:
                chunk = os.read(ffd, 1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise SnapshotRefused(f"{shown(entry.rel)}: grew past {max_bytes} bytes while it was read")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(ffd)
    finally:
        os.close(dfd)


IgnoreCheck = Callable[[Path, list[str]], set[str]]
"""(staging work tree holding the .gitignore files, paths) -> the paths git ignores (dirs end with '/')."""


def covered(path: str, entries: frozenset[str]) -> bool:
    """Whether ``path`` (a file, or ``dir/`` as :func:`scan` asks) is one of ``entries`` or lies below one of its
    ``dir/`` entries."""
    if path in entries:
        return True
    parts = path.removesuffix("/").split("/")
    return any("/".join(parts[:i]) + "/" in entries for i in range(1, len(parts)))


def scan(root: Path, tracked: set[str], ignored: IgnoreCheck, bounds: Bounds = Bounds(),
         keep: set[str] = frozenset()) -> Snapshot:
    """List the workspace ``root`` as git would add it (``git add -A``), without following links.

    ``tracked``: paths in the commit the workspace started from (never ignored; their directories are walked).
    ``keep``: tracked paths not to look into (submodules). ``ignored`` answers for untracked paths.
    """
    snap = Snapshot()
    tracked_dirs = {"/".join(p.split("/")[:i]) for p in tracked for i in range(1, p.count("/") + 1)}
    staging = Path(tempfile.mkdtemp(prefix="bosun-ignore-"))
    try:
        root_fd = os.open(os.path.realpath(root), _DIR)
    except OSError as e:
        shutil.rmtree(staging, ignore_errors=True)
        raise SnapshotRefused(f"workspace {root} cannot be opened ({e.strerror})") from None
    walk = _Walk(root_fd, snap, bounds, keep, staging)
    try:
        level: list[str] = [""]
        depth = 0
        while level:
            if depth > bounds.max_depth:
                raise SnapshotRefused(f"the workspace nests directories deeper than {bounds.max_depth} levels "
                                      f"(e.g. {shown(level[0])[:200]}); flatten it or delete the deep tree")
            found_dirs: list[str] = []
            found_files: list[tuple[str, str, int]] = []
            for rel_dir in level:
                walk.list_dir(rel_dir, found_dirs, found_files)
            untracked = [f"{d}/" for d in found_dirs if d not in tracked_dirs and d not in tracked]
            untracked += [f for f, _, _ in found_files if f not in tracked]
            skip = ignored(staging, untracked) if untracked else set()
            level = [d for d in found_dirs if f"{d}/" not in skip]
            walk.take([f for f in found_files if f[0] not in skip])
            depth += 1
    finally:
        os.close(root_fd)
        shutil.rmtree(staging, ignore_errors=True)
    return snap


class _Walk:
    """One scan's reading of the workspace, level by level, with its bounds counted across levels."""

    def __init__(self, root_fd: int, snap: Snapshot, bounds: Bounds, keep: set[str], staging: Path) -> None:
        self.root_fd, self.snap, self.bounds, self.keep, self.staging = root_fd, snap, bounds, keep, staging
        self.count = 0
        """Entries seen (not counting ignored directories' contents)."""
        self.total_bytes = 0
        """Bytes of the files taken."""

    def list_dir(self, rel_dir: str, found_dirs: list[str], found_files: list[tuple[str, str, int]]) -> None:
        """The entries of one directory: subdirectories and files (path, git mode, size) into the lists; nested git
        directories, special files and unreadable ignore files noted; each directory's .gitignore staged."""
        snap, bounds = self.snap, self.bounds
        parts = rel_dir.split("/") if rel_dir else []
        try:
            dfd = open_dir(self.root_fd, parts)
        except OSError as e:
            raise SnapshotRefused(f"{shown(rel_dir) or '.'}: cannot be opened as a directory ({_why(e)})") from None
        try:
            with os.scandir(dfd) as it:
                for de in it:
                    self.count += 1
                    if self.count > bounds.max_entries:
                        raise SnapshotRefused(f"the workspace holds more than {bounds.max_entries} files and "
                                              "directories (not counting ignored ones); delete what is not part of "
                                              "the change")
                    name = de.name
                    rel = f"{rel_dir}/{name}" if rel_dir else name
                    if is_git_name(name):
                        if rel_dir:
                            snap.notes.append(f"{shown(rel)}: a nested git directory, not imported")
                            snap.left_out.add(rel)
                        continue
                    if rel in self.keep:
                        continue
                    try:
                        st = de.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        found_dirs.append(rel)
                    elif stat.S_ISLNK(st.st_mode):
                        found_files.append((rel, "120000", st.st_size))
                    elif stat.S_ISREG(st.st_mode):
                        found_files.append((rel, "100755" if st.st_mode & stat.S_IXUSR else "100644", st.st_size))
                        if name == ".gitignore" and st.st_size <= 1 << 20 and \
                                not _stage_gitignore(dfd, name, self.staging / rel):
                            snap.notes.append(f"{shown(rel)}: could not be read for its ignore rules")
                    else:
                        snap.notes.append(f"{shown(rel)}: {_kind(st.st_mode)}, not imported")
                        snap.left_out.add(rel)
        finally:
            os.close(dfd)

    def take(self, files: list[tuple[str, str, int]]) -> None:
        """The files git would add, within the bounds: one too large is left out and noted; too many bytes in all
        refuses the scan."""
        bounds = self.bounds
        for rel, mode, size in files:
            if size > bounds.max_file_bytes:
                self.snap.notes.append(f"{shown(rel)}: {size} bytes, larger than {bounds.max_file_bytes}; "
                                       "not imported")
                self.snap.left_out.add(rel)
                continue
            self.total_bytes += size
            if self.total_bytes > bounds.max_total_bytes:
                raise SnapshotRefused(f"the workspace's files add up to more than {bounds.max_total_bytes} bytes; "
                                      "delete what is not part of the change")
            self.snap.entries[rel] = Entry(rel, mode, size)


def _stage_gitignore(dfd: int, name: str, dest: Path) -> bool:
    """Copy one .gitignore (a regular file, read without following links) into the staging tree."""
    try:
        fd = os.open(name, _FILE, dir_fd=dfd)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = os.read(fd, 1 << 20)
    finally:
        os.close(fd)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    except OSError:
        return False
    return True


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    return "not a regular file"


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "it is a symlink, which is never followed"
    return e.strerror or str(e)
