"""Detection of a Python project's environment: the half of ``detect`` (environments/detect.py) that reads what
describes a Python project (pyproject.toml, setup.cfg, setup.py, tox.ini, pytest.ini, requirement files, CI
configuration, .python-version, the tests' imports) and, when given, its declaration; pure, no Docker, no network.

The steps, each a function: the project's facts (``_facts``), the interpreter (``_interpreter``), what to install
(``_installs``, then ``_declared_installs``), and what the build runs and needs (``_build``); ``python_detection``
puts them together into the spec, with a reason for each choice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from environments import ecosystems, imports, interpreters, pyci, pyconfig, standins, testcmd
from environments.declared import Declared, devcontainer_hints, dockerfile_hints, parse_date
from environments.ecosystems import DECLARED_FILE
from environments.models import Detection, EnvSpec, Reason, TestCommand
from environments.repofiles import RepoFiles
from environments.setuppy import read_setup_py
from infra.errors import ConfigError

SHAPING = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".python-version", "Pipfile",
           DECLARED_FILE,
           "Dockerfile", ".devcontainer/devcontainer.json", ".devcontainer.json")
"""Files whose content is part of the cache key (with the requirement files used)."""
BASELINE = ["pip", "setuptools", "wheel"]
"""Installed in every environment's virtualenv (old code imports pkg_resources; tools call pip)."""


def content_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def day_end(moment: datetime) -> str:
    """The end of ``moment``'s day (UTC), RFC 3339: builds of one day's commits share their resolution."""
    day = moment.astimezone(UTC).date()
    return f"{day.isoformat()}T23:59:59Z"


@dataclass
class Scan:
    """What ``detect`` read of a repository at one commit, and what it has found so far."""

    files: RepoFiles
    paths: list[str]
    texts: dict[str, str]
    """The contents of the files that describe the project (``wanted``), by path."""
    wanted: list[str]
    test_files: list[str]
    dev_files: list[str]
    declared: Declared | None
    origin: str
    """detected, declared or override."""
    reasons: list[Reason]
    shaping: dict[str, str]
    """Path -> content hash of every file that shaped the spec (the cache key)."""
    notes: list[str] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    """``paths`` as a set (made once by ``detect``: a large repository has tens of thousands)."""

    def why(self, field: str, value: str, source: str) -> None:
        self.reasons.append(Reason(field=field, value=value, source=source))


@dataclass
class _Installs:
    extras: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    guessed: list[str] = field(default_factory=list)
    req_files: list[str] = field(default_factory=list)
    optional_files: list[str] = field(default_factory=list)
    stand_ins: list[str] = field(default_factory=list)


def python_detection(scan: Scan, *, commit_date: datetime | None, repository: str, commit: str, tree: str,
                     version_hint: str | None) -> Detection:
    """The spec of the Python project ``scan`` read (see the module docstring)."""
    declared, origin, texts = scan.declared, scan.origin, scan.texts
    facts = _facts(scan)
    hints = _hints(texts, declared)
    python = _interpreter(scan, facts, hints, commit_date)
    pyconfig.apply_tox(facts, python)  # (lines for some tox environments: those of this interpreter's apply)
    if origin == "detected":  # what the project's CI installs besides its package's metadata: tried, not required
        for path in _ci_installs(scan.paths, texts, python, facts, scan.files):
            scan.shaping[path] = content_sha(texts[path])
    test, why = testcmd.choose(declared.test_command if declared else None, facts.tox_commands,
                               facts.pytest_config, scan.paths, facts.testpaths)
    scan.reasons.append(why)
    install = declared.install if declared is not None else True
    only_declared = declared is not None and not declared.detect
    installable = bool(facts.installable)
    inst = _installs(scan, facts, test, only_declared) if install else _Installs()
    if declared is not None:
        _declared_installs(scan, inst)
    helpers = _absent_helpers(scan.present, texts) if declared is None or declared.detect else ""
    if helpers:
        inst.requirements.append("astropy-helpers")
        scan.why("requirements", "astropy-helpers", helpers)
    inst.requirements = list(dict.fromkeys(BASELINE + inst.requirements))
    build = _build(scan, facts, hints, test, python, install, helpers, commit_date, version_hint)
    names = [n for n in _project_names(texts) if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", n)]
    spec = EnvSpec(origin=origin, python=python, install_project=install and installable,
                   project_name=names[0] if names and install and installable else None,
                   extras=inst.extras, requirements=inst.requirements, guessed=inst.guessed,
                   requirement_files=inst.req_files, overrides=list(declared.overrides) if declared is not None else [],
                   declared_only=only_declared, optional_files=inst.optional_files,
                   build_isolation=(declared.build_isolation if declared is not None else True) and not helpers,
                   project_last=bool(declared is not None and declared.project_last),
                   setup_best_effort=bool(build["setup"]) and not (declared and declared.setup),
                   standins=inst.stand_ins, test=test, **build)
    return Detection(spec=spec, reasons=scan.reasons, files=scan.shaping, tree=tree, commit=commit,
                     commit_date=commit_date.isoformat() if commit_date else "", repository=repository,
                     notes=scan.notes, warning=ecosystems.unsupported(scan.paths) if origin == "detected" else "")


def _facts(scan: Scan) -> pyconfig.Facts:
    """What the project's files say: metadata, requirements, tox, pytest, setup.py, the Pythons they name."""
    texts = scan.texts
    facts = pyconfig.Facts()
    if "pyproject.toml" in texts:
        pyconfig.read_pyproject(texts["pyproject.toml"], facts)
    if "setup.cfg" in texts:
        pyconfig.read_setup_cfg(texts["setup.cfg"], facts)
    if "tox.ini" in texts:
        pyconfig.read_tox(texts["tox.ini"], facts)
    if "pytest.ini" in texts:
        pyconfig.read_pytest_ini(texts["pytest.ini"], "pytest.ini", facts)
    if "Pipfile" in texts:
        pyconfig.read_pipfile(texts["Pipfile"], facts)
    if "setup.py" in texts:
        _read_setup_py(texts["setup.py"], facts, scan.notes)
    scan.notes += facts.notes
    for path in scan.wanted:
        if path in texts and (path in SHAPING or path in scan.test_files or path in scan.dev_files):
            scan.shaping[path] = content_sha(texts[path])
    for path in scan.paths:
        if pyci.CI_FILES.match(path) and path in texts:
            facts.named_pythons.append((pyci.ci_python_text(texts[path]), path))
    if ".python-version" in texts:
        facts.named_pythons.append((texts[".python-version"].strip().splitlines()[0] if texts[".python-version"]
                                    .strip() else "", ".python-version"))
    return facts


def _read_setup_py(text: str, facts: pyconfig.Facts, notes: list[str]) -> None:
    setup_py = read_setup_py(text)
    notes += setup_py.notes
    if setup_py.found:
        facts.installable.append("setup.py calls setup()")
    if setup_py.python_requires:
        facts.requires_python.append((setup_py.python_requires, "setup.py python_requires"))
    if setup_py.classifiers:
        facts.named_pythons.append(("\n".join(setup_py.classifiers), "setup.py classifiers"))
    for name, reqs in setup_py.extras_require.items():
        facts.extras.setdefault(name, reqs)
    facts.test_requires += [(r, "setup.py tests_require") for r in setup_py.tests_require]
    facts.dependencies += setup_py.install_requires
    if setup_py.scm:
        facts.scm.append("setup.py uses setuptools_scm")
    if setup_py.extensions:
        facts.compiled.append("setup.py builds extensions")
    if any("setuptools_scm" in r or "setuptools-scm" in r for r in setup_py.setup_requires):
        facts.scm.append("setup.py setup_requires setuptools_scm")


def _hints(texts: dict[str, str], declared: Declared | None) -> dict:
    """What a Dockerfile or devcontainer.json says (python, apt, env, setup): key -> (value, file)."""
    hints: dict = {}
    for name in ("Dockerfile", ".devcontainer/devcontainer.json", ".devcontainer.json"):
        if name in texts and (declared is None or declared.detect):  # (`detect = false`: the declaration alone)
            found = dockerfile_hints(texts[name]) if name == "Dockerfile" else devcontainer_hints(texts[name], name)
            for key, value in found.items():
                if value and key not in hints:
                    hints[key] = (value, name)
    return hints


def _interpreter(scan: Scan, facts: pyconfig.Facts, hints: dict, commit_date: datetime | None) -> str:
    """The Python version: declared, else a Dockerfile's, else the newest the project's metadata and CI allow as
    of the commit's date."""
    declared = scan.declared
    if declared is not None and declared.python_version:
        python = declared.python_version
        scan.why("python", python, f"declared ({scan.origin})")
    elif "python" in hints and _is_version(hints["python"][0]):
        requires = facts.requires_python[0][0] if facts.requires_python else None
        python, why = interpreters.nearest(hints["python"][0], requires)
        scan.why("python", python, f"{hints['python'][1]} {why}")
        if python != hints["python"][0]:
            scan.notes.append(f"{hints['python'][1]} {why}")
    else:
        requires = facts.requires_python[0][0] if facts.requires_python else None
        named: list[str] = []
        sources = []
        for text, source in facts.named_pythons:
            got = interpreters.named_versions(text)
            if got:
                named += got
                sources.append(source)
        python, why = interpreters.choose(requires, named, commit_date)
        src = [facts.requires_python[0][1]] if facts.requires_python else []
        scan.why("python", python, f"{why}" + (f" (from {', '.join(src + sources)})" if src or sources else ""))
    return python


def _installs(scan: Scan, facts: pyconfig.Facts, test: TestCommand, only_declared: bool) -> _Installs:
    """What to install beside the project: its test extras and requirements, then (unless the declaration says
    ``detect = false``) what is guessed from its CI, its tests' imports and the hosts they call."""
    inst = _Installs()
    if facts.installable:
        scan.why("install", "the project, editable", "; ".join(dict.fromkeys(facts.installable)))
    # Beside a declaration that says `detect = false` (a reference harness's recipe), only what it declares:
    # the harness installs the project with its recipe's extras, packages and requirement file, nothing
    # detected or guessed beside them (pytest's "testing" extra brought hypothesis 6, whose plugin warned on
    # the stderr pytest 4.5's own test checks is empty).
    if not only_declared:
        _declared_by_the_project(scan, facts, inst)
    if test.kind == "pytest":  # (here, after what detection adds: the order is part of a detected spec's key)
        inst.requirements.append("pytest")
    if not only_declared:
        _guessed(scan, facts, inst)
    return inst


def _declared_by_the_project(scan: Scan, facts: pyconfig.Facts, inst: _Installs) -> None:
    """The project's own test extras, dependency groups, test requirements, requirement files, pytest plugins."""
    present = scan.present
    defined = set(facts.extras)
    picked = [e for e in pyconfig.TEST_EXTRAS if e in defined]
    if not picked and not facts.test_requires and not facts.requirement_files and not scan.test_files:
        picked = [e for e in pyconfig.DEV_EXTRAS if e in defined][:1]
    inst.extras = list(dict.fromkeys(picked + [e for e in facts.tox_extras if e in defined or not defined]))
    if inst.extras:
        scan.why("extras", ",".join(inst.extras),
                 "the project's test extras" + (" and tox's extras" if facts.tox_extras else ""))
    for group in [g for g in pyconfig.TEST_EXTRAS + pyconfig.DEV_EXTRAS if g in facts.groups][:2]:
        got = pyconfig.dependency_group(facts.groups, group)
        inst.requirements += got
        scan.why("requirements", ", ".join(got)[:300], f"pyproject.toml [dependency-groups] {group}")
    for req, source in facts.test_requires:
        inst.requirements.append(req)
        scan.why("requirements", req, source)
    for path, source in facts.requirement_files:
        if path in present:
            inst.req_files.append(path)
            scan.why("requirement_files", path, source)
    for path in scan.test_files:
        if path not in inst.req_files:
            (inst.optional_files if path == "requirements.txt" and facts.installable else inst.req_files).append(path)
            scan.why("requirement_files", path, "a test requirement file")
    for path in scan.dev_files:
        if path not in inst.req_files:
            inst.optional_files.append(path)
            scan.why("requirement_files", path, "a dev requirement file (dropped if the install fails with it)")
    for dist, source in pyconfig.plugins_for(facts.pytest_options, facts.pytest_ini_keys):
        inst.requirements.append(dist)
        scan.why("requirements", dist, source)


def _guessed(scan: Scan, facts: pyconfig.Facts, inst: _Installs) -> None:
    """Soft requirements: what the CI installs, what the tests import that nothing declares, the stand-ins of the
    hosts the tests call (each dropped if it cannot be installed)."""
    for req, source in facts.soft_requires:
        if req not in inst.guessed:
            inst.guessed.append(req)
            scan.why("guessed", req, f"{source} (dropped if it cannot be installed)")
    for path, source in facts.soft_files:
        if path not in inst.req_files and path not in inst.optional_files:
            inst.optional_files.append(path)
            scan.why("requirement_files", path, f"{source} (dropped if the install fails with it)")
    provided = [r for e in inst.extras for r in facts.extras.get(e, [])] + facts.dependencies
    declared_names = {pyconfig.req_name(r) for r in inst.requirements + inst.guessed + provided} | {
        e.lower() for e in inst.extras}
    own = {pyconfig.req_name(n) for n in _project_names(scan.texts)}
    tests = scan.files.read_many(imports.test_files(scan.paths))  # (read once: for the imports and the stand-ins)
    for dist, source in imports.required_imports(scan.paths, tests):
        if pyconfig.req_name(dist) not in declared_names and pyconfig.req_name(dist) not in own:
            inst.guessed.append(dist)
            scan.why("guessed", dist, source)
    for host, path in standins.scan(tests):
        served_by = standins.requirements([host])
        inst.stand_ins.append(host)
        inst.guessed += [d for d in served_by if d not in inst.guessed]
        scan.why("standins", host, f"{path} calls it; the sandbox has no network, so a local stand-in answers it "
                                   f"when the tests are judged ({', '.join(served_by)}, dropped if it cannot be "
                                   "installed)")


def _declared_installs(scan: Scan, inst: _Installs) -> None:
    """What the declaration adds: its extras, requirements, stand-ins, soft requirements, files, overrides."""
    declared, origin = scan.declared, scan.origin
    assert declared is not None
    inst.extras = list(dict.fromkeys(inst.extras + declared.extras))
    inst.requirements += declared.requirements
    named = {pyconfig.req_name(r) for r in inst.requirements}
    served = standins.requirements(declared.standins)
    inst.requirements += [d for d in served if pyconfig.req_name(d) not in named]
    served_names = {pyconfig.req_name(d) for d in served}
    inst.guessed = [g for g in inst.guessed if pyconfig.req_name(g) not in served_names]  # declared: a requirement
    for host in declared.standins:
        if host not in inst.stand_ins:
            inst.stand_ins.append(host)
        scan.why("standins", host, f"declared ({origin}); a local stand-in answers it in the sandbox")
    inst.guessed += [r for r in declared.soft_requirements if r not in inst.guessed]
    for req in declared.soft_requirements:
        scan.why("guessed", req, f"declared ({origin}; dropped if it cannot be installed)")
    inst.req_files = list(dict.fromkeys(inst.req_files + declared.requirement_files))
    for req in declared.requirements:
        scan.why("requirements", req, f"declared ({origin})")
    for req in declared.overrides:
        scan.why("overrides", req, f"declared ({origin}): wins over the requirement files' pins")


def _build(scan: Scan, facts: pyconfig.Facts, hints: dict, test: TestCommand, python: str, install: bool,
           helpers: str, commit_date: datetime | None, version_hint: str | None) -> dict:
    """The spec's fields of the build itself: the day dependencies resolve as of, the version a build without .git
    gets, compilers and Debian packages, environment, the setup and prepare commands."""
    declared, origin, texts = scan.declared, scan.origin, scan.texts
    exclude_newer: str | None = day_end(commit_date) if commit_date else None
    if declared is not None and declared.exclude_newer is not None:
        exclude_newer = (parse_date(declared.exclude_newer).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                         if isinstance(declared.exclude_newer, str) else None)
        scan.why("exclude_newer", str(exclude_newer), f"declared ({origin})")
    elif exclude_newer:
        scan.why("exclude_newer", exclude_newer, "the commit's date: dependencies resolved as of that day")
    scm_version = None
    if facts.scm:
        scm_version = version_hint or _pkg_info_version(texts.get("PKG-INFO", "")) or "0.0.0"
        scan.why("scm_version", scm_version, "; ".join(facts.scm[:2])
                 + " (the build has no .git: the version comes from the nearest tag or PKG-INFO)")
    pyx = [p for p in scan.paths if p.endswith(".pyx") and not p.startswith(("doc", "test", "bench", "example"))]
    compiled = facts.compiled + ([f"Cython sources ({pyx[0]}...)"] if pyx else [])
    compilers = bool(compiled) or bool(declared and (declared.compilers or declared.apt))
    if compiled:
        scan.why("per_revision", "yes", "; ".join(compiled[:3]) + ": the build compiles the project's code")
    apt = list(declared.apt) if declared is not None else []
    if not apt and "apt" in hints and hints["apt"][0]:
        try:
            apt = sorted(set(hints["apt"][0]))
            scan.why("apt", " ".join(apt), f"{hints['apt'][1]} installs them")
        except ConfigError:
            apt = []
    env = dict(hints["env"][0]) if "env" in hints else {}
    if declared is not None:
        env.update(declared.env)
    setup, prepare = _commands(scan, facts, hints, test, install, helpers)
    if (setup or prepare) and not compiled:
        scan.why("per_revision", "yes", "prepare/setup commands run in the source tree: what they write belongs to "
                                        "this revision")
    resolve_for = declared.resolve_for_python if declared is not None else None
    if resolve_for and interpreters.vkey(resolve_for) < interpreters.vkey(python):
        scan.why("resolve_for_python", resolve_for, f"declared ({origin}): versions as for Python {resolve_for}, "
                                                    f"installed on {python}")
    else:
        resolve_for = None
    return {"apt": apt, "exclude_newer": exclude_newer, "resolve_for_python": resolve_for, "prepare": prepare,
            "setup": setup, "env": env, "scm_version": scm_version,
            "per_revision": bool(compiled or setup or prepare), "compilers": compilers or bool(apt)}


def _commands(scan: Scan, facts: pyconfig.Facts, hints: dict, test: TestCommand, install: bool,
              helpers: str) -> tuple[list[str], list[str]]:
    """The setup commands (declared, a Dockerfile's, tox's installs) and the prepare commands."""
    declared, origin = scan.declared, scan.origin
    setup = list(declared.setup) if declared is not None else []
    if not setup and "setup" in hints:
        setup = list(hints["setup"][0])
        scan.why("setup", " && ".join(setup), f"{hints['setup'][1]}")
    if not setup and install and declared is None and test.kind == "pytest":
        setup = testcmd.tox_installs(facts.tox_commands)
        if setup:
            scan.why("setup", " && ".join(setup), "tox.ini [testenv] commands install them before the tests")
    prepare = list(declared.prepare) if declared is not None else []
    if prepare:
        scan.why("prepare", " && ".join(prepare), f"declared ({origin})")
    if helpers:
        prepare.append(HELPERS_OFFLINE)
        scan.why("prepare", HELPERS_OFFLINE, "ah_bootstrap must not download the helpers: they are a requirement, "
                                             "and the build reaches package indexes only")
    return setup, prepare


HELPERS_OFFLINE = "sed -i 's/^auto_use = True/auto_use = False/' setup.cfg"
"""ah_bootstrap's switch (setup.cfg ``[ah_bootstrap] auto_use``): off, setup.py imports the installed helpers."""


def _absent_helpers(present: set[str], texts: dict[str, str]) -> str:
    """Why the project needs astropy-helpers installed, or "": its setup.py bootstraps them (``ah_bootstrap.py``,
    ``auto_use = True`` in setup.cfg) from a git submodule the source does not hold, and else downloads them with
    pip from pypi.python.org, which a build does not reach (astropy before 4.1 and its affiliated packages of that
    day). Installed as of the commit's date, built against without isolation, the download switched off."""
    if "ah_bootstrap.py" not in present or "astropy_helpers/astropy_helpers/__init__.py" in present \
            or "astropy_helpers/__init__.py" in present:
        return ""
    if not re.search(r"(?ms)^\[ah_bootstrap\][^\[]*?^auto_use\s*=\s*True\s*$", texts.get("setup.cfg", "")):
        return ""
    return "setup.py bootstraps astropy_helpers (ah_bootstrap.py, setup.cfg auto_use = True) from a submodule the " \
           "source lacks"


def _ci_installs(paths: list[str], texts: dict[str, str], python: str, facts: pyconfig.Facts,
                 files: RepoFiles) -> list[str]:
    """The test dependencies a project declares outside its package's metadata: its conda environment file
    (``environment.yml``, or the CI's for this Python version), what its CI's test jobs and nox's test sessions
    install with pip. Soft: installed when they resolve, dropped (and listed) when not. Returns the files that
    gave some (they shape the environment: its cache key)."""
    present, used = set(paths), []
    env_file = pyci.environment_file(paths, python)
    if env_file and env_file in texts:
        found = pyci.conda_requirements(texts[env_file])
        facts.soft_requires += [(r, f"{env_file} (conda environment)") for r in found]
        used += [env_file] if found else []
    for path in paths:
        if pyci.CI_FILES.match(path) and path in texts:
            before = len(facts.soft_requires) + len(facts.soft_files)
            if path == "noxfile.py":
                pyci.read_noxfile(texts[path], facts, present)
            else:
                pyci.read_ci_installs(texts[path], facts, path, present)
            used += [path] if len(facts.soft_requires) + len(facts.soft_files) > before else []
    named = [p for p, _ in facts.soft_files if p not in texts]
    texts.update(files.read_many(named))
    return used + [p for p in dict.fromkeys(p for p, _ in facts.soft_files) if p in texts]


def _pkg_info_version(text: str) -> str | None:
    m = re.search(r"^Version:\s*(\S+)\s*$", text, re.M)
    return m.group(1) if m else None


def _is_version(text: str) -> bool:
    return re.fullmatch(r"3\.\d{1,2}(?:\.\d+)?", str(text).strip()) is not None


_SECTION = re.compile(r"^\[", re.M)


def _key_in_table(text: str, table: str, key: str) -> list[str]:
    """The first value of ``key`` (a pattern with one group) in a ``[table]`` of an INI or TOML text: each table
    header is found once and only its own section (to the next header) is searched, so the time stays linear."""
    pattern = re.compile(key, re.M)
    for header in re.finditer(rf"^\[(?:{table})\]", text, re.M):
        end = _SECTION.search(text, header.end())
        m = pattern.search(text, header.end(), end.start() if end else len(text))
        if m:
            return [m.group(1)]
    return []


def _project_names(texts: dict[str, str]) -> list[str]:
    """The project's distribution name, from literal declarations only (pyproject, setup.cfg, setup.py's
    ``name="..."``, PKG-INFO)."""
    names = []
    names += _key_in_table(texts.get("pyproject.toml", ""), r"project|tool\.poetry",
                           r"""^name[ \t]*=[ \t]*["']([^"'\n]+)["']""")
    names += _key_in_table(texts.get("setup.cfg", ""), r"metadata", r"^name[ \t]*=[ \t]*([A-Za-z0-9._-]+)[ \t]*$")
    names += re.findall(r"""\bname\s*=\s*["']([A-Za-z0-9._-]+)["']""", texts.get("setup.py", ""))[:1]
    names += re.findall(r"^Name:\s*(\S+)", texts.get("PKG-INFO", ""), re.M)[:1]
    return names
