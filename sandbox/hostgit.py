"""Git on the worker host, hardened: it never reads configuration, hooks or attributes a sandbox could have written.

Every host git call goes through :func:`git`, which

- names the repository explicitly (``--git-dir``; a work tree only where bosun made it and no sandbox ever saw
  it), so git never discovers a ``.git`` by walking up from a workspace;
- runs with a clean environment: no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``),
  no system attributes, no prompts, ``LC_ALL=C``, none of the worker's variables (model keys, tokens);
- overrides whatever a repository's own config could ask for that runs code or reaches out: hooks, fsmonitor,
  filters are off (``-c`` beats repository config; diffs run with ``--no-ext-diff --no-textconv``; the
  repositories are bosun's own, so their config holds nothing bosun did not write), ``protocol.allow=never`` except the
  protocols a call names (``file`` for local clones, ``https``/``ssh`` for a push), no replace objects;
- takes every name from outside (refs, branch names, paths, messages) as data: :func:`check_ref` refuses names
  that are not plain ref names (no leading ``-``, no control characters, nothing ``git check-ref-format``
  refuses), commit messages go through stdin, and ``--end-of-options`` separates options from revisions.

The repositories it runs in are host-owned (docs/THREAT-MODEL.md): the authoritative repository of a task lives
outside every workspace, and the host imports an agent's result from file contents it reads itself
(:mod:`sandbox.snapshot`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from infra.errors import ConfigError

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
        secret: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` on a host-owned repository (``git_dir``), hardened as the module says.

    ``protocols``: transport protocols this call may use (``file`` for a local clone, ``https`` for a push).
    ``config``: more ``-c key=value`` settings. ``secret`` is masked in error messages.
    Raises GitError (a ConfigError) when git fails and ``check`` is set; output is bytes (callers decode).
    """
    argv = ["git"]
    for item in (*OVERRIDES, *(f"protocol.{p}.allow=always" for p in protocols), *config):
        argv += ["-c", item]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    argv += list(args)
    data = input.encode("utf-8") if isinstance(input, str) else input
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, timeout=timeout_s, env=clean_env(env),
                              cwd=str(cwd) if cwd is not None else "/")
    except subprocess.TimeoutExpired:
        raise GitError(f"git {_shown(args)} timed out after {timeout_s:.0f} s") from None
    if check and proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace").strip() or proc.stdout.decode("utf-8", "replace").strip()
        if secret:
            text = text.replace(secret, "***")
        text = re.sub(r"Authorization: \S+ \S+", "Authorization: ***", text)
        raise GitError(f"git {_shown(args)} failed ({proc.returncode}): {text[-500:]}")
    return proc


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
    """A path as git's C-style quoted string (fast-import, ``update-index``): any byte is safe inside it."""
    raw = os.fsencode(path)
    out_ = bytearray(b'"')
    for b in raw:
        if b == 0x22:
            out_ += b'\\"'
        elif b == 0x5C:
            out_ += b"\\\\"
        elif b < 0x20 or b == 0x7F:
            out_ += b"\\%03o" % b
        else:
            out_.append(b)
    out_ += b'"'
    return bytes(out_)
