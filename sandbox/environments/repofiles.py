"""A repository's files at one commit, read as data for detection (docs/THREAT-MODEL.md: "environment
detection").

Detection never looks at a work tree: ``GitTree`` reads blobs out of the object store with hardened host git
(sandbox/hostgit.py), so nothing a sandbox or a checkout could have changed (links, FIFOs, attributes) is
followed. Reads are bounded: a file past ``MAX_FILE`` bytes or in a tree of more than ``MAX_PATHS`` entries is
treated as absent; text is decoded leniently. ``MemoryFiles`` holds the same interface over a dict (tests).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from infra.errors import ConfigError
from sandbox.hostgit import check_revision, git, out

MAX_FILE = 512 * 1024
"""Bytes of one file detection reads (a bigger setup.py or requirements file is ignored)."""
MAX_PATHS = 200_000
"""Entries of a tree detection lists."""
MAX_BATCH = 4000
"""Files read in one batch (test imports)."""


class RepoFiles(Protocol):
    """The files of one revision."""

    def paths(self) -> list[str]:
        """Every file path of the tree (repository-relative, '/'-separated)."""

    def read(self, path: str) -> str | None:
        """The text of ``path`` (None: absent, too big, binary)."""

    def read_many(self, paths: list[str]) -> dict[str, str]:
        """Texts of several paths at once (those that exist and fit)."""


class MemoryFiles:
    """RepoFiles over a dict (tests, and the file detection of a directory you trust)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)

    def paths(self) -> list[str]:
        return sorted(self.files)

    def read(self, path: str) -> str | None:
        text = self.files.get(path)
        return text if text is not None and len(text.encode()) <= MAX_FILE else None

    def read_many(self, paths: list[str]) -> dict[str, str]:
        return {p: t for p in paths[:MAX_BATCH] if (t := self.read(p)) is not None}


class GitTree:
    """RepoFiles of ``commit`` in a git directory (read from the object store, never a work tree)."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir = Path(git_dir)
        self.commit = commit
        self._paths: list[str] | None = None
        self._sizes: dict[str, int] = {}

    @classmethod
    def of_repository(cls, repo: str | Path, ref: str = "HEAD") -> GitTree:
        """The tree of ``ref`` in a repository on this host (a work tree's top folder or a bare repository);
        ConfigError for a missing repository or an unknown ref."""
        path = Path(repo).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--repo {repo}: no such directory")
        check_revision(ref, "--ref")
        proc = git(None, "-C", str(path.resolve()), "rev-parse", "--absolute-git-dir", check=False)
        if proc.returncode != 0:
            raise ConfigError(f"--repo {repo}: not a git repository")
        git_dir = Path(os.fsdecode(proc.stdout.strip()))
        found = git(git_dir, "rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}", check=False)
        if found.returncode != 0:
            raise ConfigError(f"--ref {ref}: no such commit in {repo}")
        return cls(git_dir, found.stdout.decode().strip())

    def paths(self) -> list[str]:
        if self._paths is None:
            raw = git(self.git_dir, "ls-tree", "-r", "-l", "-z", "--full-tree", self.commit).stdout
            paths: list[str] = []
            for rec in raw.split(b"\0"):
                if not rec or b"\t" not in rec:
                    continue
                meta, name = rec.split(b"\t", 1)
                fields = meta.split()
                if len(fields) < 4 or fields[1] != b"blob":
                    continue
                path = name.decode("utf-8", "surrogateescape")
                paths.append(path)
                self._sizes[path] = int(fields[3]) if fields[3].isdigit() else MAX_FILE + 1
                if len(paths) >= MAX_PATHS:
                    break
            self._paths = sorted(paths)
        return self._paths

    def read(self, path: str) -> str | None:
        return self.read_many([path]).get(path)

    def read_many(self, paths: list[str]) -> dict[str, str]:
        self.paths()
        wanted = [p for p in paths[:MAX_BATCH] if 0 <= self._sizes.get(p, -1) <= MAX_FILE and "\n" not in p]
        if not wanted:
            return {}
        spec = "".join(f"{self.commit}:{p}\n" for p in wanted).encode("utf-8", "surrogateescape")
        raw = git(self.git_dir, "cat-file", "--batch", input=spec, timeout_s=120).stdout
        found: dict[str, str] = {}
        pos = 0
        for p in wanted:
            nl = raw.find(b"\n", pos)
            if nl < 0:
                break
            header = raw[pos:nl].split()
            pos = nl + 1
            if len(header) != 3 or header[1] != b"blob":
                continue
            size = int(header[2])
            data = raw[pos:pos + size]
            pos += size + 1
            if b"\0" in data[:8192]:
                continue
            found[p] = data.decode("utf-8", "replace")
        return found

    def commit_date(self) -> datetime:
        stamp = out(self.git_dir, "show", "-s", "--format=%ct", self.commit)
        return datetime.fromtimestamp(int(stamp), tz=UTC)

    def tree_id(self) -> str:
        return out(self.git_dir, "rev-parse", f"{self.commit}^{{tree}}")

    def root_commit(self) -> str:
        """The repository's first commit (its identity across revisions)."""
        roots = out(self.git_dir, "rev-list", "--max-parents=0", self.commit).split()
        return sorted(roots)[0] if roots else self.commit

    def version_tag(self) -> str | None:
        """The nearest tag, as a version (``v1.2.3`` -> ``1.2.3``), if it looks like one."""
        proc = git(self.git_dir, "describe", "--tags", "--abbrev=0", self.commit, check=False)
        tag = proc.stdout.decode("utf-8", "replace").strip()
        m = re.fullmatch(r"[vV]?(\d+(?:\.\d+){0,3}(?:[.-]?(?:a|b|rc|post|dev)\d*)?)", tag)
        return m.group(1) if proc.returncode == 0 and m else None

    def archive(self) -> bytes:
        """The tree as a tar (git archive): the build's source, unpacked inside the build container."""
        return git(self.git_dir, "archive", "--format=tar", self.commit, timeout_s=600).stdout
