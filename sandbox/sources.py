"""An evaluation's sources on the worker host: one host-owned bare repository per source (a path or URL) holding
the commits its instances need, fetched at depth 1 and shared by every instance of every evaluation
(``<workspaces>/.sources/<hash>.git``), and what ``bosun eval sources`` lists and prunes. Never bound into a
sandbox: a sandbox sees only its own instance's commits (:meth:`sandbox.hostrepo.TaskRepo.prepare_commits`, which
copies them out of here with :func:`pack`). The rules of host git: docs/THREAT-MODEL.md, "Host git".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from infra.errors import ConfigError
from sandbox import diskquota
from sandbox.caches import KEEP_RECENT_S, dir_size_mb, file_lock, prunable
from sandbox.checkouts import CheckoutTemplates, stale_builds
from sandbox.hostgit import TRANSPORTS, check_object_id, git, out

log = logging.getLogger(__name__)

SOURCES = ".sources"
"""Under the workspaces directory: the worker's :class:`SourceStore` of each evaluation source."""
STORE_MAX_PACKS = 64
"""A source store with more packs than this (one per fetch) is repacked into one."""


class SourceStore:
    """The commits an evaluation's instances need from one source (a path or URL), fetched at depth 1 into one
    host-owned bare repository per source on this worker (``<workspaces>/.sources/<hash>.git``) and shared by every
    instance of every evaluation: an instance whose commit is there already fetches nothing, and one near it
    fetches only the difference. Never bound into a sandbox: a sandbox sees only its own instance's commit
    (:meth:`TaskRepo.prepare_commits`).

    Crash-safe: the store is initialised in a scratch directory and moved in place whole; a commit counts as held
    only once its ref ``refs/bosun/keep/<id>`` exists (fetch writes the ref last), so a fetch cut short is simply
    done again. Fetches are serialized by a lock file; readers need none (git adds objects atomically, and a
    reader re-scans the packs when a repack removed one)."""

    def __init__(self, root: Path, source: str) -> None:
        self.source = source
        self.git_dir = Path(root) / SOURCES / f"{hashlib.sha256(source.encode()).hexdigest()[:24]}.git"

    @property
    def marker(self) -> Path:
        """Its source (JSON), written when the store is made; its time is the store's last use."""
        return self.git_dir / "bosun-store"

    def _used(self) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.marker)

    def held(self) -> set[str]:
        """The commits the store holds (GitError when git cannot read it)."""
        if not self.marker.exists():
            return set()
        return set(out(self.git_dir, "for-each-ref", "--format=%(objectname)", "refs/bosun/keep/").split())

    def missing(self, commits: list[str]) -> list[str]:
        if not self.marker.exists():
            return list(commits)
        held = self.held()
        return [c for c in commits if check_object_id(c) not in held]

    def ensure(self, commits: list[str]) -> None:
        """Fetch those of ``commits`` the store lacks (ConfigError when the source does not have them). Marks the
        store used (``bosun eval sources --prune`` goes by that)."""
        if not self.missing(commits):
            self._used()
            return
        if self.source.startswith("-"):
            raise ConfigError(f"repository {self.source!r}: a path or URL may not start with '-'")
        with file_lock(self.git_dir.with_suffix(".lock")):
            if not self.marker.exists():
                self._init()
            need = self.missing(commits)
            self._used()
            if not need:
                return
            fetched = git(self.git_dir, "fetch", "--quiet", "--no-tags", "--depth", "1", "--", self.source,
                          *(f"{c}:refs/bosun/keep/{c}" for c in need), check=False, protocols=TRANSPORTS,
                          timeout_s=1800)
            if fetched.returncode != 0:
                why = fetched.stderr.decode("utf-8", "replace").strip()[-300:] or "no such commit"
                raise ConfigError(f"cannot fetch {', '.join(c[:12] for c in need)} from {self.source}: {why}")
            git(self.git_dir, "pack-refs", "--all", check=False)
            if len(list((self.git_dir / "objects" / "pack").glob("*.pack"))) > STORE_MAX_PACKS:
                repacked = git(self.git_dir, "repack", "-a", "-d", "-q", check=False, timeout_s=1800)
                if repacked.returncode != 0:  # many packs only cost lookups: not worth failing an instance for
                    log.warning("repacking %s failed: %s", self.git_dir,
                                repacked.stderr.decode("utf-8", "replace").strip()[-300:])

    def last_used(self) -> float:
        """When a fetch (ahead, or an instance's) last used the store; 0.0 when there is none."""
        try:
            return self.marker.stat().st_mtime
        except OSError:
            return 0.0

    def remove(self, *, unless_used_after: float = 0.0) -> bool:
        """Remove the store and its checkout templates, unless it was used after ``unless_used_after`` (checked
        under its lock, which a fetch holds: one that began since the caller looked keeps it). A template being
        made finishes first (its lock). Moved aside first, so a crash half-way leaves no half store
        (``prune_sources`` removes what is left). False when kept."""
        templates = CheckoutTemplates(self.git_dir)
        with file_lock(self.git_dir.with_suffix(".lock")), file_lock(templates.lock):
            if self.last_used() > unless_used_after:
                return False
            for path in (self.git_dir, templates.dir):
                if path.exists():
                    trash = path.with_name(f"{TRASH}{secrets.token_hex(4)}-{path.name}")
                    path.rename(trash)
                    _remove_trash(trash)
        return True

    def _init(self) -> None:
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.git_dir.parent, prefix=".init-"))
        try:
            git(None, "init", "--quiet", "--bare", str(tmp))
            (tmp / "bosun-store").write_text(json.dumps({"source": self.source}))
            os.chmod(tmp, 0o700)
            shutil.rmtree(self.git_dir, ignore_errors=True)  # half-made by a crash (no marker)
            tmp.rename(self.git_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


TRASH = ".trash-"
"""Under ``.sources``: a store or its templates being removed."""


def _remove_trash(path: Path) -> None:
    """Delete a store or templates folder moved aside: a template build cut short by a crash may still be a
    mounted workspace file system, which is unmounted first."""
    for build in stale_builds(path):
        with contextlib.suppress(Exception):
            diskquota.remove(build)
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class StoredSource:
    """A source store on this worker (``bosun eval sources``)."""
    store: SourceStore
    commits: int
    """Commits held."""
    size_mb: float
    """The store and its checkout templates."""
    last_used: float
    """When an instance or an evaluation's fetch ahead last used it (epoch seconds)."""

    @property
    def source(self) -> str:
        return self.store.source


def stored_sources(root: Path) -> list[StoredSource]:
    """The source stores under the workspaces directory ``root``, least recently used first. The marker is bosun's
    own file; one that cannot be read (a crash while the store was made) is skipped."""
    found = []
    for git_dir in sorted((Path(root) / SOURCES).glob("*.git")):
        try:
            source = json.loads((git_dir / "bosun-store").read_text())["source"]
        except PermissionError:
            raise ConfigError(f"cannot read {git_dir}: run this as the user the worker runs as") from None
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(source, str):
            continue
        store = SourceStore(Path(root), source)
        if store.git_dir != git_dir:  # (a marker that does not name this store's source)
            continue
        commits = 0
        with contextlib.suppress(ConfigError):  # (git cannot read it: a store broken by hand counts none)
            commits = len(store.held())
        size = dir_size_mb(git_dir) + dir_size_mb(CheckoutTemplates(git_dir).dir)
        found.append(StoredSource(store=store, commits=commits, size_mb=round(size, 1), last_used=store.last_used()))
    return sorted(found, key=lambda s: s.last_used)


def prune_sources(root: Path, *, older_than_days: float | None = None, max_gb: float | None = None,
                  dry_run: bool = False) -> dict:
    """Remove the source stores (and their checkout templates) not used for ``older_than_days`` and the least
    recently used beyond ``max_gb`` in all (0 or None: no size bound), never one used within the last hour, nor
    one used since it was listed; and what a crash left (stores being removed or made half-way, templates whose
    store is gone), an hour on. Returns what went: ``{"sources": [...], "freed_mb": ...}``. Another evaluation
    needing a removed store fetches its commits again."""
    now = time.time()
    base = Path(root) / SOURCES
    if not dry_run and base.is_dir():
        # what a crash left: folders moved aside, stores made half-way, templates whose store is gone
        orphans = [t for t in base.glob("*.templates") if not t.with_suffix(".git").exists()]
        for left in [*base.glob(f"{TRASH}*"), *base.glob(".init-*"), *orphans]:
            with contextlib.suppress(OSError):
                if now - left.stat().st_mtime > KEEP_RECENT_S:
                    _remove_trash(left)
    stores = stored_sources(root)
    total = sum(s.size_mb for s in stores)
    out: dict = {"sources": [], "freed_mb": 0.0}
    for s in stores:
        if not prunable(s.last_used, total, now=now, older_than_days=older_than_days, max_gb=max_gb):
            continue
        if not dry_run and not s.store.remove(unless_used_after=s.last_used):
            continue  # (used since it was listed)
        out["sources"].append(s.source)
        out["freed_mb"] += s.size_mb
        total -= s.size_mb
    out["freed_mb"] = round(out["freed_mb"], 1)
    return out


def entries(git_dir: Path, commit: str) -> Iterator[tuple[str, str, str]]:
    """(kind, object id, path) of every entry of ``commit``'s tree, folders included."""
    for rec in git(git_dir, "ls-tree", "-r", "-t", "-z", "--full-tree", commit).stdout.split(b"\0"):
        meta, _, path = rec.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3:
            yield fields[1].decode(), fields[2].decode(), os.fsdecode(path)


def pack(source: Path, dest: Path, ids: list[str]) -> None:
    """Copy the objects ``ids`` of the repository ``source`` into the repository ``dest``, as one pack."""
    git(source, "pack-objects", "--quiet", str(Path(dest).resolve() / "objects" / "pack" / "pack"),
        input="".join(i + "\n" for i in dict.fromkeys(ids)))
