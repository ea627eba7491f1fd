"""Declared image environments: the system is the repository's own image, from a Dockerfile it names or a
devcontainer's ``image`` / ``build`` (pure: reading the declarations; environments/builder.py builds them).

Where one comes from:

- ``.bosun/environment.toml``: ``dockerfile = "docker/dev.Dockerfile"`` (with ``context``, ``build_args``,
  ``target``), ``image = "ghcr.io/acme/dev:3"``, or ``devcontainer = true`` (the repository's devcontainer.json;
  a path names another);
- ``.devcontainer/devcontainer.json`` or ``.devcontainer.json`` alone, when detection recognises no ecosystem in the
  repository (a repository it does detect keeps its detected environment: a devcontainer there gives hints).

A devcontainer.json is read as its spec says: JSON with comments and trailing commas; ``build.dockerfile`` and
``build.context`` relative to the file's folder; ``onCreateCommand``, ``updateContentCommand`` and
``postCreateCommand`` (a string for the shell, an array run as it is, or an object of either, run in key order)
become the setup commands; ``containerEnv`` and ``remoteEnv`` the variables. What would run on the host
(``initializeCommand``), at each start (``postStartCommand``, ``postAttachCommand``), or come from a registry
(``features``) is left out with a note; ``dockerComposeFile`` is refused. Every value is the repository's (hostile):
paths must stay inside it, and nothing here runs anything.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from environments.models import ImageSpec
from infra.errors import ConfigError

DEVCONTAINER_FILES = (".devcontainer/devcontainer.json", ".devcontainer.json")
IMAGE_REF = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
"""An image reference as docker takes one (registry/name:tag or @sha256:...; lowercase)."""
ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
SETUP_KEYS = ("onCreateCommand", "updateContentCommand", "postCreateCommand")
"""The lifecycle commands that prepare a container once, in the spec's order: the setup commands."""
LEFT_OUT = {"initializeCommand": "it runs on the host", "postStartCommand": "it runs at each start",
            "postAttachCommand": "it runs when a tool attaches", "features": "features come from a registry"}
WORKSPACE_VARS = re.compile(r"\$\{(?:containerWorkspaceFolder|localWorkspaceFolder)\}")
MAX_COMMANDS = 32
PYTHON_TAG = re.compile(r"python:(?:\d+-)?(\d+\.\d+)")
STAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass
class DevContainer:
    """What a devcontainer.json declares, as bosun uses it."""

    image: ImageSpec | None
    """The image (a Dockerfile to build, or a reference); None: it declares neither."""
    setup: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    python: str = ""
    """The Python version its image's tag (``python:3.12``, ``python:1-3.12-bookworm``) or its python feature
    names; empty: none (a hint for a detected Python environment)."""


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as plain JSON: comments become spaces, a comma
    before ``]`` or ``}`` goes; strings are left as they are (a URL's ``//`` is no comment)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return re.sub(r',(\s*[\]}])', r'\1', "".join(out))


def inside(path: Any, what: str) -> str:
    """``path`` (relative to the repository's root, normalised) when it stays inside the repository; ValueError
    otherwise."""
    if not isinstance(path, str) or not path.strip() or "\0" in path or "\n" in path:
        raise ValueError(f"{what} must be a path inside the repository")
    norm = posixpath.normpath(path.strip())
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise ValueError(f"{what} {path[:80]!r} is outside the repository: only its own files can be built from")
    return "" if norm == "." else norm


def checked_image(ref: Any) -> str:
    """An image reference; ValueError when it is not one."""
    if not isinstance(ref, str) or not IMAGE_REF.match(ref.strip()):
        raise ValueError(f"image {str(ref)[:80]!r} is not an image reference (name:tag or "
                         "registry/name@sha256:..., lowercase)")
    return ref.strip()


def checked_args(args: Any) -> dict[str, str]:
    """Build arguments (NAME -> value); ValueError when they are not a table of names."""
    if args is None:
        return {}
    if not isinstance(args, dict) or not all(isinstance(k, str) and ARG_NAME.match(k) for k in args) or \
            not all(isinstance(v, (str, int, float, bool)) and "\0" not in str(v) for v in args.values()):
        raise ValueError("build args must be a table of NAME = \"value\"")
    return {k: str(v) for k, v in args.items()}


def _commands(value: Any, key: str, where: str) -> list[str]:
    """One lifecycle command as shell lines: a string as it is, an array as its words, an object's values in
    order."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        if not value or not all(isinstance(w, str) for w in value):
            raise ConfigError(f"{where}: {key} as an array must be the command's words (strings)")
        return [shlex.join(value)]
    if isinstance(value, dict):
        return [line for name, each in value.items() for line in _commands(each, f"{key}.{name}", where)]
    raise ConfigError(f"{where}: {key} must be a string, an array or an object of them")


def _image_of(data: dict[str, Any], folder: str, where: str) -> ImageSpec | None:
    build = data.get("build") if isinstance(data.get("build"), dict) else {}
    dockerfile = build.get("dockerfile") or build.get("dockerFile") or data.get("dockerFile")
    if dockerfile:
        if not isinstance(dockerfile, str):
            raise ValueError("build.dockerfile must be a path")
        context = build.get("context", data.get("context", "."))
        target = build.get("target") or ""
        if not isinstance(target, str) or (target and not STAGE.match(target)):
            raise ValueError(f"build.target {str(target)[:40]!r} is not a stage name")
        return ImageSpec(source=where, dockerfile=inside(posixpath.join(folder, dockerfile), "build.dockerfile"),
                         context=inside(posixpath.join(folder, str(context)), "build.context"),
                         build_args=checked_args(build.get("args")), target=target)
    if data.get("image"):
        return ImageSpec(source=where, image=checked_image(data["image"]))
    return None


def read_devcontainer(text: str, where: str) -> DevContainer:
    """A devcontainer.json's text -> DevContainer (see the module docstring); ConfigError naming the file and what
    is wrong."""
    try:
        data = json.loads(strip_jsonc(text))
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{where}: not valid JSON (with comments): {str(exc)[:160]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected an object")
    if "dockerComposeFile" in data:
        raise ConfigError(f"{where}: a devcontainer from dockerComposeFile is not supported (several containers); "
                          "declare one image instead: dockerfile = \"...\" in .bosun/environment.toml")
    try:
        image = _image_of(data, posixpath.dirname(where), where)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    notes = [f"{where}: {key} is left out: {why}" for key, why in LEFT_OUT.items() if data.get(key)]
    setup = [WORKSPACE_VARS.sub("/workspace", line) for key in SETUP_KEYS
             for line in _commands(data.get(key), key, where)]
    if len(setup) > MAX_COMMANDS:
        raise ConfigError(f"{where}: more than {MAX_COMMANDS} setup commands")
    if isinstance(data.get(SETUP_KEYS[-1]), dict) or isinstance(data.get(SETUP_KEYS[0]), dict):
        notes.append(f"{where}: the commands of an object run one after the other, not in parallel")
    env: dict[str, str] = {}
    for key in ("containerEnv", "remoteEnv"):
        for name, value in (data.get(key) or {}).items() if isinstance(data.get(key), dict) else ():
            if isinstance(value, str) and "${" in value:
                notes.append(f"{where}: {key}.{name} is left out: it names a variable (${{...}})")
            elif isinstance(value, str):
                env.setdefault(name, value)
    python = ""
    if m := PYTHON_TAG.search(str(data.get("image", ""))):
        python = m.group(1)
    features = data.get("features") if isinstance(data.get("features"), dict) else {}
    for feature, opts in features.items():
        if "python" in feature and isinstance(opts, dict) and re.fullmatch(r"\d+\.\d+", str(opts.get("version"))):
            python = str(opts["version"])
    return DevContainer(image=image, setup=setup, env=env, notes=notes, python=python)
