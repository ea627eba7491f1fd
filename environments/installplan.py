"""The plan of a Python environment's install: the attempts (as of the commit's date, then later dates), what each
round has learnt (pins, bumps, drops, build constraints), and where bosun's own tools sit in the build container."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from environments.interpreters import interpreter
from environments.models import EnvSpec

TOOLS = "/opt/bosun-tools"


UV = f"{TOOLS}/uv"


TOOLS_DATE = datetime(2022, 12, 31, tzinfo=UTC)
"""pip, setuptools and wheel are resolved as of this date at the earliest: editable installs need setuptools 64+
(setuptools 65 then); old setup.py files still find setuptools' test command and pkg_resources there, and their
old-style version specifiers (``>=3.5.*``, refused from setuptools 66 on) still pass."""


REUPLOADED = {"atomicwrites": "2022-07-09T00:00:00Z"}
"""Packages whose every file was uploaded again after the fact: as of an earlier date they have no version at
all, and the resolver quietly falls back to ancient versions of what needs them (pytest 3 instead of 4.5)."""


HEAVY = ("numpy", "scipy", "pandas", "matplotlib", "scikit-learn", "scikit-image", "h5py", "lxml", "pillow",
         "cryptography", "grpcio", "pyarrow", "numba", "llvmlite", "tables", "netcdf4", "cftime", "psycopg2",
         "pyzmq", "kiwisolver", "contourpy", "shapely", "pyproj", "cffi", "gevent", "greenlet",
         "regex", "ujson", "msgpack", "pycurl", "bcrypt", "pynacl", "lz4", "zstandard", "statsmodels", "astropy")
"""Packages that compile a lot: only from wheels (building numpy 1.17 for Python 3.9 takes long and often fails);
a version without a wheel for the interpreter is moved to the date wheels were common. Not PyYAML: it builds from
source in seconds (its C extension is optional), and its wheels came late (none for Python 3.9 before 5.4, January
2021). As a wheel only, the resolver quietly chose what does not need it instead: dask 2.17 rather than 2020.12
for a December 2020 xarray, which then ran without its configuration's defaults (KeyError: 'optimization')."""


COLLECT_TIMEOUT_S = 300


COLLECT_SAMPLE = 30
"""Test files collected by the check when the suite is large (collecting sympy whole takes minutes)."""


TEST_DIRS = {"test", "tests", "testing"}
"""Folders whose modules the sample prefers (:func:`collect_sample`)."""


VCS = re.compile(r"^\s*(?:([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*@\s*)?(?:git|hg|svn|bzr)\+(\S+)")
"""A requirement from a version control repository: ``name @ git+URL`` or a bare ``git+URL``."""


class StepRunner(Protocol):
    def step(self, name: str, cmd: list[str], env: dict[str, str], *, check: bool = True) -> tuple[int, str]:
        """Run ``cmd`` in the build; (exit code, output)."""

    def note(self, text: str) -> None:
        """A line in the build log."""


@dataclass
class Attempt:
    label: str
    date: str | None
    optional: bool
    """With the optional requirement files and the guessed requirements."""
    bump_to: str | None = None
    """Where a failing package moves (None: nowhere)."""
    files: bool = True
    """With the repository's requirement files (the last attempt has only the project and the test runner)."""
    resolve_for: str | None = None
    """Versions resolved as if for this older interpreter first (``uv pip compile --python-version``), then
    installed on the environment's own as constraints."""


@dataclass
class Plan:
    """One attempt's adjustments so far."""

    attempt: Attempt
    dropped: set[str] = field(default_factory=set)
    bumps: dict[str, str] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)
    collect_rounds: int = 0
    pytest_version: tuple[int, int] | None = None
    """From ``pytest --version``."""
    from_index: dict[str, str] = field(default_factory=dict)
    """Requirements from a version control repository that could not be fetched -> the index's name instead."""
    build_constraints: list[str] = field(default_factory=list)
    """Constraints on the isolated builds of packages from source (uv's ``--build-constraints``)."""
    no_isolation: bool = False
    """The project's build backend cannot make an editable install: built without isolation, against the
    environment's own setuptools."""
    overrides: list[str] = field(default_factory=list)
    """Requirements that win over every pin (uv's ``--override``, beside the spec's own): a test runner a
    requirement file pins that cannot run on the interpreter (requests 2.9: pytest==2.8.1 on Python 3.9)."""
    develop: bool = False
    """The project (a setup.py without a build backend of its own) installed as pip installed such projects until
    21.3: ``python setup.py develop``, its setup.py the main module (:data:`LEGACY_FAILED`)."""
    fresh: bool = False
    """Installed requirements were dropped (:func:`drop_broken`): the next round starts from a new virtualenv, since
    an install only adds."""

    def drop(self, reqs: set[str]) -> str:
        """Leave ``reqs`` out from now on (a guess, or a module added for the tests); their names, for a note."""
        self.dropped |= reqs
        self.added = [a for a in self.added if a not in reqs]
        return ", ".join(sorted(reqs))

    def isolated(self, spec: EnvSpec) -> bool:
        """Whether the project is built in an isolated build environment (its own build requirements)."""
        return spec.build_isolation and not self.no_isolation

    def summary(self) -> str:
        parts = []
        if self.bumps:
            parts.append(f"as of {self.attempt.bump_to[:10] if self.attempt.bump_to else 'later'}: "
                         f"{', '.join(sorted(self.bumps))}")
        if self.added:
            parts.append(f"added: {', '.join(self.added)}")
        if self.dropped:
            parts.append(f"dropped: {', '.join(sorted(self.dropped))}")
        if self.build_constraints:
            parts.append(f"source builds with {', '.join(self.build_constraints)}")
        if self.no_isolation:
            parts.append("built without isolation: its backend makes no editable install")
        if self.develop:
            parts.append("installed with setup.py develop")
        if self.overrides:
            parts.append(f"pins overridden: {', '.join(self.overrides)}")
        if self.from_index:
            parts.append(f"from the index, their repositories out of reach: {', '.join(self.from_index.values())}")
        return f" ({'; '.join(parts)})" if parts else ""


@dataclass
class Installed:
    date: str | None
    history: list[str]
    moved: dict[str, str] = field(default_factory=dict)
    """Packages resolved as of another date than ``date`` (the tools, re-uploaded and moved packages)."""


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def attempts_for(spec: EnvSpec) -> list[Attempt]:
    """The install attempts, in order (see the module docstring)."""
    first = [Attempt(f"as of {(spec.exclude_newer or 'now')[:10]}, versions as for Python {spec.resolve_for_python}",
                     spec.exclude_newer, True, resolve_for=spec.resolve_for_python)] if spec.resolve_for_python else []
    return first + _dated_attempts(spec)


def _dated_attempts(spec: EnvSpec) -> list[Attempt]:
    extra = bool(spec.optional_files or spec.guessed)
    files = bool(spec.requirement_files)
    if spec.exclude_newer is None:
        out = [Attempt("with the newest versions", None, True)]
        if extra or files:
            out.append(Attempt("with the newest versions, only the project and its test runner", None, False,
                               files=False))
        return out
    commit = datetime.fromisoformat(spec.exclude_newer.replace("Z", "+00:00"))
    wheels = interpreter(spec.python).wheels_from
    later = _iso(max(commit, wheels))
    out = [Attempt(f"as of the commit ({spec.exclude_newer[:10]})", spec.exclude_newer, True,
                   later if wheels > commit else None)]
    if wheels > commit:
        out.append(Attempt(f"as of {later[:10]}, when wheels for Python {spec.python} were common", later, True))
    if extra or files:
        out.append(Attempt(f"as of {later[:10]}, only the project and its test runner", later, False, files=False))
    return out


def moved_packages(attempt: Attempt, bumps: dict[str, str]) -> dict[str, str]:
    """Packages resolved as of another date than the attempt's: pip/setuptools/wheel, re-uploaded ones, bumps."""
    if not attempt.date:
        return {}
    moved = {tool: tools_date(attempt.date) for tool in BUILD_TOOLS}
    moved.update({name: date for name, date in REUPLOADED.items() if date > attempt.date})
    moved.update(bumps)
    return moved


def uv_config(date: str | None, moved: dict[str, str]) -> str:
    """A uv.toml with the install's dates, so the setup commands' ``uv pip install`` resolve as the install did."""
    if not date:
        return ""
    lines = [f'exclude-newer = "{date}"', "", "[exclude-newer-package]"]
    lines += [f'"{name}" = "{when}"' for name, when in sorted(moved.items())]
    return "\n".join(lines) + "\n"


def tools_date(date: str) -> str:
    return _iso(max(datetime.fromisoformat(date.replace("Z", "+00:00")), TOOLS_DATE))


BUILD_TOOLS = ("pip", "setuptools", "wheel")
"""The installer's own tools: resolved as of their own date (``tools_date``)."""
