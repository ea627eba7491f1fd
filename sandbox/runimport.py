"""Importing an agent's work into the task's repository as data: :mod:`sandbox.snapshot` reads the run workspace
(no links followed, bounded) and ``git fast-import`` writes what changed as one commit on ``refs/bosun/runs/NAME``.
Host git never runs in the workspace: ignore rules and ``.gitattributes`` conversions are applied in a private staging
tree (docs/THREAT-MODEL.md, "Host git"). A mixin of :class:`sandbox.hostrepo.TaskRepo`."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from infra.errors import UnexpectedEnvironment
from infra.names import shown
from sandbox import snapshot
from sandbox.hostgit import check_object_id, git, out, quote_path
from sandbox.hostgit import clean_env as git_env


@dataclass
class Imported:
    """What importing a run workspace gave."""

    commit: str | None
    """The new commit (parent: the commit the run started from), or None when nothing changed."""
    files: list[str] = field(default_factory=list)
    """The changed paths, in their shown form (``infra.names``), as every name this module hands out."""
    notes: list[str] = field(default_factory=list)
    """What was left out and why (special files, too-large files, nested repositories)."""


class RunImport:
    """:meth:`import_run` and its steps, on the task repository's ``git_dir`` and ``run_dir``."""

    git_dir: Path
    run_dir: Callable[[str], Path]

    def _tracked(self, commit: str) -> dict[str, tuple[str, str]]:
        listing = git(self.git_dir, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
        tracked: dict[str, tuple[str, str]] = {}
        for rec in listing.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            mode, _kind, oid = meta.decode().split()
            tracked[os.fsdecode(path)] = (mode, oid)
        return tracked

    def _ignored(self, staging: Path, paths: list[str]) -> set[str]:
        data = b"".join(os.fsencode(p) + b"\0" for p in paths)
        proc = git(self.git_dir, "check-ignore", "--no-index", "-z", "--stdin", work_tree=staging, input=data,
                   check=False)
        if proc.returncode not in (0, 1):
            raise UnexpectedEnvironment(f"git check-ignore failed: {proc.stderr.decode(errors='replace')[:300]}")
        return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}

    def _ignoring(self, unignored: Collection[str]) -> snapshot.IgnoreCheck:
        """git's ignore rules, and besides them the environment's seed entries git does not ignore (exact paths,
        or ``dir/`` for everything below): the snapshot asks only about untracked paths, so no tracked file is
        ever left out by them."""
        entries = frozenset(unignored)
        if not entries:
            return self._ignored

        def check(staging: Path, paths: list[str]) -> set[str]:
            seeded = {p for p in paths if snapshot.covered(p, entries)}
            rest = [p for p in paths if p not in seeded]
            return seeded | (self._ignored(staging, rest) if rest else set())

        return check

    def import_run(self, name: str, parent: str, message: str, bounds: snapshot.Bounds = snapshot.Bounds(),
                   unignored: Collection[str] = ()) -> Imported:
        """Commit what the run workspace ``NAME`` holds, read as data, on ``refs/bosun/runs/NAME`` (parent:
        ``parent``). Returns the commit (None when nothing changed), the changed files and notes. ``unignored``:
        the environment's seed entries git does not ignore (``EnvRecord.seed_unignored``), left out as ignored."""
        check_object_id(parent)
        ws = self.run_dir(name)
        if not ws.is_dir():
            raise UnexpectedEnvironment(f"run workspace {ws} is gone; its work cannot be imported")
        tracked = self._tracked(parent)
        keep = {p for p, (mode, _) in tracked.items() if mode == "160000"}
        snap = snapshot.scan(ws, set(tracked), self._ignoring(unignored), bounds, keep=keep)
        left_out = snap.left_out
        algo = hashlib.sha256 if len(parent) == 64 else hashlib.sha1
        root_fd = os.open(os.path.realpath(ws), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        changed: list[tuple[str, str, bytes | str]] = []
        attributes: dict[str, bytes] = {}
        try:
            for rel, entry in sorted(snap.entries.items()):
                data = snapshot.read_entry(root_fd, entry, bounds.max_file_bytes)
                if rel.rsplit("/", 1)[-1] == ".gitattributes" and entry.mode != "120000":
                    attributes[rel] = data
                oid = algo(b"blob %d\0" % len(data) + data).hexdigest()
                if tracked.get(rel) != (entry.mode, oid):
                    changed.append((rel, entry.mode, data))
        finally:
            os.close(root_fd)
        if attributes and changed:
            changed = self._as_added(changed, attributes, tracked)
        deleted = sorted(p for p, (mode, _) in tracked.items()
                         if mode != "160000" and p not in snap.entries and p not in left_out)
        if not changed and not deleted:
            return Imported(commit=None, notes=snap.notes)
        ref = f"refs/bosun/runs/{name}"
        self._fast_import(ref, parent, message, deleted, changed)
        commit = out(self.git_dir, "rev-parse", "--verify", f"{ref}^{{commit}}")
        return Imported(commit=commit, files=[shown(r) for r in sorted({r for r, _, _ in changed} | set(deleted))],
                        notes=snap.notes)

    def _as_added(self, changed: list[tuple[str, str, bytes | str]], attributes: dict[str, bytes],
                  tracked: dict[str, tuple[str, str]]) -> list[tuple[str, str, bytes | str]]:
        """``changed`` as ``git add`` takes it: each file converted as the workspace's ``.gitattributes`` say (git's
        built-in conversions: what a checkout wrote with ``eol=crlf`` is LF again in the blob; no filter driver is
        configured here, so none runs) and written to the repository, its blob id in place of its bytes; one then
        equal to the tracked blob is left out. git reads a private staging tree holding the attribute files and
        the changed files' bytes, never the workspace. When git refuses (a ``working-tree-encoding`` the bytes are
        not in), every file is taken as it is."""
        files = [(rel, data) for rel, mode, data in changed  # (a name with a line break: taken as it is)
                 if mode != "120000" and isinstance(data, bytes) and "\n" not in rel]
        if not files:
            return changed
        staging = Path(tempfile.mkdtemp(prefix="bosun-attributes-"))
        try:
            for rel, data in [*attributes.items(), *files]:
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).write_bytes(data)
            proc = git(self.git_dir, "hash-object", "-w", "--stdin-paths", work_tree=staging, cwd=staging,
                       input=b"".join(os.fsencode(rel) + b"\n" for rel, _data in files), check=False)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        oids = proc.stdout.decode().split()
        if proc.returncode != 0 or len(oids) != len(files):
            return changed
        added = dict(zip((rel for rel, _data in files), oids, strict=True))
        return [(rel, mode, added.get(rel, data)) for rel, mode, data in changed
                if tracked.get(rel) != (mode, added.get(rel))]

    def _fast_import(self, ref: str, parent: str, message: str, deleted: list[str],
                     changed: list[tuple[str, str, bytes | str]]) -> None:
        """One commit on ``ref``: ``parent``'s tree with ``deleted`` removed and ``changed`` written (bytes, or the
        id of a blob the repository has)."""
        msg = message.encode("utf-8", "replace")
        argv = ["git", f"--git-dir={self.git_dir}", "fast-import", "--quiet", "--force", "--done", "--date-format=now"]
        with tempfile.TemporaryFile() as errf:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errf,
                                    env=git_env(), cwd="/")
            try:
                w = proc.stdin
                assert w is not None
                w.write(b"commit %s\ncommitter bosun <bosun@localhost> now\ndata %d\n%s\nfrom %s\n"
                        % (ref.encode(), len(msg), msg, parent.encode()))
                for rel in deleted:
                    w.write(b"D " + quote_path(rel) + b"\n")
                for rel, mode, data in changed:
                    if isinstance(data, str):  # a blob already in the repository
                        w.write(b"M %s %s %s\n" % (mode.encode(), data.encode(), quote_path(rel)))
                        continue
                    w.write(b"M %s inline %s\ndata %d\n" % (mode.encode(), quote_path(rel), len(data)))
                    w.write(data)
                    w.write(b"\n")
                w.write(b"done\n")
                w.close()
                proc.wait(timeout=600)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            errf.seek(0)
            err = errf.read()
        if proc.returncode != 0:
            raise UnexpectedEnvironment(f"git fast-import failed: {err.decode(errors='replace').strip()[-500:]}")
