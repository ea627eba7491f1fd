"""What a Python project's CI workflows, conda environment files and noxfile say: the interpreters CI runs, the
packages its steps install, the environment file of the interpreter asked for (pure: text in, values out)."""

from __future__ import annotations

import re

from environments.pyconfig import Facts, shlex_split

CI_FILES = re.compile(r"^(?:\.github/workflows/[^/]+\.ya?ml|\.travis\.yml|azure-pipelines\.ya?ml|\.circleci/config"
                      r"\.yml|appveyor\.yml|\.gitlab-ci\.yml|noxfile\.py)$")


def ci_python_text(text: str) -> str:
    """The parts of a CI file that name Python versions (lines mentioning python, and YAML list items after them)."""
    keep: list[str] = []
    in_python_list = False
    for line in text.splitlines()[:5000]:
        low = line.lower()
        if "python" in low:
            keep.append(line)
            in_python_list = low.rstrip().endswith(":")
        elif in_python_list and line.strip().startswith("-"):
            keep.append(line)
        else:
            in_python_list = False
    return "\n".join(keep)


CONDA_NAMES = {"dask-core": "dask", "matplotlib-base": "matplotlib", "iris": "scitools-iris",
               "python-graphviz": "graphviz", "pytables": "tables", "pyqt": "PyQt5", "pytorch": "torch"}
"""conda package names that PyPI spells otherwise."""


NOT_PYPI = {"python", "pip", "hdf5", "libnetcdf", "cdms2", "nodejs", "ffmpeg", "imagemagick", "graphviz-bin",
            "pandoc", "git", "make", "cmake", "compilers", "c-compiler", "cxx-compiler", "ghostscript", "tk"}


_CONDA_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:([=<>!~]=?)\s*([A-Za-z0-9.*+!_-]+))?")


def conda_requirements(text: str) -> list[str]:
    """The packages of a conda ``environment.yml`` (its ``dependencies`` list and the ``pip:`` list in it) as PyPI
    requirements: conda-only packages left out, names PyPI spells otherwise renamed, ``x=1.2`` read as ``x==1.2``.
    Read line by line (the file is the repository's text; nothing in it is evaluated)."""
    out: list[str] = []
    inside = False
    for raw in text.splitlines()[:2000]:
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not line.startswith((" ", "\t", "-")):
            inside = line.strip() == "dependencies:"
            continue
        item = line.strip()
        if not inside or not item.startswith("- ") or item.endswith(":"):
            continue
        m = _CONDA_SPEC.match(item[2:].strip().strip("'\""))
        if not m or m.group(1).lower() in NOT_PYPI:
            continue
        name = CONDA_NAMES.get(m.group(1).lower(), m.group(1))
        op, version = m.group(2), m.group(3)
        if op and version and version != "*":
            op = "==" if op == "=" else op
            out.append(f"{name}{op}{version.split('=')[0]}")
        else:
            out.append(name)
    return list(dict.fromkeys(out))


CONDA_FILE = re.compile(r"^(?:(?:ci|\.ci|ci/requirements|requirements|\.binder|binder)/)?environment\.ya?ml$")


CI_CONDA_FILE = re.compile(r"^(?:ci|\.ci|\.github)/(?:[\w.-]+/){0,2}py(3)(\d{1,2})(?:[-_.][\w.-]*)?\.ya?ml$")
"""conda environment files of a project's CI: ``environment.yml`` (at the top, in ci/, ci/requirements/,
requirements/, binder/), else one per Python version (``ci/requirements/py37.yml``)."""


_NOT_THE_SUITE = re.compile(r"min|bare|windows|win|mac|osx|doc|upstream|nightly|benchmark|lint|flaky", re.I)
"""Variants of a CI environment that are not the test suite's usual one."""


def environment_file(paths: list[str], python: str) -> str | None:
    """The conda environment file the project's tests run in (``CONDA_FILE``: the first of top, ci/,
    ci/requirements/, requirements/, binder/), else the CI's file for the newest Python version at most
    ``python`` (or the oldest above it) that is not a minimal, platform or docs variant."""
    present = set(paths)
    for where in ("", "ci/", "ci/requirements/", "requirements/", ".ci/", "binder/", ".binder/"):
        for ext in ("yml", "yaml"):
            if f"{where}environment.{ext}" in present:
                return f"{where}environment.{ext}"
    want = tuple(int(p) for p in python.split(".")[:2])
    found = []
    for path in paths:
        m = CI_CONDA_FILE.match(path)
        if m and not _NOT_THE_SUITE.search(path.rsplit("/", 1)[-1]):
            found.append(((int(m.group(1)), int(m.group(2))), path))
    below = sorted((v, p) for v, p in found if v <= want)
    above = sorted((v, p) for v, p in found if v > want)
    return below[-1][1] if below else above[0][1] if above else None


_INSTALL = re.compile(r"\bpip3?\s+install\s+([^\n;&|#]*)")


_NOX_INSTALL = re.compile(r"session\.install\(([^)]{0,2000})\)")


_NOX_SESSION = re.compile(r"^def\s+(\w+)\s*\(", re.M)


def _install_args(args: list[str], f: Facts, source: str, present: set[str]) -> None:
    """Requirements and requirement files of one ``pip install``'s arguments (options, paths, URLs and
    variables left out): soft requirements, and files tried with them."""
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in ("-r", "--requirement"):
            if i + 1 < len(args) and args[i + 1].lstrip("./") in present:
                f.soft_files.append((args[i + 1].lstrip("./"), source))
            skip = True
        elif arg in ("-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url", "-f",
                     "--find-links"):
            skip = True
        elif re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[\w,.-]+\])?(?:[<>=!~]=?[\w.*+!,<>=~-]+)?", arg):
            f.soft_requires.append((arg, source))


def read_ci_installs(text: str, f: Facts, name: str, present: set[str]) -> None:
    """The packages a CI file that runs tests installs with pip (its ``pip install`` lines)."""
    if not re.search(r"\b(?:py\.?test|tox|nox|runtests|bin/test|unittest)\b", text):
        return
    for m in _INSTALL.finditer(text[:500_000]):
        _install_args(shlex_split(m.group(1))[:100], f, f"{name} (pip install)", present)


def read_noxfile(text: str, f: Facts, present: set[str]) -> None:
    """The packages noxfile.py's test sessions install (``session.install("pytest", "-r", "x.txt")``: literal
    strings only; nothing of it runs)."""
    starts = [(m.start(), m.group(1)) for m in _NOX_SESSION.finditer(text[:500_000])]
    for n, (start, session) in enumerate(starts):
        if "test" not in session.lower():
            continue
        body = text[start:starts[n + 1][0] if n + 1 < len(starts) else len(text)]
        for m in _NOX_INSTALL.finditer(body):
            args = re.findall(r"""["']([^"'\n]+)["']""", m.group(1))
            _install_args(args, f, f"noxfile.py session {session}", present)
