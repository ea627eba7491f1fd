"""Detection is pure: a repository's files in, the spec and its reasons out (no Docker, no network)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from environments.detect import detect
from environments.interpreters import choose, interpreter, named_versions
from environments.repofiles import MemoryFiles
from infra.errors import ConfigError

D2019 = datetime(2019, 5, 16, 12, tzinfo=UTC)
D2023 = datetime(2023, 6, 1, tzinfo=UTC)
D2025 = datetime(2025, 3, 1, tzinfo=UTC)

SETUP_PY = """
import os
from setuptools import setup
about = {}
tests_require = ['pytest-httpbin==0.0.7', 'pytest-cov', 'pytest>=2.8.0']
setup(name='demo', install_requires=['chardet>=3.0.2'], tests_require=tests_require,
      python_requires='>=2.7, !=3.0.*', extras_require={'socks': ['PySocks']},
      classifiers=['Programming Language :: Python :: 3.6', 'Programming Language :: Python :: 3.7'])
"""


def spec_of(files: dict[str, str], when: datetime | None = D2019, **kw):
    return detect(MemoryFiles(files), commit_date=when, **kw)


def reasons(det, field: str) -> list[str]:
    return [r.source for r in det.reasons if r.field == field]


def test_a_2019_setup_py_project():
    det = spec_of({"setup.py": SETUP_PY, "pytest.ini": "[pytest]\naddopts = -p no:warnings --cov=demo\n",
                   "demo/__init__.py": "", "tests/test_a.py": "import mock\nimport demo\n"})
    spec = det.spec
    assert spec.python == "3.9"  # the oldest: no interpreter was released before 2019
    assert "none released before the commit" in reasons(det, "python")[0]
    assert spec.install_project and spec.project_name == "demo"
    assert {"pytest-httpbin==0.0.7", "pytest>=2.8.0", "pytest-cov", "pytest"} <= set(spec.requirements)
    assert spec.guessed == ["mock"]  # imported by the tests, declared nowhere; the project's own is not guessed
    assert spec.exclude_newer == "2019-05-16T23:59:59Z"
    assert spec.test.text == "python -m pytest tests"
    assert not spec.per_revision and not spec.compilers


def test_pyproject_extras_groups_and_python():
    det = spec_of({"pyproject.toml": """
[project]
name = "pkg"
requires-python = ">=3.10"
classifiers = ["Programming Language :: Python :: 3.12"]
[project.optional-dependencies]
test = ["hypothesis"]
docs = ["sphinx"]
[dependency-groups]
dev = ["ruff", {include-group = "lint"}]
lint = ["flake8"]
[tool.pytest.ini_options]
testpaths = ["tests"]
asyncio_mode = "auto"
""", "tests/test_x.py": "def test(): pass\n"}, when=D2025)
    spec = det.spec
    assert spec.python == "3.13" or spec.python == "3.11"
    assert spec.python == "3.11"  # named up to 3.12: the newest available not above it
    assert spec.extras == ["test"]
    assert {"ruff", "flake8", "pytest-asyncio"} <= set(spec.requirements)
    assert spec.test.paths == []  # pytest's own testpaths apply


def test_tox_commands_give_the_test_command_and_setup():
    det = spec_of({"setup.py": "from setuptools import setup\nsetup(name='f')\n", "tox.ini": """
[tox]
envlist = py37
[testenv]
deps =
    pytest
    lowest: Werkzeug==0.15
commands =
    pip install -q -e examples/tutorial[test]
    coverage run -p -m pytest --tb=short -Werror {posargs:tests examples}
"""})
    spec = det.spec
    assert spec.test.argv == ["python", "-m", "pytest", "--tb=short"]  # -Werror (strictness) is dropped
    assert spec.test.paths == ["tests", "examples"]
    assert spec.setup == ["uv pip install -e 'examples/tutorial[test]'"]
    assert "Werkzeug==0.15" not in spec.requirements  # a factor-conditional dependency


PYLINT_2_15_TOX = """
[tox]
minversion = 3.0
envlist = formatting, py37, py38, py39, py310, pypy, benchmark

[testenv:pylint]
deps =
    -r {toxinidir}/requirements_test.txt

[testenv]
setenv =
    COVERAGE_FILE = {toxinidir}/.coverage.{envname}
deps =
    !pypy: -r {toxinidir}/requirements_test.txt
    pypy: -r {toxinidir}/requirements_test_min.txt
commands =
    ; Run tests, ensuring all benchmark tests do not run
    pytest --benchmark-disable {toxinidir}/tests/ {posargs:}
"""
"""pylint 2.15's tox.ini (pylint-dev/pylint at ca80f03a, SWE-bench Verified's pylint-dev__pylint-6903), trimmed."""


def test_tox_factor_conditions_are_read_as_tox_reads_them():
    files = {"setup.py": "from setuptools import setup\nsetup(name='pylint')\n", "tox.ini": PYLINT_2_15_TOX,
             "requirements_test.txt": "-r requirements_test_min.txt\ncoverage~=6.4\n",
             "requirements_test_min.txt": "pytest~=7.1\n"}
    det = spec_of(files, when=D2023)
    spec = det.spec
    # "!pypy:" holds for a CPython environment: its file is a requirement file, never a requirement line
    assert "requirements_test.txt" in spec.requirement_files
    assert not any(r.startswith("!") or ":" in r.split("@")[0] for r in spec.requirements + spec.guessed)
    tox_reasons = [r for r in reasons(det, "requirement_files") if "tox.ini" in r]
    assert tox_reasons == ["tox.ini [testenv] deps (!pypy: holds for a py39 environment)"]  # "pypy:" does not


@pytest.mark.parametrize("condition, holds", [
    ("!pypy", True), ("pypy", False), ("py39", True), ("py38,py39", True), ("py39-django", False),
    ("!py39", False), ("py{38,39}", True), ("py{37,38}", False), ("py38,!pypy-!lin", True), ("py38,!pypy-lin", False),
    ("py3", True), ("lowest", False), ("!lowest-py{38,39}", True)])
def test_factor_conditions(condition: str, holds: bool):
    from environments.pyconfig import factor_condition, tox_factors

    assert factor_condition(condition, tox_factors("3.9")) is holds


def test_own_runner_when_pytest_is_not_configured():
    det = spec_of({"setup.py": "from setuptools import setup\nsetup(name='x')\n", "runtests.py": "print(1)\n",
                   "x/tests/test_a.py": "import unittest\n"})
    assert det.spec.test.kind == "command" and det.spec.test.text == "python runtests.py"


def test_compiled_projects_are_per_revision_with_compilers():
    det = spec_of({"setup.py": "from setuptools import setup, Extension\n"
                               "setup(name='c', ext_modules=[Extension('c._x', ['c/_x.c'])])\n"})
    assert det.spec.per_revision and det.spec.compilers
    assert det.key("base") != det.model_copy(update={"tree": "other"}).key("base")


def test_the_key_covers_dependency_files_not_code():
    files = {"setup.py": SETUP_PY, "demo/__init__.py": "x = 1\n"}
    key = spec_of(files).key("base")
    assert spec_of({**files, "demo/__init__.py": "x = 2\n"}).key("base") == key
    assert spec_of({**files, "setup.py": SETUP_PY.replace("pytest-cov", "pytest-cov>=2")}).key("base") != key
    assert spec_of(files).key("other-base") != key
    assert spec_of(files, when=D2023).key("base") != key  # resolved as of another day


def test_declared_environment_wins_and_is_explained():
    det = spec_of({"setup.py": SETUP_PY, ".bosun/environment.toml": """
python = "3.13"
apt = ["libxml2-dev"]
requirements = ["lxml"]
setup = ["python -c 'print(1)'"]
test_command = "python -m pytest -x tests/unit"
exclude_newer = "2020-01-02"
[env]
DEMO_MODE = "1"
"""})
    spec = det.spec
    assert spec.origin == "declared" and spec.python == "3.13" and spec.apt == ["libxml2-dev"]
    assert spec.compilers and "lxml" in spec.requirements and spec.env == {"DEMO_MODE": "1"}
    assert spec.test.text == "python -m pytest -x tests/unit" and spec.exclude_newer == "2020-01-02T23:59:59Z"
    assert spec.setup == ["python -c 'print(1)'"]


def test_versions_may_be_resolved_as_for_an_older_interpreter():
    det = spec_of({"setup.py": SETUP_PY, ".bosun/environment.toml": 'python = "3.9"\nresolve_for_python = "3.6"\n'})
    assert det.spec.resolve_for_python == "3.6"
    det = spec_of({"setup.py": SETUP_PY, ".bosun/environment.toml": 'python = "3.9"\nresolve_for_python = "3.11"\n'})
    assert det.spec.resolve_for_python is None  # not older than the environment's own: nothing to do
    with pytest.raises(ConfigError, match="major.minor"):
        spec_of({".bosun/environment.toml": 'resolve_for_python = "three"\n'})


def test_prepare_commands_and_soft_requirements_are_declared():
    det = spec_of({"setup.py": SETUP_PY, ".bosun/environment.toml": """
prepare = ["sed -i 's/==1.2/>=1.2/' setup.py"]
soft_requirements = ["netCDF4", "no-such-package-xyz"]
"""})
    assert det.spec.prepare == ["sed -i 's/==1.2/>=1.2/' setup.py"] and det.spec.per_revision
    assert {"netCDF4", "no-such-package-xyz"} <= set(det.spec.guessed)  # dropped at install when unknown
    assert any(r.field == "prepare" for r in det.reasons)
    with pytest.raises(ConfigError, match="one non-empty line each"):
        spec_of({".bosun/environment.toml": 'prepare = ["echo a\\necho b"]\n'})


def test_an_override_file_wins_over_the_repository():
    det = spec_of({".bosun/environment.toml": 'python = "3.13"\n'}, override=("/etc/envs/x.toml", 'python = "3.9"\n'))
    assert det.spec.origin == "override" and det.spec.python == "3.9"


def test_detection_fills_in_beside_a_declaration_unless_it_says_detect_false():
    """An operator's override (or the repository's file) names what detection cannot know; detection still adds
    the test extras, requirement files and guesses. ``detect = false`` (what a SWE-bench recipe says) installs only
    what the declaration names, and its pytest is never moved back."""
    repo = {"setup.py": "from setuptools import setup\nsetup(name='demo', extras_require={'test': ['mock']})\n",
            "demo/__init__.py": "", "tests/test_a.py": "import yaml\nimport demo\n"}
    filled = spec_of(repo, override=("/etc/envs/x.toml", 'python = "3.9"\n')).spec
    assert filled.extras == ["test"] and "PyYAML" in filled.guessed and not filled.declared_only
    only = spec_of(repo, override=("/etc/envs/x.toml", 'python = "3.9"\ndetect = false\nrequirements = ["six"]\n')).spec
    assert only.extras == [] and only.guessed == [] and only.declared_only and "six" in only.requirements


@pytest.mark.parametrize(("text", "message"), [
    ('python = "3.7"\n', "is not available: environments have Python 3.9, 3.11, 3.13"),
    ('pyhton = "3.11"\n', "pyhton"),
    ('apt = ["libfoo; rm -rf /"]\n', "is not a Debian package name"),
    ('[env]\nPATH = "/evil"\n', "cannot be set"),
    ('test_command = "pytest \'unclosed"\n', "not a valid command line"),
    ('requirement_files = ["../../etc/passwd"]\n', "inside the repository"),
    ('exclude_newer = "yesterday"\n', "is not a date"),
    ("python = [\n", "not valid TOML"),
])
def test_a_bad_environment_file_is_refused_with_a_clear_error(text, message):
    with pytest.raises(ConfigError, match=".bosun/environment.toml") as err:
        spec_of({".bosun/environment.toml": text})
    assert message in str(err.value)


def test_dockerfile_and_devcontainer_hints():
    det = spec_of({"Dockerfile": "FROM python:3.13-slim\nRUN apt-get update && apt-get install -y libpq-dev\n"
                                 "ENV APP_ENV=test\n", "setup.py": "from setuptools import setup\nsetup(name='d')\n"})
    assert det.spec.python == "3.13" and det.spec.apt == ["libpq-dev"] and det.spec.env == {"APP_ENV": "test"}
    det = spec_of({".devcontainer/devcontainer.json": '{"image": "mcr.microsoft.com/devcontainers/python:3.9",'
                                                      ' "postCreateCommand": "pip install -r dev.txt"}',
                   "app.py": ""})
    assert det.spec.python == "3.9" and det.spec.setup == ["pip install -r dev.txt"]


def test_a_python_repositorys_devcontainer_hints_are_read_as_a_declared_devcontainer_is():
    # One reader for both: comments and trailing commas, an object of commands, the workspace's variable, the
    # python feature's version; a file it refuses (dockerComposeFile, broken JSON) gives no hints, and detection
    # goes on.
    dc = """{
      // the team's container
      "image": "mcr.microsoft.com/devcontainers/base:bookworm",
      "features": {"ghcr.io/devcontainers/features/python:1": {"version": "3.11"}},
      "postCreateCommand": {"deps": "pip install -e ${containerWorkspaceFolder}", "hooks": ["pre-commit", "install"]},
      "containerEnv": {"APP_MODE": "dev", "PATH": "/evil", "1BAD": "x"},
    }"""
    det = spec_of({".devcontainer/devcontainer.json": dc, "setup.py": "from setuptools import setup\nsetup()\n"})
    assert det.spec.python == "3.11"
    assert det.spec.setup == ["pip install -e /workspace", "pre-commit install"]
    assert det.spec.env == {"APP_MODE": "dev"}
    for refused in ('{"dockerComposeFile": "c.yml", "postCreateCommand": "make"}', '{"image": "python:3.9",'):
        det = spec_of({".devcontainer/devcontainer.json": refused, "setup.py": "from setuptools import setup\n"})
        assert det.spec.setup == [] and det.spec.env == {}


def test_a_declaration_that_says_detect_false_takes_no_devcontainer_hints():
    """astropy 5.2's .devcontainer runs `conda init bash && sudo cp ...` after creation: under the harness's recipe
    (`detect = false`) that is not part of the environment (the build failed on it, `conda: not found`)."""
    repo = {"setup.py": "from setuptools import setup\nsetup(name='d')\n",
            ".devcontainer/devcontainer.json": '{"image": "mcr.microsoft.com/devcontainers/python:3.11",'
                                               ' "postCreateCommand": "conda init bash", "containerEnv": {"A": "1"}}'}
    only = spec_of(repo, override=("/etc/envs/x.toml", 'python = "3.9"\ndetect = false\n')).spec
    assert only.setup == [] and only.env == {} and only.python == "3.9"
    hinted = spec_of(repo).spec
    assert hinted.setup == ["conda init bash"] and hinted.setup_best_effort  # detected: the hint, best effort
    declared = spec_of(repo, override=("/etc/envs/x.toml", 'python = "3.9"\nsetup = ["make dev"]\n')).spec
    assert declared.setup == ["make dev"] and not declared.setup_best_effort  # a declaration's: it must work


def test_hostile_config_files_are_data():
    det = spec_of({"setup.py": "import os; os.system('touch /tmp/pwned')\n" + "(" * 5000,
                   "pyproject.toml": "[project\nname=", "setup.cfg": "[metadata\n", "tox.ini": "\0\0",
                   "tests/test_x.py": "x = (" * 10000})
    assert det.spec.python in ("3.9", "3.11", "3.13")
    assert any("does not parse" in n for n in det.notes) and any("not valid TOML" in n for n in det.notes)


def test_pipfile_dev_packages_are_soft():
    det = spec_of({"setup.py": SETUP_PY, "Pipfile": '[dev-packages]\npytest = ">=2.8.0,<=3.10.1"\nsphinx = "*"\n'
                                                    '[requires]\npython_version = "3.7"\n'})
    assert "pytest>=2.8.0,<=3.10.1" in det.spec.guessed and "sphinx" in det.spec.guessed


def test_interpreter_choice():
    assert choose(">=3.6", [], D2019)[0] == "3.9"
    assert choose(">=3.6", [], D2023)[0] == "3.11"
    assert choose(">=3.6", [], D2025)[0] == "3.13"
    assert choose(">=3.6", ["3.10"], D2025)[0] == "3.9"
    assert choose("<3.9", [], D2019)[0] == "3.9"  # nothing fits: the nearest, said plainly
    assert "allows none" in choose("<3.9", [], D2019)[1]
    assert choose(">=3.12", [], D2023)[0] == "3.13"
    assert named_versions("py37, py38\nProgramming Language :: Python :: 3.10") == ["3.7", "3.8", "3.10"]
    assert interpreter("python3.11").suite == "bookworm"
    with pytest.raises(ConfigError, match="3.8"):
        interpreter("3.8")


@pytest.mark.parametrize("toml, field", [
    ('[project]\nname = "x"\nclassifiers = 5\n', "[project] classifiers"),
    ('[project]\nname = "x"\noptional-dependencies = [1]\n', "[project] optional-dependencies"),
    ('[project]\nname = "x"\ndependencies = "six"\n', "[project] dependencies"),
    ('dependency-groups = [1]\n[project]\nname = "x"\n', "pyproject.toml dependency-groups"),
    ('[build-system]\nrequires = 3\nbuild-backend = "x"\n', "[build-system] requires"),
    ('[tool.poetry]\nname = "x"\ngroup = [1]\n', "[tool.poetry] group"),
    ('project = 1\n', "pyproject.toml project"),
])
def test_type_confused_pyproject_fields_are_ignored_with_a_note(toml, field):
    det = spec_of({"pyproject.toml": toml, "tests/test_a.py": "def test_a(): pass\n"})
    assert any(n.startswith(f"pyproject.toml {field}".replace("pyproject.toml pyproject.toml", "pyproject.toml"))
               and "ignored" in n for n in det.notes), det.notes


def test_project_names_are_found_in_linear_time():
    import time

    assert spec_of({"pyproject.toml": '[project]\nname = "demo"\n[tool.x]\nname = "other"\n'}).spec.project_name \
        == "demo"
    assert spec_of({"setup.cfg": "[metadata]\nname = democfg\n"}).spec.project_name == "democfg"
    assert spec_of({"setup.cfg": "[metadata]\nversion = 1\n[other]\nname = wrong\n"}).spec.project_name is None
    started = time.monotonic()
    spec_of({"pyproject.toml": "[project]\n" * 8000, "setup.cfg": "[metadata]\n" * 8000})
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("image, python", [("3.8", "3.9"), ("3.10", "3.9"), ("3.12", "3.11"), ("3.13", "3.13"),
                                           ("3.14", "3.13")])
def test_a_dockerfile_python_is_a_hint_for_the_nearest_available(image, python):
    files = {"Dockerfile": f"FROM python:{image}-slim\n", "setup.py": "from setuptools import setup\nsetup(name='d')\n"}
    det = spec_of(files)
    assert det.spec.python == python
    assert any(f"names python {image}" in r.source for r in det.reasons if r.field == "python")
    assert (python == image) != any("the nearest" in n for n in det.notes)
    det = spec_of({".devcontainer/devcontainer.json": f'{{"image": "mcr.microsoft.com/devcontainers/python:{image}"}}',
                   "main.py": ""})
    assert det.spec.python == python
    det = spec_of({**files, "pyproject.toml": '[project]\nname = "d"\nrequires-python = ">=3.11"\n'})
    assert det.spec.python == ("3.11" if image in ("3.8", "3.10", "3.12") else python)


def test_setup_commands_make_an_environment_per_revision():
    plain = spec_of({"setup.py": "from setuptools import setup\nsetup(name='d')\n"})
    assert not plain.spec.per_revision
    det = spec_of({".devcontainer/devcontainer.json": '{"postCreateCommand": "python gen.py > version.txt"}',
                   "setup.py": "from setuptools import setup\nsetup(name='d')\n"})
    assert det.spec.setup and det.spec.per_revision
    assert "per_revision" in [r.field for r in det.reasons]


XARRAY_ENV = """name: xarray-tests
channels:
  - conda-forge
  - nodefaults
dependencies:
  - aiobotocore
  - bottleneck
  - cdms2
  - cftime
  - dask-core
  - hdf5
  - pip
  - pip:
      - numbagg
"""
"""xarray's ci/requirements/environment.yml (pydata/xarray at pydata__xarray-4687's base commit), a part."""
SYMPY_CI = """jobs:
  code-quality:
    steps:
      - run: python -m pip install --upgrade pip setuptools
      - run: pip install -r requirements-dev.txt
      - name: Basic code quality tests
        run: bin/test quality
  mypy:
    steps:
      - run: pip install mpmath mypy hypothesis python-flint
"""
"""sympy's .github/workflows/runtests.yml, a part."""
NOXFILE = """import nox


@nox.session(python=["3.9", "3.10", "3.11"])
def test(session: nox.Session) -> None:
    session.install("-r", "dev-requirements.txt")
    session.install(".[socks]", "trustme==0.9.0")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("pre-commit")
"""
"""A noxfile as urllib3's: a test session and a lint session."""


def test_what_a_projects_ci_installs_is_tried_softly():
    setup = "from setuptools import setup\nsetup(name='xarray')\n"
    det = spec_of({"setup.py": setup, "ci/requirements/environment.yml": XARRAY_ENV,
                   "ci/requirements/py38-min-all-deps.yml": "dependencies:\n  - numpy=1.18\n",
                   "doc/environment.yml": "dependencies:\n  - sphinx\n"}, when=D2023)
    # conda names mapped (dask-core), conda-only packages left out (hdf5, cdms2, pip); the min variant not read
    assert det.spec.guessed[:5] == ["aiobotocore", "bottleneck", "cftime", "dask", "numbagg"]
    assert "numpy==1.18" not in det.spec.guessed and "sphinx" not in det.spec.guessed
    assert "ci/requirements/environment.yml" in det.files  # it shapes the environment
    assert any("ci/requirements/environment.yml (conda environment) (dropped if it cannot be installed)" in r
               for r in reasons(det, "guessed"))
    # without one: the CI's file for the newest Python up to the environment's (2019's xarray: py37.yml)
    det = spec_of({"setup.py": setup, "ci/requirements/py36.yml": "dependencies:\n  - cftime\n",
                   "ci/requirements/py37.yml": "dependencies:\n  - bottleneck\n",
                   "ci/requirements/py37-windows.yml": "dependencies:\n  - pywin32\n"})
    assert det.spec.guessed[:1] == ["bottleneck"]
    det = spec_of({"setup.py": setup, ".github/workflows/runtests.yml": SYMPY_CI,
                   "requirements-dev.txt": "pytest\n", "noxfile.py": NOXFILE, "dev-requirements.txt": "mock\n"})
    assert {"mpmath", "mypy", "hypothesis", "python-flint", "trustme==0.9.0"} <= set(det.spec.guessed)
    assert "pre-commit" not in det.spec.guessed  # a lint session's
    assert "dev-requirements.txt" in det.spec.optional_files


def test_a_declared_environment_gets_no_ci_guesses():
    det = spec_of({"setup.py": "from setuptools import setup\nsetup(name='x')\n", "environment.yml": XARRAY_ENV,
                   ".bosun/environment.toml": 'python = "3.11"\n'})
    assert "bottleneck" not in det.spec.guessed


def test_tests_that_call_a_public_test_service_get_its_stand_in():
    """requests 2.0's tests call http(s)://httpbin.org: the sandbox has no network, so the environment gets the
    service's package (soft) and its spec the stand-in, which the judging runner starts."""
    calls = {"setup.py": SETUP_PY, "demo/__init__.py": "",
             "test_requests.py": "import os\nHTTPBIN = os.environ.get('HTTPBIN_URL', 'http://httpbin.org/')\n"}
    det = spec_of(calls)
    assert det.spec.standins == ["httpbin.org"]
    assert "httpbin" in det.spec.guessed and "httpbin" not in det.spec.requirements
    assert "test_requests.py calls it" in reasons(det, "standins")[0]
    plain = spec_of({**calls, "test_requests.py": "URL = 'http://127.0.0.1:8000/'  # httpbin.org in a comment\n"})
    assert plain.spec.standins == [] and "httpbin" not in plain.spec.guessed
    assert "standins" not in plain.spec.canonical()  # (existing environments keep their keys)
    declared = spec_of({**calls, ".bosun/environment.toml": 'standins = ["httpbin.org"]\n'})
    assert declared.spec.standins == ["httpbin.org"]  # found and declared: once
    assert "httpbin" in declared.spec.requirements and "httpbin" not in declared.spec.guessed  # declared: must work
    assert any("declared" in r for r in reasons(declared, "standins"))
    alone = spec_of({**calls, "test_requests.py": "", ".bosun/environment.toml": 'standins = ["httpbin.org"]\n'})
    assert alone.spec.standins == ["httpbin.org"] and "httpbin" in alone.spec.requirements


AH_SETUP_CFG = "[ah_bootstrap]\nauto_use = True\n\n[metadata]\npackage_name = astropy\n"


def test_a_project_that_bootstraps_astropy_helpers_from_an_absent_submodule_gets_them_installed():
    """astropy before 4.1 (and its affiliated packages of that day): setup.py imports ah_bootstrap, which takes
    astropy_helpers from a git submodule the source does not hold, else downloads it from pypi.python.org, which a
    build does not reach (every attempt of astropy 3.1's detected build failed so). The helpers become a
    requirement, the project is built against them without isolation, and the download is switched off."""
    files = {"setup.py": "import ah_bootstrap\nfrom astropy_helpers.setup_helpers import setup\nsetup()\n",
             "ah_bootstrap.py": "", "setup.cfg": AH_SETUP_CFG, ".gitmodules": '[submodule "astropy_helpers"]\n'}
    spec = spec_of(files).spec
    assert "astropy-helpers" in spec.requirements and not spec.build_isolation
    assert spec.prepare == ["sed -i 's/^auto_use = True/auto_use = False/' setup.cfg"]
    # the submodule checked out, or the bootstrap already off: nothing is added
    for changed in ({"astropy_helpers/astropy_helpers/__init__.py": ""},
                    {"setup.cfg": AH_SETUP_CFG.replace("True", "False")}):
        other = spec_of({**files, **changed}).spec
        assert "astropy-helpers" not in other.requirements and other.build_isolation and not other.prepare
    # a declaration that says detect = false decides alone
    declared = spec_of({**files, ".bosun/environment.toml": 'detect = false\nrequirements = ["pytest"]\n'}).spec
    assert "astropy-helpers" not in declared.requirements and not declared.prepare


@pytest.mark.parametrize("files,found", [
    ({"CMakeLists.txt": "project(x)\n", "src/x.c": ""}, "CMakeLists.txt (C/C++ (CMake))"),
    ({"Gemfile": "source 'https://rubygems.org'\n", "lib/x.rb": ""}, "Gemfile (Ruby)"),
    ({"composer.json": "{}\n", "src/A.php": ""}, "composer.json (PHP)"),
])
def test_a_repository_of_another_language_is_said_to_be_undetected(files, found):
    """Not silently taken for Python: the detection warns, names what it found and the declaration that would do;
    with a declaration, or with Python in the repository too, there is no warning."""
    det = spec_of(files)
    assert det.warning.startswith("not detected: this is not a Python project") and found in det.warning
    assert ".bosun/environment.toml" in det.warning and "docs/environments.md" in det.warning
    assert spec_of({**files, "tools/gen.py": "print(1)\n"}).warning == ""
    declared = spec_of({**files, ".bosun/environment.toml": 'install = false\ntest_command = "make test"\n'})
    assert declared.warning == "" and declared.spec.test.text == "make test"


def test_a_python_repository_has_no_warning():
    assert spec_of({"setup.py": SETUP_PY, "demo/__init__.py": ""}).warning == ""
    assert spec_of({"requirements.txt": "requests\n", "app.py": ""}).warning == ""
    assert spec_of({"README.md": "hello\n"}).warning == ""  # nothing of any ecosystem: nothing to say
