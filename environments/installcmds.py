"""The commands a Python environment's install runs in the build container, made from its spec and plan: resolve,
install (uv, or pip where the project needs it), hold what is installed, compile the bytecode, collect the tests."""

from __future__ import annotations

import re
import shlex

from environments import standins
from environments.imports import MODULE_TO_DIST
from environments.installplan import (
    COLLECT_SAMPLE,
    COLLECT_TIMEOUT_S,
    HEAVY,
    TEST_DIRS,
    TOOLS,
    UV,
    VCS,
    Plan,
    moved_packages,
)
from environments.interpreters import vkey
from environments.models import VENV, EnvSpec
from environments.pyconfig import req_name

CONSTRAINTS = f"{TOOLS}/resolved-for.txt"


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
    return lines_command(spec.overrides, OVERRIDES)


def lines_command(lines: list[str], path: str) -> list[str]:
    kept = [r for r in lines if r.strip() and not r.strip().startswith("-")]
    return ["sh", "-c", f"printf '%s\\n' {shlex.join(kept)} > {path}"]


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


def dist_of(module: str) -> str:
    return (MODULE_TO_DIST.get(module) or module.replace("_", "-")).lower()
