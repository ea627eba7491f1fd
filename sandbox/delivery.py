"""Handing a task's result branch out: a plain checkout for people to look at, a branch in the repository the task
came from (a ref only, written as that repository's owner), and a push to a remote (a token only in a header).
A mixin of :class:`sandbox.hostrepo.TaskRepo`."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infra.errors import ConfigError
from sandbox.hostgit import TRANSPORTS, check_object_id, check_ref, find_git_dir, git


@dataclass
class Delivered:
    """What delivering the task branch to the repository the task came from gave."""

    branch: str
    """The branch now in that repository ("" when it was not created)."""
    note: str
    """What was done, or why not, for people."""


class Delivery:
    """Delivery of the task branch, from the task repository's ``git_dir`` (its checkout for people: ``view``)."""

    root: Path
    git_dir: Path
    view: Path
    _meta: Callable[[], dict | None]

    def deliver_view(self, branch: str) -> Path:
        """A plain checkout of ``branch`` at ``K/`` for people to look at (made by the host; no sandbox ever sees
        it). Its ``origin`` is the task's repository."""
        check_ref(branch, "branch")
        meta = self._meta() or {}
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=".view-"))
        try:
            git(None, "clone", "--no-hardlinks", "--quiet", "--branch", branch, "--", str(self.git_dir), str(tmp),
                protocols=("file",))
            if meta.get("source"):
                git(tmp / ".git", "remote", "set-url", "origin", "--", meta["source"])
            if self.view.is_symlink() or self.view.is_file():
                self.view.unlink()
            elif self.view.exists():
                shutil.rmtree(self.view)
            tmp.rename(self.view)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return self.view

    def deliver_to_source(self, source: str, branch: str, base: str, head: str) -> Delivered:
        """``branch`` (at ``head``) created in the repository the task was cloned from, when that is a directory
        on this host that has ``base`` (so it is that repository): a ref only. Its working tree, index,
        checked-out branch, submodules and uncommitted files are not touched; no hook runs. The commits after
        ``base`` travel as a bundle that only the repository's owner can read; git writes them as that owner, so
        they stay the owner's. A branch of that name with other commits on it, or checked out, is left as it is.
        Returns what was done, or why not: it never raises (the task's result does not depend on it)."""
        check_ref(branch, "branch")
        check_object_id(base)
        check_object_id(head)
        try:
            return self._deliver(Path(source), source, branch, base, head)
        except (OSError, ConfigError, subprocess.SubprocessError) as e:
            return Delivered("", f"the branch could not be created in {source}: {str(e)[:300]}; it is in bosun's copy "
                                 "of the repository")

    def _deliver(self, path: Path, source: str, branch: str, base: str, head: str) -> Delivered:
        kept = "; the result is in bosun's copy of the repository"
        if not path.is_absolute() or not path.is_dir():
            return Delivered("", f"{source} is not a directory on this host" + kept)
        git_dir = find_git_dir(path)
        if git_dir is None:
            return Delivered("", f"{source} is no longer a git repository" + kept)
        owner, top = git_dir.stat(), path.stat()
        if (owner.st_uid, owner.st_gid) != (top.st_uid, top.st_gid):  # (a .git file naming someone else's repository)
            return Delivered("", f"{source} and its git directory {git_dir} have different owners: nothing written"
                             + kept)
        me = os.geteuid()
        if me != 0 and owner.st_uid != me:
            return Delivered("", f"{source} belongs to uid {owner.st_uid} and this worker runs as uid {me}: it may "
                                 "not write there" + kept)
        as_user = (owner.st_uid, owner.st_gid) if me == 0 and owner.st_uid != 0 else None
        if git(git_dir, "cat-file", "-e", f"{base}^{{commit}}", as_user=as_user, check=False,
               timeout_s=60).returncode != 0:
            return Delivered("", f"{source} does not have the commit the task started from ({base[:12]}): it is not "
                                 "the repository the task came from, or its history was rewritten; nothing written"
                             + kept)
        ref = f"refs/heads/{branch}"
        with tempfile.TemporaryDirectory(prefix="bosun-deliver-") as tmp:
            bundle = Path(tmp) / "task.bundle"
            made = git(self.git_dir, "bundle", "create", "--quiet", str(bundle), ref, f"^{base}", check=False,
                       timeout_s=120)
            if made.returncode != 0:
                return Delivered("", "the task's commits could not be bundled: "
                                     f"{made.stderr.decode('utf-8', 'replace').strip()[-300:]}" + kept)
            if as_user is not None:  # (readable by the owner's git, by no one else)
                for item in (Path(tmp), bundle):
                    os.chown(item, *as_user)
            bundle.chmod(0o600)
            got = git(git_dir, "fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                      "--no-auto-maintenance", "--no-write-commit-graph", "--", str(bundle), f"{ref}:{ref}",
                      protocols=("file",), as_user=as_user, check=False, timeout_s=120)
        said = got.stderr.decode("utf-8", "replace").strip()
        at = git(git_dir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", as_user=as_user, check=False,
                 timeout_s=60).stdout.decode().strip()
        if at == head:  # (what counts is where the branch is, not git's exit code)
            return Delivered(branch, f"created {branch} in {source} (a ref only: the working tree, the index and the "
                                     "checked-out branch are as they were)")
        if "rejected" in said or "non-fast-forward" in said:
            why = f"{source} already has a branch {branch} with other commits: left as it is"
        elif "checked out" in said:
            why = f"{branch} is checked out in {source}: it was not moved"
        else:
            why = f"git could not create {branch} in {source}: {said[-300:] or 'no reason given'}"
        return Delivered("", why + kept)

    def push(self, branch: str, remote: str, commit: str, *, token: str | None = None, timeout_s: float = 300.0,
             token_user: str = "x-access-token") -> str:
        """Push ``commit`` to ``refs/heads/<branch>`` of ``remote`` (a URL or path). With ``token`` an https remote
        is authenticated by header, as HTTP basic ``token_user``:``token`` (GitHub: x-access-token; GitLab:
        oauth2), never in a URL or an error message. Idempotent."""
        check_ref(branch, "branch")
        check_object_id(commit)
        if remote.startswith("-"):
            raise ConfigError(f"remote {remote!r} may not start with '-'")
        config = []
        if token and remote.startswith("https://"):
            basic = base64.b64encode(f"{token_user}:{token}".encode()).decode()
            config.append(f"http.extraHeader=Authorization: Basic {basic}")
        git(self.git_dir, "push", "--porcelain", "--", remote, f"{commit}:refs/heads/{branch}", config=config,
            protocols=TRANSPORTS, timeout_s=timeout_s, secret=token)
        return commit
