"""A repository's files at one commit, read as data for detection (docs/THREAT-MODEL.md: "environment
detection").

Detection never looks at a work tree: ``GitTree`` reads blobs out of the object store with hardened host git
(sandbox/hostgit.py), so nothing a sandbox or a checkout could have changed (links, FIFOs, attributes) is
followed. Git runs without the repository's config (hostgit ``Borrowed``). Reads are streamed and bounded: a file
past ``MAX_FILE`` bytes is treated as absent; a tree of more than ``MAX_PATHS`` files or a source tar past
``MAX_SOURCE`` bytes is refused (ConfigError); text is decoded leniently.
``MemoryFiles`` holds the same interface over a dict (tests).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Protocol

from infra.errors import ConfigError
from sandbox.hostgit import Borrowed, check_rev_expression, find_git_dir

MAX_FILE = 512 * 1024
"""Bytes of one file detection reads (a bigger setup.py or requirements file is ignored)."""
MAX_PATHS = 200_000
"""Entries of a tree detection lists."""
MAX_SOURCE = 4 << 30
"""Bytes of the source tar a build copies in (a bigger tree is refused)."""
MAX_BATCH = 4000
"""Files read in one batch (test imports)."""
MAX_TAGS = 20_000
"""Tags :meth:`GitTree.release_tags` reads (the newest first is not promised: a repository with more is read in
part)."""


class RepoFiles(Protocol):
    """The files of one revision."""

    def paths(self) -> list[str]:
        """Every file path of the tree (repository-relative, '/'-separated)."""

    def read(self, path: str) -> str | None:
        """The text of ``path`` (None: absent, too big, binary)."""

    def read_many(self, paths: list[str]) -> dict[str, str]:
        """Texts of several paths at once (those that exist and fit)."""

    def content_id(self, path: str) -> str | None:
        """A hash of the file's whole content, however large (None: no such file): key material for a file too big
        to read (a lockfile)."""


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

    def content_id(self, path: str) -> str | None:
        text = self.files.get(path)
        return None if text is None else hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class GitTree:
    """RepoFiles of ``commit`` in a git directory (read from the object store, never a work tree).

    Git runs in a scratch git directory borrowing the repository's objects and refs (sandbox/hostgit.py:
    ``Borrowed``): the repository's own config (filter drivers, includes) is never read, so nothing of it runs on
    the host. Every output is read as a stream and bounded (``MAX_PATHS``, ``MAX_FILE``, ``MAX_SOURCE``)."""

    def __init__(self, git_dir: Path, commit: str, *, refs: bool = True) -> None:
        """``refs=False``: ``commit`` is a full object id, the repository's refs are not needed (nor copied)."""
        self.git_dir = Path(git_dir)
        self.commit = commit
        self.refs = refs
        self._paths: list[str] | None = None
        self._sizes: dict[str, int] = {}
        self._ids: dict[str, str] = {}
        self._borrowed: Borrowed | None = None

    @property
    def scratch(self) -> Borrowed:
        if self._borrowed is None:
            self._borrowed = Borrowed(self.git_dir, refs=self.refs)
        return self._borrowed

    def close(self) -> None:
        if self._borrowed is not None:
            self._borrowed.close()
            self._borrowed = None

    @classmethod
    def of_repository(cls, repo: str | Path, ref: str = "HEAD") -> GitTree:
        """The tree of ``ref`` (anything ``git rev-parse --verify REF^{commit}`` resolves) in a repository on this
        host (a work tree's top folder or a bare repository); ConfigError for a missing repository or an unknown
        ref. The repository's config is never read."""
        path = Path(repo).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--repo {repo}: no such directory")
        check_rev_expression(ref, "--ref")
        git_dir = find_git_dir(path.resolve())
        if git_dir is None:
            raise ConfigError(f"--repo {repo}: not a git repository")
        tree = cls(git_dir, "")
        found = tree.scratch.git("rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}",
                                 check=False, timeout_s=60)
        if found.returncode != 0:
            tree.close()
            raise ConfigError(f"--ref {ref}: no such commit in {repo}")
        tree.commit = found.stdout.decode().strip()
        return tree

    def paths(self) -> list[str]:
        if self._paths is None:
            paths: list[str] = []
            with self.scratch.stream("ls-tree", "-r", "-l", "-z", "--full-tree", "--end-of-options", self.commit,
                                     timeout_s=300) as proc:
                assert proc.stdout is not None
                for rec in _records(proc.stdout, b"\0", 8192):
                    if b"\t" not in rec:
                        continue
                    meta, name = rec.split(b"\t", 1)
                    fields = meta.split()
                    if len(fields) < 4 or fields[1] != b"blob":
                        continue
                    if len(paths) >= MAX_PATHS:
                        proc.kill()
                        raise ConfigError(f"the tree of {self.commit[:12]} has more than {MAX_PATHS} files: "
                                          "too many to detect an environment")
                    path = name.decode("utf-8", "surrogateescape")
                    paths.append(path)
                    self._sizes[path] = int(fields[3]) if fields[3].isdigit() else MAX_FILE + 1
                    self._ids[path] = fields[2].decode("ascii", "replace")
            self._paths = sorted(paths)
        return self._paths

    def read(self, path: str) -> str | None:
        return self.read_many([path]).get(path)

    def content_id(self, path: str) -> str | None:
        """The file's git object id (a hash of its content)."""
        self.paths()
        return self._ids.get(path)

    def read_many(self, paths: list[str]) -> dict[str, str]:
        self.paths()
        wanted = [p for p in paths[:MAX_BATCH] if 0 <= self._sizes.get(p, -1) <= MAX_FILE and "\n" not in p]
        if not wanted:
            return {}
        found: dict[str, str] = {}
        with tempfile.NamedTemporaryFile(prefix="bosun-batch-") as spec:
            spec.write("".join(f"{self.commit}:{p}\n" for p in wanted).encode("utf-8", "surrogateescape"))
            spec.flush()
            with self.scratch.stream("cat-file", "--batch", stdin=Path(spec.name), timeout_s=120) as proc:
                assert proc.stdout is not None
                pipe = proc.stdout
                for p in wanted:
                    header = pipe.readline(1024).split()
                    if not header:
                        break
                    if len(header) != 3 or not header[2].isdigit():
                        continue  # "<name> missing"
                    size = int(header[2])
                    if size > MAX_FILE:  # the tree said otherwise: never hold it
                        proc.kill()
                        break
                    data = pipe.read(size + 1)[:size]
                    if header[1] != b"blob" or b"\0" in data[:8192]:
                        continue
                    found[p] = data.decode("utf-8", "replace")
        return found

    def commit_date(self) -> datetime:
        stamp = self.scratch.out("show", "-s", "--format=%ct", "--end-of-options", self.commit)
        return datetime.fromtimestamp(int(stamp), tz=UTC)

    def tree_id(self) -> str:
        return self.scratch.out("rev-parse", "--end-of-options", f"{self.commit}^{{tree}}")

    def version_tag(self) -> str | None:
        """The nearest tag, as a version (``v1.2.3`` -> ``1.2.3``), if it looks like one."""
        proc = self.scratch.git("describe", "--tags", "--abbrev=0", "--end-of-options", self.commit, check=False)
        tag = proc.stdout.decode("utf-8", "replace").strip()
        m = re.fullmatch(r"[vV]?(\d+(?:\.\d+){0,3}(?:[.-]?(?:a|b|rc|post|dev)\d*)?)", tag)
        return m.group(1) if proc.returncode == 0 and m else None

    def release_tags(self, limit: int = MAX_TAGS) -> list[tuple[str, str]]:
        """The repository's tags and their dates (``YYYY-MM-DD``: an annotated tag's, else its commit's), at most
        ``limit`` (names and dates are the repository's data: only plain version-like names are kept)."""
        proc = self.scratch.git("for-each-ref", f"--count={limit}",
                                "--format=%(refname:short)%09%(creatordate:short)", "refs/tags", check=False)
        tags = []
        for line in proc.stdout.decode("utf-8", "replace").splitlines() if proc.returncode == 0 else []:
            name, _, date = line.partition("\t")
            if re.fullmatch(r"[A-Za-z0-9._+-]{1,100}", name) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
                tags.append((name, date))
        return tags

    def archive(self, dest: Path, max_bytes: int = MAX_SOURCE) -> Path:
        """The tree as a tar (git archive, with no filter or config of the repository) written to ``dest``: the
        build's source, unpacked inside the build container. ConfigError past ``max_bytes``."""
        written = 0
        with open(dest, "wb") as f, self.scratch.stream("archive", "--format=tar", "--end-of-options", self.commit,
                                                        timeout_s=600) as proc:
            assert proc.stdout is not None
            while chunk := proc.stdout.read(1 << 20):
                written += len(chunk)
                if written > max_bytes:
                    proc.kill()
                    raise ConfigError(f"the source of {self.commit[:12]} is larger than {max_bytes >> 20} MB "
                                      "as a tar: too big to build an environment from")
                f.write(chunk)
        return dest


def _records(pipe: IO[bytes], sep: bytes, max_record: int) -> Iterator[bytes]:
    """Records of a stream separated by ``sep``; a record longer than ``max_record`` is skipped (never held)."""
    buf = b""
    skipping = False
    while chunk := pipe.read(1 << 16):
        buf += chunk
        while (end := buf.find(sep)) >= 0:
            rec, buf = buf[:end], buf[end + 1:]
            if skipping:
                skipping = False
                continue
            if rec:
                yield rec
        if len(buf) > max_record:
            buf = b""
            skipping = True
    if buf and not skipping:
        yield buf
