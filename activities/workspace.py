"""Workspaces on the worker host: a clone of the repository per task, and the commit that delivers the result.

These git commands run on the host, by bosun, never on the model's behalf. Hooks and fsmonitor are disabled for
every call so that a workspace the agent changed cannot make the host run anything.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from infra.errors import ConfigError

SAFE_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never",
            "-c", "user.name=bosun", "-c", "user.email=bosun@localhost", "-c", "commit.gpgsign=false"]


def git(cwd: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*SAFE_GIT, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise ConfigError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()[:500]}")
    return proc


def check_repo(repo: str) -> Path:
    """Validate a --repo argument: an existing directory at the top of a git work tree with at least one commit."""
    path = Path(repo).expanduser()
    if not path.exists():
        raise ConfigError(f"--repo {repo}: no such directory")
    if not path.is_dir():
        raise ConfigError(f"--repo {repo}: not a directory")
    path = path.resolve()
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ConfigError(f"--repo {repo}: not a git repository (run `git init && git add -A && git commit -m init` "
                          "there first)")
    top = Path(proc.stdout.strip()).resolve()
    if top != path:
        raise ConfigError(f"--repo {repo}: is inside the git repository {top}; pass the repository's top folder")
    if subprocess.run(["git", "-C", str(path), "rev-parse", "--verify", "-q", "HEAD"],
                      capture_output=True).returncode != 0:
        raise ConfigError(f"--repo {repo}: the repository has no commits yet; commit something first")
    return path


def workspace_dir(root: Path, workflow_id: str) -> Path:
    return root / re.sub(r"[^A-Za-z0-9._-]+", "_", workflow_id)


def prepare(root: Path, workflow_id: str, repo: str, ref: str) -> tuple[Path, str]:
    """Clone ``repo`` at ``ref`` into the task's workspace. Idempotent: an existing workspace is kept."""
    dest = workspace_dir(root, workflow_id)
    marker = dest / ".git" / "bosun-base"
    if marker.exists():
        return dest, marker.read_text().strip()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".clone-"))
    try:
        git(root, "clone", "--quiet", "--no-hardlinks", "--no-checkout", repo, str(tmp))
        base = _resolve(tmp, ref)
        git(tmp, "checkout", "--quiet", "--detach", base)
        (tmp / ".git" / "bosun-base").write_text(base + "\n")
        if dest.exists():  # a half-made workspace from a crash before the marker was written
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest, base


def _resolve(clone: Path, ref: str) -> str:
    """The commit ``ref`` names in a fresh clone. A ref the clone did not bring along (a pull request's head
    commit, ``refs/pull/N/head``) is fetched from the origin by name first."""
    found = git(clone, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if found.returncode == 0:
        return found.stdout.strip()
    fetched = git(clone, "fetch", "--quiet", "origin", ref, check=False)
    if fetched.returncode == 0:
        head = git(clone, "rev-parse", "--verify", "FETCH_HEAD^{commit}").stdout.strip()
        if not re.fullmatch(r"[0-9a-f]{7,40}", ref) or head.startswith(ref):
            return head
    raise ConfigError(f"ref {ref!r} is not in the repository (not a branch, tag or commit there, and the origin "
                      f"would not send it: {fetched.stderr.strip()[:300] or 'no such ref'}); "
                      "pass a ref the repository has")


def commit_changes(workspace: Path, base: str, branch: str, message: str) -> tuple[str, list[str], str | None]:
    """Commit everything the agents changed on ``branch``; returns (diff against base, files, commit or None).

    Idempotent: run twice, it makes one commit and returns the same diff.
    """
    git(workspace, "checkout", "--quiet", "-B", branch)
    git(workspace, "add", "-A")
    if git(workspace, "diff", "--cached", "--quiet", check=False).returncode != 0:
        git(workspace, "commit", "--quiet", "--no-verify", "-m", message)
    head = git(workspace, "rev-parse", "HEAD").stdout.strip()
    diff = git(workspace, "diff", "--no-color", base, head).stdout
    files = [f for f in git(workspace, "diff", "--name-only", base, head).stdout.splitlines() if f]
    return diff, files, (head if head != base else None)


def clone_for_agent(main: Path, dest: Path, commit: str) -> Path:
    """A self-contained clone of the task's workspace at ``commit`` for one agent (objects hard-linked, so it is
    cheap). A clone, not a `git worktree`: a worktree's git dir lives outside it, where the sandbox cannot see.
    Idempotent: an existing clone at the same commit is kept."""
    marker = dest / ".git" / "bosun-base"
    if marker.exists() and marker.read_text().strip() == commit:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".clone-"))
    try:
        git(dest.parent, "clone", "--quiet", "--local", "--no-checkout", str(main), str(tmp))
        git(tmp, "checkout", "--quiet", "--detach", commit)
        (tmp / ".git" / "bosun-base").write_text(commit + "\n")
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def commit_agent_work(ws: Path, branch: str, message: str) -> tuple[str | None, list[str]]:
    """Commit an agent's changes on ``branch`` in its own clone; returns (commit or None if nothing, files)."""
    base = (ws / ".git" / "bosun-base").read_text().strip()
    _, files, commit = commit_changes(ws, base, branch, message)
    return commit, files


def merge_agent_work(main: Path, agent_ws: Path, branch: str, message: str) -> tuple[bool, list[str], str]:
    """3-way merge of an agent's branch into the task workspace's current branch.

    Returns (merged, conflicting files, HEAD). On a conflict the merge is aborted and the tree left as it was.
    Idempotent: a branch that is already merged is not merged again.
    """
    if (main / ".git" / "MERGE_HEAD").exists():
        git(main, "merge", "--abort", check=False)
    ref = f"refs/bosun/{branch}"
    git(main, "fetch", "--quiet", "--no-tags", str(agent_ws), f"+{branch}:{ref}")
    if git(main, "merge-base", "--is-ancestor", ref, "HEAD", check=False).returncode == 0:
        return True, [], git(main, "rev-parse", "HEAD").stdout.strip()
    proc = git(main, "merge", "--no-ff", "--no-edit", "-m", message, ref, check=False)
    if proc.returncode != 0:
        conflicts = [f for f in git(main, "diff", "--name-only", "--diff-filter=U").stdout.splitlines() if f]
        git(main, "merge", "--abort", check=False)
        if not conflicts:
            raise ConfigError(f"merging {branch} failed: {proc.stderr.strip()[:300] or proc.stdout.strip()[:300]}")
        return False, conflicts, git(main, "rev-parse", "HEAD").stdout.strip()
    return True, [], git(main, "rev-parse", "HEAD").stdout.strip()


def start_branch(main: Path, branch: str) -> str:
    """Put the task workspace on ``branch`` (created at the current HEAD if new); returns HEAD."""
    current = git(main, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    if current != branch:
        exists = git(main, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode == 0
        git(main, "checkout", "--quiet", *([branch] if exists else ["-b", branch]))
    return git(main, "rev-parse", "HEAD").stdout.strip()


def diff_since(workspace: Path, base: str) -> str:
    """Everything that changed since ``base``: commits and the uncommitted tree (new files included)."""
    git(workspace, "add", "-A")
    return git(workspace, "diff", "--no-color", "--cached", base).stdout
