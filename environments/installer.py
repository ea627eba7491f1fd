"""The install step of a build: dependencies resolved as of the commit's date, adjusted only where that cannot
work on the interpreter at hand (pure logic + a step runner; the builder supplies the container).

A 2019 commit on Python 3.9 (the oldest interpreter here) meets packages of its day that have no wheel for 3.9
and do not build from source, or that break on 3.9 at import. Rather than moving everything to a later date,
each attempt starts as of the commit and moves only the packages that fail, to the date wheels for the
interpreter became common (``bump``):

- the installer says a package needs a wheel (``Wheels are required for `x` ``), or failed to build it;
- pytest does not start, or collecting the tests fails, and the innermost frame of the traceback is in an
  installed package (``site-packages/werkzeug/...``);
- collecting the tests fails on a module nobody installed (``No module named 'x'``): it is added;
- a requirement guessed from the tests' imports is unknown to the index: it is dropped; soft requirements (guesses,
  a Pipfile's dev packages, what CI files install) that a conflict names are dropped (when it names some of them
  only); when nothing else can be moved and soft requirements remain, the attempt goes on without them;
- a package with no release before the date at all (removed and uploaded again later) is taken as of that upload;
- a requirement from a version control repository (``git+https://...``) that cannot be fetched (the build reaches
  package indexes only, or the repository is gone) is taken from the index under its name (``name @ git+...``,
  ``#egg=name``, else the repository's name), and the log says so;
- the tests' collection fails inside pytest itself (written for an older pytest): one major version back (not
  under a recipe: its pytest is the harness's);
- a package's setup.py imports what setuptools 46 removed (``setuptools.Feature``): source builds get setuptools<46;
- the project's build backend makes no editable install (a setuptools before 64 pinned for its build: no PEP 660
  hook, where pip falls back to ``setup.py develop``): it is built without isolation, against the environment's
  own setuptools;
- pytest stops with an internal error in its own code before collecting (exit 3: a pytest of the commit's day
  that predates the interpreter, pytest 2.x on Python 3.9): pytest, pluggy and py move to the later date, and the
  log says why; when a requirement file pins them (requests 2.9: ``pytest==2.8.1``) and so they did not move, the
  pins are overridden (uv's ``--override``; not under a recipe);
- the project's own build fails in setuptools' legacy PEP 517 hooks (a setup.py, no build backend declared), or
  the setuptools it is built with without isolation predates those hooks (40.8): it is installed with
  ``setup.py develop`` after its requirements, as pip did such projects before 21.3;
- a resolution as for an older interpreter that fails gets the same adjustments as a failed install.

The collection check names a sample of a large suite's test modules: never a conftest.py (named, it is collected
as a module) and, where a tests folder holds enough, only modules at the top or in a ``test``/``tests``/
``testing`` folder (a runner's testpaths would not look elsewhere).

On Python 3.6 (built from source) uv installs as on the others, but cannot byte-compile (its script needs 3.7):
the interpreter's own ``compileall`` does it once the install is done.

Attempts, in order: as of the commit; everything as of the date wheels for the interpreter were common; only the
project (with its test extras) and the test runner. The first whose install succeeds and whose pytest starts wins.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from environments import standins
from environments.imports import MODULE_TO_DIST, stdlib
from environments.interpreters import interpreter, interpreter_env, vkey
from environments.models import VENV, EnvSpec
from environments.pyconfig import plugins_for, req_name, shlex_split

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
MAX_ROUNDS = 16
COLLECT_ROUNDS = 4
COLLECT_TIMEOUT_S = 300
COLLECT_SAMPLE = 30
"""Test files collected by the check when the suite is large (collecting sympy whole takes minutes)."""
TEST_DIRS = {"test", "tests", "testing"}
"""Folders whose modules the sample prefers (:func:`collect_sample`)."""

NO_SOLUTION = "No solution found when resolving dependencies"
OLD_SETUPTOOLS = re.compile(r"cannot import name '(?:Feature|Library)' from 'setuptools'|"
                            r"module 'setuptools' has no attribute 'Feature'|"
                            r"from setuptools import [^\n]*\b(?:Feature|Library)\b[^\n]*\n"
                            r"[^\n]*ImportError: cannot import name '(?:Feature|Library)'")
"""A package's setup.py written for a setuptools before 46 (``setuptools.Feature``: MarkupSafe 1.0). Python 3.6's
ImportError does not name the module: there the traceback's line before it, the setup.py's import, does."""
OLD_BUILD_SETUPTOOLS = "setuptools<46"
UNKNOWN_PACKAGE = re.compile(r"Because ([A-Za-z0-9._-]+) was not found in the package registry")
WHEELS_REQUIRED = re.compile(r"Wheels are required for `([A-Za-z0-9._-]+)`")
FAILED_BUILD = re.compile(r"Failed to (?:download and )?build `([A-Za-z0-9._-]+)==")
"""A package that failed to build; uv names the one asked for first, then a build requirement of it that failed
(``bottleneck==1.3.2``, then its ``numpy==1.17.3``): both are named, so the soft requirement that pulled the
build in is the one dropped, not every soft requirement with it."""
PULLED_IN_BY = re.compile(r"`[A-Za-z0-9._-]+` \(v[^)]*\) was included because `([A-Za-z0-9._-]+)` \(v")
"""uv's hint naming the requirement that pulled a failing package in (``typed-ast`` because of ``mypy``)."""
FRAME = re.compile(r"site-packages/([A-Za-z0-9_]+)(?:/|\.py)")
FRAME_LINE = re.compile(r'^\s*File "([^"]+)", line \d+|^(\S+\.py):\d+: in ', re.M)
"""A frame of a Python traceback, or of pytest's short one."""
MISSING = re.compile(r"No module named '([A-Za-z0-9_]+)")
FILTERED = re.compile(r"`([A-Za-z0-9._-]+)` was filtered by `exclude-newer`[^\n]*?published at (\d{4}-\d\d-\d\d)T")
"""A package with no file before the date at all: removed and uploaded again later (codecov, atomicwrites)."""
UNRECOGNIZED = re.compile(r"unrecognized arguments: (.+)")
NEVER_MOVED = {"pip", "setuptools", "wheel", "pkg-resources"}
PYTEST_OWN = {"pytest", "pluggy", "py"}
PYTEST_VERSION = re.compile(r"pytest (?:version )?(\d+)\.(\d+)")
VCS = re.compile(r"^\s*(?:([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*@\s*)?(?:git|hg|svn|bzr)\+(\S+)")
"""A requirement from a version control repository: ``name @ git+URL`` or a bare ``git+URL``."""
VCS_FAILED = re.compile(r"Git operation failed|failed to (?:clone|fetch) into|Git executable not found|"
                        r"Failed to download and build `[^`]*@ (?:git|hg|svn|bzr)\+", re.I)
"""The installer could not fetch a version control repository."""


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


CONSTRAINTS = f"{TOOLS}/resolved-for.txt"
LEGACY_FAILED = re.compile(r"Failed to build `[^`\n]* @ file:///workspace`.*?setuptools\.build_meta:__legacy__\.|"
                           r"build_meta:__legacy__\.[a-z_]+` failed.*?ImportError: cannot import name '__legacy__'",
                           re.S)
"""The project's own build failed in setuptools' legacy backend (a setup.py and no build backend declared), or
the setuptools it is built with without isolation predates that backend (40.8: astropy 1.3's pin, 38.2.4). Such
a setup.py was written for ``pip install -e``, which ran ``setup.py develop`` with setup.py as the main module;
some check that (astropy before 4: ``import astropy`` in setup.py rebuilds the extension modules, recursively
until the memory is gone, unless the main module is its setup.py)."""
NO_EDITABLE = "has no attribute 'build_editable'"
"""A build backend without PEP 660's editable hook (setuptools before 64), in the installer's words."""
BUILD_TOOLS = ("pip", "setuptools", "wheel")
"""The installer's own tools: resolved as of their own date (``tools_date``)."""


def compile_command(spec: EnvSpec, plan: Plan) -> list[str]:
    """``uv pip compile`` of what the attempt installs, resolved as for ``attempt.resolve_for``: the versions, as
    constraints for the install (the project's own editable line dropped: constraints name versions only). pip
    and wheel are dropped too, and setuptools becomes ``<71``: the last setuptools for 3.6 (59.6) cannot make an
    editable install (PEP 660), which installing the project needs, and 71 and later import the installed
    ``packaging``, which stays at the older Python's version (``canonicalize_version`` without
    ``strip_trailing_zero``)."""
    attempt = plan.attempt
    args = _inputs(spec, plan, project=not spec.project_last)  # (installed last, the project is not constrained)
    editable = args[1] if args[:1] == ["-e"] else None
    project = f"printf '%s\\n' {shlex.quote('-e ' + editable)} > {PROJECT} && " if editable else ""
    files = ([PROJECT] if editable else []) + [args[i + 1] for i, a in enumerate(args) if a == "-r"]
    compile_ = [UV, "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--python-version",
                last_patch(str(attempt.resolve_for)), *(["--exclude-newer", attempt.date] if attempt.date else []),
                *(["--override", OVERRIDES] if spec.overrides or plan.overrides else []),
                *(["--build-constraints", BUILD_CONSTRAINTS] if plan.build_constraints else []), "-o", CONSTRAINTS,
                *files]
    tools = "-e '/^pip==/d' -e '/^wheel==/d' -e 's/^setuptools==.*/setuptools<71/'"
    return ["sh", "-c", project + shlex.join(compile_) + f" && sed -i -e '/^-e /d' -e '/^file:/d' {tools} "
            f"{CONSTRAINTS}"]


LAST_PATCH = {"2.7": "2.7.18", "3.4": "3.4.10", "3.5": "3.5.10", "3.6": "3.6.15", "3.7": "3.7.17", "3.8": "3.8.20"}
"""The last release of each retired interpreter."""


def last_patch(python: str) -> str:
    """The release a ``major.minor`` stands for when versions are resolved for it: its last (``3.6`` -> ``3.6.15``).
    ``uv pip compile --python-version 3.6`` means 3.6.0, which leaves out every release that requires 3.6.1 or later
    (pandas 1.1.5: it resolved 0.25.3, which has no wheel for the environment's Python); an installation of 3.6
    is the last patch release of it, not 3.6.0. A version not in the table is given as it is."""
    return LAST_PATCH.get(python, python)


PROJECT = f"{TOOLS}/project.txt"
OVERRIDES = f"{TOOLS}/overrides.txt"
BUILD_CONSTRAINTS = f"{TOOLS}/build-constraints.txt"
"""The spec's ``overrides``, as a file (uv's ``--override`` reads files only)."""


def overrides_command(spec: EnvSpec) -> list[str]:
    """Write the spec's overrides (``OVERRIDES``); each a requirement line, never an option."""
    return _lines_command(spec.overrides, OVERRIDES)


def _lines_command(lines: list[str], path: str) -> list[str]:
    kept = [r for r in lines if r.strip() and not r.strip().startswith("-")]
    return ["sh", "-c", f"printf '%s\\n' {shlex.join(kept)} > {path}"]
"""The project's editable line, as a requirement file (``uv pip compile`` reads files only)."""


def _inputs(spec: EnvSpec, plan: Plan, *, project: bool = True) -> list[str]:
    attempt = plan.attempt
    args: list[str] = []
    if spec.install_project and project:
        args += ["-e", "/workspace" + (f"[{','.join(spec.extras)}]" if spec.extras else "")]
    for path in (spec.requirement_files if attempt.files else []) + (spec.optional_files if attempt.optional else []):
        args += ["-r", f"/workspace/{path}"]
    return [*args, "-r", f"{TOOLS}/requirements.txt"]


def uv_compiles(python: str) -> bool:
    """Whether ``uv pip install --compile-bytecode`` works for this interpreter: uv's compile script uses
    ``py_compile.PycInvalidationMode`` (Python 3.7); on 3.6 the interpreter's own compileall does it after the
    install (:func:`compileall_command`)."""
    return vkey(python) >= (3, 7)


def compileall_command(spec: EnvSpec) -> list[str]:
    """Byte-compile the virtualenv's packages with its interpreter (``-q``: errors only; a file that does not
    compile, a test fixture written for another Python, is left as it is, as uv leaves it)."""
    return [f"{VENV}/bin/python", "-m", "compileall", "-q", "-j", "0", f"{VENV}/lib/python{spec.python}/site-packages"]


def install_command(spec: EnvSpec, plan: Plan, *, project: bool = True, others: bool = True) -> list[str]:
    """The ``uv pip install`` command line (requirements come from a file, never as arguments). ``project=False``:
    everything but the project (what a build without isolation needs installed first); ``others=False``: the
    project alone (``project_last``: after the rest, unconstrained by what was resolved for it)."""
    attempt = plan.attempt
    cmd = [UV, "pip", "install", "--python", f"{VENV}/bin/python"]
    if uv_compiles(spec.python):
        cmd += ["--compile-bytecode"]
    if attempt.resolve_for and others:
        cmd += ["-c", CONSTRAINTS]
    if (spec.overrides or plan.overrides) and others:
        cmd += ["--override", OVERRIDES]
    if plan.build_constraints:
        cmd += ["--build-constraints", BUILD_CONSTRAINTS]
    if not plan.isolated(spec) and project:
        cmd += ["--no-build-isolation"]
    if attempt.date:
        cmd += ["--exclude-newer", attempt.date]
        for name, date in sorted(moved_packages(attempt, plan.bumps).items()):
            cmd += ["--exclude-newer-package", f"{name}={date}"]
        for name in sorted(plan.bumps):  # an installed version that still fits would otherwise be kept
            cmd += ["--upgrade-package", name]
        if attempt.bump_to:
            for name in HEAVY:
                if name != (spec.project_name or "").lower():
                    cmd += ["--only-binary", name]
    inputs = _inputs(spec, plan, project=project)
    return [*cmd, *(inputs if others else inputs[:2])]


SCM_CONFIG = f"{TOOLS}/scm-version.toml"


def scm_scoped(spec: EnvSpec, env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the install's variables, the uv configuration to write at SCM_CONFIG): the version setuptools_scm is told
    (``scm_version``) reaches the project's own build only, through uv's ``extra-build-variables``. As a variable of
    the whole install it also reached every dependency built from source with setuptools_scm: iniconfig 1.0.0 (a
    source distribution) came out as the project's version, and uv took iniconfig 0.1 instead, whose files pytest 6
    could not read (its tests' ini files were ignored). The variable stays for what runs the project's setup.py
    itself (``setup.py develop``, the setup commands), and for a project whose name is not known."""
    version, name = spec.scm_version or "", spec.project_name or ""
    if not (version and name and env.get("SETUPTOOLS_SCM_PRETEND_VERSION") == version and "UV_CONFIG_FILE" not in env
            and re.fullmatch(r"[A-Za-z0-9.+!_-]{1,64}", version) and re.fullmatch(r"[A-Za-z0-9._-]{1,100}", name)):
        return env, []
    scoped = {k: v for k, v in env.items() if k != "SETUPTOOLS_SCM_PRETEND_VERSION"}
    scoped["UV_CONFIG_FILE"] = SCM_CONFIG
    key = re.sub(r"[-_.]+", "-", name).lower()
    return scoped, ["[extra-build-variables]", f'"{key}" = {{ SETUPTOOLS_SCM_PRETEND_VERSION = "{version}" }}']


def develop_command() -> list[str]:
    """The project installed the way pip installed a setup.py project before 21.3 (``Plan.develop``), without its
    dependencies (they come from the requirements, installed before it)."""
    return ["sh", "-c", f"cd /workspace && {VENV}/bin/python setup.py develop --no-deps"]


def requirements_text(spec: EnvSpec, plan: Plan) -> str:
    reqs = list(spec.requirements) + plan.added
    if plan.attempt.optional:
        reqs += [g for g in spec.guessed if g not in plan.dropped]
    else:  # a stand-in's service is part of the test runner (soft, but in every attempt until dropped itself)
        reqs += [r for r in standins.requirements(spec.standins) if r in spec.guessed and r not in plan.dropped]
    reqs = [plan.from_index.get(r, r) for r in reqs]
    if plan.develop and spec.install_project and "setuptools" not in {req_name(r) for r in reqs}:
        reqs.append("setuptools")  # (setup.py develop runs on the environment's own: a virtualenv has none)
    return "".join(f"{r}\n" for r in dict.fromkeys(reqs) if r.strip() and not r.strip().startswith("-"))


def index_name(requirement: str) -> str | None:
    """The name a requirement from a version control repository has on a package index: ``name @ git+URL`` ->
    name, ``git+URL#egg=name`` -> name, else the repository's without a ``-python`` suffix
    (``.../html5lib-python`` -> ``html5lib``); None for a requirement that is not one."""
    m = VCS.match(requirement)
    if m is None:
        return None
    if m.group(1):
        return m.group(1)
    url = m.group(2).split("#", 1)
    egg = re.search(r"(?:^|&)egg=([A-Za-z0-9][A-Za-z0-9._-]*)", url[1]) if len(url) > 1 else None
    if egg:
        return egg.group(1)
    repo = url[0].split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    repo = re.sub(r"[-_.]python$", "", repo, flags=re.I)
    return repo if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", repo) else None


HELD = f"{TOOLS}/installed.txt"
"""What the requirements installed (``uv pip freeze``), held as constraints while the project goes in last."""


def hold_command(spec: EnvSpec) -> list[str]:
    """The installed versions as constraints (``HELD``): pip's only-if-needed, which ``pip install -e .`` after the
    harness's packages has, where uv would move a package the project names without a bound (Sphinx 3's
    ``sphinxcontrib-applehelp``: 1.0.7, held by the recipe, went to 2.0.0, which refuses Sphinx 3). The project
    itself is not held (a release of it the requirements pulled in is replaced by the editable one)."""
    own = re.sub(r"[-_.]+", "[-_.]", re.escape(spec.project_name or "").replace("\\", ""))
    mine = f" -e '^{own}=='" if own else ""
    return ["sh", "-c", f"{UV} pip freeze --python {VENV}/bin/python | grep -v -i -e '^-e ' -e ' @ '{mine} > {HELD}"]


ROOT_ON_PATH = "_bosun_project_root.pth"


def root_on_path(spec: EnvSpec) -> list[str]:
    """When setuptools made the editable install an import hook (``__editable___*_finder.py``: a project whose
    packages sit at its root beside other folders), the project's root on sys.path too (a ``.pth``), as
    ``setup.py develop`` and pip's older editable installs put it: code that maps a file to its module through
    sys.path finds the project (pylint loads its checkers so, through astroid's ``modpath_from_file``: with the hook
    alone none loaded, and every test of its configuration failed)."""
    site = f"{VENV}/lib/python{spec.python}/site-packages"
    return ["sh", "-c", f"if ls {site}/__editable___*_finder.py >/dev/null 2>&1; then "
                        f"echo /workspace > {site}/{ROOT_ON_PATH}; echo 'the project root is on sys.path'; fi"]


def collect_command(spec: EnvSpec, sample: list[str] | None = None) -> list[str]:
    return ["timeout", str(COLLECT_TIMEOUT_S), *spec.test.argv, "--collect-only", "-qq", "-p", "no:cacheprovider",
            *(sample or spec.test.paths)]


def collect_sample(spec: EnvSpec, test_files: list[str]) -> list[str] | None:
    """Up to COLLECT_SAMPLE test files spread over the suite (under the test command's paths), when it is larger;
    None: collect the whole suite."""
    roots = [p.rstrip("/") + "/" for p in spec.test.paths]
    files = sorted(f for f in test_files if (not roots or any(f.startswith(r) or f == r[:-1] for r in roots))
                   and not f.endswith("conftest.py"))  # (named, a conftest is collected as a test module)
    # Named on the command line, a file is collected even where the runner's own testpaths would not look (pylint's
    # pylint/testutils/functional/test_file.py is a helper, not a test): modules at the top or in a tests folder.
    in_tests = [f for f in files if "/" not in f or set(f.split("/")[:-1]) & TEST_DIRS]
    files = in_tests if len(in_tests) >= COLLECT_SAMPLE else files
    if len(files) <= COLLECT_SAMPLE + 10:
        return None
    step = len(files) / COLLECT_SAMPLE
    return [files[int(i * step)] for i in range(COLLECT_SAMPLE)]


def _dist(module: str) -> str:
    return (MODULE_TO_DIST.get(module) or module.replace("_", "-")).lower()


def implicated(text: str) -> str | None:
    """The installed package the innermost frame of the last traceback in ``text`` is in; None when that frame
    is the project's own code (its own problem: nothing to move)."""
    frames = FRAME_LINE.findall(text)
    if not frames:
        return None
    last = next(f for f in frames[-1] if f)
    found = FRAME.search(last)
    return _dist(found.group(1)) if found else None


def adjust_install(spec: EnvSpec, plan: Plan, text: str, note: Callable[[str], None]) -> bool:
    """Change ``plan`` after a failed install; False when nothing more can be tried in this attempt."""
    if OLD_SETUPTOOLS.search(text) and OLD_BUILD_SETUPTOOLS not in plan.build_constraints:
        plan.build_constraints.append(OLD_BUILD_SETUPTOOLS)
        note("a package's setup.py predates setuptools 46 (it imports setuptools.Feature): packages built from "
             f"source get {OLD_BUILD_SETUPTOOLS}")
        return True
    if NO_EDITABLE in text and spec.install_project and plan.isolated(spec):
        plan.no_isolation = True
        note("the project's build backend cannot make an editable install (a setuptools before 64 pinned in its "
             "build requirements has no PEP 660 hooks; pip would fall back to setup.py develop): built without "
             "isolation, against the environment's own setuptools")
        return True
    if LEGACY_FAILED.search(text) and spec.install_project and not plan.develop and not OLD_SETUPTOOLS.search(text):
        plan.develop = True
        note("the project's setup.py failed in setuptools' PEP 517 hooks (it has no build backend of its own): "
             "installed as pip did such a project before 21.3, with `setup.py develop` (setup.py the main "
             "module), after its requirements; its own install_requires are not installed: the requirement "
             "files and the recipe's packages must hold them")
        return True
    if VCS_FAILED.search(text):
        vcs = {r: name for r in spec.requirements + spec.guessed + plan.added
               if r not in plan.from_index and (name := index_name(r))}
        if vcs:
            plan.from_index.update(vcs)
            why = VCS_FAILED.search(text)
            note(f"cannot fetch from version control ({why.group(0) if why else ''}): "
                 + "; ".join(f"{name} from the index instead of {r.strip()}" for r, name in vcs.items()))
            return True
    names = {req_name(m) for m in UNKNOWN_PACKAGE.findall(text)}
    unknown = {r for r in spec.guessed + plan.added if req_name(r) in names} - plan.dropped
    if unknown:
        note(f"dropping requirement(s) the index does not know: {plan.drop(unknown)}")
        return True
    reuploaded = {name.lower(): f"{day}T23:59:59Z" for name, day in FILTERED.findall(text)
                  if name.lower() not in plan.bumps and plan.attempt.date and f"{day}T" > plan.attempt.date}
    if reuploaded:
        plan.bumps.update(reuploaded)
        note(f"no release of {', '.join(sorted(reuploaded))} before {str(plan.attempt.date)[:10]} (uploaded again "
             f"later): taken as of that upload")
        return True
    if NO_SOLUTION in text:  # a conflict: the soft requirements it names go first
        named = {r for r in set(spec.guessed) - plan.dropped
                 if re.search(rf"(?<![\w.-]){re.escape(req_name(r))}(?![\w-])", text.lower().replace("_", "-"))}
        if named and named != set(spec.guessed) - plan.dropped:
            plan.dropped |= named
            note(f"dropping soft requirement(s) in a conflict: {', '.join(sorted(named))}")
            return True
    wanted = {m.lower() for m in WHEELS_REQUIRED.findall(text) + FAILED_BUILD.findall(text)}
    culprits = {req_name(w) for w in wanted | set(PULLED_IN_BY.findall(text))}  # (or what pulled it in)
    optional = {r for r in spec.guessed + plan.added if req_name(r) in culprits} - plan.dropped
    if optional:  # a guess, or a module the tests import that nobody asked for: not worth the environment
        note(f"dropping requirement(s) that do not build here: {plan.drop(optional)}")
        return True
    return _bump(spec, plan, wanted, note, "has no wheel for the interpreter and does not build from source")


def adjust_runtime(spec: EnvSpec, plan: Plan, text: str, note: Callable[[str], None], local: set[str],
                   collecting: bool = False) -> bool:
    """Change ``plan`` after pytest failed to start or (``collecting``) to collect the tests; False when nothing
    more can be tried. A collection error inside pytest itself is the tests' own use of pytest: nothing moves."""
    missing = [_dist(m) for m in MISSING.findall(text) if m not in local and m not in stdlib()]
    for args in UNRECOGNIZED.findall(text):
        missing += [dist for dist, _why in plugins_for(shlex_split(args), [])]
    new = [d for d in dict.fromkeys(missing) if d and d not in plan.added and d not in plan.dropped]
    if new:
        plan.added += new
        note(f"the tests import what nobody installed: adding {', '.join(new)}")
        return True
    if "INTERNALERROR>" in text and implicated(re.sub(r"(?m)^INTERNALERROR> ?", "", text)) in PYTEST_OWN or (
            collecting and "no such option: --collect-only" in text):  # (pytest 2.3's day: --collectonly)
        # pytest stops in its own code before collecting anything (exit 3): a pytest of the commit's day that
        # predates the interpreter (pytest 2.x's assertion machinery on Python 3.9): pytest moves forward
        found = plan.pytest_version
        which = f"pytest {'.'.join(map(str, found))}" if found else "the commit's pytest"
        note(f"{which} stops with an internal error before collecting anything, or does not know --collect-only "
             f"(exit 3 or 2: it predates Python {spec.python})")
        if _bump(spec, plan, PYTEST_OWN, note, "cannot run on this interpreter"):
            return True
        # Moved forward and still that pytest: a requirement file pins it. Its pins are overridden (taken as of
        # the date it moved to); not under a recipe, whose pytest is the harness's.
        pinned = sorted(n for n in PYTEST_OWN if n in plan.bumps and n not in plan.overrides)
        if not pinned or spec.declared_only:
            return False
        plan.overrides += pinned
        note(f"{which} is pinned by the requirements and cannot run on Python {spec.python}: the pins of "
             f"{', '.join(pinned)} are overridden (taken as of {plan.bumps[pinned[0]][:10]})")
        return True
    culprit = implicated(text)
    if culprit is None:
        return False
    if collecting and culprit in PYTEST_OWN:
        # The tests use pytest in a way this pytest no longer accepts (their CI pinned an older one): one major
        # version back at a time, down to 3. Not under a recipe (``declared_only``): its pytest is the harness's.
        if spec.declared_only:
            return False
        major = plan.pytest_version[0] if plan.pytest_version else None
        if major is None or major <= 3 or f"pytest<{major}" in plan.added:
            return False
        plan.added = [a for a in plan.added if not a.startswith("pytest<")] + [f"pytest<{major}"]
        note(f"collecting the tests fails inside pytest {major}.x itself (the tests were written for an older "
             f"one): pytest<{major}")
        return True
    if _bump(spec, plan, {culprit}, note, "breaks at import on this interpreter"):
        return True
    return drop_broken(spec, plan, text, note)


def drop_broken(spec: EnvSpec, plan: Plan, text: str, note: Callable[[str], None]) -> bool:
    """Drop the soft requirements (guesses, modules added for the tests) that the failing traceback in ``text``
    passes through: one that installs but breaks at import is not worth the tests it stops. xarray's CI installs
    cfgrib, whose eccodes raises RuntimeError without the ecCodes C library, and xarray's conftest imports it:
    nothing collected. False when no soft requirement is in the traceback (pytest's own never counts)."""
    passed = {_dist(m) for m in FRAME.findall(text)} - PYTEST_OWN
    broken = {r for r in spec.guessed + plan.added if req_name(r) in passed} - plan.dropped
    if not broken:
        return False
    plan.fresh = True
    note(f"dropping soft requirement(s) that break at import: {plan.drop(broken)} (from a new virtualenv)")
    return True


def _bump(spec: EnvSpec, plan: Plan, names: set[str], note: Callable[[str], None], why: str) -> bool:
    attempt = plan.attempt
    names = {n for n in names if n not in plan.bumps and n not in NEVER_MOVED
             and n != (spec.project_name or "").lower()}
    if not names or not attempt.bump_to or not attempt.date or attempt.bump_to <= attempt.date:
        return False
    plan.bumps.update({n: attempt.bump_to for n in names})
    note(f"{', '.join(sorted(names))} {why} as of {attempt.date[:10]}: taken as of {attempt.bump_to[:10]}")
    return True


def install(run: StepRunner, spec: EnvSpec, env: dict[str, str], put_requirements: Callable[[str], None],
            fresh_venv: Callable[[], None], progress: Callable[[str], None], local: set[str],
            sample: list[str] | None = None) -> Installed | None:
    """Run the attempts; the first that works gives ``Installed``, None when none did (history in the log)."""
    history: list[str] = []
    attempts = attempts_for(spec)
    whole, (env, scm_lines) = env, scm_scoped(spec, env)
    if scm_lines:
        run.step("the project's version, for its own build only", _lines_command(scm_lines, SCM_CONFIG), env)
    if spec.overrides:
        run.step("the pins that win over the requirement files (overrides)", overrides_command(spec), env)
    rounds = _Rounds(run, spec, env, whole, {**env, **interpreter_env(spec.python), "PYTHONDONTWRITEBYTECODE": "1"},
                     put_requirements, fresh_venv, progress, local, sample)
    for n, attempt in enumerate(attempts, 1):
        if n > 1:
            fresh_venv()
        plan = Plan(attempt)
        outcome = "failed"
        for _round in range(MAX_ROUNDS):
            done = rounds.one(plan, attempt, f"{n}/{len(attempts)}")
            if done is not None:
                outcome = done
                break
        history.append(f"{attempt.label}: {outcome}{plan.summary()}")
        if outcome.startswith("ok") and not uv_compiles(spec.python):
            run.step("compile the bytecode (the interpreter's compileall)", compileall_command(spec), env,
                     check=False)
        if outcome.startswith("ok") and spec.install_project:
            run.step("editable install: the project's root on sys.path", root_on_path(spec), env, check=False)
        if outcome.startswith("ok"):
            return Installed(date=attempt.date, history=history, moved=moved_packages(attempt, plan.bumps))
        run.note(f"attempt {n} of {len(attempts)} did not work: {history[-1]}")
    run.note("no attempt worked: " + "; ".join(history))
    return None


@dataclass
class _Rounds:
    """One attempt's rounds: write the plan's files, resolve, install, check that pytest starts and the tests
    collect. A round that a known fix can mend adjusts the plan and asks for another (None); else its outcome."""

    runner: StepRunner
    spec: EnvSpec
    env: dict[str, str]
    """The build's environment (the project's version scoped to its own build)."""
    whole: dict[str, str]
    """The environment as given (setup.py develop builds the project itself)."""
    quiet: dict[str, str]
    """As in the sandboxes: what pytest runs with."""
    put_requirements: Callable[[str], None]
    fresh_venv: Callable[[], None]
    progress: Callable[[str], None]
    local: set[str]
    sample: list[str] | None

    def one(self, plan: Plan, attempt: Attempt, counted: str) -> str | None:
        """One round of ``attempt`` (the ``counted`` one of all): its outcome, or None for another round."""
        run, spec, env = self.runner, self.spec, self.env
        if plan.fresh:
            self.fresh_venv()
            plan.fresh = False
        self.put_requirements(requirements_text(spec, plan))
        if plan.build_constraints:
            run.step("the source builds' constraints", _lines_command(plan.build_constraints, BUILD_CONSTRAINTS), env)
        if plan.overrides:
            run.step("the pins that win (overrides, and the test runner's)",
                     _lines_command([*spec.overrides, *plan.overrides], OVERRIDES), env)
        if attempt.resolve_for:
            self.progress(f"building: resolve as for Python {attempt.resolve_for}")
            rc, text = run.step(f"resolve (as for Python {attempt.resolve_for})", compile_command(spec, plan),
                                env, check=False)
            if rc != 0:
                if adjust_install(spec, plan, text, run.note):  # (it builds what has no wheel: the same fixes)
                    return None
                return f"failed (the resolution for Python {attempt.resolve_for}, exit {rc})"
        self.progress(f"building: install {counted} {attempt.label}")
        rc, text = self._install(plan, attempt)
        if rc != 0:
            if adjust_install(spec, plan, text, run.note):
                return None
            soft = set(spec.guessed) - plan.dropped - set(standins.requirements(spec.standins))
            if attempt.optional and soft:
                plan.dropped |= soft  # soft requirements in the way: without them, still as of the date
                run.note(f"the install fails with the soft requirements: trying without them "
                         f"({', '.join(sorted(soft))})")
                return None
            return f"failed (exit {rc})"
        return "ok" if spec.test.kind != "pytest" else self._check_tests(plan)

    def _install(self, plan: Plan, attempt: Attempt) -> tuple[int, str]:
        """The install steps: the requirements (first, when the project goes last or builds isolated), then the
        project (setup.py develop; or pip holding what is installed), or all at once."""
        run, spec, env = self.runner, self.spec, self.env
        rc, text = 0, ""
        last = (spec.project_last or plan.develop) and spec.install_project
        if (not plan.isolated(spec) or last) and spec.install_project:  # the requirements first
            first = "the requirements" if last else "the build's requirements"
            rc, text = run.step(f"install {first} ({attempt.label})",
                                install_command(spec, plan, project=False), env, check=False)
        if rc == 0 and plan.develop:
            rc, text = run.step(f"install the project: setup.py develop ({attempt.label})", develop_command(),
                                self.whole, check=False)
        elif rc == 0 and last:  # pip keeps what is installed unless the project needs otherwise; uv would not
            run.step("hold what is installed", hold_command(spec), env, check=False)
            rc, text = run.step(f"install the project ({attempt.label})",
                                [*install_command(spec, plan, others=False), "-c", HELD], env, check=False)
            if rc != 0 and NO_SOLUTION in text:
                run.note("the project's own requirements conflict with what is installed: they win")
                rc, text = run.step(f"install the project, what is installed not held ({attempt.label})",
                                    install_command(spec, plan, others=False), env, check=False)
        elif rc == 0:
            rc, text = run.step(f"install ({attempt.label})", install_command(spec, plan), env, check=False)
        return rc, text

    def _check_tests(self, plan: Plan) -> str | None:
        """pytest starts, and (for the first rounds) the tests collect; a known runtime fix asks for a round."""
        run, spec = self.runner, self.spec
        rc, text = run.step("check: pytest starts", [*spec.test.argv, "--version"], self.quiet, check=False)
        found = PYTEST_VERSION.search(text)
        plan.pytest_version = (int(found.group(1)), int(found.group(2))) if found else None
        if rc != 0:
            if adjust_runtime(spec, plan, text, run.note, self.local):
                return None
            return "installed, but pytest does not start"
        if plan.collect_rounds >= COLLECT_ROUNDS:
            return "ok"
        plan.collect_rounds += 1
        self.progress("building: check that the tests collect")
        rc, text = run.step("check: the tests collect", collect_command(spec, self.sample), self.quiet, check=False)
        if rc not in (0, 5, 124) and "rror" in text and adjust_runtime(spec, plan, text, run.note, self.local, True):
            return None
        return "ok" if rc in (0, 5) else "ok (collection not checked: too slow)" if rc == 124 else \
            "ok (some tests do not collect)"
