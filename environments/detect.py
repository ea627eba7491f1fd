"""Detection: a repository's files at one commit -> the environment spec and why (pure; no Docker, no network).

``detect(files, ...)`` reads the files that describe the project and, when present, the declared environment
(``.bosun/environment.toml``, or an operator's override file, which wins) and a Dockerfile or devcontainer.json;
it decides the ecosystem (a declared image, node, Go, Rust, Java, else Python: environments/pydetect.py) and
returns a ``Detection``: the spec, a reason for each choice, the contents' hashes of the files that shaped it (the
cache key), and notes about what it could not read.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from datetime import datetime

from environments import (
    ecosystems,
    golang,
    interpreters,
    java,
    node,
    parts,
    pyci,
    pyconfig,
    rust,
    toolchains,
)
from environments.declared import (
    Declared,
    parse_declared,
    usable_env,
)
from environments.ecosystems import DECLARED_FILE
from environments.image import DEVCONTAINER_FILES, read_devcontainer
from environments.models import Detection, EnvSpec, ImageSpec, Reason, TestCommand
from environments.pydetect import Scan, content_sha, python_detection
from environments.repofiles import RepoFiles
from infra.errors import ConfigError

CONFIG_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".python-version", "Pipfile",
                "runtime.txt", "PKG-INFO", "Dockerfile", ".devcontainer/devcontainer.json", ".devcontainer.json",
                DECLARED_FILE)


def detect(files: RepoFiles, *, commit_date: datetime | None = None, repository: str = "", commit: str = "",
           tree: str = "", version_hint: str | None = None,
           override: tuple[str, str | Declared] | None = None) -> Detection:
    """The spec of ``files`` (see the module docstring). ``override``: (where, text) of an operator's environment
    file, or (what, declaration) made by bosun itself (an evaluation's recipe). Raises ConfigError for a declared
    file that is not valid (nothing is built from a bad declaration)."""
    paths = files.paths()
    present = set(paths)
    wanted = [p for p in CONFIG_FILES if p in present]
    wanted += [p for p in paths if pyci.CI_FILES.match(p)][:20]
    wanted += [p for p in paths if pyci.CONDA_FILE.match(p) or pyci.CI_CONDA_FILE.match(p)][:30]
    test_files, dev_files = pyconfig.requirement_files(paths)
    wanted += test_files + dev_files
    kind = ecosystems.kind(paths)
    own_files = {"node": node.NODE_FILES, "go": golang.GO_FILES, "rust": rust.RUST_FILES,
                 "java": java.JAVA_FILES}.get(kind, ())
    wanted += [p for p in own_files if p in present and p not in wanted]
    texts = files.read_many(wanted)
    reasons: list[Reason] = []
    shaping: dict[str, str] = {}

    declared: Declared | None = None
    origin = "detected"
    if override is not None:
        where, given = override
        declared = given if isinstance(given, Declared) else parse_declared(given, where)
        origin = "override"
        shaping[f"override:{where}"] = content_sha(given if isinstance(given, str) else given.model_dump_json())
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

    scan = Scan(files=files, paths=paths, texts=texts, wanted=wanted, test_files=test_files, dev_files=dev_files,
                declared=declared, origin=origin, reasons=reasons, shaping=shaping, present=present)
    det = python_detection(scan, commit_date=commit_date, repository=repository, commit=commit, tree=tree,
                           version_hint=version_hint)
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
        shaping[path] = content_sha(text)
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
        shaping[image.dockerfile] = content_sha(content)
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
