"""What a failed install round says, and the fix it asks for: a package to build from source or to take at a later
date, old setuptools, a VCS requirement that cannot be fetched, a soft requirement that breaks the tests' import."""

from __future__ import annotations

import re
from collections.abc import Callable

from environments.imports import stdlib
from environments.installcmds import (
    dist_of,
    index_name,
)
from environments.installplan import (
    Plan,
)
from environments.models import EnvSpec
from environments.pyconfig import plugins_for, req_name, shlex_split

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


VCS_FAILED = re.compile(r"Git operation failed|failed to (?:clone|fetch) into|Git executable not found|"
                        r"Failed to download and build `[^`]*@ (?:git|hg|svn|bzr)\+", re.I)
"""The installer could not fetch a version control repository."""


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


def implicated(text: str) -> str | None:
    """The installed package the innermost frame of the last traceback in ``text`` is in; None when that frame
    is the project's own code (its own problem: nothing to move)."""
    frames = FRAME_LINE.findall(text)
    if not frames:
        return None
    last = next(f for f in frames[-1] if f)
    found = FRAME.search(last)
    return dist_of(found.group(1)) if found else None


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
    missing = [dist_of(m) for m in MISSING.findall(text) if m not in local and m not in stdlib()]
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
    passed = {dist_of(m) for m in FRAME.findall(text)} - PYTEST_OWN
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
