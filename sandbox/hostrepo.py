"""A task's repository on the worker host: the authoritative one, host-owned, never writable from a sandbox.

Layout under the workspaces directory, for a task with key ``K`` (its workflow id made file-safe)::

    K.git/            the authoritative repository (bare). No sandbox ever sees it, except its ``objects``
                      directory, bound read-only into a sandbox so git works in there (an evaluation's
                      instance: only its commits' trees and the files it lends, :meth:`TaskRepo.expose`)
    K.runs/NAME/      one fresh workspace per agent run and per test run, checked out by the host from a commit
                      (optionally its own loop-mounted file system: sandbox/diskquota.py)
    K.runs/.state/    which commit each run workspace was made from (host-only bookkeeping)
    K/                a plain checkout of the result branch, made at delivery for people to look at
    .sources/H.git    an evaluation source's commits, shared by its instances (sandbox/sources.py; host-only)

The rules that keep the host safe (docs/THREAT-MODEL.md, "Host git"):

- Host git runs only on ``K.git``, on an evaluation source's store and on directories the host just made,
  never in a directory a sandbox has written: a run workspace is checked out before anything runs in its
  sandbox (an evaluation starts the sandbox while the checkout runs: its tool server idles until then) and never
  touched by host git again.
- A run workspace gets its own scratch ``.git`` (a ``--shared`` clone whose object store is the read-only
  ``/run/bosun/objects`` inside the sandbox): the agent may do anything with it; the host never reads it.
- An agent's work comes back as data: :mod:`sandbox.snapshot` reads the files (no links followed, bounded), and
  ``git fast-import`` writes them into ``K.git`` as a commit on ``refs/bosun/runs/NAME``. Merges are
  ``git merge-tree --write-tree`` in ``K.git`` (no work tree at all).
- Nothing is hard-linked between workspaces, the authoritative repository, or the user's repository.
- File names are bytes to git and to the import; the names this module hands out (changed files, conflicts) are
  in their shown form (``infra.names``: one that is not UTF-8 quoted as git quotes it), so they cross activities.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infra.artifacts import write_json_atomically
from infra.errors import ConfigError, UnexpectedEnvironment
from infra.names import shown
from sandbox import diskquota
from sandbox.base import OBJECTS_IN_SANDBOX
from sandbox.checkouts import (
    CHECKOUT_CONFIG,
    MARK,
    CheckoutTemplates,
    borrowing_scratch,
    chown_paths,
    chown_tree,
    finish_scratch,
)
from sandbox.delivery import Delivery
from sandbox.hostgit import (
    TRANSPORTS,
    check_object_id,
    check_ref,
    check_revision,
    git,
    out,
)
from sandbox.runimport import RunImport
from sandbox.sources import SourceStore, entries, pack

log = logging.getLogger(__name__)

CKPT = "refs/bosun/ckpt"
"""Refs that keep each checkpoint's tips (:meth:`TaskRepo.checkpoint`)."""
RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,119}$")


def check_source_repo(repo: str) -> Path:
    """Validate a --repo argument: an existing directory at the top of a git work tree with at least one commit.
    (The user's own repository: the only one whose config git reads here.)"""
    path = Path(repo).expanduser()
    if not path.exists():
        raise ConfigError(f"--repo {repo}: no such directory")
    if not path.is_dir():
        raise ConfigError(f"--repo {repo}: not a directory")
    path = path.resolve()
    proc = git(None, "-C", str(path), "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise ConfigError(f"--repo {repo}: not a git repository (run `git init && git add -A && git commit -m init` "
                          "there first)")
    top = Path(os.fsdecode(proc.stdout.strip())).resolve()
    if top != path:
        raise ConfigError(f"--repo {repo}: is inside the git repository {top}; pass the repository's top folder")
    if git(None, "-C", str(path), "rev-parse", "--verify", "-q", "HEAD", check=False).returncode != 0:
        raise ConfigError(f"--repo {repo}: the repository has no commits yet; commit something first")
    return path


def task_key(workflow_id: str) -> str:
    """A workflow id made safe as one file name."""
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", workflow_id).lstrip(".-") or "task"
    if key != workflow_id:  # keep distinct ids distinct after the substitution
        key = f"{key[:80]}-{hashlib.sha256(workflow_id.encode()).hexdigest()[:10]}"
    return key[:120]


@dataclass
class Merged:
    merged: bool
    conflicts: list[str]
    """Conflicting paths, shown (``infra.names``)."""
    head: str


class TaskRepo(RunImport, Delivery):
    """The authoritative repository of one task and its run workspaces (see the module docstring; importing a
    run's work: :mod:`sandbox.runimport`; delivery: :mod:`sandbox.delivery`)."""

    def __init__(self, root: Path, workflow_id: str) -> None:
        self.root = Path(root)
        self.workflow_id = workflow_id
        self.key = task_key(workflow_id)
        self.git_dir = self.root / f"{self.key}.git"
        self.runs = self.root / f"{self.key}.runs"
        self.view = self.root / self.key

    # -- the authoritative repository ----------------------------------------------------------------------

    def _meta(self) -> dict | None:
        try:
            return json.loads((self.git_dir / "bosun.json").read_text())
        except (OSError, ValueError):
            return None

    def prepared(self) -> dict | None:
        """What ``prepare`` recorded (base commit, source, ref), or None before it ran."""
        return self._meta()

    def prepare(self, source: str, ref: str) -> str:
        """Clone ``source`` (a path or URL) into the authoritative repository and resolve ``ref``; returns the
        base commit. Idempotent: a prepared repository is kept."""
        check_revision(ref, "ref")

        def fill(tmp: Path) -> dict:
            git(None, "clone", "--bare", "--no-hardlinks", "--quiet", "--", source, str(tmp), protocols=TRANSPORTS)
            return {"base": self._resolve(tmp, ref), "source": source, "ref": ref}
        return self._make(source, ".clone-", fill)

    def prepare_commits(self, source: str, commits: list[str]) -> str:
        """The authoritative repository of ``commits`` (full object ids) of ``source`` (a path or URL), each kept
        by a branch ``bosun/commit-N``; returns the first. For an evaluation: an instance needs its base commit (and
        its environment's setup commit), not the history -- a full copy of a large repository per instance would
        cost minutes and gigabytes.

        The commits' objects are fetched (at depth 1, once) into the worker's :class:`SourceStore` of ``source``,
        shared by every instance of every evaluation; the host reads them there (:attr:`objects_git`). This
        repository holds only what a sandbox's git may read: the commits and their trees (:meth:`expose` adds
        files). Idempotent."""
        wanted = list(dict.fromkeys(check_object_id(c) for c in commits))
        store = SourceStore(self.root, source)
        store.ensure(wanted)  # (a repository made before too: the store may have been pruned since)

        def fill(tmp: Path) -> dict:
            git(None, "init", "--quiet", "--bare", str(tmp))
            ids = list(wanted)
            for commit in wanted:
                ids.append(out(store.git_dir, "rev-parse", f"{commit}^{{tree}}"))
                ids += [oid for kind, oid, _ in entries(store.git_dir, commit) if kind == "tree"]
            pack(store.git_dir, tmp, ids)
            (tmp / "shallow").write_text("".join(c + "\n" for c in wanted))
            for n, commit in enumerate(wanted):
                git(tmp, "update-ref", f"refs/heads/bosun/commit-{n}", commit)
            return {"base": wanted[0], "source": source, "ref": wanted[0], "commits": wanted,
                    "objects_from": str(store.git_dir)}
        return self._make(source, ".fetch-", fill)

    @property
    def objects_git(self) -> Path:
        """The repository whose objects the host reads for this task: the shared :class:`SourceStore` of an
        evaluation's instance (:meth:`prepare_commits`), else the authoritative repository itself."""
        meta = self._meta() or {}
        return Path(meta["objects_from"]) if meta.get("objects_from") else self.git_dir

    def expose(self, commit: str, paths: list[str], *, everything: bool = False) -> None:
        """Let a sandbox's git read the files ``paths`` name at ``commit`` too (``everything``: all its files),
        when this repository holds only the trees (:meth:`prepare_commits`): an evaluation resets the files its
        test patch touches with ``git checkout BASE -- FILES`` in the sandbox, and a rebuild may read the commit
        with git. The names are matched as git matches a pathspec there (the name itself, a folder's files, and
        ``* ? [`` patterns), so every file that command can reach is lent; all are files of ``commit``."""
        source = self.objects_git
        if source == self.git_dir:
            return
        names = [p.rstrip("/") for p in paths if p and not p.startswith("/") and ".." not in p.split("/")]
        if not names and not everything:
            return
        patterns = [p for p in names if any(c in p for c in "*?[\\")]
        blobs = [oid for kind, oid, path in entries(source, check_object_id(commit)) if kind == "blob" and (
            everything or any(path == n or path.startswith(n + "/") for n in names)
            or any(fnmatch.fnmatchcase(path, p) for p in patterns))]
        if blobs:
            pack(source, self.git_dir, blobs)

    def _make(self, source: str, prefix: str, fill: Callable[[Path], dict]) -> str:
        """The authoritative repository, made in a scratch directory by ``fill`` (which returns what is recorded:
        the base commit, the source...) and moved in place whole: a crash leaves nothing half-made. A repository
        already made is kept. Returns the base commit."""
        meta = self._meta()
        if meta is not None:
            return meta["base"]
        if source.startswith("-"):
            raise ConfigError(f"repository {source!r}: a path or URL may not start with '-'")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=prefix))
        try:
            made = fill(tmp)
            (tmp / "bosun.json").write_text(json.dumps(made))
            if self.git_dir.exists():  # half-made by a crash before the marker was written
                shutil.rmtree(self.git_dir)
            tmp.rename(self.git_dir)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        os.chmod(self.git_dir, 0o700)
        return made["base"]

    def resolve(self, ref: str) -> str:
        """The commit ``ref`` names in the prepared repository (fetched from its origin when the clone did not
        bring it); ConfigError when there is none."""
        return self._resolve(self.git_dir, check_revision(ref, "ref"))

    @staticmethod
    def _resolve(git_dir: Path, ref: str) -> str:
        """The commit ``ref`` names; a ref the clone did not bring (a pull request's head, a commit only the origin
        has) is fetched from the origin by name first."""
        for cand in (ref, ref.removeprefix("origin/")):
            found = git(git_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{cand}^{{commit}}",
                        check=False)
            if found.returncode == 0:
                return found.stdout.decode().strip()
        fetched = git(git_dir, "fetch", "--quiet", "--no-tags", "origin", "--end-of-options", ref, check=False,
                      protocols=TRANSPORTS)
        if fetched.returncode == 0:
            head = out(git_dir, "rev-parse", "--verify", "FETCH_HEAD^{commit}")
            if not re.fullmatch(r"[0-9a-f]{7,64}", ref) or head.startswith(ref):
                return head
        why = fetched.stderr.decode("utf-8", "replace").strip()[:300] or "no such ref"
        raise ConfigError(f"ref {ref!r} is not in the repository (not a branch, tag or commit there, and the origin "
                          f"would not send it: {why}); pass a ref the repository has")

    def head(self, branch: str) -> str | None:
        found = git(self.git_dir, "rev-parse", "--verify", "--quiet", f"refs/heads/{check_ref(branch, 'branch')}",
                    check=False)
        return found.stdout.decode().strip() if found.returncode == 0 else None

    def set_branch(self, branch: str, commit: str, *, expect: str | None = None) -> None:
        """Point ``branch`` at ``commit`` (only if it is still at ``expect``, when given)."""
        args = ["update-ref", f"refs/heads/{check_ref(branch, 'branch')}", check_object_id(commit)]
        if expect is not None:
            args.append(check_object_id(expect))
        git(self.git_dir, *args)

    def start_branch(self, branch: str, commit: str) -> str:
        """``branch`` at ``commit`` unless it exists already; returns its head."""
        current = self.head(branch)
        if current is None:
            self.set_branch(branch, commit)
            return commit
        return current

    # -- checkpoints: the repository in the shared store, for another host -----------------------------------

    def has(self, commit: str) -> bool:
        """Whether the repository holds ``commit`` (and, as git keeps it, everything it reaches)."""
        return self.git_dir.is_dir() and git(self.git_dir, "cat-file", "-e", f"{check_object_id(commit)}^{{commit}}",
                                             check=False).returncode == 0

    def checkpoint(self, tips: list[str], parents: list[str], bundle: Path) -> bool:
        """Write to ``bundle`` a git bundle of what ``tips`` reach that ``parents`` do not (the first checkpoint of a
        task: the clone; later ones: a run's commit, a merge), each tip kept by a ref ``refs/bosun/ckpt/<tip>``.
        False when there is nothing new (no file written). A host restores the task from its checkpoints in order
        (:meth:`restore`): each one's parents are in the ones before."""
        tips = [check_object_id(t) for t in dict.fromkeys(tips)]
        for tip in tips:
            git(self.git_dir, "update-ref", f"{CKPT}/{tip}", tip)
        known = list(dict.fromkeys(check_object_id(p) for p in parents))
        made = git(self.git_dir, "bundle", "create", "--quiet", str(bundle), *(f"{CKPT}/{t}" for t in tips),
                   *(["--not", *known] if known else []), check=False)
        if made.returncode == 0:
            return True
        if b"empty bundle" in made.stderr:
            return False
        raise ConfigError(f"git bundle failed for task {self.workflow_id}: "
                          f"{made.stderr.decode('utf-8', 'replace').strip()[-300:]}")

    def restore(self, meta: dict, checkpoints: list[tuple[list[str], Callable[[Path], None]]],
                branch: str | None = None, head: str | None = None) -> int:
        """Make this host's copy of the task's repository hold every checkpoint (``(tips, fetch)`` in order;
        ``fetch(path)`` writes the bundle there): an empty bare repository first when there is none here (``meta``
        is what ``prepare`` recorded: base, source, ref), then each bundle whose tips it lacks, fetched with the
        objects checked (``transfer.fsckObjects``). ``branch`` is set to ``head`` when given. Returns how many
        bundles it applied."""
        def empty(tmp: Path) -> dict:
            git(None, "init", "--quiet", "--bare", str(tmp))
            return dict(meta)

        if self._meta() is None:
            self._make(str(meta.get("source", "")), ".restore-", empty)
        applied = 0
        for tips, fetch in checkpoints:
            if all(self.has(t) for t in tips):
                continue
            with tempfile.TemporaryDirectory(dir=self.root, prefix=".bundle-") as tmp:
                path = Path(tmp) / "checkpoint.bundle"
                fetch(path)
                git(self.git_dir, "fetch", "--quiet", "--no-tags", str(path), f"+{CKPT}/*:{CKPT}/*",
                    protocols=("file",), config=["transfer.fsckObjects=true", "fetch.fsckObjects=true"])
            applied += 1
        if branch and head:
            self.set_branch(branch, head)
        return applied

    # -- the task's environment (environments/) --------------------------------------------------------

    @property
    def env_marker(self) -> Path:
        """``K.env.json``: which environment the task's sandboxes run in (host-owned, written by the prepare
        step; no sandbox sees it)."""
        return self.root / f"{self.key}.env.json"

    def set_environment(self, env_id: str | None, cache: Path | None) -> None:
        """Record the task's environment (None: the plain sandbox image)."""
        if env_id is None:
            self.env_marker.unlink(missing_ok=True)
            return
        self.root.mkdir(parents=True, exist_ok=True)
        write_json_atomically(self.env_marker, {"env_id": env_id, "cache": str(cache) if cache else ""})

    @staticmethod
    def environment_for(workspace: Path | str) -> tuple[str, Path | None] | None:
        """(env id, cache) of the task a run workspace belongs to (``K.runs/NAME`` -> ``K.env.json``), derived
        from the path bosun chose, never from the workspace's content; None: no environment."""
        ws = Path(workspace)
        if not ws.parent.name.endswith(".runs"):
            return None
        marker = ws.parent.with_name(ws.parent.name.removesuffix(".runs") + ".env.json")
        try:
            data = json.loads(marker.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("env_id"), str):
            return None
        return data["env_id"], Path(data["cache"]) if data.get("cache") else None

    @staticmethod
    def objects_for(workspace: Path | str) -> Path | None:
        """The object store a run workspace borrows from (``K.runs/NAME`` -> ``K.git/objects``), derived from the
        path bosun chose, never from anything inside the workspace; None for other workspaces."""
        ws = Path(workspace)
        if not ws.parent.name.endswith(".runs"):
            return None
        objects = ws.parent.with_name(ws.parent.name.removesuffix(".runs") + ".git") / "objects"
        return objects if objects.is_dir() else None

    def run_dir(self, name: str) -> Path:
        if not RUN_NAME.match(name):
            raise ConfigError(f"run name {name!r} is not usable as a directory name")
        return self.runs / name

    def materialize(self, name: str, commit: str, *, owner: tuple[int, int] | None = None,
                    quota_mb: int = 0, quota_inodes: int = 200_000) -> Path:
        """A fresh workspace ``K.runs/NAME`` holding ``commit``, with a scratch ``.git`` for the sandbox.

        ``owner``: uid/gid the files belong to (the sandbox's user). ``quota_mb`` > 0: the workspace is its own
        file system with room for the checkout plus that much (sandbox/diskquota.py), where the host allows it.
        Idempotent: a workspace already made from ``commit`` is kept (and remounted after a reboot).
        """
        dest = self.open_run(name, commit, owner=owner, quota_mb=quota_mb, quota_inodes=quota_inodes)
        self.check_out(name, commit, owner=owner)
        return dest

    def open_run(self, name: str, commit: str, *, owner: tuple[int, int] | None = None, quota_mb: int = 0,
                 quota_inodes: int = 200_000, template: str | None = None) -> Path:
        """The first half of :meth:`materialize`: the workspace directory (or file system) with its scratch
        ``.git`` complete (what a sandbox binds: config, hooks, info) but no files yet. A sandbox may be started
        on it while :meth:`check_out` fills it, provided nothing runs in the sandbox before that returns.

        ``template``: a commit of an evaluation's source whose checkout template (sandbox/checkouts.py), if the
        worker has one, the workspace starts from; it then holds that commit's files until :meth:`check_out`."""
        check_object_id(commit)
        dest = self.run_dir(name)
        state = self.runs / ".state" / name
        (self.runs / ".state").mkdir(parents=True, exist_ok=True)
        (self.runs / ".state" / "workflow-id").write_text(self.workflow_id)
        if state.is_file() and state.read_text().strip() == commit and dest.is_dir():
            diskquota.ensure_mounted(dest)
            return dest
        state.unlink(missing_ok=True)
        diskquota.remove(dest)
        image = None
        if quota_mb > 0 and diskquota.support()[0]:
            size_mb, inodes = self._room(commit, quota_mb, quota_inodes)
            templates = self.templates()
            if template and templates is not None:
                image = templates.find(template, owner, size_mb, inodes)
            if image is not None:
                try:
                    diskquota.create_from(dest, image)
                except UnexpectedEnvironment as exc:  # (removed meanwhile as the least recently used)
                    log.info("workspace %s made without its template: %s", dest, exc)
                    image = None
            if image is None:
                diskquota.create(dest, size_mb=size_mb, inodes=inodes, owner=owner)
        else:
            dest.mkdir(parents=True)
        scratch = dest / ".git"
        if image is not None:  # the template's scratch .git, given this task's objects and shallow list
            (scratch / "objects" / "info" / "alternates").write_text(f"{self.objects_git / 'objects'}\n")
            shutil.copyfile(self.git_dir / "shallow", scratch / "shallow")
            if owner is not None and os.geteuid() == 0:  # (the template's files are the owner's already)
                chown_tree(scratch, *owner)
            return dest
        if (self.git_dir / "shallow").exists():  # clone would copy a shallow repository's objects: borrow them
            borrowing_scratch(dest, self.objects_git, self.git_dir / "shallow")
        else:
            git(None, "clone", "--shared", "--no-checkout", "--quiet", "--", str(self.git_dir), str(dest),
                protocols=("file",))
            finish_scratch(scratch)
        if owner is not None and os.geteuid() == 0:
            chown_tree(dest, *owner)
        return dest

    def templates(self) -> CheckoutTemplates | None:
        """The checkout templates of this task's source store (an evaluation's instance); None for a task."""
        objects = self.objects_git
        return CheckoutTemplates(objects) if objects != self.git_dir else None

    def make_template(self, commit: str, *, owner: tuple[int, int] | None = None, quota_mb: int = 0,
                      quota_inodes: int = 200_000) -> bool:
        """Make the checkout template of ``commit`` (a commit of this instance's source) unless the worker has
        it; False when it had it, or templates do not apply (a task, or no workspace file systems here)."""
        templates = self.templates()
        if templates is None or quota_mb <= 0 or not diskquota.support()[0]:
            return False
        return templates.build(commit, owner, *self._room(commit, quota_mb, quota_inodes))

    def _room(self, commit: str, quota_mb: int, quota_inodes: int) -> tuple[int, int]:
        """(MB, inodes) of a workspace file system for ``commit``: twice its checkout, plus the quota."""
        size, files = self.checkout_size(commit)
        return (size >> 20) * 2 + quota_mb + 16, files * 2 + quota_inodes

    def check_out(self, name: str, commit: str, *, owner: tuple[int, int] | None = None) -> None:
        """The second half of :meth:`materialize`: ``commit``'s files into the workspace :meth:`open_run` made
        (nothing to do when it holds them already)."""
        dest, state = self.run_dir(name), self.runs / ".state" / name
        if state.is_file() and state.read_text().strip() == commit:
            return
        scratch = dest / ".git"
        mark = scratch / MARK  # a template's copy: its commit's files are there, the rest is a small update
        template = check_object_id(mark.read_text().strip()) if mark.exists() else None
        git(scratch, "checkout", "--quiet", "--detach", check_object_id(commit), work_tree=dest,
            config=(*CHECKOUT_CONFIG, *(("core.logAllRefUpdates=false",) if template else ())))
        if owner is not None and os.geteuid() == 0:
            if template is None:
                chown_tree(dest, *owner)
            else:  # only what the checkout wrote: walking every file of a fresh copy costs more than it saved
                changed = git(scratch, "diff-tree", "-r", "-z", "--name-only", "--no-renames", template,
                              commit).stdout.decode("utf-8", "surrogateescape").split("\0")
                chown_paths(dest, [p for p in changed if p], *owner)
                chown_tree(scratch, *owner)
        mark.unlink(missing_ok=True)
        (scratch / "objects" / "info" / "alternates").write_text(OBJECTS_IN_SANDBOX + "\n")
        state.write_text(commit + "\n")

    def checkout_size(self, commit: str) -> tuple[int, int]:
        """(bytes, files) of the checkout of ``commit``."""
        listing = git(self.objects_git, "ls-tree", "-r", "-l", "-z", "--full-tree", check_object_id(commit)).stdout
        total = files = 0
        for rec in listing.split(b"\0"):
            if not rec:
                continue
            fields = rec.split(b"\t", 1)[0].split()
            files += 1
            if len(fields) == 4 and fields[3].isdigit():
                total += int(fields[3])
        return total, files

    def drop_run(self, name: str) -> None:
        diskquota.remove(self.run_dir(name))
        (self.runs / ".state" / name).unlink(missing_ok=True)

    @staticmethod
    def open_runs(root: Path) -> list[TaskRepo]:
        """The tasks under ``root`` that have run workspaces (for a reaper: their workflow ids are recorded)."""
        found = []
        for runs in Path(root).glob("*.runs"):
            try:
                found.append(TaskRepo(root, (runs / ".state" / "workflow-id").read_text()))
            except OSError:
                continue
        return found

    def remove(self) -> None:
        """Remove this host's copy of the task's repository and its environment marker (a host that held it only
        for the task's agents; the task's home keeps its own)."""
        self.drop_runs()
        shutil.rmtree(self.git_dir, ignore_errors=True)
        self.env_marker.unlink(missing_ok=True)

    def drop_runs(self) -> None:
        """Remove every run workspace of the task (their work is in the repository as commits)."""
        if not self.runs.is_dir():
            return
        for child in self.runs.iterdir():
            if RUN_NAME.match(child.name):
                diskquota.remove(child)
        shutil.rmtree(self.runs, ignore_errors=True)

    # -- merging, diffs, delivery --------------------------------------------------------------------------

    def is_ancestor(self, a: str, b: str) -> bool:
        return git(self.git_dir, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def merge(self, branch: str, theirs: str, message: str) -> Merged:
        """3-way merge of ``theirs`` into ``branch``, in the repository (no work tree). On a conflict the branch
        stays where it was. Idempotent: a commit already merged is not merged again."""
        check_object_id(theirs)
        head = self.head(branch)
        if head is None:
            raise ConfigError(f"branch {branch} does not exist in the task's repository")
        if self.is_ancestor(theirs, head):
            return Merged(True, [], head)
        proc = git(self.git_dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", head, theirs,
                   check=False)
        fields = proc.stdout.split(b"\0")
        if proc.returncode == 1:
            conflicts = sorted({shown(f) for f in fields[1:] if f})
            return Merged(False, conflicts, head)
        if proc.returncode != 0:
            raise UnexpectedEnvironment(f"git merge-tree failed: {proc.stderr.decode(errors='replace')[:300]}")
        tree = fields[0].decode().strip()
        commit = out(self.git_dir, "commit-tree", tree, "-p", head, "-p", theirs, "-F", "-", input=message)
        self.set_branch(branch, commit, expect=head)
        return Merged(True, [], commit)

    def commit_onto(self, branch: str, commit: str) -> str:
        """Move ``branch`` to ``commit`` when ``commit`` descends from its head (a run that started there)."""
        head = self.head(branch)
        if head is not None and head != commit and not self.is_ancestor(head, commit):
            return self.merge(branch, commit, f"bosun: merge {commit[:12]}").head
        self.set_branch(branch, commit)
        return commit

    def diff(self, base: str, head: str) -> tuple[str, list[str]]:
        """(the diff from ``base`` to ``head``, the changed files)."""
        check_object_id(base)
        check_object_id(head)
        text = git(self.git_dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", base, head).stdout
        names = git(self.git_dir, "diff", "--name-only", "-z", "--no-ext-diff", base, head).stdout
        return text.decode("utf-8", "replace"), [shown(n) for n in names.split(b"\0") if n]

    def patch(self, base: str, head: str) -> tuple[bytes, list[str]]:
        """(the diff from ``base`` to ``head`` for ``git apply``: binary changes and full object ids, the changed
        files)."""
        check_object_id(base)
        check_object_id(head)
        text = git(self.git_dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary", "--full-index",
                   base, head).stdout
        names = git(self.git_dir, "diff", "--name-only", "-z", "--no-ext-diff", base, head).stdout
        return text, [shown(n) for n in names.split(b"\0") if n]
