"""Keep the host's git safe from the sandbox: which parts of a workspace's git directory are mounted read-only.

A sandboxed process must not plant anything the host's git would run or obey later: hooks, config (fsmonitor,
aliases, filters), ``commondir``/``config.worktree`` redirections, info/attributes. Those are bound read-only over
the writable workspace, and ``.git`` itself is bound onto itself so it becomes a mount point (it cannot be renamed
away and replaced by a directory the sandbox controls). A missing hooks directory is created empty first, so the
sandbox cannot create it either.

A worktree checkout (``.git`` is a file pointing outside the workspace) gets its git directories bound read-only
at their host paths: git in the sandbox can read history and diffs, not commit.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from sandbox.base import WORKSPACE_PATH

PROTECTED = ("hooks", "config", "commondir", "config.worktree", "info")


def git_mounts(ws: Path) -> list[tuple[str, str, bool]]:
    """(host source, destination in the sandbox, read-only) binds to add after the workspace's own bind."""
    dotgit = ws / ".git"
    mounts: list[tuple[str, str, bool]] = []
    if dotgit.is_dir() and not dotgit.is_symlink():
        hooks = dotgit / "hooks"
        if not hooks.exists():
            with contextlib.suppress(OSError):
                hooks.mkdir()
        mounts.append((str(dotgit), f"{WORKSPACE_PATH}/.git", False))
        for name in PROTECTED:
            p = dotgit / name
            if p.exists() and not p.is_symlink():
                mounts.append((str(p), f"{WORKSPACE_PATH}/.git/{name}", True))
    elif dotgit.is_file():
        try:
            text = dotgit.read_text(errors="replace").strip()
        except OSError:
            return mounts
        if text.startswith("gitdir:"):
            gitdir = (ws / text[len("gitdir:"):].strip()).resolve()
            common = gitdir
            with contextlib.suppress(OSError):
                common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
            for d in dict.fromkeys([common, gitdir]):
                if d.is_dir() and not str(d).startswith(str(ws) + "/"):
                    mounts.append((str(d), str(d), True))
    return mounts
