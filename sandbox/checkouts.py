"""Checkout templates: a workspace file system that starts as a copy of one already checked out.

Checking a large tree out costs more than most of an evaluation's other steps: Django's 6,500 files take 0.4 s
or more to write into a fresh workspace file system (sandbox/diskquota.py) and as long again to chown. The
instances of one SWE-bench version sit close together in history, so a template -- an unmounted workspace image
holding the checkout of one commit of a source (the version's ``environment_setup_commit``), files owned by the
sandbox user, its git index saved after the files (so that it is not "racily clean") -- is copied block for block
(inode numbers and times kept: the index stays valid), and ``git checkout`` then writes only the files that
differ: Django 3.2.2 -> 3.2.3 takes 0.18 s instead of 0.5 s.

Templates are made by the host, from the worker's store of the source (sandbox/hostrepo.py: ``SourceStore``),
in directories no sandbox ever sees; an instance gets a copy, which the host moves to the instance's commit
before its sandbox runs anything. They live beside the store (``<store>.templates/<commit>-<uid>.img`` and its
``.json``: the file system's size and inodes, which must cover the instance's; made under
``<store>.templates.lock``); at most
``TEMPLATES_PER_SOURCE`` per source are kept, the least recently used removed first.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
import time
from pathlib import Path

from sandbox import diskquota
from sandbox.base import SEED_EXCLUDE
from sandbox.caches import file_lock
from sandbox.hostgit import check_object_id, git

CHECKOUT_CONFIG = (f"checkout.workers={min(4, os.cpu_count() or 1)}", "checkout.thresholdForParallelism=1000")
"""A large tree (1,000 files or more) is checked out by parallel workers: Django's 6,500 files take about a
third less time in a workspace's own file system on this 2-core machine; a small one stays sequential."""

TEMPLATES_PER_SOURCE = 3
MARK = "bosun-template"
"""A file in a template's scratch ``.git``: the next checkout moves it from the template's commit (removed then)."""
RACY_S = 1.1
"""How long after writing the files the index is saved again: git trusts a file's stat data only when the file is
older than the index (by a whole second, where git compares seconds)."""


def borrowing_scratch(dest: Path, objects_git: Path, shallow: Path | None) -> Path:
    """A scratch ``.git`` in ``dest`` (made by the host) that borrows ``objects_git``'s objects, with the shallow
    list ``shallow`` (when the objects are a shallow fetch), a hooks folder and bosun's identity. Returns it."""
    scratch = dest / ".git"
    git(None, "init", "--quiet", str(dest))
    (scratch / "objects" / "info" / "alternates").write_text(f"{objects_git / 'objects'}\n")
    if shallow is not None:
        shutil.copyfile(shallow, scratch / "shallow")
    finish_scratch(scratch)
    return scratch


def finish_scratch(scratch: Path) -> None:
    """A hooks folder, bosun's identity, and the exclude file of the environment a sandbox may have (its seed's files
    git does not ignore, environments/models.py; a sandbox without one has no such file, which git
    tolerates)."""
    (scratch / "hooks").mkdir(exist_ok=True)
    with open(scratch / "config", "a", encoding="utf-8") as f:
        f.write(f"[user]\n\tname = bosun agent\n\temail = agent@bosun.invalid\n"
                f"[core]\n\texcludesFile = {SEED_EXCLUDE}\n")


def stale_builds(folder: Path) -> list[Path]:
    """The template builds in ``folder`` that a crash cut short (each possibly a mounted workspace file system), as
    ``diskquota.remove`` takes them."""
    return [b.with_suffix("") if b.suffix == ".img" else b for b in folder.glob(".build-*")]


class CheckoutTemplates:
    """The checkout templates of one source's store (see the module docstring)."""

    def __init__(self, store_git: Path) -> None:
        self.store_git = Path(store_git)
        self.dir = self.store_git.with_suffix(".templates")
        self.lock = self.dir.with_name(self.dir.name + ".lock")
        """Held while a template is made, and while the folder is removed (beside it: removing the folder never
        removes a lock someone waits on)."""

    def _name(self, commit: str, owner: tuple[int, int] | None) -> str:
        return f"{check_object_id(commit)}-{owner[0] if owner else os.geteuid()}"

    def find(self, commit: str, owner: tuple[int, int] | None, size_mb: int, inodes: int, *,
             use: bool = True) -> Path | None:
        """The template image of ``commit`` for files of ``owner``, if there is one with room for ``size_mb`` and
        ``inodes`` (``use``: marked as just used); None otherwise."""
        name = self._name(commit, owner)
        image = self.dir / f"{name}.img"
        try:
            meta = json.loads((self.dir / f"{name}.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or not image.is_file():
            return None
        if int(meta.get("size_mb", 0)) < size_mb or int(meta.get("inodes", 0)) < inodes:
            return None
        if use:
            with contextlib.suppress(OSError):
                os.utime(image)
        return image

    def build(self, commit: str, owner: tuple[int, int] | None, size_mb: int, inodes: int) -> bool:
        """Make the template of ``commit`` (files owned by ``owner``) with room for a quarter more than
        ``size_mb`` and ``inodes``, unless it exists; then keep only the newest TEMPLATES_PER_SOURCE. True if
        one was made. A template half-made by a crash is never used (its image is renamed into place last)."""
        name = self._name(commit, owner)
        size_mb, inodes = size_mb + size_mb // 4 + 64, inodes + inodes // 4
        with file_lock(self.lock):
            self.dir.mkdir(mode=0o700, exist_ok=True)
            if self.find(commit, owner, 0, 0, use=False) is not None:
                return False
            for stale in stale_builds(self.dir):  # (none runs: the lock is ours)
                diskquota.remove(stale)
            work = self.dir / f".build-{secrets.token_hex(6)}"
            try:
                diskquota.create(work, size_mb=size_mb, inodes=inodes, owner=owner)
                shallow = self.store_git / "shallow"
                scratch = borrowing_scratch(work, self.store_git, shallow if shallow.exists() else None)
                git(scratch, "checkout", "--quiet", "--detach", check_object_id(commit), work_tree=work,
                    config=(*CHECKOUT_CONFIG, "core.logAllRefUpdates=false"), timeout_s=1800)
                if owner is not None and os.geteuid() == 0:
                    chown_tree(work, *owner)
                time.sleep(RACY_S)
                git(scratch, "update-index", "-q", "--refresh", work_tree=work, check=False)
                (scratch / MARK).write_text(commit + "\n")
                image = diskquota.unmount(work)
                (self.dir / f"{name}.json").write_text(json.dumps({"size_mb": size_mb, "inodes": inodes}))
                image.rename(self.dir / f"{name}.img")
            finally:
                diskquota.remove(work)
            self._evict()
        return True

    def _evict(self) -> None:
        images = sorted(self.dir.glob("*.img"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in images[TEMPLATES_PER_SOURCE:]:
            old.unlink(missing_ok=True)
            old.with_suffix(".json").unlink(missing_ok=True)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """chown a tree the host just made (no symlink is followed); what is owned already is left alone, so that
    its change time, which a git index records, stays."""
    _own(str(root), uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            _own(os.path.join(dirpath, name), uid, gid)


def chown_paths(root: Path, paths: list[str], uid: int, gid: int) -> None:
    """chown the files ``paths`` (relative to ``root``, as git names them; gone ones skipped) and the folders
    holding them, up to ``root``, where they are not owned already. No symlink is followed, not even as a
    folder on the way: a path below a symlink (a folder of the template's commit that is a link at the
    instance's) is left alone, and a name with an empty, ``.`` or ``..`` part is skipped."""
    todo: set[tuple[str, ...]] = set()
    for rel in paths:
        parts = tuple(rel.split("/"))
        if any(part in ("", ".", "..") for part in parts):
            continue
        todo.update(parts[:i] for i in range(1, len(parts) + 1))
    links: set[tuple[str, ...]] = set()
    for parts in sorted(todo, key=len):  # a folder before what it holds
        if any(parts[:i] in links for i in range(1, len(parts))):
            continue
        path = os.path.join(root, *parts)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            links.add(parts)
        _own(path, uid, gid, st)


def _own(path: str, uid: int, gid: int, st: os.stat_result | None = None) -> None:
    """chown ``path`` itself (never what a symlink points to) unless it is owned already (``st``: its lstat)."""
    st = st or os.lstat(path)
    if st.st_uid != uid or st.st_gid != gid:
        os.chown(path, uid, gid, follow_symlinks=False)
