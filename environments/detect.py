"""Detection: a repository's files at one commit -> the environment spec and why (pure; no Docker, no network).

``detect(files, ...)`` reads the files that describe a Python project (pyproject.toml, setup.cfg, setup.py,
tox.ini, pytest.ini, requirement files, CI configuration, .python-version, the tests' imports) and, when present,
the declared environment (``.bosun/environment.toml``, or an operator's override file, which wins) and a
Dockerfile or devcontainer.json; it returns a ``Detection``: the spec, a reason for each choice, the contents'
hashes of the files that shaped it (the cache key), and notes about what it could not read.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from datetime import UTC, datetime

from environments import (
    ecosystems,
    golang,
    imports,
    interpreters,
    java,
    node,
    parts,
    pyconfig,
    rust,
    standins,
    testcmd,
    toolchains,
)
from environments.declared import (
    DECLARED_FILE,
    Declared,
    devcontainer_hints,
    dockerfile_hints,
    parse_date,
    parse_declared,
    usable_env,
)
from environments.image import DEVCONTAINER_FILES, read_devcontainer
from environments.models import Detection, EnvSpec, ImageSpec, Reason, TestCommand
from environments.repofiles import RepoFiles
from environments.setuppy import read_setup_py
from infra.errors import ConfigError

CONFIG_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".python-version", "Pipfile",
                "runtime.txt", "PKG-INFO", "Dockerfile", ".devcontainer/devcontainer.json", ".devcontainer.json",
                DECLARED_FILE)
SHAPING = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".python-version", "Pipfile",
           DECLARED_FILE,
           "Dockerfile", ".devcontainer/devcontainer.json", ".devcontainer.json")
"""Files whose content is part of the cache key (with the requirement files used)."""
BASELINE = ["pip", "setuptools", "wheel"]
"""Installed in every environment's virtualenv (old code imports pkg_resources; tools call pip)."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def day_end(moment: datetime) -> str:
    """The end of ``moment``'s day (UTC), RFC 3339: builds of one day's commits share their resolution."""
    day = moment.astimezone(UTC).date()
    return f"{day.isoformat()}T23:59:59Z"


def detect(files: RepoFiles, *, commit_date: datetime | None = None, repository: str = "", commit: str = "",
           tree: str = "", version_hint: str | None = None,
           override: tuple[str, str | Declared] | None = None) -> Detection:
    """The spec of ``files`` (see the module docstring). ``override``: (where, text) of an operator's environment
    file, or (what, declaration) made by bosun itself (an evaluation's recipe). Raises ConfigError for a declared
    file that is not valid (nothing is built from a bad declaration)."""
    paths = files.paths()
    present = set(paths)
    wanted = [p for p in CONFIG_FILES if p in present]
    wanted += [p for p in paths if pyconfig.CI_FILES.match(p)][:20]
    wanted += [p for p in paths if pyconfig.CONDA_FILE.match(p) or pyconfig.CI_CONDA_FILE.match(p)][:30]
    test_files, dev_files = pyconfig.requirement_files(paths)
    wanted += test_files + dev_files
    kind = ecosystems.kind(paths)
    own_files = {"node": node.NODE_FILES, "go": golang.GO_FILES, "rust": rust.RUST_FILES,
                 "java": java.JAVA_FILES}.get(kind, ())
    wanted += [p for p in own_files if p in present and p not in wanted]
    texts = files.read_many(wanted)
    reasons: list[Reason] = []
    notes: list[str] = []
    shaping: dict[str, str] = {}

    declared: Declared | None = None
    origin = "detected"
    if override is not None:
        where, given = override
        declared = given if isinstance(given, Declared) else parse_declared(given, where)
        origin = "override"
        shaping[f"override:{where}"] = _sha(given if isinstance(given, str) else given.model_dump_json())
        reasons.append(Reason(field="origin", value="override",
                              source=f"BOSUN_ENV_OVERRIDES names {where}" if isinstance(given, str) else where))
    elif DECLARED_FILE in texts:
        declared = parse_declared(texts[DECLARED_FILE], DECLARED_FILE)
        origin = "declared"
        reasons.append(Reason(field="origin", value="declared", source=DECLARED_FILE))
    elif DECLARED_FILE in present:
        raise ConfigError(f"{DECLARED_FILE}: cannot be read (larger than the limit, or not text)")

    undetected = kind == "python" and not ecosystems.is_python(paths)
    own_dc = next((p for p in DEVCONTAINER_FILES if p in present), None)
    if (declared is not None and declared.wants_image) or (declared is None and undetected and own_dc and
                                                           read_devcontainer(texts.get(own_dc, ""), own_dc).image):
        where = DECLARED_FILE if origin == "declared" else override[0] if override else own_dc or ""
        return _image(files, texts, present, declared, where, kind, undetected, reasons, shaping,
                      commit_date=commit_date, repository=repository, commit=commit, tree=tree)
    if kind == "node" and declared is None:
        return _node(files, texts, present, commit_date=commit_date, repository=repository, commit=commit,
                     tree=tree)
    if kind in NATIVE and declared is None:
        return _native(kind, files, texts, present, commit_date=commit_date, repository=repository, commit=commit,
                       tree=tree)

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
    setup_py = read_setup_py(texts["setup.py"]) if "setup.py" in texts else None
    if setup_py is not None:
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
    notes += facts.notes
    for path in wanted:
        if path in texts and (path in SHAPING or path in test_files or path in dev_files):
            shaping[path] = _sha(texts[path])
    for path in paths:
        if pyconfig.CI_FILES.match(path) and path in texts:
            facts.named_pythons.append((pyconfig.ci_python_text(texts[path]), path))
    if ".python-version" in texts:
        facts.named_pythons.append((texts[".python-version"].strip().splitlines()[0] if texts[".python-version"]
                                    .strip() else "", ".python-version"))

    hints: dict = {}
    for name in ("Dockerfile", ".devcontainer/devcontainer.json", ".devcontainer.json"):
        if name in texts and (declared is None or declared.detect):  # (`detect = false`: the declaration alone)
            found = dockerfile_hints(texts[name]) if name == "Dockerfile" else devcontainer_hints(texts[name], name)
            for key, value in found.items():
                if value and key not in hints:
                    hints[key] = (value, name)

    # -- interpreter ---------------------------------------------------------------------------------------
    if declared is not None and declared.python_version:
        python = declared.python_version
        reasons.append(Reason(field="python", value=python, source=f"declared ({origin})"))
    elif "python" in hints and _is_version(hints["python"][0]):
        requires = facts.requires_python[0][0] if facts.requires_python else None
        python, why = interpreters.nearest(hints["python"][0], requires)
        reasons.append(Reason(field="python", value=python, source=f"{hints['python'][1]} {why}"))
        if python != hints["python"][0]:
            notes.append(f"{hints['python'][1]} {why}")
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
        reasons.append(Reason(field="python", value=python,
                              source=f"{why}" + (f" (from {', '.join(src + sources)})" if src or sources else "")))

    pyconfig.apply_tox(facts, python)  # (lines for some tox environments: those of this interpreter's apply)
    if origin == "detected":  # what the project's CI installs besides its package's metadata: tried, not required
        for path in _ci_installs(paths, texts, python, facts, files):
            shaping[path] = _sha(texts[path])

    # -- the test command ------------------------------------------------------------------------------------
    test, why = testcmd.choose(declared.test_command if declared else None, facts.tox_commands,
                               facts.pytest_config, paths, facts.testpaths)
    reasons.append(why)

    # -- what to install -------------------------------------------------------------------------------------
    install = declared.install if declared is not None else True
    only_declared = declared is not None and not declared.detect
    installable = bool(facts.installable)
    extras: list[str] = []
    requirements: list[str] = []
    guessed: list[str] = []
    req_files: list[str] = []
    optional_files: list[str] = []
    stand_ins: list[str] = []
    if install:
        if installable:
            reasons.append(Reason(field="install", value="the project, editable",
                                  source="; ".join(dict.fromkeys(facts.installable))))
        # Beside a declaration that says `detect = false` (a reference harness's recipe), only what it declares:
        # the harness installs the project with its recipe's extras, packages and requirement file, nothing
        # detected or guessed beside them (pytest's "testing" extra brought hypothesis 6, whose plugin warned on
        # the stderr pytest 4.5's own test checks is empty).
        if not only_declared:
            defined = set(facts.extras)
            picked = [e for e in pyconfig.TEST_EXTRAS if e in defined]
            if not picked and not facts.test_requires and not facts.requirement_files and not test_files:
                picked = [e for e in pyconfig.DEV_EXTRAS if e in defined][:1]
            extras = list(dict.fromkeys(picked + [e for e in facts.tox_extras if e in defined or not defined]))
            if extras:
                reasons.append(Reason(field="extras", value=",".join(extras),
                                      source="the project's test extras" + (" and tox's extras" if facts.tox_extras
                                                                            else "")))
            for group in [g for g in pyconfig.TEST_EXTRAS + pyconfig.DEV_EXTRAS if g in facts.groups][:2]:
                got = pyconfig.dependency_group(facts.groups, group)
                requirements += got
                reasons.append(Reason(field="requirements", value=", ".join(got)[:300],
                                      source=f"pyproject.toml [dependency-groups] {group}"))
            for req, source in facts.test_requires:
                requirements.append(req)
                reasons.append(Reason(field="requirements", value=req, source=source))
            for path, source in facts.requirement_files:
                if path in present:
                    req_files.append(path)
                    reasons.append(Reason(field="requirement_files", value=path, source=source))
            for path in test_files:
                if path not in req_files:
                    (optional_files if path == "requirements.txt" and installable else req_files).append(path)
                    reasons.append(Reason(field="requirement_files", value=path, source="a test requirement file"))
            for path in dev_files:
                if path not in req_files:
                    optional_files.append(path)
                    reasons.append(Reason(field="requirement_files", value=path,
                                          source="a dev requirement file (dropped if the install fails with it)"))
            for dist, source in pyconfig.plugins_for(facts.pytest_options, facts.pytest_ini_keys):
                requirements.append(dist)
                reasons.append(Reason(field="requirements", value=dist, source=source))
        if test.kind == "pytest":  # (here, after what detection adds: the order is part of a detected spec's key)
            requirements.append("pytest")
        if not only_declared:
            for req, source in facts.soft_requires:
                if req not in guessed:
                    guessed.append(req)
                    reasons.append(Reason(field="guessed", value=req,
                                          source=f"{source} (dropped if it cannot be installed)"))
            for path, source in facts.soft_files:
                if path not in req_files and path not in optional_files:
                    optional_files.append(path)
                    reasons.append(Reason(field="requirement_files", value=path,
                                          source=f"{source} (dropped if the install fails with it)"))
            provided = [r for e in extras for r in facts.extras.get(e, [])] + facts.dependencies
            declared_names = {pyconfig.req_name(r) for r in requirements + guessed + provided} | {
                e.lower() for e in extras}
            own = {pyconfig.req_name(n) for n in _project_names(texts)}
            tests = files.read_many(imports.test_files(paths))  # (read once: for the imports and the stand-ins)
            for dist, source in imports.required_imports(paths, tests):
                if pyconfig.req_name(dist) not in declared_names and pyconfig.req_name(dist) not in own:
                    guessed.append(dist)
                    reasons.append(Reason(field="guessed", value=dist, source=source))
            for host, path in standins.scan(tests):
                served_by = standins.requirements([host])
                stand_ins.append(host)
                guessed += [d for d in served_by if d not in guessed]
                reasons.append(Reason(field="standins", value=host,
                                      source=f"{path} calls it; the sandbox has no network, so a local stand-in "
                                             f"answers it when the tests are judged ({', '.join(served_by)}, "
                                             "dropped if it cannot be installed)"))
    if declared is not None:
        extras = list(dict.fromkeys(extras + declared.extras))
        requirements += declared.requirements
        named = {pyconfig.req_name(r) for r in requirements}
        served = standins.requirements(declared.standins)
        requirements += [d for d in served if pyconfig.req_name(d) not in named]
        served_names = {pyconfig.req_name(d) for d in served}
        guessed = [g for g in guessed if pyconfig.req_name(g) not in served_names]  # declared: a requirement
        for host in declared.standins:
            if host not in stand_ins:
                stand_ins.append(host)
            reasons.append(Reason(field="standins", value=host, source=f"declared ({origin}); a local stand-in "
                                                                       "answers it in the sandbox"))
        guessed += [r for r in declared.soft_requirements if r not in guessed]
        for req in declared.soft_requirements:
            reasons.append(Reason(field="guessed", value=req, source=f"declared ({origin}; dropped if it cannot be "
                                                                     "installed)"))
        req_files = list(dict.fromkeys(req_files + declared.requirement_files))
        for req in declared.requirements:
            reasons.append(Reason(field="requirements", value=req, source=f"declared ({origin})"))
        for req in declared.overrides:
            reasons.append(Reason(field="overrides", value=req, source=f"declared ({origin}): wins over the "
                                                                       "requirement files' pins"))
    helpers = _absent_helpers(present, texts) if declared is None or declared.detect else ""
    if helpers:
        requirements.append("astropy-helpers")
        reasons.append(Reason(field="requirements", value="astropy-helpers", source=helpers))
    requirements = list(dict.fromkeys(BASELINE + requirements))

    # -- dates, versions, compilers ---------------------------------------------------------------------------
    exclude_newer: str | None = day_end(commit_date) if commit_date else None
    if declared is not None and declared.exclude_newer is not None:
        exclude_newer = (parse_date(declared.exclude_newer).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                         if isinstance(declared.exclude_newer, str) else None)
        reasons.append(Reason(field="exclude_newer", value=str(exclude_newer), source=f"declared ({origin})"))
    elif exclude_newer:
        reasons.append(Reason(field="exclude_newer", value=exclude_newer,
                              source="the commit's date: dependencies resolved as of that day"))
    scm_version = None
    if facts.scm:
        scm_version = version_hint or _pkg_info_version(texts.get("PKG-INFO", "")) or "0.0.0"
        reasons.append(Reason(field="scm_version", value=scm_version, source="; ".join(facts.scm[:2])
                              + " (the build has no .git: the version comes from the nearest tag or PKG-INFO)"))
    pyx = [p for p in paths if p.endswith(".pyx") and not p.startswith(("doc", "test", "bench", "example"))]
    compiled = facts.compiled + ([f"Cython sources ({pyx[0]}...)"] if pyx else [])
    compilers = bool(compiled) or bool(declared and (declared.compilers or declared.apt))
    if compiled:
        reasons.append(Reason(field="per_revision", value="yes", source="; ".join(compiled[:3])
                              + ": the build compiles the project's code"))
    apt = list(declared.apt) if declared is not None else []
    if not apt and "apt" in hints and hints["apt"][0]:
        try:
            apt = sorted(set(hints["apt"][0]))
            reasons.append(Reason(field="apt", value=" ".join(apt), source=f"{hints['apt'][1]} installs them"))
        except ConfigError:
            apt = []
    env = dict(hints["env"][0]) if "env" in hints else {}
    if declared is not None:
        env.update(declared.env)
    setup = list(declared.setup) if declared is not None else []
    if not setup and "setup" in hints:
        setup = list(hints["setup"][0])
        reasons.append(Reason(field="setup", value=" && ".join(setup), source=f"{hints['setup'][1]}"))
    if not setup and install and declared is None and test.kind == "pytest":
        setup = testcmd.tox_installs(facts.tox_commands)
        if setup:
            reasons.append(Reason(field="setup", value=" && ".join(setup), source="tox.ini [testenv] commands "
                                                                                  "install them before the tests"))
    prepare = list(declared.prepare) if declared is not None else []
    if prepare:
        reasons.append(Reason(field="prepare", value=" && ".join(prepare), source=f"declared ({origin})"))
    if helpers:
        prepare.append(HELPERS_OFFLINE)
        reasons.append(Reason(field="prepare", value=HELPERS_OFFLINE, source="ah_bootstrap must not download the "
                              "helpers: they are a requirement, and the build reaches package indexes only"))
    if (setup or prepare) and not compiled:
        reasons.append(Reason(field="per_revision", value="yes", source="prepare/setup commands run in the "
                              "source tree: what they write belongs to this revision"))
    resolve_for = declared.resolve_for_python if declared is not None else None
    if resolve_for and interpreters.vkey(resolve_for) < interpreters.vkey(python):
        reasons.append(Reason(field="resolve_for_python", value=resolve_for,
                              source=f"declared ({origin}): versions as for Python {resolve_for}, installed on "
                                     f"{python}"))
    else:
        resolve_for = None
    names = [n for n in _project_names(texts) if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", n)]
    spec = EnvSpec(origin=origin, python=python, apt=apt, install_project=install and installable,
                   project_name=names[0] if names and install and installable else None,
                   extras=extras, requirements=requirements, guessed=guessed, requirement_files=req_files,
                   overrides=list(declared.overrides) if declared is not None else [],
                   declared_only=only_declared,
                   optional_files=optional_files, exclude_newer=exclude_newer, resolve_for_python=resolve_for,
                   build_isolation=(declared.build_isolation if declared is not None else True) and not helpers,
                   project_last=bool(declared is not None and declared.project_last),
                   prepare=prepare, setup=setup, setup_best_effort=bool(setup) and not (declared and declared.setup),
                   standins=stand_ins,
                   env=env, test=test, scm_version=scm_version, per_revision=bool(compiled or setup or prepare),
                   compilers=compilers or bool(apt))
    det = Detection(spec=spec, reasons=reasons, files=shaping, tree=tree, commit=commit,
                    commit_date=commit_date.isoformat() if commit_date else "", repository=repository,
                    notes=notes, warning=ecosystems.unsupported(paths) if origin == "detected" else "")
    return with_part(det, files, paths, texts, commit_date) if origin == "detected" else det


def with_part(det: Detection, files: RepoFiles, paths: list[str], texts: dict[str, str],
              commit_date: datetime | None) -> Detection:
    """``det`` with the JavaScript/TypeScript part the repository's CI installs beside its main ecosystem
    (environments/parts.py), when it has one."""
    found = parts.node_part(paths, texts, files.read_many, commit_date)
    if found is None:
        return det
    spec_node, reasons, notes, keyed = found
    if spec_node.package_manager == "pnpm" and not spec_node.pm_version:
        lock = files.read_many([posixpath.join(spec_node.root, "pnpm-lock.yaml")])
        line = toolchains.PNPM_FOR_LOCKFILE.get(toolchains.lockfile_version(next(iter(lock.values()), "")), 8)
        spec_node = spec_node.model_copy(update={"pm_version": str(line)})
    shaping = dict(det.files) | {p: f"blob:{cid}" for p in keyed if (cid := files.content_id(p))}
    spec = det.spec.model_copy(update={"node_part": spec_node, "compilers": True})
    return det.model_copy(update={"spec": spec, "reasons": det.reasons + reasons, "notes": det.notes + notes,
                                  "files": shaping})


def _node(files: RepoFiles, texts: dict[str, str], present: set[str], *, commit_date: datetime | None,
          repository: str, commit: str, tree: str) -> Detection:
    """A JavaScript/TypeScript repository's environment (environments/node.py): Node and its package manager from
    the npm registry, the dependencies as the lockfile pins them; the base's Python only runs the build's tools.
    Keyed by what it installs: the package files and the lockfile (by content, however large)."""
    f = node.facts(texts, present)
    spec_node, test, reasons = node.plan(f, commit_date)
    if spec_node.package_manager == "pnpm" and not spec_node.pm_version:
        line = toolchains.PNPM_FOR_LOCKFILE.get(toolchains.lockfile_version(texts.get("pnpm-lock.yaml", "")), 8)
        spec_node = spec_node.model_copy(update={"pm_version": str(line)})
    python = max(interpreters.AVAILABLE, key=interpreters.vkey)  # (the bootstrap's base: none to build first)
    reasons.insert(0, Reason(field="origin", value="detected", source="package.json: a JavaScript/TypeScript project"))
    reasons.append(Reason(field="python", value=python, source="the newest base's: the build's own tools (nothing "
                                                               "is installed into it)"))
    scripts = f.package.get("scripts") if isinstance(f.package.get("scripts"), dict) else {}
    builds = [s for s in ("preinstall", "install", "postinstall", "prepare") if s in scripts]
    if builds:
        reasons.append(Reason(field="per_revision", value="yes", source=f"package.json runs {', '.join(builds)} "
                              "on install: what it writes belongs to this revision"))
    shaping = {p: f"blob:{cid}" for p in node.SHAPING if p in present and (cid := files.content_id(p))}
    notes = list(f.notes)
    if f.lockfile in ("bun.lockb", "bun.lock"):
        notes.append(f"{f.lockfile}: bun is not installed; npm installs from package.json")
    if test is None:
        notes.append("no test command: package.json has no test script (declare one: test_command in "
                     f"{DECLARED_FILE})")
    spec = EnvSpec(origin="detected", python=python, install_project=False, node=spec_node,
                   test=test or TestCommand(kind="command", argv=[spec_node.package_manager, "test"]),
                   compilers=True, per_revision=bool(builds), env={"CI": "true"})
    return Detection(spec=spec, reasons=reasons, files=shaping, tree=tree, commit=commit,
                     commit_date=commit_date.isoformat() if commit_date else "", repository=repository, notes=notes)


def _image(files: RepoFiles, texts: dict[str, str], present: set[str], declared: Declared | None, where: str,
           kind: str, undetected: bool, reasons: list[Reason], shaping: dict[str, str], *,
           commit_date: datetime | None, repository: str, commit: str, tree: str) -> Detection:
    """A declared image environment (environments/image.py): a Dockerfile or image of ``declared``, or of the
    devcontainer.json it names (``declared`` None: the repository's own, detection having found no ecosystem).
    The test command is the declaration's, else the one detection finds for the repository's ecosystem."""
    notes: list[str] = []
    setup: list[str] = []
    env: dict[str, str] = {}
    if declared is not None and not declared.devcontainer:
        image = ImageSpec(source=where, dockerfile=declared.dockerfile or "", context=declared.context or "",
                          build_args=declared.build_args, target=declared.target or "", image=declared.image or "")
    else:
        named = declared.devcontainer_path if declared is not None else ""
        path = named or next((p for p in DEVCONTAINER_FILES if p in present), "")
        if path not in present:
            raise ConfigError(f"{where}: devcontainer = {declared.devcontainer if declared else ''!r}, and the "
                              f"repository has no {path or ' or '.join(DEVCONTAINER_FILES)}")
        text = texts.get(path) or files.read_many([path]).get(path)
        if text is None:
            raise ConfigError(f"{path}: cannot be read (larger than the limit, or not text)")
        found = read_devcontainer(text, path)
        if found.image is None:
            raise ConfigError(f"{path}: names no image and no build.dockerfile: bosun builds the environment from "
                              "one of them")
        image, setup, notes = found.image, found.setup, found.notes
        shaping[path] = _sha(text)
        kept, left_out = usable_env(found.env, path)
        env.update(kept)
        notes += left_out
        reasons.append(Reason(field="origin", value="declared", source=f"{path}: a devcontainer" + (
            "" if declared is not None else " (detection recognises no ecosystem in the repository)")))
    copies = False
    if image.dockerfile:
        content = files.read_many([image.dockerfile]).get(image.dockerfile)
        if content is None:
            raise ConfigError(f"{image.source}: the Dockerfile {image.dockerfile} is not in the repository at this "
                              "commit (or cannot be read)")
        shaping[image.dockerfile] = _sha(content)
        copies = bool(re.search(r"(?im)^\s*(?:COPY|ADD)\s+(?!.*--from=)", content))
        reasons.append(Reason(field="image", value=image.dockerfile, source=f"{image.source}: built locally" +
                              (f" (context {image.context or '.'})" if image.context else "")))
    else:
        reasons.append(Reason(field="image", value=image.image, source=f"{image.source}: the image named"))
    if declared is not None:
        setup += declared.setup
        env.update(declared.env)
    test, runner = _image_test(files, texts, present, declared, kind, undetected, where,
                               commit_date=commit_date, repository=repository, commit=commit, tree=tree)
    reasons.append(Reason(field="test_command", value=test.text, source=(
        "declared" if declared is not None and declared.test_command else f"detected ({kind})")))
    python = max(interpreters.AVAILABLE, key=interpreters.vkey)  # (the build's helper container; none is installed)
    spec = EnvSpec(origin="declared" if declared is None else "override" if where != DECLARED_FILE else "declared",
                   python=python, install_project=False, image=image.model_copy(update={"runner": runner}),
                   prepare=declared.prepare if declared is not None else [], setup=setup, env=env, test=test,
                   per_revision=copies or bool(setup) or bool(declared and declared.prepare))
    if spec.per_revision:
        reasons.append(Reason(field="per_revision", value="yes", source="the image copies the source, or setup "
                              "commands run in it: what they make belongs to this revision"))
    warning = "" if NO_TEST_COMMAND not in test.argv else (
        f"no test command: the environment is the image of {image.source}, and bosun recognises no ecosystem in the "
        f"repository to find its tests; declare them: test_command = \"...\" in {DECLARED_FILE}")
    return Detection(spec=spec, reasons=reasons, files=shaping, tree=tree, commit=commit, warning=warning,
                     commit_date=commit_date.isoformat() if commit_date else "", repository=repository, notes=notes)


def _image_test(files: RepoFiles, texts: dict[str, str], present: set[str], declared: Declared | None, kind: str,
                undetected: bool, where: str, **where_from) -> tuple[TestCommand, str]:
    """An image environment's test command and the runner that reads its results: the declaration's (the runner
    from its first words), else the detected ecosystem's."""
    if declared is not None and declared.test_command:
        argv = shlex.split(declared.test_command)
        return TestCommand(kind="command", argv=argv), runner_of(argv)
    if kind == "node":
        det = _node(files, texts, present, **where_from)
        return det.spec.test, (det.spec.node.runner if det.spec.node else "") or "unknown"
    if kind in NATIVE:
        det = _native(kind, files, texts, present, **where_from)
        return det.spec.test, det.spec.native.runner if det.spec.native else "unknown"
    if not undetected:
        return TestCommand(), "pytest"
    if declared is None:  # the repository's devcontainer, used unasked: the environment still serves the agents
        return TestCommand(kind="command", argv=["sh", "-c", NO_TEST_COMMAND]), "unknown"
    raise ConfigError(f"{where}: the environment is an image, and bosun recognises no ecosystem in the repository to "
                      f"find its tests: declare them, test_command = \"...\" in {DECLARED_FILE}")


NO_TEST_COMMAND = (f"echo 'bosun: no test command is known for this repository: declare one, test_command = \"...\" "
                   f"in {DECLARED_FILE}' >&2; exit 2")
"""The test command of an environment from a devcontainer in a repository of no known ecosystem (said, and a
failure, where tests run)."""


def runner_of(argv: list[str]) -> str:
    """The runner a declared test command calls, as far as its first words say (results.parse_output's names);
    "unknown": the exit code and the output's tail only."""
    words = [w for w in argv[:4] if not w.startswith("-")]
    first = words[0].rsplit("/", 1)[-1] if words else ""
    if first in ("pytest", "py.test") or words[1:2] == ["pytest"] or "pytest" in words[:3]:
        return "pytest"
    if first == "go" and "test" in words:
        return "go"
    if first == "cargo" and "test" in words:
        return "cargo"
    return node.runner_of(" ".join(argv[:8])) or "unknown"  # (a JavaScript runner: npx jest, yarn vitest run)


NATIVE = {"go": (golang, "go.mod: a Go module"), "rust": (rust, "Cargo.toml: a Rust package"),
          "java": (java, "a Java project (Maven or Gradle)")}
"""The ecosystems whose toolchain is Debian's and whose dependencies their own tool fetches: module, origin."""


def _native(kind: str, files: RepoFiles, texts: dict[str, str], present: set[str], *,
            commit_date: datetime | None, repository: str, commit: str, tree: str) -> Detection:
    """A Go, Rust or Java repository's environment (environments/golang.py, rust.py, java.py): Debian's toolchain
    in the base, the dependencies fetched by its own tool at build time; the base's Python only runs the build's
    tools. Keyed by what pins the dependencies (by content, however large)."""
    module, what = NATIVE[kind]
    native, apt, setup, test, reasons, notes = module.plan(module.facts(texts, present))
    python = max(interpreters.AVAILABLE, key=interpreters.vkey)  # (the bootstrap's base: none to build first)
    reasons.insert(0, Reason(field="origin", value="detected", source=what))
    reasons.append(Reason(field="python", value=python, source="the newest base's: the build's own tools (nothing "
                                                               "is installed into it)"))
    own = set({"go": golang.GO_FILES, "rust": rust.RUST_FILES, "java": java.JAVA_FILES}[kind])
    # (a workspace's members and a build's modules pin dependencies too: every such file, by content)
    names = {"go": {"go.mod", "go.sum"}, "rust": {"Cargo.toml"},
             "java": {"pom.xml", "build.gradle", "build.gradle.kts", "libs.versions.toml", "gradle.properties"}}[kind]
    own |= set([p for p in sorted(present) if p.rsplit("/", 1)[-1] in names and not
                any(part in ("vendor", "testdata", "target", "node_modules") for part in p.split("/")[:-1])][:500])
    shaping = {p: f"blob:{cid}" for p in sorted(own) if p in present and (cid := files.content_id(p))}
    spec = EnvSpec(origin="detected", python=python, install_project=False, native=native, apt=apt,
                   setup=setup, test=test, compilers=True, env=dict(module.ENV))
    det = Detection(spec=spec, reasons=reasons, files=shaping, tree=tree, commit=commit,
                    commit_date=commit_date.isoformat() if commit_date else "", repository=repository, notes=notes)
    return with_part(det, files, sorted(present), texts, commit_date)


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
    env_file = pyconfig.environment_file(paths, python)
    if env_file and env_file in texts:
        found = pyconfig.conda_requirements(texts[env_file])
        facts.soft_requires += [(r, f"{env_file} (conda environment)") for r in found]
        used += [env_file] if found else []
    for path in paths:
        if pyconfig.CI_FILES.match(path) and path in texts:
            before = len(facts.soft_requires) + len(facts.soft_files)
            if path == "noxfile.py":
                pyconfig.read_noxfile(texts[path], facts, present)
            else:
                pyconfig.read_ci_installs(texts[path], facts, path, present)
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
