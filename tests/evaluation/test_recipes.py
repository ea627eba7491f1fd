"""The harness's recipes per repository and version, and the environment declaration each becomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.detect import detect
from environments.pyci import conda_requirements
from environments.repofiles import MemoryFiles
from evaluation.recipes import (
    RECIPES,
    REFERENCE_DATE,
    _holds,
    _value,
    declaration,
    recipe_for,
)


@pytest.mark.parametrize("repo,version,python,parser", [
    ("django/django", "3.0", "3.9", "django"), ("django/django", "4.0", "3.9", "django"),
    ("django/django", "5.0", "3.11", "django"), ("sympy/sympy", "1.1", "3.9", "sympy"),
    ("sphinx-doc/sphinx", "7.1", "3.9", "pytest_v2"), ("matplotlib/matplotlib", "3.6", "3.11", "matplotlib"),
    ("scikit-learn/scikit-learn", "0.21", "3.9", "pytest_v2"), ("astropy/astropy", "v5.3", "3.11", "pytest_v2"),
    ("astropy/astropy", "1.3", "3.6", "pytest_v2"), ("astropy/astropy", "3.1", "3.9", "pytest_v2"),
    ("pydata/xarray", "2022.03", "3.9", "pytest"), ("pytest-dev/pytest", "5.4", "3.9", "pytest"),
    ("pylint-dev/pylint", "2.15", "3.9", "pytest_options"), ("psf/requests", "2.0", "3.9", "pytest_options"),
    ("mwaskom/seaborn", "0.12", "3.9", "seaborn"), ("pallets/flask", "2.3", "3.11", "pytest")])
def test_each_repository_of_swe_bench_verified(repo, version, python, parser):
    recipe = recipe_for(repo, version)
    assert (recipe.python, recipe.parser) == (python, parser)


def test_versions_between_below_and_without():
    assert recipe_for("pytest-dev/pytest", "5.1").requirements == recipe_for("pytest-dev/pytest", "5.0").requirements
    assert "pluggy==1.3.0" in recipe_for("pytest-dev/pytest", "8.0").requirements
    assert recipe_for("pytest-dev/pytest", "3.1").requirements == recipe_for("pytest-dev/pytest", "4.4").requirements
    assert recipe_for("django/django", None).version == RECIPES["django/django"][2]
    assert recipe_for("acme/unknown", "1.0") is None


def test_pins_that_need_wheels_keep_their_minor_version_and_sphinx_keeps_its_setup_bounds():
    sklearn = recipe_for("scikit-learn/scikit-learn", "0.22")
    assert "numpy~=1.19.2" in sklearn.requirements and "scipy~=1.5.2" in sklearn.requirements
    sphinx3, sphinx5 = recipe_for("sphinx-doc/sphinx", "3.5"), recipe_for("sphinx-doc/sphinx", "5.0")
    # 3.0-4.4: setup.py's bounds by the harness's own edits, in the build's source too (not as requirements:
    # installed first they pulled Sphinx 5 in with sphinxcontrib-applehelp 1.0.7)
    assert "sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py" in sphinx3.build_edits
    assert not any("tox.ini" in e for e in sphinx3.build_edits) and sphinx5.build_edits == []
    assert "Jinja2==3.0.3" in sphinx5.requirements and "Jinja2==3.0.3" in sphinx3.requirements
    # the harness's pre_install edits of tracked files, which its image commits (evaluation/harness.py)
    assert sphinx5.workspace_edits == ["sed -i 's/pytest/pytest -rA/' tox.ini"]
    assert sphinx3.workspace_edits[:2] == ["sed -i 's/pytest/pytest -rA/' tox.ini",
                                           "sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py"]
    assert sphinx3.workspace_edits[-1] == ("sed -i 's/sphinxcontrib-serializinghtml/"
                                           "sphinxcontrib-serializinghtml<=1.1.9/' setup.py")
    sphinx41 = recipe_for("sphinx-doc/sphinx", "4.1")
    assert "grep -q 'sphinxcontrib-htmlhelp>=2.0.0' setup.py" in sphinx41.workspace_edits[-2]
    astropy = recipe_for("astropy/astropy", "4.3")
    assert astropy.workspace_edits == astropy.build_edits and "setuptools==68.0.0" in astropy.workspace_edits[0]
    assert recipe_for("pytest-dev/pytest", "6.3").workspace_edits == ["sed -i 's/>=>=/>=/' setup.cfg"]
    assert recipe_for("pytest-dev/pytest", "6.2").workspace_edits == []


ENV_YML = """\
name: xarray-tests
channels:
  - conda-forge
dependencies:
  - python=3.10
  - dask-core
  - fsspec!=2021.7.0
  - numpy=1.23   # pinned by the recipe too
  - netcdf4
  - hdf5
  - pip
  - pip:
      - numbagg
"""


def test_conda_files_become_soft_requirements():
    assert conda_requirements(ENV_YML) == ["dask", "fsspec!=2021.7.0", "numpy==1.23", "netcdf4", "numbagg"]
    assert conda_requirements("dependencies: [numpy]\n") == []  # flow style is not read
    assert conda_requirements("not: yaml: at: all\n  - x\n") == []


def test_a_recipe_becomes_the_declaration_detection_takes():
    files = MemoryFiles({"setup.py": "from setuptools import setup\nsetup(name='xarray')\n",
                         "ci/requirements/environment.yml": ENV_YML, "xarray/tests/test_a.py": ""})
    recipe = recipe_for("pydata/xarray", "2022.06")
    declared = declaration(recipe, set(files.paths()), files.read)
    assert declared.python == "3.9" and declared.exclude_newer == REFERENCE_DATE
    assert "numpy~=1.23.0" in declared.requirements
    assert declared.soft_requirements == ["fsspec!=2021.7.0", "netcdf4", "numbagg"]  # dask, numpy: pinned
    det = detect(files, override=("the recipe", declared))
    assert det.spec.origin == "override" and det.spec.python == "3.9"
    assert det.spec.exclude_newer == "2024-08-13T23:59:59Z" and "netcdf4" in det.spec.guessed
    django = recipe_for("django/django", "3.1")
    declared = declaration(django, {"tests/requirements/py3.txt", "setup.py"}, lambda _p: None)
    assert declared.requirement_files == ["tests/requirements/py3.txt"] and declared.apt == ["locales-all"]
    assert declared.resolve_for_python == "3.6"  # the harness's interpreter: its versions, on bosun's 3.9
    assert declaration(recipe_for("django/django", "4.2"), set(), lambda _p: None).resolve_for_python is None
    assert declaration(django, {"setup.py"}, lambda _p: None).requirement_files == []


def test_a_recipes_pins_override_its_requirement_file_and_nothing_is_guessed_beside_it():
    """pylint 3.0: the harness installs requirements_test.txt (astroid==3.0.0a8 through requirements_test_min.txt),
    then its packages (astroid==3.0.0a6): the recipe's pins become overrides. Under a recipe nothing is guessed from
    the tests' imports, and no extra or requirement file is detected beside it: the environment is the harness's."""
    files = MemoryFiles({"pyproject.toml": "[project]\nname = 'pylint'\n[project.optional-dependencies]\n"
                                           "testing = ['hypothesis']\n",
                         "requirements_test.txt": "pytest~=7.4\n", "requirements_test_min.txt": "astroid\n",
                         "pylint/__init__.py": "", "tests/test_a.py": "import git\nimport pytest_benchmark\n"})
    declared = declaration(recipe_for("pylint-dev/pylint", "3.0"), set(files.paths()), files.read)
    assert declared.overrides == ["astroid==3.0.0a6"] and declared.requirement_files == ["requirements_test.txt"]
    det = detect(files, override=("the recipe", declared))
    assert det.spec.overrides == ["astroid==3.0.0a6"] and det.spec.guessed == []
    assert det.spec.extras == [] and det.spec.requirement_files == ["requirements_test.txt"]  # the recipe's only
    assert "pytest" in det.spec.requirements
    assert any(r.field == "overrides" for r in det.reasons)
    detected = detect(files).spec  # no recipe: detected and guessed as before
    assert "GitPython" in detected.guessed and detected.extras == ["testing"]
    assert declaration(recipe_for("pylint-dev/pylint", "3.0"), set(), files.read).overrides == []  # no file


def test_astropy_1_3_keeps_the_harness_python_3_6_and_its_exact_pins():
    """Its 2017 pins neither install nor run on 3.9: it keeps the harness's interpreter (built from source), where
    they have wheels, so they stay exact and nothing is resolved as for another Python."""
    recipe = recipe_for("astropy/astropy", "1.3")
    assert recipe.python == recipe.harness_python == "3.6"
    assert "numpy==1.16.0" in recipe.requirements and "cython==0.27.3" in recipe.requirements
    decl = declaration(recipe, set(), lambda _p: None)
    assert decl.python == "3.6" and decl.resolve_for_python is None
    later = recipe_for("astropy/astropy", "3.1")  # on 3.9: its wheel-only pins keep their minor version only
    assert later.python == "3.9" and not any(r.startswith("numpy==") for r in later.requirements)


def test_astropy_before_4_1_gets_its_helpers_from_the_index_not_from_a_download():
    """astropy before 4.1 has no pyproject.toml and builds with astropy_helpers, a git submodule its ah_bootstrap
    downloads with pip when setup.py runs (the harness's `pip install -e .`). The recipe asks for astropy-helpers of the
    release lines from the version's to 4.0 (an instance is the development after its version), builds against it
    without isolation, and tells ah_bootstrap not to fetch, in the
    build and in the workspace (a rebuild runs offline); 4.1 and later are built as before."""
    for version, line in (("1.3", "astropy-helpers>=1.3,<4.1"), ("3.1", "astropy-helpers>=3.1,<4.1")):
        recipe = recipe_for("astropy/astropy", version)
        assert not recipe.build_isolation and line in recipe.requirements
        assert recipe.build_edits == recipe.workspace_edits and "auto_use = False" in recipe.build_edits[0]
    modern = recipe_for("astropy/astropy", "4.3")
    assert modern.build_isolation and not any("helpers" in r for r in modern.requirements)
    assert modern.build_edits == modern.workspace_edits and "pyproject.toml" in modern.build_edits[0]


def test_the_table_gives_every_recipe_the_code_gave():
    """recipes.toml is the recipes as data: for every repository and 3,852 versions (0.0-9.30, none, odd forms),
    it gives what the Python recipes it replaced gave (data/recipes.json, recorded from them at 0ca186d)."""
    data = json.loads((Path(__file__).parent / "data" / "recipes.json").read_text())
    for name, idx in data["index"].items():
        repo, version = name.rsplit("@", 1)
        got = recipe_for(repo, None if version == "None" else version).model_dump(mode="json")
        got.pop("version")
        assert not got.pop("detected") and not got.pop("whole_suite")  # (fields added since: SWE-bench's are off)
        assert got == data["recipes"][idx], name
    assert set(RECIPES) == {name.rsplit("@", 1)[0] for name in data["index"]}


def test_a_row_range_and_its_references_read_as_documented():
    assert _holds({"from": "4.1", "below": "4.2"}, (4, 1)) and not _holds({"from": "4.1", "below": "4.2"}, (4, 2))
    assert _holds({"upto": "4.4"}, (4, 4)) and not _holds({"upto": "4.4"}, (4, 4, 1)) and _holds({}, (0,))
    assert _value(["a", "@SPHINX_HTMLHELP", "b"], (4, 0))[1:3] == [
        "sed -i 's/sphinxcontrib-htmlhelp/sphinxcontrib-htmlhelp<=2.0.4/' setup.py",
        "sed -i 's/sphinxcontrib-serializinghtml/sphinxcontrib-serializinghtml<=1.1.9/' setup.py"]
    assert _value("astropy-helpers>={major}.{minor},<4.1", (3, 2)) == "astropy-helpers>=3.2,<4.1"
