"""Git on the worker host, hardened: it never reads configuration, hooks or attributes a sandbox could have written.

Every host git call goes through :func:`git`, which

- names the repository explicitly (``--git-dir``; a work tree only where bosun made it and no sandbox ever saw
  it), so git never discovers a ``.git`` by walking up from a workspace;
- runs with a clean environment: no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``),
  no system attributes, no prompts, ``LC_ALL=C``, none of the worker's variables (model keys, tokens);
- overrides what a repository's own config could ask for that runs code or reaches out: hooks and fsmonitor are
  off (``-c`` beats repository config; diffs run with ``--no-ext-diff --no-textconv``), ``protocol.allow=never``
  except the protocols a call names (``file`` for local clones, ``https``/``ssh`` for a push), no replace objects.
  Filters (``filter.<driver>.smudge``), ``include.path`` and the like cannot be switched off this way: :func:`git`
  is only for repositories whose config bosun wrote itself (the task repositories). A repository whose config is not
  bosun's (``bosun env --repo``) is read through :class:`Borrowed`: git runs in a scratch git directory that
  borrows the repository's objects and a copy of its refs, and never opens its config;
- takes every name from outside (refs, branch names, paths, messages) as data: :func:`check_ref` refuses names
  that are not plain ref names (no leading ``-``, no control characters, nothing ``git check-ref-format``
  refuses), commit messages go through stdin, and ``--end-of-options`` separates options from revisions.

The repositories it runs in are host-owned (docs/THREAT-MODEL.md): the authoritative repository of a task lives
outside every workspace, and the host imports an agent's result from file contents it reads itself
(:mod:`sandbox.snapshot`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from infra.errors import ConfigError
from infra.names import c_quoted, os_bytes

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

OVERRIDES = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.sshCommand=ssh",
    "core.symlinks=true",
    "core.protectNTFS=true",
    "core.protectHFS=true",
    "merge.renormalize=false",
    "protocol.allow=never",
    "credential.helper=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "user.name=bosun",
    "user.email=bosun@localhost",
    "init.defaultBranch=main",
    "advice.detachedHead=false",
)
"""``-c`` settings on every call: command-line config beats anything in a repository's config file."""

REF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]{0,199}$")
"""What bosun accepts as a branch or ref name from outside (a stricter subset of git check-ref-format)."""
OBJECT_ID = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")


class GitError(ConfigError):
    """A host git command failed (the message names the command and git's own words)."""


TRANSPORTS = ("file", "https", "ssh", "git")
"""Protocols a clone, fetch or push of a repository someone named may use (never ``ext``)."""

def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a host git process (nothing inherited from the worker)."""
    env = {
        "PATH": SAFE_PATH,
        "HOME": "/nonexistent",
        "LC_ALL": "C",
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_LFS_SKIP_SMUDGE": "1",
    }
    if extra:
        env.update(extra)
    return env


def git(git_dir: Path | str | None, *args: str, work_tree: Path | str | None = None, cwd: Path | str | None = None,
        input: bytes | str | None = None, protocols: Iterable[str] = (), config: Iterable[str] = (),
        env: Mapping[str, str] | None = None, check: bool = True, timeout_s: float = 300.0,
        secret: str | None = None, as_user: tuple[int, int] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` on a host-owned repository (``git_dir``), hardened as the module says.

    ``protocols``: transport protocols this call may use (``file`` for a local clone, ``https`` for a push).
    ``config``: more ``-c key=value`` settings. ``secret`` is masked in error messages. ``as_user``: (uid, gid)
    to run as (a root worker writing into a repository someone else owns, so what it writes is theirs).
    Raises GitError (a ConfigError) when git fails and ``check`` is set; output is bytes (callers decode).
    """
    argv = _argv(git_dir, args, work_tree=work_tree, protocols=protocols, config=config)
    data = input.encode("utf-8") if isinstance(input, str) else input
    who: dict = {} if as_user is None else {"user": as_user[0], "group": as_user[1], "extra_groups": []}
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, timeout=timeout_s, env=clean_env(env),
                              cwd=str(cwd) if cwd is not None else "/", **who)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {_shown(args)} timed out after {timeout_s:.0f} s") from None
    if check and proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace").strip() or proc.stdout.decode("utf-8", "replace").strip()
        if secret:
            text = text.replace(secret, "***")
        text = re.sub(r"Authorization: \S+ \S+", "Authorization: ***", text)
        raise GitError(f"git {_shown(args)} failed ({proc.returncode}): {text[-500:]}")
    return proc


def _argv(git_dir: Path | str | None, args: Iterable[str], *, work_tree: Path | str | None = None,
          protocols: Iterable[str] = (), config: Iterable[str] = ()) -> list[str]:
    argv = ["git"]
    for item in (*OVERRIDES, *(f"protocol.{p}.allow=always" for p in protocols), *config):
        argv += ["-c", item]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    return argv + list(args)


@contextlib.contextmanager
def stream(git_dir: Path | str | None, *args: str, stdin: Path | None = None, timeout_s: float = 300.0,
           check: bool = True) -> Iterator[subprocess.Popen[bytes]]:
    """``git ARGS`` hardened as :func:`git`, its stdout read as it comes (``proc.stdout``): for output that must
    not be held whole in memory. ``stdin``: a file fed to git. Leaving the block early kills git (the caller
    stopped at a bound); git still running after ``timeout_s`` is killed and GitError raised; a failure of git
    (``check``) raises GitError. A caller stopping early kills git (``proc.kill()``)."""
    with tempfile.TemporaryFile() as err, open(stdin if stdin is not None else os.devnull, "rb") as inp:
        proc = subprocess.Popen(_argv(git_dir, args), stdin=inp, stdout=subprocess.PIPE, stderr=err,
                                env=clean_env(), cwd="/")
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            with contextlib.suppress(OSError):
                proc.kill()

        timer = threading.Timer(timeout_s, expire)
        timer.daemon = True
        timer.start()
        assert proc.stdout is not None
        try:
            yield proc
        except BaseException:
            proc.kill()
            raise
        finally:
            proc.stdout.close()  # a git still writing (the caller stopped at a bound) ends on SIGPIPE
            rc = proc.wait()
            timer.cancel()
        if expired.is_set():
            raise GitError(f"git {_shown(args)} timed out after {timeout_s:.0f} s")
        if check and rc not in (0, -9, -13):  # killed: the caller stopped at a bound
            err.seek(0)
            text = err.read(64_000).decode("utf-8", "replace").strip()
            raise GitError(f"git {_shown(args)} failed ({rc}): {text[-500:]}")


MAX_REF_FILES = 20_000
"""Loose refs :class:`Borrowed` copies (more: ConfigError)."""
MAX_REF_BYTES = 64 << 20
"""Bytes of packed-refs (or shallow) :class:`Borrowed` copies (more: ConfigError)."""


def read_data(path: Path | str, limit: int) -> bytes | None:
    """The bytes of a regular file, read as data: never through a link, never blocking on a FIFO or a device;
    None when it is not a regular file, cannot be opened, or holds more than ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def common_dir(git_dir: Path) -> Path:
    """The common git directory of ``git_dir`` (a linked worktree's ``commondir``), read as data."""
    raw = read_data(git_dir / "commondir", 4096)
    return (git_dir / os.fsdecode(raw.strip())).resolve() if raw and raw.strip() else git_dir


def find_git_dir(path: Path) -> Path | None:
    """The git directory of a work tree's top folder or of a bare repository, found by reading files as data (no
    git runs, no config is read); None when ``path`` is neither."""
    dotgit = path / ".git"
    if dotgit.is_dir():
        found = dotgit
    elif dotgit.is_file():
        raw = read_data(dotgit, 4096)
        if not raw or not raw.startswith(b"gitdir:"):
            return None
        found = path / os.fsdecode(raw[len(b"gitdir:"):].strip())
    else:
        found = path
    found = found.resolve()
    if (found / "HEAD").is_file() and (common_dir(found) / "objects").is_dir():
        return found
    return None


class Borrowed:
    """A scratch git directory that borrows a repository's objects (``objects/info/alternates``) and a copy of
    its refs (``HEAD``, ``packed-refs``, loose refs, ``shallow``, each read as data and bounded): git run here
    sees the repository's history but never its config, hooks or attributes, so a repository that is not bosun's
    own (a ``filter.<driver>.smudge``, an ``include.path`` of /dev/zero) cannot make host git run or read anything.
    ``refs=False``: objects (and ``shallow``) only (the caller names full object ids). Removed with
    :meth:`close` (or when collected)."""

    def __init__(self, git_dir: Path | str, *, refs: bool = True) -> None:
        self.source = Path(git_dir).resolve()
        common = common_dir(self.source)
        objects = (common / "objects").resolve()
        if not objects.is_dir():
            raise ConfigError(f"{git_dir}: not a git directory (it has no objects folder)")
        if "\n" in str(objects) or str(objects).startswith('"'):
            raise ConfigError(f"{git_dir}: a git directory whose path has a newline or starts with a quote")
        config = read_data(common / "config", 1 << 20) or b""
        sha256 = re.search(rb"(?im)^\s*objectformat\s*=\s*sha256\s*(?:[#;].*)?$", config) is not None
        self._tmp = tempfile.TemporaryDirectory(prefix="bosun-borrowed-")
        self.path = Path(self._tmp.name) / "git"
        try:
            git(None, "init", "-q", "--bare", f"--object-format={'sha256' if sha256 else 'sha1'}", str(self.path))
            (self.path / "objects" / "info" / "alternates").write_text(f"{objects}\n")
            self._copy(common, "shallow")  # where a shallow history stops: git must not look past it
            if refs:
                self._copy_refs(common)
        except BaseException:
            self.close()
            raise

    def _copy(self, common: Path, name: str) -> None:
        if (common / name).exists():
            data = read_data(common / name, MAX_REF_BYTES)
            if data is None:
                raise ConfigError(f"{self.source}: its {name} is not a regular file of at most "
                                  f"{MAX_REF_BYTES >> 20} MB")
            (self.path / name).write_bytes(data)

    def _copy_refs(self, common: Path) -> None:
        head = read_data(self.source / "HEAD", 4096)
        if head and re.fullmatch(rb"ref: refs/[^\0\n]{1,400}\n?|[0-9a-f]{40}\n?|[0-9a-f]{64}\n?", head):
            (self.path / "HEAD").write_bytes(head)
        self._copy(common, "packed-refs")
        refs = common / "refs"
        if not refs.is_dir() or refs.is_symlink():
            return
        count = 0
        for dirpath, dirs, files in os.walk(refs):
            rel = Path(dirpath).relative_to(refs)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(dirpath, d))]
            for name in files:
                count += 1
                if count > MAX_REF_FILES:
                    raise ConfigError(f"{self.source}: more than {MAX_REF_FILES} loose refs (run git pack-refs)")
                data = read_data(os.path.join(dirpath, name), 4096)
                if data is None:
                    continue
                target = self.path / "refs" / rel / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)

    def git(self, *args: str, **kw) -> subprocess.CompletedProcess[bytes]:
        return git(self.path, *args, **kw)

    def out(self, *args: str, **kw) -> str:
        return out(self.path, *args, **kw)

    def stream(self, *args: str, **kw) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
        return stream(self.path, *args, **kw)

    def close(self) -> None:
        self._tmp.cleanup()


def check_rev_expression(rev: str, what: str = "revision") -> str:
    """A revision expression from outside (``HEAD~1``, ``v1.0^``, a branch, an object id), to be resolved by
    ``git rev-parse --verify --end-of-options``: refused when it starts with ``-``, is empty or longer than 200
    characters, or holds control characters or spaces."""
    if not isinstance(rev, str) or not rev or len(rev) > 200 or rev.startswith("-") \
            or re.search(r"[\x00-\x20\x7f]", rev):
        raise ConfigError(f"{what} {rev!r} is not a usable revision: 1-200 characters, no leading '-', no spaces "
                          "or control characters")
    return rev


def out(git_dir: Path | str | None, *args: str, **kw) -> str:
    """stdout of :func:`git` as text, stripped."""
    return git(git_dir, *args, **kw).stdout.decode("utf-8", "surrogateescape").strip()


def _shown(args: tuple[str, ...]) -> str:
    return " ".join(a for a in args if not a.startswith("http.extraHeader"))[:200]


def check_ref(name: str, what: str = "ref") -> str:
    """``name`` if it is a plain branch/ref name bosun may hand to git; else ConfigError saying why.

    Refused: a leading ``-`` or ``.``, control characters and spaces, ``..``, ``@{``, ``//``, a trailing ``/``,
    ``.`` or ``.lock``, and anything outside ``A-Z a-z 0-9 . _ / + -``.
    """
    if not isinstance(name, str) or not REF_NAME.match(name):
        raise ConfigError(f"{what} {name!r} is not a usable git ref name: use 1-200 characters from "
                          "A-Z a-z 0-9 . _ / + -, starting with a letter or digit")
    bad = [p for p in ("..", "//", "@{", "/.", ".lock/") if p in name]
    if bad or name.endswith(("/", ".", ".lock")):
        raise ConfigError(f"{what} {name!r} is not a usable git ref name (it contains or ends with "
                          f"{(bad or [name[-5:]])[0]!r})")
    return name


def check_revision(rev: str, what: str = "revision") -> str:
    """A ref name or an object id (abbreviated from 7 hex digits) from outside; ConfigError otherwise."""
    if isinstance(rev, str) and (re.fullmatch(r"[0-9a-f]{7,64}", rev) or rev == "HEAD"):
        return rev
    return check_ref(rev, what)


def check_object_id(oid: str, what: str = "commit") -> str:
    if not isinstance(oid, str) or not OBJECT_ID.match(oid):
        raise ConfigError(f"{what} {oid!r} is not a full object id (40 or 64 lowercase hex digits)")
    return oid


def quote_path(path: str) -> bytes:
    """A path (process form) as git's C-style quoted string (fast-import, ``update-index``): any byte is safe inside
    it (``infra.names.c_quoted``)."""
    return c_quoted(os_bytes(path)).encode("utf-8")
