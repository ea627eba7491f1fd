"""Declared environments: ``.bosun/environment.toml`` in the repository, an operator's override file for
repositories you do not control (``BOSUN_ENV_OVERRIDES``), and the hints a Dockerfile or devcontainer.json gives.

environment.toml (every key optional; unknown keys are refused, so a typo never goes unnoticed)::

    python = "3.11"                  # 3.9, 3.11 or 3.13 (or base = "bookworm"); 3.6, built from source
    apt = ["libxml2-dev"]            # extra Debian packages in the base
    install = true                   # install the project (editable) and its detected dependencies first
    extras = ["test"]                # extras of the project to install with it
    requirements = ["pytest<5"]      # more requirement specifiers
    overrides = ["astroid==2.15.5"]  # pins that win over the requirement files' (as a pip install run after them)
    requirement_files = ["requirements/ci.txt"]
    soft_requirements = ["netCDF4"]  # installed when the index has them and they install; dropped otherwise
    exclude_newer = "2019-12-01"     # resolve as of this date; false: the newest versions
    resolve_for_python = "3.6"       # resolve versions as if for this older Python, install them on ours
    build_isolation = false          # build the project against the installed packages (numpy, cython)
    project_last = true              # install the requirements first, then the project on its own: what it
                                     # requires wins over their pins (as pip installs run one after the other)
    prepare = ["sed -i 's/==1.2/>=1.2/' setup.py"]    # run in the source before the install, with network
    setup = ["python setup.py build_ext --inplace"]   # run after the install, with network
    test_command = "python -m pytest tests"
    compilers = true                 # a C toolchain and Python headers in the base
    detect = false                   # install only what this file names: no extras, requirement files, pytest
                                     # plugins or imports that detection would add beside it
    standins = ["httpbin.org"]       # public test services the tests call, answered in the sandbox by a local
                                     # stand-in (its package a requirement; environments/standins.py)
    [env]
    DJANGO_SETTINGS_MODULE = "tests.settings"

Or the system as an image of the repository's own (environments/image.py); then nothing is installed beside it,
only ``setup``, ``prepare``, ``test_command`` and ``env`` apply, and its sandboxes run on docker::

    dockerfile = "docker/dev.Dockerfile"   # built with the commit's files (context: the repository's root)
    context = "docker"                     # the build context's folder, when not the root
    target = "test"                        # a stage of a multi-stage Dockerfile
    image = "ghcr.io/acme/dev:3"           # or an image to start from (pulled when this engine lacks it)
    devcontainer = true                    # or the repository's devcontainer.json (a path: another one)
    [build_args]
    NODE_VERSION = "20"

The file is the repository's own (hostile) content like setup.py: it only shapes a build that runs in a
container, never anything on the host.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from environments.bases import check_packages
from environments.image import STAGE, checked_args, checked_image, inside, read_devcontainer
from environments.interpreters import SUITES, interpreter
from environments.standins import KNOWN
from infra.errors import ConfigError, describe_validation

PYTHON_KEYS = {"python", "base", "apt", "install", "extras", "requirements", "overrides", "requirement_files",
               "soft_requirements", "exclude_newer", "resolve_for_python", "build_isolation", "project_last",
               "compilers", "detect", "standins"}
"""The keys of a Python install, which an image declaration refuses."""
RESERVED_ENV = {"PATH", "HOME", "TMPDIR", "VIRTUAL_ENV", "PYTHONHOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "USER",
                "PWD", "SHELL", "UV_CACHE_DIR", "UV_PYTHON_DOWNLOADS"}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class Declared(BaseModel):
    """The schema of environment.toml (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    python: str | None = None
    base: str | None = None
    apt: list[str] = []
    install: bool = True
    extras: list[str] = []
    requirements: list[str] = []
    overrides: list[str] = []
    requirement_files: list[str] = []
    soft_requirements: list[str] = []
    exclude_newer: str | bool | None = None
    resolve_for_python: str | None = None
    build_isolation: bool = True
    project_last: bool = False
    prepare: list[str] = []
    setup: list[str] = []
    test_command: str | None = None
    compilers: bool = False
    detect: bool = True
    standins: list[str] = []
    env: dict[str, str] = {}
    dockerfile: str | None = None
    context: str | None = None
    build_args: dict[str, str] = {}
    target: str | None = None
    image: str | None = None
    devcontainer: bool | str = False

    @field_validator("dockerfile", "context")
    @classmethod
    def _inside(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _plain(inside, v, info.field_name)

    @field_validator("devcontainer")
    @classmethod
    def _devcontainer(cls, v: bool | str) -> bool | str:
        if isinstance(v, str):
            return _plain(inside, v, "devcontainer")
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        return None if v is None else _plain(checked_image, v)

    @field_validator("build_args")
    @classmethod
    def _args(cls, v: dict[str, str]) -> dict[str, str]:
        return _plain(checked_args, v)

    @field_validator("target")
    @classmethod
    def _target(cls, v: str | None) -> str | None:
        if v is not None and not STAGE.match(v):
            raise ConfigError(f"target {v[:40]!r} is not a stage name")
        return v

    @model_validator(mode="after")
    def _one_image(self) -> Declared:
        given = [k for k in ("dockerfile", "image", "devcontainer") if getattr(self, k)]
        if len(given) > 1:
            raise ConfigError(f"{' and '.join(given)}: name one image (a Dockerfile, an image or a devcontainer)")
        if not given and (self.context or self.build_args or self.target):
            raise ConfigError("context, build_args and target belong to a dockerfile: name it (dockerfile = \"...\")")
        if given and (self.context or self.build_args or self.target) and given[0] != "dockerfile":
            raise ConfigError(f"context, build_args and target belong to a dockerfile, not to {given[0]}")
        if given:
            wrong = sorted(k for k in self.model_fields_set & PYTHON_KEYS)
            if wrong:
                raise ConfigError(f"{', '.join(wrong)}: with {given[0]} the image is the system, and nothing is "
                                 "installed beside it (install it in the image, or in setup commands)")
        return self

    @property
    def wants_image(self) -> bool:
        return bool(self.dockerfile or self.image or self.devcontainer)

    @property
    def devcontainer_path(self) -> str | None:
        """The devcontainer.json it names (``True``: the repository's usual places, the first one present)."""
        if not self.devcontainer:
            return None
        return self.devcontainer if isinstance(self.devcontainer, str) else ""

    @field_validator("python")
    @classmethod
    def _python(cls, v: str | None) -> str | None:
        return None if v is None else interpreter(v).version

    @field_validator("resolve_for_python")
    @classmethod
    def _resolve_for(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"3\.\d{1,2}", v):
            raise ValueError(f"resolve_for_python {v[:20]!r}: a Python version, major.minor (3.6)")
        return v

    @field_validator("base")
    @classmethod
    def _base(cls, v: str | None) -> str | None:
        if v is not None and v not in SUITES:
            raise ValueError(f"base {v!r} is not available: use one of {', '.join(SUITES)}")
        return v

    @field_validator("apt")
    @classmethod
    def _apt(cls, v: list[str]) -> list[str]:
        return check_packages(v, "apt")

    @field_validator("extras")
    @classmethod
    def _extras(cls, v: list[str]) -> list[str]:
        for extra in v:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", extra):
                raise ValueError(f"extra {extra[:40]!r} is not a valid extra name")
        return v

    @field_validator("requirement_files")
    @classmethod
    def _files(cls, v: list[str]) -> list[str]:
        for path in v:
            if path.startswith("/") or ".." in path.split("/") or "\n" in path or path.startswith("-"):
                raise ValueError(f"requirement file {path[:60]!r} must be a path inside the repository")
        return v

    @field_validator("requirements", "soft_requirements", "prepare", "setup")
    @classmethod
    def _lines(cls, v: list[str]) -> list[str]:
        for item in v:
            if "\n" in item or "\0" in item or not item.strip():
                raise ValueError(f"{item[:40]!r}: one non-empty line each")
        return v

    @field_validator("standins")
    @classmethod
    def _standins(cls, v: list[str]) -> list[str]:
        for host in v:
            if host not in KNOWN:
                raise ValueError(f"standins: no stand-in is known for {host[:60]!r}; known: {', '.join(KNOWN)}")
        return list(dict.fromkeys(v))

    @field_validator("test_command")
    @classmethod
    def _test(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                if not shlex.split(v):
                    raise ValueError("test_command is empty")
            except ValueError as exc:
                raise ValueError(f"test_command is not a valid command line: {exc}") from None
        return v

    @field_validator("exclude_newer")
    @classmethod
    def _date(cls, v: str | bool | None) -> str | bool | None:
        if v is True:
            raise ValueError("exclude_newer: a date (2019-12-01) or false")
        if isinstance(v, str):
            parse_date(v)
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not ENV_NAME.match(name) or name in RESERVED_ENV or name.startswith("BOSUN_"):
                raise ValueError(f"env: {name[:40]!r} cannot be set (a valid name, and not one of "
                                 f"{', '.join(sorted(RESERVED_ENV))} or BOSUN_*)")
            if "\0" in value:
                raise ValueError(f"env: the value of {name} contains a NUL byte")
        return v

    @property
    def python_version(self) -> str | None:
        return self.python or (SUITES[self.base] if self.base else None)


def _plain(check: Any, *args: Any) -> Any:
    """``check(*args)`` with its ValueError as a ConfigError (said as it is, without pydantic's wording)."""
    try:
        return check(*args)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def parse_date(text: str) -> datetime:
    """A date or RFC 3339 time as an aware UTC datetime; ValueError otherwise."""
    t = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
            return datetime.combine(date.fromisoformat(t), datetime.max.time().replace(microsecond=0), tzinfo=UTC)
        stamp = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not a date (YYYY-MM-DD) or an RFC 3339 time") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def parse_declared(text: str, where: str) -> Declared:
    """environment.toml text -> Declared; ConfigError naming the file and what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    if isinstance(data.get("environment"), dict) and len(data) == 1:
        data = data["environment"]  # a [environment] table is accepted too
    try:
        return Declared.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {describe_validation(exc, where=where, first_only=True)}") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


# -- the operator's override map ---------------------------------------------------------------------------------


def load_overrides(value: str | None) -> dict[str, Path]:
    """BOSUN_ENV_OVERRIDES: a JSON object, or the path of a JSON or TOML file holding one, from a repository
    (a path, a URL, or a glob pattern over either) to an environment file. ConfigError when unusable."""
    if not value or not value.strip():
        return {}
    text = value.strip()
    source = "BOSUN_ENV_OVERRIDES"
    if not text.startswith("{"):
        path = Path(text).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"BOSUN_ENV_OVERRIDES: cannot read {path}: {exc.strerror or exc}") from None
        source = str(path)
    try:
        raw: Any = tomllib.loads(text) if source.endswith(".toml") else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{source}: not a JSON{' or TOML' if source.endswith('.toml') else ''} object: "
                          f"{str(exc)[:160]}") from None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ConfigError(f"{source}: expected an object from repository (path, URL or pattern) to an environment "
                          "file path")
    out: dict[str, Path] = {}
    for repo, env_file in raw.items():
        path = Path(env_file).expanduser()
        if not path.is_file():
            raise ConfigError(f"{source}: the environment file for {repo!r} ({env_file}) does not exist")
        out[repo] = path
    return out


def override_for(overrides: dict[str, Path], repository: str) -> Path | None:
    """The override file for ``repository``: an exact match (path resolved), else the first pattern that
    matches."""
    candidates = {repository.rstrip("/")}
    if not re.match(r"^[a-z+]+://", repository):
        candidates.add(str(Path(repository).expanduser().resolve()))
    for key, path in overrides.items():
        if key.rstrip("/") in candidates:
            return path
        if not re.match(r"^[a-z+]+://", key) and not any(c in key for c in "*?["):
            if str(Path(key).expanduser().resolve()) in candidates:
                return path
    for key, path in overrides.items():
        if any(c in key for c in "*?[") and any(fnmatch.fnmatch(c, key) for c in candidates):
            return path
    return None


# -- hints from a Dockerfile or devcontainer.json ---------------------------------------------------------------


def dockerfile_hints(text: str) -> dict[str, Any]:
    """python version (from ``FROM python:X.Y``), apt packages (``apt-get install``) and ENV of a Dockerfile.
    Its RUN steps are not run: the base images it names are not reachable and bosun builds its own."""
    hints: dict[str, Any] = {"apt": [], "env": {}}
    joined = re.sub(r"\\\r?\n", " ", text)
    for line in joined.splitlines()[:2000]:
        line = line.strip()
        m = re.match(r"(?i)^FROM\s+(?:--platform=\S+\s+)?(?:\S+/)?python:(\d+\.\d+)", line)
        if m and "python" not in hints:
            hints["python"] = m.group(1)
        if re.match(r"(?i)^RUN\b", line):
            for seg in re.split(r"&&|;|\|\|", line[3:]):
                words = seg.split()
                if "install" in words and any(w in ("apt-get", "apt") for w in words):
                    hints["apt"] += [w for w in words[words.index("install") + 1:]
                                     if not w.startswith("-") and re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", w)]
        m = re.match(r"(?i)^ENV\s+([A-Za-z_][A-Za-z0-9_]*)[ =](.*)$", line)
        if m and m.group(1) not in RESERVED_ENV and "$" not in m.group(2):
            hints["env"][m.group(1)] = m.group(2).strip().strip('"')
    return hints


def devcontainer_hints(text: str, where: str) -> dict[str, Any]:
    """A detected Python environment's hints from its devcontainer.json at ``where``: the python version (the
    image's tag or the python feature's version), the setup commands (onCreateCommand...) and the variables
    (containerEnv, remoteEnv), read by image.read_devcontainer; none from a file it refuses (a hint is not a
    declaration: detection goes on without it)."""
    try:
        found = read_devcontainer(text, where)
    except ConfigError:
        return {"setup": []}
    env, _ = usable_env(found.env, where)
    return {"python": found.python, "setup": found.setup, "env": env}


def usable_env(env: dict[str, str], where: str) -> tuple[dict[str, str], list[str]]:
    """The variables of ``env`` an environment may set (a name, not one bosun sets, no NUL), and a note for each
    one left out."""
    kept: dict[str, str] = {}
    notes: list[str] = []
    for name, value in env.items():
        if ENV_NAME.match(name) and name not in RESERVED_ENV and not name.startswith("BOSUN_") and "\0" not in value:
            kept[name] = value
        else:
            notes.append(f"{where}: the variable {name[:40]!r} is left out (bosun sets it, or it is not a name)")
    return kept, notes
