"""The ``version`` of a SWE-bench instance, derived from its repository the way the harness's versioning did (pure).

The harness keys its recipes by an instance's ``version`` field, which its own versioning step set once, when the
dataset was made (SWE-bench ``swebench/versioning``). A row without the field (a dataset trimmed to its essential
columns) is judged here with the version derived the same way, from the same sources, and the report says which
version was assumed and how it was found:

- ``file``: the version string of a file of the commit, for the repositories whose version the harness read so
  (``MAP_REPO_TO_VERSION_PATHS`` / ``PATTERNS``: Django, sympy, Sphinx, Flask, requests, seaborn, pylint,
  scikit-learn): the first pattern that matches, docstrings removed, cut to major.minor;
- ``tag``: for the projects whose version setuptools_scm makes from git tags (pytest, matplotlib: the harness
  built them and read the version the build wrote), the nearest tag reachable from the commit, cut to major.minor
  (``5.4.0`` -> ``5.4``, ``6.0.0rc1`` -> ``6.0``, ``7.2.0.dev0`` -> ``7.2``);
- ``release``: for astropy and xarray (and matplotlib without a nearest tag) the harness compared the pull
  request's creation date with release dates read from the project's web pages; here the dates are the
  repository's release tags' and the moment is the row's ``created_at`` (else the commit's date). astropy's rule:
  of each minor version the latest release, the highest minor version whose latest release came before; the
  others: the latest feature release (``X.Y.0``) before. Those web pages listed other releases than the tags
  (xarray's listed few: its harness versions are coarser), so this can name another version than the published
  row, of the same recipe (evaluation/recipes.py: xarray has one, astropy's change at 3.0, 4.1 and 5.3).

Everything read here is the repository's text: matched by bounded regular expressions, never evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

_VERSION_ASSIGN = (r'__version__ = [\'"](.*)[\'"]', r"VERSION = \((.*)\)")
_SCM_ASSIGN = (r'__version__ = [\'"](.*)[\'"]', r'__version__ = version = [\'"](.*)[\'"]', r"VERSION = \((.*)\)")
FILES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "django/django": (("django/__init__.py",), _VERSION_ASSIGN),
    "mwaskom/seaborn": (("seaborn/__init__.py",), _VERSION_ASSIGN),
    "pallets/flask": (("src/flask/__init__.py", "flask/__init__.py"), _VERSION_ASSIGN),
    "psf/requests": (("requests/__version__.py", "requests/__init__.py"), _VERSION_ASSIGN),
    "pylint-dev/pylint": (("pylint/__pkginfo__.py", "pylint/__init__.py"), _VERSION_ASSIGN),
    "scikit-learn/scikit-learn": (("sklearn/__init__.py",), _VERSION_ASSIGN),
    "sphinx-doc/sphinx": (("sphinx/__init__.py",), _VERSION_ASSIGN),
    "sympy/sympy": (("sympy/release.py", "sympy/__init__.py"), _VERSION_ASSIGN),
    "pytest-dev/pytest": (("src/_pytest/_version.py", "_pytest/_version.py"), _SCM_ASSIGN),
}
"""Where the harness read a repository's version, and the patterns it matched (in order)."""
NEAREST_TAG = {"pytest-dev/pytest", "matplotlib/matplotlib"}
"""setuptools_scm projects: the version is the nearest tag's (the harness built them and read what the build
wrote)."""
RELEASES = {"astropy/astropy": "astropy", "pydata/xarray": "feature", "matplotlib/matplotlib": "feature"}
"""Versions found by release dates, and the rule the harness's script for the repository applied."""
MAX_TEXT = 1 << 20
_TAG = re.compile(r"[vV]?(\d+)\.(\d+)(?:\.(\d+))?((?:[.-]?(?:a|b|rc|dev|post)\d*)*)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Derived:
    version: str | None
    how: str
    """What the version was derived from, in words (for the report)."""


def _major_minor(text: str) -> str:
    """The harness's cut: the first two ``.``-parts (or ``,``-parts of a tuple), then only digits and dots."""
    if "." in text:
        text = ".".join(text.strip().split(".")[:2])
    if "," in text:
        text = ".".join(text.strip().split(",")[:2])
    return re.sub(r"[^0-9.]", "", text)


def from_files(repo: str, read: Callable[[str], str | None]) -> Derived | None:
    """The version of ``repo``'s commit read from its version file as the harness read it; None when the
    repository is not one whose version is in a file, or no file of it matches."""
    if repo not in FILES:
        return None
    paths, patterns = FILES[repo]
    for path in paths:
        text = read(path)
        if not text or len(text) > MAX_TEXT:
            continue
        text = re.sub(r'""".*?"""', "", text, flags=re.DOTALL)
        for pattern in patterns:
            m = re.search(pattern, text)
            if m is not None:
                version = _major_minor(m.group(1)[:100])
                if re.fullmatch(r"\d+\.\d+", version):
                    return Derived(version, f"{path}: {m.group(0)[:80]}")
    return None


def from_tag(tag: str) -> str | None:
    """``v5.4.0`` -> ``5.4`` (a tag that is no version: None)."""
    m = _TAG.fullmatch(tag.strip())
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _release(tag: str) -> tuple[tuple[int, int, int], str] | None:
    """A final release's tag (no pre-release or dev part): ((major, minor, patch), "major.minor" as the tag
    writes them: ``v2022.03.0`` -> ``2022.03``)."""
    m = _TAG.fullmatch(tag.strip())
    if not m or m.group(4):
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)), f"{m.group(1)}.{m.group(2)}"


def from_releases(repo: str, releases: list[tuple[str, str]], when: str) -> Derived | None:
    """The version the harness's release-date rule for ``repo`` gives at ``when`` (``YYYY-MM-DD``), from
    ``releases``: (tag, its date ``YYYY-MM-DD``) pairs. None when no release came before."""
    rule = RELEASES.get(repo)
    if rule is None or not _DATE.match(when):
        return None
    dated = [(r, d[:10]) for t, d in releases if _DATE.match(d) and (r := _release(t)) is not None]
    if rule == "astropy":  # of each minor version its latest release; the highest minor released before
        latest: dict[tuple[int, int], tuple[str, str]] = {}
        for ((major, minor, _), mm), date in dated:
            latest[(major, minor)] = (max(latest.get((major, minor), (date, mm))[0], date), mm)
        for _key, (date, mm) in sorted(latest.items(), reverse=True):
            if date < when[:10]:
                return Derived(mm, f"the latest {mm} release ({date}) is the highest minor version's released "
                                   f"before {when[:10]}")
        return None
    features = sorted(((date, key, mm) for (key, mm), date in dated if key[2] == 0), reverse=True)
    for date, _key, mm in features:
        if date < when[:10]:
            return Derived(mm, f"{mm}.0, released {date}, is the latest feature release before {when[:10]}")
    return None


def derive(repo: str, read: Callable[[str], str | None], *, nearest_tag: str | None = None,
           releases: list[tuple[str, str]] | None = None, when: str = "") -> Derived | None:
    """The version of ``repo`` at a commit, by the method the harness used for it (the module docstring):
    ``read`` reads the commit's files; ``nearest_tag`` is the nearest tag reachable from the commit and
    ``releases`` the repository's tags with their dates (None when the source has no tags to read: a clone URL);
    ``when`` is the row's ``created_at`` or the commit's date. None: no method found one."""
    found = from_files(repo, read)
    if found is not None:
        return found
    if repo in NEAREST_TAG and nearest_tag and (version := from_tag(nearest_tag)):
        return Derived(version, f"the nearest tag, {nearest_tag}")
    if repo in RELEASES and releases:
        return from_releases(repo, releases, when)
    return None


class Tree(Protocol):
    def read(self, path: str) -> str | None: ...

    def commit_date(self) -> datetime: ...


class TaggedTree(Protocol):
    def version_tag(self) -> str | None: ...

    def release_tags(self) -> list[tuple[str, str]]: ...


def of_commit(repo: str, tree: Tree, tags: TaggedTree | None, created_at: str | None) -> tuple[str | None, str]:
    """(version, what the report says) for a row of ``repo`` without one: derived from the commit's files
    (``tree``), the source's tags (``tags``: the commit in a repository that has its tags; None when the source
    is a clone URL, whose tags are not fetched) and the row's ``created_at``. None when nothing gave one (the
    recipe's default version is then taken, which the words say)."""
    when = (created_at or "")[:10] if _DATE.match(created_at or "") else tree.commit_date().strftime("%Y-%m-%d")
    found = derive(repo, tree.read, nearest_tag=tags.version_tag() if tags else None,
                   releases=tags.release_tags() if tags and repo in RELEASES else None, when=when)
    if found is not None and found.version:
        return found.version, f"{found.version}, derived from the repository: {found.how}"
    why = "the source's tags are not at hand (a clone URL)" if tags is None and (
        repo in NEAREST_TAG or repo in RELEASES) else "no version file or tag gave one"
    return None, f"none derived: {why}"
