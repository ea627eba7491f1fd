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

Versions are the instances' ``version`` field; a version the table does not list takes the nearest listed one
below it (else the lowest). Sources: SWE-bench/SWE-bench ``swebench/harness/constants/python.py``,
``test_spec/python.py``, ``log_parsers/python.py`` (the 2024-2025 releases that produced the published SWE-bench
Verified results).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from environments import standins
from environments.declared import Declared
from environments.detect import HELPERS_OFFLINE
from environments.models import VENV
from environments.pyconfig import conda_requirements, req_name

REFERENCE_DATE = "2024-08-13T23:59:59Z"
"""Packages the recipes do not pin are resolved as of this moment (SWE-bench Verified's release: the harness's
images resolved them about then)."""

PYTEST = "pytest -rA"
DJANGO = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
SYMPY = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"
SPHINX = "tox --current-env -epy39 -v --"
ASTROPY_OLD = "pytest -rA -vv -o console_output_style=classic --tb=no"
SEABORN = "pytest --no-header -rA"
DJANGO_LOCALE = {"LANG": "en_US.UTF-8", "LANGUAGE": "en_US:en", "LC_ALL": "en_US.UTF-8"}


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
    standin: tuple[str, ...] = ()
    """Public test services the tests reach by name (``httpbin.org``: requests before 2.8), answered by a local
    stand-in that the judging script starts (environments/standins.py): the harness's containers have the
    network, bosun's sandboxes do not."""


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def _python(harness: str) -> str:
    return "3.9" if _vkey(harness) <= (3, 9) else "3.11"


def _heavy_pin(req: str) -> str:
    """``numpy==1.19.2`` -> ``numpy~=1.19.2`` (any patch release of that minor version: one with a wheel)."""
    return req.replace("==", "~=", 1) if re.match(r"(?i)(numpy|scipy|pandas|matplotlib)==\d+\.\d+\.\d+$", req) \
        else req


def _r(repo: str, version: str, test_cmd: str, parser: str, harness: str, **kw: object) -> Recipe:
    kw.setdefault("python", _python(harness))
    if not kw.pop("exact", False):  # exact: the harness's own interpreter, where its pins have their wheels
        kw["requirements"] = [_heavy_pin(r) for r in kw.get("requirements", [])]  # type: ignore[union-attr]
    return Recipe(repo=repo, version=version, test_cmd=test_cmd, parser=parser, harness_python=harness,
                  **kw)  # type: ignore[arg-type]


def _django(v: str) -> Recipe:
    key = _vkey(v)
    req = dict(requirement_files=["tests/requirements/py3.txt"], apt=["locales-all"])
    if key < (1, 7):
        return _r("django/django", v, DJANGO, "django", "3.5")
    if key < (3, 0):
        return _r("django/django", v, "./tests/runtests.py --verbosity 2" if key == (1, 9) else DJANGO, "django",
                  "3.5", requirements=["setuptools"], eval_env={**DJANGO_LOCALE, "PYTHONIOENCODING": "utf8"}, **req)
    if key < (4, 0):
        return _r("django/django", v, DJANGO, "django", "3.6", eval_env=DJANGO_LOCALE, **req)
    return _r("django/django", v, DJANGO, "django", "3.8" if key < (4, 1) else "3.9" if key < (5, 0) else "3.11",
              **req)


def _sympy(v: str) -> Recipe:
    if _vkey(v) >= (1, 13):
        return _r("sympy/sympy", v, SYMPY, "sympy", "3.9", requirements=["mpmath==1.3.0"],
                  requirement_files=["requirements-dev.txt", "requirements-test.txt"])
    return _r("sympy/sympy", v, SYMPY, "sympy", "3.9",
              requirements=["mpmath==1.3.0", "flake8", "flake8-comprehensions"])


SPHINX_SITE = {"PYTHONPATH": f"{VENV}/lib/python3.9/site-packages"}
"""tox-current-env runs the tests with a link to the current interpreter (``.tox/py39/bin/python``); in the
harness's conda environment that is the environment's Python, in bosun's virtualenv it is the base Python (a
virtualenv is found next to the path a Python is started by, links not followed), which then needs the
virtualenv's packages named."""


def _sphinx_edits(key: tuple[int, ...]) -> list[str]:
    """The harness's edits of Sphinx's tracked files for a version: ``-rA`` in tox.ini, and for 3.0-4.4 setup.py's
    bounds (Jinja2<3.0, the sphinxcontrib packages, alabaster, markupsafe), version by version as it writes them."""
    edits = ["sed -i 's/pytest/pytest -rA/' tox.ini"]
    if not (3, 0) <= key <= (4, 4):
        return edits
    edits += ["sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py",
              "sed -i 's/sphinxcontrib-applehelp/sphinxcontrib-applehelp<=1.0.7/' setup.py",
              "sed -i 's/sphinxcontrib-devhelp/sphinxcontrib-devhelp<=1.0.5/' setup.py",
              "sed -i 's/sphinxcontrib-qthelp/sphinxcontrib-qthelp<=1.0.6/' setup.py",
              "sed -i 's/alabaster>=0.7,<0.8/alabaster>=0.7,<0.7.12/' setup.py",
              "sed -i \"s/'packaging',/'packaging', 'markupsafe<=2.0.1',/\" setup.py"]
    if key[:2] in ((4, 2), (4, 3), (4, 4)):
        return edits + ["sed -i 's/sphinxcontrib-htmlhelp>=2.0.0/sphinxcontrib-htmlhelp>=2.0.0,<=2.0.4/' setup.py",
                        "sed -i 's/sphinxcontrib-serializinghtml>=1.1.5/sphinxcontrib-serializinghtml>=1.1.5,<=1.1.9/'"
                        " setup.py"]
    if key[:2] == (4, 1):
        return edits + ["grep -q 'sphinxcontrib-htmlhelp>=2.0.0' setup.py && "
                        "sed -i 's/sphinxcontrib-htmlhelp>=2.0.0/sphinxcontrib-htmlhelp>=2.0.0,<=2.0.4/' setup.py || "
                        "sed -i 's/sphinxcontrib-htmlhelp/sphinxcontrib-htmlhelp<=2.0.4/' setup.py",
                        "grep -q 'sphinxcontrib-serializinghtml>=1.1.5' setup.py && "
                        "sed -i 's/sphinxcontrib-serializinghtml>=1.1.5/sphinxcontrib-serializinghtml>=1.1.5,<=1.1.9/'"
                        " setup.py || "
                        "sed -i 's/sphinxcontrib-serializinghtml/sphinxcontrib-serializinghtml<=1.1.9/' setup.py"]
    return edits + ["sed -i 's/sphinxcontrib-htmlhelp/sphinxcontrib-htmlhelp<=2.0.4/' setup.py",
                    "sed -i 's/sphinxcontrib-serializinghtml/sphinxcontrib-serializinghtml<=1.1.9/' setup.py"]


def _sphinx(v: str) -> Recipe:
    key = _vkey(v)
    edits = _sphinx_edits(key)
    # 3.0-4.4: the setup.py bounds are the harness's edits of setup.py before its install, made in the build's
    # source too: installed last (project_last), the project resolves them itself -- sphinxcontrib-applehelp 1.0.7
    # requires Sphinx>=5, so <=1.0.7 gives 1.0.4 with Sphinx 3, as in the harness; installed first on their own
    # they would pull Sphinx 5 and applehelp 1.0.7
    return _r("sphinx-doc/sphinx", v, SPHINX, "pytest_v2", "3.9" if key < (8, 0) else "3.10", python="3.9",
              extras=["test"], requirements=["tox==4.16.0", "tox-current-env==0.0.11", "Jinja2==3.0.3"],
              apt=["graphviz"] if key >= (7, 2) else [], build_edits=edits[1:], workspace_edits=edits,
              eval_env=SPHINX_SITE)


_MPL_PINS = ["contourpy==1.1.0", "cycler==0.11.0", "fonttools==4.42.1", "ghostscript", "kiwisolver==1.4.5",
             "numpy==1.25.2", "packaging==23.1", "pillow==10.0.0", "pikepdf", "pyparsing==3.0.9",
             "python-dateutil==2.8.2", "six==1.16.0", "setuptools==68.1.2", "setuptools-scm==7.1.0",
             "typing-extensions==4.7.1"]
_MPL_SYSTEM_LIBS = ("printf '[libs]\\nsystem_freetype = true\\nsystem_qhull = true\\n' > mplsetup.cfg")
"""Matplotlib's build downloads FreeType and Qhull unless told to use the system's (no such download here)."""


def _matplotlib(v: str) -> Recipe:
    key = _vkey(v)
    common = dict(apt=["libfreetype6-dev", "libqhull-dev", "pkg-config"], build_edits=[_MPL_SYSTEM_LIBS],
                  rebuild="python -m pip install --no-build-isolation --no-deps -e .")
    if key >= (3, 5):
        return _r("matplotlib/matplotlib", v, PYTEST, "matplotlib", "3.11", requirements=_MPL_PINS,
                  env_files=["environment.yml"], extras=["dev"] if key >= (3, 8) else [],
                  build_isolation=key < (3, 8), **common)
    if key >= (3, 0):
        return _r("matplotlib/matplotlib", v, PYTEST, "matplotlib", "3.8" if key >= (3, 1) else "3.7",
                  requirements=["pytest", "ipython"] if key >= (3, 1) else ["pytest"],
                  requirement_files=["requirements/dev/dev-requirements.txt", "requirements/testing/travis_all.txt"],
                  **common)
    return _r("matplotlib/matplotlib", v, PYTEST, "matplotlib", "3.5", requirements=["pytest"], **common)


def _sklearn(v: str) -> Recipe:
    rebuild = "python -m pip install -v --no-use-pep517 --no-build-isolation --no-deps -e ."
    if _vkey(v) >= (1, 3):
        return _r("scikit-learn/scikit-learn", v, PYTEST, "pytest_v2", "3.9", rebuild=rebuild, build_isolation=False,
                  requirements=["numpy==1.19.2", "scipy==1.5.2", "cython==3.0.10", "pytest", "pandas<2.0.0",
                                "matplotlib<3.9.0", "setuptools", "joblib", "threadpoolctl"])
    # cython<3: the harness installs cython from conda for Python 3.6, whose channel has no Cython 3 (released 2023,
    # after the channel stopped building for 3.6); PyPI's Cython 3 still takes 3.6, and 0.20-0.22 do not compile
    # with it.
    return _r("scikit-learn/scikit-learn", v, PYTEST, "pytest_v2", "3.6", rebuild=rebuild, build_isolation=False,
              requirements=["numpy==1.19.2", "scipy==1.5.2", "cython<3", "pytest", "pandas", "matplotlib",
                            "setuptools"])


_ASTROPY_MODERN = ["attrs==23.1.0", "exceptiongroup==1.1.3", "execnet==2.0.2", "hypothesis==6.82.6",
                   "iniconfig==2.0.0", "numpy==1.25.2", "packaging==23.1", "pluggy==1.3.0", "psutil==5.9.5",
                   "pyerfa==2.0.0.3", "pytest-arraydiff==0.5.0", "pytest-astropy-header==0.2.2",
                   "pytest-astropy==0.10.0", "pytest-cov==4.1.0", "pytest-doctestplus==1.0.0",
                   "pytest-filter-subpackage==0.1.2", "pytest-mock==3.11.1", "pytest-openfiles==0.5.0",
                   "pytest-remotedata==0.4.0", "pytest-xdist==3.3.1", "pytest==7.4.0", "PyYAML==6.0.1",
                   "setuptools==68.0.0", "sortedcontainers==2.4.0", "tomli==2.0.1"]
_ASTROPY_OLD = ["attrs==17.3.0", "exceptiongroup==0.0.0a0", "execnet==1.5.0", "hypothesis==3.44.2",
                "cython==0.27.3", "jinja2==2.10", "MarkupSafe==1.0", "numpy==1.16.0", "packaging==16.8",
                "pluggy==0.6.0", "psutil==5.4.2",
                "pyerfa==1.7.0", "pytest-arraydiff==0.1", "pytest-astropy-header==0.1", "pytest-astropy==0.2.1",
                "pytest-cov==2.5.1", "pytest-doctestplus==0.1.2", "pytest-filter-subpackage==0.1",
                "pytest-forked==0.2", "pytest-mock==1.6.3", "pytest-openfiles==0.2.0", "pytest-remotedata==0.2.0",
                "pytest-xdist==1.20.1", "pytest==3.3.1", "PyYAML==3.12", "sortedcontainers==1.5.9",
                "tomli==0.2.0"]
_ASTROPY_SETUPTOOLS = "sed -i 's/requires = \\[\"setuptools\",/requires = \\[\"setuptools==68.0.0\",/' pyproject.toml"


def _astropy(v: str) -> Recipe:
    key = _vkey(v)
    rebuild = "python -m pip install --no-build-isolation --no-deps -e ."
    # Before 4.1 astropy has no pyproject.toml and builds with astropy_helpers, a git submodule (absent from the
    # source) that its ah_bootstrap downloads with the interpreter's pip when setup.py runs, as the harness's
    # `pip install -e .` ran it. Here the same release line of astropy-helpers is a requirement (resolved by uv as
    # of the date, where pip's own download builds it with today's setuptools, which has no pkg_resources), the
    # project is built against it without isolation, and ah_bootstrap told not to fetch (setup.cfg, in the build
    # and the workspace: a rebuild runs it again, offline). The harness's version X.Y is the last release before
    # the instance: its source is the development after it (3.1: 4.0.dev, whose setup.py imports
    # astropy_helpers.setup_helpers.setup, new in helpers 3.2), and its submodule follows the helpers' development
    # too: the newest helpers of the release lines from X.Y to 4.0 (the last), not X.Y's own.
    helpers = key < (4, 1)
    edits = [HELPERS_OFFLINE] if helpers else [_ASTROPY_SETUPTOOLS]
    extra = [f"astropy-helpers>={key[0]}.{key[1]},<4.1"] if helpers else []
    common = dict(extras=["test"], rebuild=rebuild, build_edits=edits, workspace_edits=edits,
                  build_isolation=not helpers)
    if key < (3, 0):
        return _r("astropy/astropy", v, ASTROPY_OLD, "pytest_v2", "3.6", python="3.6", exact=True,
                  requirements=["setuptools==38.2.4", *_ASTROPY_OLD, *extra], **common)
    return _r("astropy/astropy", v, PYTEST, "pytest_v2", "3.10" if key >= (5, 3) else "3.9",
              requirements=_ASTROPY_MODERN + extra, **common)


def _xarray(v: str) -> Recipe:
    # The harness's conda environment comes from the environment.yml of each version's setup commit; before
    # ci/requirements/environment.yml existed (0.12-0.14) the CI's py37.yml lists the same optional backends
    # (bottleneck, cftime, dask, netCDF4: without them their tests are skipped, where the harness ran them). Its
    # cfgrib needs the ecCodes library, which conda's eccodes package brought (else cfgrib's import fails and takes
    # whole test modules with it).
    return _r("pydata/xarray", v, PYTEST, "pytest", "3.10", python="3.9", apt=["libeccodes0"],
              env_files=["ci/requirements/environment.yml", "environment.yml", "ci/requirements/py37.yml",
                         "ci/requirements/py36.yml"],
              requirements=["numpy==1.23.0", "packaging==23.1", "pandas==1.5.3", "pytest==7.4.0",
                            "python-dateutil==2.8.2", "pytz==2023.3", "six==1.16.0", "scipy==1.11.1",
                            "setuptools==68.0.0", "dask==2022.8.1"])


_PYTEST_PINS = [
    ((4, 4), "atomicwrites==1.4.1 attrs==23.1.0 more-itertools==10.1.0 pluggy==0.13.1 py==1.11.0 setuptools==68.0.0 "
             "six==1.16.0"),
    ((4, 5), "atomicwrites==1.4.1 attrs==23.1.0 more-itertools==10.1.0 pluggy==0.11.0 py==1.11.0 setuptools==68.0.0 "
             "six==1.16.0 wcwidth==0.2.6"),
    ((4, 6), "atomicwrites==1.4.1 attrs==23.1.0 more-itertools==10.1.0 packaging==23.1 pluggy==0.13.1 py==1.11.0 "
             "six==1.16.0 wcwidth==0.2.6"),
    ((5, 0), "atomicwrites==1.4.1 attrs==23.1.0 more-itertools==10.1.0 packaging==23.1 pluggy==0.13.1 py==1.11.0 "
             "wcwidth==0.2.6"),
    ((5, 3), "attrs==23.1.0 more-itertools==10.1.0 packaging==23.1 pluggy==0.13.1 py==1.11.0 wcwidth==0.2.6"),
    ((5, 4), "py==1.11.0 packaging==23.1 attrs==23.1.0 more-itertools==10.1.0 pluggy==0.13.1"),
    ((6, 0), "attrs==23.1.0 iniconfig==2.0.0 more-itertools==10.1.0 packaging==23.1 pluggy==0.13.1 py==1.11.0 "
             "toml==0.10.2"),
    ((6, 2), "attrs==23.1.0 iniconfig==2.0.0 packaging==23.1 pluggy==0.13.1 py==1.11.0 toml==0.10.2"),
    ((7, 0), "attrs==23.1.0 iniconfig==2.0.0 packaging==23.1 pluggy==0.13.1 py==1.11.0"),
    ((7, 1), "attrs==23.1.0 iniconfig==2.0.0 packaging==23.1 pluggy==0.13.1 py==1.11.0 tomli==2.0.1"),
    ((7, 4), "iniconfig==2.0.0 packaging==23.1 pluggy==1.3.0 exceptiongroup==1.1.3 tomli==2.0.1"),
]


def _pytest(v: str) -> Recipe:
    key = _vkey(v)
    pins = next((p for k, p in reversed(_PYTEST_PINS) if key >= k), _PYTEST_PINS[0][1])
    # the harness's 6.3 edit (setup.cfg's "setuptools>=>=42.0" does not parse), also needed by 6.2's releases
    edits = ["sed -i 's/>=>=/>=/' setup.cfg"] if (6, 2) <= key < (7, 0) else []
    return _r("pytest-dev/pytest", v, PYTEST, "pytest", "3.9", requirements=pins.split(), build_edits=edits,
              workspace_edits=edits if key[:2] == (6, 3) else [])


def _pylint(v: str) -> Recipe:
    key = _vkey(v)
    extra: dict = {}
    if key < (2, 9):
        extra = dict(requirements=["pyenchant==3.2"], apt=["libenchant-2-dev", "hunspell-en-us"])
    elif key >= (3, 0):
        extra = dict(requirements=["astroid==3.0.0a6", "setuptools"])
    return _r("pylint-dev/pylint", v, PYTEST, "pytest_options", "3.9", requirement_files=["requirements_test.txt"],
              **extra)


def _requests(v: str) -> Recipe:
    if _vkey(v) >= (2, 8):  # its tests serve httpbin themselves (pytest-httpbin)
        return _r("psf/requests", v, PYTEST, "pytest_options", "3.9", requirements=["pytest"])
    return _r("psf/requests", v, PYTEST, "pytest_options", "3.9",
              requirements=["pytest", *standins.requirements(["httpbin.org"])], standin=("httpbin.org",))


_SEABORN = ["contourpy==1.1.0", "cycler==0.11.0", "fonttools==4.42.1", "importlib-resources==6.0.1",
            "kiwisolver==1.4.5", "matplotlib==3.7.2", "numpy==1.25.2", "packaging==23.1", "pillow==10.0.0",
            "pyparsing==3.0.9", "pytest", "python-dateutil==2.8.2", "pytz==2023.3.post1", "scipy==1.11.2",
            "six==1.16.0", "tzdata==2023.1", "zipp==3.16.2"]


def _seaborn(v: str) -> Recipe:
    new = _vkey(v) >= (0, 12)
    return _r("mwaskom/seaborn", v, SEABORN, "seaborn", "3.9", extras=["dev"] if new else [],
              requirements=[*_SEABORN, "pandas==2.0.0" if new else "pandas==1.3.5"])


def _flask(v: str) -> Recipe:
    key = _vkey(v)
    if key < (2, 1):
        pins = ["setuptools==70.0.0", "Werkzeug==2.3.7", "Jinja2==3.0.1", "itsdangerous==2.1.2", "click==8.0.1",
                "MarkupSafe==2.1.3"]
    else:
        pins = ["setuptools==70.0.0", "click==8.1.3", "itsdangerous==2.1.2", "Jinja2==3.1.2", "MarkupSafe==2.1.1",
                "Werkzeug==2.3.7"]
    return _r("pallets/flask", v, PYTEST, "pytest", "3.9" if key < (2, 1) else "3.10" if key < (2, 2) else "3.11",
              requirements=pins, requirement_files=["requirements/dev.txt"])


RECIPES = {
    "django/django": (_django, "1.4", "5.0"),
    "sympy/sympy": (_sympy, "0.7", "1.13"),
    "sphinx-doc/sphinx": (_sphinx, "1.5", "7.2"),
    "matplotlib/matplotlib": (_matplotlib, "1.0", "3.7"),
    "scikit-learn/scikit-learn": (_sklearn, "0.20", "1.3"),
    "astropy/astropy": (_astropy, "0.1", "5.2"),
    "pydata/xarray": (_xarray, "0.12", "2022.06"),
    "pytest-dev/pytest": (_pytest, "4.4", "8.0"),
    "pylint-dev/pylint": (_pylint, "2.8", "3.0"),
    "psf/requests": (_requests, "0.7", "2.27"),
    "mwaskom/seaborn": (_seaborn, "0.11", "0.12"),
    "pallets/flask": (_flask, "2.0", "2.3"),
}
"""Each repository the harness knows: its recipe for a version, the lowest version the harness lists (an older
one is given its recipe) and the version taken when an instance names none."""


def recipe_for(repo: str, version: str | None) -> Recipe | None:
    """The recipe of ``repo`` at ``version`` (the instance's version field), or None for a repository the harness
    does not know (bosun detects its environment and test runner instead)."""
    entry = RECIPES.get(repo)
    if entry is None:
        return None
    make, lowest, default = entry
    if not version or not _vkey(version):
        return make(default)
    return make(lowest if _vkey(version) < _vkey(lowest) else version)


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
    older = recipe.harness_python if _vkey(recipe.harness_python) < _vkey(recipe.python) else None
    pinned = [r for r in recipe.requirements if "==" in r]  # (installed after the files: their pins win)
    return Declared(python=recipe.python, apt=recipe.apt, extras=recipe.extras, requirements=recipe.requirements,
                    overrides=pinned if files else [], detect=False,
                    requirement_files=files, soft_requirements=[r for r in soft if req_name(r) not in named],
                    exclude_newer=REFERENCE_DATE, resolve_for_python=older, build_isolation=recipe.build_isolation,
                    project_last=True,
                    prepare=recipe.build_edits, standins=list(recipe.standin),
                    test_command=recipe.test_cmd)
