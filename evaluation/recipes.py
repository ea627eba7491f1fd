"""What the SWE-bench reference harness does for each repository and version (pure data).

The published SWE-bench results come from the harness's own environments (conda, pinned packages, the repository's
requirement files, a few edits of its files) and its own test commands and log parsers. bosun judges the same
instances in environments of its own (environments/), so for the repositories the harness knows it follows
the harness's recipe: the same test command and parser, the same pinned packages and requirement files, the same
edits and variables. Where bosun cannot do the same thing it does the nearest one, and says so here:

- interpreters: the harness's Python 3.5-3.8 become 3.9 and 3.10 becomes 3.11 (the interpreters environments have;
  xarray takes 3.9, where its pinned numpy 1.23.0 has wheels); where the harness's is older, the versions are
  first resolved as if for it (``resolve_for_python``: the versions its images had) and installed on ours.
  astropy before 3.0 keeps the harness's Python 3.6 (built from CPython's source: environments/bases.py):
  its pins of 2017 (numpy 1.16.0, Cython 0.27.3, pytest 3.3.1) neither install nor run on 3.9;
- conda packages become PyPI requirements of the same name; an ``environment.yml``'s packages are soft
  requirements (dropped when the index does not know them);
- an exact pin of a package that only installs from wheels (numpy 1.19.2 has none for 3.9) keeps its minor version
  (``numpy~=1.19.2``);
- everything not pinned is resolved as of ``REFERENCE_DATE``, when the harness's images were built, not as of the
  commit (bosun's rule for tasks): the published FAIL_TO_PASS / PASS_TO_PASS lists were found in those images;
- ``apt-get`` packages that are only for optional tests (LaTeX, ffmpeg) are left out: those tests are skipped,
  which the harness's grading does not count against an instance.

The table is data: ``recipes.toml`` beside this module, a row per repository and version range (its header says
how it reads). Versions are the instances' ``version`` field; one below a repository's lowest takes the lowest's
recipe, an instance without one the repository's default. Sources: SWE-bench/SWE-bench
``swebench/harness/constants/python.py``, ``test_spec/python.py``, ``log_parsers/python.py`` (the 2024-2025
releases that produced the published SWE-bench Verified results).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from environments import standins
from environments.declared import Declared
from environments.interpreters import vkey
from environments.models import VENV
from environments.pyci import conda_requirements
from environments.pyconfig import req_name
from environments.pydetect import HELPERS_OFFLINE

REFERENCE_DATE = "2024-08-13T23:59:59Z"
"""Packages the recipes do not pin are resolved as of this moment (SWE-bench Verified's release: the harness's
images resolved them about then)."""

TABLE = tomllib.loads((Path(__file__).with_name("recipes.toml")).read_text(encoding="utf-8"))
"""The recipes' data (recipes.toml): ``named`` values and, per repository, its range rows."""
NAMED: dict[str, Any] = {**TABLE["named"], "HELPERS_OFFLINE": HELPERS_OFFLINE}
PYTEST, DJANGO, SYMPY = NAMED["PYTEST"], NAMED["DJANGO"], NAMED["SYMPY"]

class Recipe(BaseModel):
    """How one repository version is set up and tested (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    repo: str
    version: str
    """The version of the table this recipe is (the instance's, or the nearest below it)."""
    test_cmd: str
    """The test command; the test patch's files (or Django labels) are appended."""
    parser: str
    """The log parser (evaluation/testlogs.py)."""
    harness_python: str
    """The interpreter the harness uses."""
    python: str
    """The interpreter bosun uses (one it has)."""
    extras: list[str] = []
    """Extras of the project installed with it (``pip install -e .[test]``)."""
    requirements: list[str] = []
    """Pinned and named packages (the harness's pip_packages and conda packages, with its edits of setup.py
    expressed as constraints)."""
    requirement_files: list[str] = []
    """The repository's requirement files, the first one present is used."""
    env_files: list[str] = []
    """conda environment files, the first one present is read for soft requirements."""
    apt: list[str] = []
    build_edits: list[str] = []
    """Shell commands run in the source tree before the install (the harness's pre_install edits of build files)."""
    workspace_edits: list[str] = []
    """The harness's edits of tracked files (its ``pre_install`` seds: ``-rA`` in Sphinx's tox.ini, its setup.py
    bounds, astropy's setuptools pin): its instance image makes them and commits them (``git commit -am``), so a
    prediction is applied to a clean tree whose HEAD has them; every evaluation workspace gets the same
    (evaluation/harness.py: ``apply_script``)."""
    eval_env: dict[str, str] = {}
    """Variables the tests run with (Django's locale)."""
    build_isolation: bool = True
    """False: the project is built against the installed packages (the harness's ``--no-build-isolation``)."""
    rebuild: str = ""
    """Compiled projects: the command that rebuilds the project in the workspace when a prediction changes what
    the build compiles (the harness re-runs its install after applying a prediction)."""
    detected: bool = False
    """The environment is bosun's detection (a Multi-SWE-bench repository's), not a declaration of the recipe's."""
    whole_suite: bool = False
    """The test command runs the whole suite (the test patch's files are not appended)."""
    standin: tuple[str, ...] = ()
    """Public test services the tests reach by name (``httpbin.org``: requests before 2.8), answered by a local
    stand-in that the judging script starts (environments/standins.py): the harness's containers have the
    network, bosun's sandboxes do not."""



def _python(harness: str) -> str:
    return "3.9" if vkey(harness) <= (3, 9) else "3.11"


def _heavy_pin(req: str) -> str:
    """``numpy==1.19.2`` -> ``numpy~=1.19.2`` (any patch release of that minor version: one with a wheel)."""
    return req.replace("==", "~=", 1) if re.match(r"(?i)(numpy|scipy|pandas|matplotlib)==\d+\.\d+\.\d+$", req) \
        else req


def _holds(row: dict[str, Any], key: tuple[int, ...]) -> bool:
    """Whether a row's range (``from`` inclusive, ``below`` exclusive, ``upto`` inclusive) holds the version."""
    return (("from" not in row or key >= vkey(row["from"])) and ("below" not in row or key < vkey(row["below"]))
            and ("upto" not in row or key <= vkey(row["upto"])))


def _value(value: Any, key: tuple[int, ...]) -> Any:
    """A row's value with its ``@NAME`` references (a named list spliced into a list) and ``{major}``/``{minor}``
    (the version's) resolved."""
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            got = _value(item, key)
            out += got if isinstance(item, str) and item.startswith("@") and isinstance(got, list) else [got]
        return out
    if isinstance(value, dict):
        return {k: _value(v, key) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("@"):
        return _value(NAMED[value[1:]], key)
    if isinstance(value, str):
        return value.replace("{major}", str(key[0])).replace("{minor}", str(key[1] if len(key) > 1 else 0)) \
            .replace("{VENV}", VENV)
    return value


def _make(repo: str, version: str) -> Recipe:
    """The recipe of ``repo`` at ``version``: the first row holding it, over the repository's common fields."""
    table = TABLE["repo"][repo]
    key = vkey(version)
    row = next(r for r in table["rows"] if _holds(r, key))
    fields = {k: _value(v, key) for k, v in {**table.get("common", {}), **row}.items()
              if k not in ("from", "below", "upto")}
    harness = fields.pop("harness")
    fields.setdefault("python", _python(harness))
    if not fields.pop("exact", False):  # exact: the harness's own interpreter, where its pins have their wheels
        fields["requirements"] = [_heavy_pin(r) for r in fields.get("requirements", [])]
    if fields.get("standin"):
        fields["requirements"] = [*fields.get("requirements", []), *standins.requirements(fields["standin"])]
        fields["standin"] = tuple(fields["standin"])
    return Recipe(repo=repo, version=version, harness_python=harness, **fields)


RECIPES = {repo: (_make, table["lowest"], table["default"]) for repo, table in TABLE["repo"].items()}
"""Each repository the harness knows: its recipe for a version, the lowest version the harness lists (an older
one is given its recipe) and the version taken when an instance names none."""


def _multi(repo: str, number: str) -> Recipe:
    """A Multi-SWE-bench repository's recipe for a pull request (``number``): the first row holding it."""
    key = vkey(number)
    row = next(r for r in TABLE["multi"][repo]["rows"] if _holds(r, key))
    return Recipe(repo=repo, version=number, test_cmd=row["test_cmd"], parser=f"{row['runner']}:{row['form']}",
                  harness_python="", python="", detected=True, whole_suite=True)


MULTI = set(TABLE.get("multi", {}))
"""The Multi-SWE-bench repositories with a recipe (their instances' versions are pull request numbers)."""


def recipe_for(repo: str, version: str | None) -> Recipe | None:
    """The recipe of ``repo`` at ``version`` (the instance's version field; a Multi-SWE-bench instance's: its pull
    request's number), or None for a repository the harness does not know (bosun detects its environment and test
    runner instead)."""
    if repo in MULTI:
        return _multi(repo, version or "0")
    entry = RECIPES.get(repo)
    if entry is None:
        return None
    make, lowest, default = entry
    if not version or not vkey(version):
        return make(repo, default)
    return make(repo, lowest if vkey(version) < vkey(lowest) else version)


def declaration(recipe: Recipe, present: set[str], read: Callable[[str], str | None]) -> Declared:
    """The environment a recipe asks for, as a declaration bosun's detection takes (over anything the repository
    declares): its interpreter, packages, the first of its requirement files the tree has, the packages of the
    first of its conda files as soft requirements, its edits of build files, resolved as of REFERENCE_DATE; the
    project installed last, on its own, as the harness installs it after its packages (``pip install -e .[test]``:
    the project's own pins win, astropy 5.0's ``hypothesis==6.46.7`` over the recipe's 6.82.6)."""
    files = [f for f in recipe.requirement_files if f in present][:1]
    env_file = next((f for f in recipe.env_files if f in present), None)
    soft = conda_requirements(read(env_file) or "") if env_file else []
    named = {req_name(r) for r in recipe.requirements}
    older = recipe.harness_python if vkey(recipe.harness_python) < vkey(recipe.python) else None
    pinned = [r for r in recipe.requirements if "==" in r]  # (installed after the files: their pins win)
    return Declared(python=recipe.python, apt=recipe.apt, extras=recipe.extras, requirements=recipe.requirements,
                    overrides=pinned if files else [], detect=False,
                    requirement_files=files, soft_requirements=[r for r in soft if req_name(r) not in named],
                    exclude_newer=REFERENCE_DATE, resolve_for_python=older, build_isolation=recipe.build_isolation,
                    project_last=True,
                    prepare=recipe.build_edits, standins=list(recipe.standin),
                    test_command=recipe.test_cmd)
