"""Keep Rate: of the lines bosun's commits added, the share still present N days later on the default branch.

bosun's commits are the ones it authored in the task repository (committer ``bosun <bosun@localhost>``, a
``Bosun-Task:`` trailer naming the task) and that reached the default branch (a merged pull request keeps them;
a squash merge does not, and is not counted). For each such commit: the lines it added (``git diff C^ C``), and
how many of them ``git blame`` still attributes to it at the last commit of the default branch that is at most N
days younger than it (the branch's head when less time has passed: the figure is then provisional). Per task and
overall.

It runs host git on a repository bosun did not write, hardened like every host git call (sandbox/hostgit.py):
explicit git dir, clean environment, no hooks, no external diff or textconv; names and revisions are data.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from infra.errors import ConfigError
from sandbox.hostgit import check_ref, git

BOSUN_EMAIL = "bosun@localhost"
TRAILER = re.compile(r"^Bosun-Task: (.+)$", re.MULTILINE)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass
class CommitKeep:
    commit: str
    task: str
    date: int
    added: int
    kept: int
    measured_at: str
    provisional: bool


@dataclass
class KeepRate:
    branch: str
    days: float
    commits: list[CommitKeep] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(c.added for c in self.commits)

    @property
    def kept(self) -> int:
        return sum(c.kept for c in self.commits)

    @property
    def rate(self) -> float | None:
        return self.kept / self.added if self.added else None

    def by_task(self) -> dict[str, dict]:
        out: dict[str, dict] = defaultdict(lambda: {"added": 0, "kept": 0, "commits": 0, "provisional": False})
        for c in self.commits:
            t = out[c.task]
            t["added"] += c.added
            t["kept"] += c.kept
            t["commits"] += 1
            t["provisional"] = t["provisional"] or c.provisional
        for t in out.values():
            t["keep_rate"] = round(t["kept"] / t["added"], 4) if t["added"] else None
        return dict(out)


def _git_dir(repo: Path) -> Path:
    repo = Path(repo)
    if (repo / ".git").is_dir():
        return repo / ".git"
    if (repo / "HEAD").is_file() and (repo / "objects").is_dir():
        return repo
    raise ConfigError(f"--repo {repo}: not a git repository (no .git directory)")


def _text(git_dir: Path, *args: str) -> str:
    return git(git_dir, *args).stdout.decode("utf-8", "replace")


def default_branch(git_dir: Path) -> str:
    """``origin``'s default branch when known, else the checked-out branch."""
    sym = git(git_dir, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False).stdout.decode().strip()
    if sym:
        return sym.removeprefix("refs/remotes/")
    return _text(git_dir, "symbolic-ref", "--short", "HEAD").strip()


def added_lines(git_dir: Path, commit: str) -> dict[str, set[int]]:
    """Per file, the line numbers (in the commit's version) that ``commit`` added against its first parent."""
    diff = _text(git_dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U0", "--no-renames",
                 f"{commit}^", commit, "--")
    out: dict[str, set[int]] = defaultdict(set)
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif (m := _HUNK.match(line)) and path:
            start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
            out[path].update(range(start, start + count))
    return {p: lines for p, lines in out.items() if lines}


def surviving(git_dir: Path, at: str, path: str, commit: str, lines: set[int]) -> int:
    """How many of ``lines`` of ``commit`` ``git blame`` still attributes to it in ``path`` at ``at``."""
    proc = git(git_dir, "blame", "--porcelain", "-M", at, "--", path, check=False)
    if proc.returncode != 0:  # the file is gone at ``at``
        return 0
    kept = 0
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) >= 3 and len(parts[0]) in (40, 64) and parts[0] == commit:
            if int(parts[1]) in lines:  # the line number in the commit that introduced it
                kept += 1
    return kept


def keep_rate(repo: Path, days: float = 30.0, branch: str | None = None) -> KeepRate:
    if days < 0:
        raise ConfigError(f"--days {days}: must be 0 or more")
    git_dir = _git_dir(repo)
    branch = check_ref(branch, "branch") if branch else default_branch(git_dir)
    log = _text(git_dir, "log", "--no-merges", "--format=%H%x00%ce%x00%ct%x00%B%x1e", branch, "--")
    result = KeepRate(branch=branch, days=days)
    for record in log.split("\x1e"):
        fields = record.strip("\n").split("\x00")
        if len(fields) < 4 or fields[1] != BOSUN_EMAIL:
            continue
        commit, date, body = fields[0], int(fields[2]), fields[3]
        task = (TRAILER.search(body).group(1).strip() if TRAILER.search(body) else "(no Bosun-Task trailer)")
        deadline = date + int(days * 86400)
        at = _text(git_dir, "rev-list", "-1", f"--before={deadline}", branch, "--").strip() or commit
        head = _text(git_dir, "rev-parse", branch).strip()
        head_date = int(_text(git_dir, "log", "-1", "--format=%ct", branch).strip() or 0)
        added = added_lines(git_dir, commit)
        kept = sum(surviving(git_dir, at, path, commit, lines) for path, lines in added.items())
        result.commits.append(CommitKeep(commit=commit, task=task, date=date,
                                         added=sum(len(v) for v in added.values()), kept=kept, measured_at=at,
                                         provisional=at == head and head_date < deadline))
    return result
