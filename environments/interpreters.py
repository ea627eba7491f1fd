"""The interpreters environments can have, and the choice among them (pure).

Each interpreter is a Debian suite's own ``python3`` (a base root filesystem made with debootstrap): 3.9 from
bullseye, 3.11 from bookworm, 3.13 from trixie. Older ones no Debian suite in the archive has are built from
CPython's source into a base of their own (``FROM_SOURCE``: 3.6, on bullseye, whose OpenSSL 1.1 it builds with),
for a declaration or recipe that names one; detection never picks them (a build from source takes minutes, and
3.9 runs most projects of that age). The choice for a repository:

1. the versions ``requires-python`` (or ``python_requires``, Poetry's ``python``) allows;
2. of those, the ones released before the commit (a 2019 commit gets the oldest; the project could not have been
   tested on a later one) -- if none was, the oldest allowed;
3. when the project names the versions it supports (classifiers, tox envlist, CI matrices, ``.python-version``),
   the newest of the remaining ones not above the highest it names; else the newest of them.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from infra.errors import ConfigError


class Interpreter:
    def __init__(self, version: str, suite: str, released: date, source: str = "") -> None:
        self.version = version
        self.suite = suite
        self.released = released
        self.source = source
        """The CPython release built from source for it ("3.6.15"); empty: the suite's own python3."""

    @property
    def path(self) -> str:
        """Where it is in its base."""
        return f"/usr/local/bin/python{self.version}" if self.source else "/usr/bin/python3"

    @property
    def wheels_from(self) -> datetime:
        """When wheels for it were common on PyPI (three months after its release)."""
        return datetime.combine(self.released + timedelta(days=90), datetime.min.time(), tzinfo=UTC)


AVAILABLE = {i.version: i for i in (Interpreter("3.9", "bullseye", date(2020, 10, 5)),
                                    Interpreter("3.11", "bookworm", date(2022, 10, 24)),
                                    Interpreter("3.13", "trixie", date(2024, 10, 7)))}
"""Interpreter version -> its Debian suite and release date."""
FROM_SOURCE = {i.version: i for i in (Interpreter("3.6", "bullseye", date(2016, 12, 23), source="3.6.15"),)}
"""Interpreters built from CPython's source (bases.py), only when named: the harness's Python 3.6 for astropy 1.3,
whose pinned packages of 2017 have no wheels for 3.9 and do not build there."""
SUITES = {i.suite: i.version for i in AVAILABLE.values()}
DEFAULT = "3.11"


def interpreter_env(version: str) -> dict[str, str]:
    """Variables every process of an environment with this interpreter gets. 3.9: ``import distutils`` is the
    standard library's (Debian's python3-distutils), as in the projects' own day -- setuptools' copy warns on
    LooseVersion, and test suites that make warnings errors then fail to collect."""
    return {"SETUPTOOLS_USE_DISTUTILS": "stdlib"} if version == "3.9" else {}


def vkey(version: str, parts: int | None = None) -> tuple[int, ...]:
    """A version's numbers in order, for comparing (``1.19.8-1`` -> (1, 19, 8, 1)); ``parts``: the first that
    many (a Debian revision left out)."""
    return tuple(int(p) for p in re.findall(r"\d+", version))[:parts]


def interpreter(version: str, *, what: str = "python") -> Interpreter:
    """The interpreter for a declared version ("3.9", "3.9.2", "python3.11"); ConfigError naming the choices."""
    m = re.fullmatch(r"(?:python|py|cpython-?)?\s*(\d+)\.(\d+)(?:\.\d+)?", str(version).strip())
    key = f"{m.group(1)}.{m.group(2)}" if m else ""
    found = AVAILABLE.get(key) or FROM_SOURCE.get(key)
    if found is None:
        raise ConfigError(f"{what} {str(version)[:40]!r} is not available: environments have Python "
                          f"{', '.join(AVAILABLE)} (Debian {', '.join(i.suite for i in AVAILABLE.values())}) and "
                          f"{', '.join(FROM_SOURCE)} (built from CPython's source)")
    return found


def allowed(requires: str | None) -> tuple[list[str], str]:
    """The available versions ``requires`` (a PEP 440 specifier set) allows, and a note when it is unusable."""
    if not requires:
        return list(AVAILABLE), ""
    text = requires.strip().replace(" ", "")
    text = re.sub(r",+$", "", text)
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return list(AVAILABLE), f"ignored the unparsable version requirement {requires[:60]!r}"
    ok = [v for v in AVAILABLE if spec.contains(f"{v}.0", prereleases=True) or spec.contains(f"{v}.99")]
    return ok, ""


def choose(requires: str | None, named: list[str], commit_date: datetime | None) -> tuple[str, str]:
    """(version, why) by the rules of the module docstring. ``named``: versions the project names ("3.7")."""
    ok, note = allowed(requires)
    why: list[str] = [note] if note else []
    if not ok:
        # Nothing available fits (an old project that caps its Python): the nearest one, said plainly.
        lows = [vkey(v) for v in AVAILABLE]
        floor = min(lows)
        pick = min(AVAILABLE, key=lambda v: vkey(v)) if _caps_below(requires, floor) else max(AVAILABLE, key=vkey)
        return pick, f"requires-python {requires!r} allows none of {', '.join(AVAILABLE)}: using the nearest, {pick}"
    if requires:
        why.append(f"requires-python {requires!r} allows {', '.join(ok)}")
    released = ok
    if commit_date is not None:
        before = [v for v in ok if AVAILABLE[v].released <= commit_date.date()]
        if before:
            released = before
            if len(before) < len(ok):
                why.append(f"released before the commit ({commit_date.date()}): {', '.join(before)}")
        else:
            released = [min(ok, key=vkey)]
            why.append(f"none released before the commit ({commit_date.date()}): the oldest allowed")
    tops = [vkey(v) for v in named if vkey(v)[:1] == (3,)]
    if tops:
        top = max(tops)
        fit = [v for v in released if vkey(v) <= top]
        pick = max(fit, key=vkey) if fit else min(released, key=vkey)
        why.append(f"the project names Python up to {'.'.join(map(str, top))}")
    else:
        pick = max(released, key=vkey)
    return pick, "; ".join(why) or "no constraint: the default"


def nearest(hint: str, requires: str | None = None) -> tuple[str, str]:
    """(version, why) for a version a Dockerfile or devcontainer names (``hint``, "3.10"): that one when it is
    available, else the nearest available one ``requires`` allows (on a tie the older: the project named nothing
    newer), said plainly. ConfigError when ``hint`` is not a Python 3 version."""
    m = re.fullmatch(r"(?:python|py|cpython-?)?\s*(3)\.(\d{1,2})(?:\.\d+)?", str(hint).strip())
    if m is None:
        raise ConfigError(f"python {str(hint)[:40]!r} is not a Python 3 version")
    want = (3, int(m.group(2)))
    ok, _note = allowed(requires)
    candidates = ok or list(AVAILABLE)
    pick = min(candidates, key=lambda v: (abs(vkey(v)[1] - want[1]), vkey(v)))
    if vkey(pick) == want:
        return pick, f"names python {hint}"
    return pick, f"names python {hint}, which environments do not have: using the nearest, {pick}"


def _caps_below(requires: str | None, floor: tuple[int, ...]) -> bool:
    """Whether ``requires`` has an upper bound below ``floor`` (so the nearest is the oldest available)."""
    for m in re.finditer(r"(<=?|==|~=)\s*(\d+(?:\.\d+)*)", requires or ""):
        if vkey(m.group(2)) <= floor:
            return True
    return False


def named_versions(text: str) -> list[str]:
    """Python versions named in classifiers/CI/tox text: "3.7", py37, py3.8 -> ["3.7", "3.8"]."""
    found = {f"3.{m}" for m in re.findall(r"(?<![\d.])3\.(\d{1,2})(?![\d])", text)}
    found |= {f"3.{m}" for m in re.findall(r"\bpy3(\d{1,2})\b", text)}
    return sorted(found, key=vkey)
