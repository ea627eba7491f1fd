"""The typed vocabulary of environments: what was detected or declared (``EnvSpec`` and the reasons behind it),
and what was built (``EnvRecord``). Pure data: no I/O here."""

from __future__ import annotations

import hashlib
import json
import posixpath
import shlex
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sandbox.base import ENV_ROOT, SANDBOX_PATH, SEED, SEED_EXCLUDE, VENV  # noqa: F401  (paths in a sandbox)

NODE = f"{ENV_ROOT}/node"
"""Where a JavaScript/TypeScript environment's Node and package managers are, inside its sandboxes."""
SEED_UNIGNORED_MAX = 4 << 20
"""Bytes of the seed's list of files git does not ignore read back from a build (5,000 entries fit many times)."""
NODE_TOOLCHAIN_RULES = 3
"""The version of the rules that pick a JavaScript/TypeScript environment's Node and package manager releases at
build time (environments/toolchains.py), which its spec does not name: part of such an environment's cache key, so
a change of them builds it again. 2: an install as of a date (no lockfile) gets npm 7 or later (npm 6's
``--before`` refused every version, and the newest ones were installed); 3: the install that takes the newest
versions runs on the oldest Node line still supported."""
BUILD_RULES = 7
"""The version of the build's rules that change what an environment holds without changing its cache key (the
installer's choices, what the seed keeps). Each record keeps the version it was built by; ``bosun env list`` marks
an older one ``outdated`` and ``bosun env prune --outdated`` removes it (its next use builds it again). 0: built
before versions were kept. 1: the seed keeps the build's files that git does not ignore (``seed_unignored``). 2: an
editable install by import hook also puts the project's root on sys.path (installcmds.ROOT_ON_PATH). 3: a project
installed last keeps what the requirements installed unless it needs otherwise (installcmds.HELD). 4: a setup.py project
whose build fails in setuptools' PEP 517 hooks is installed with setup.py develop; a test runner a requirement file
pins that cannot run on the interpreter has its pins overridden; the collection check's sample names no
conftest.py and prefers test folders (installer.py's docstring). 5: the version setuptools_scm is told reaches the
project's own build only (installcmds.scm_scoped), and a stand-in's service stays in every install attempt. 6: a soft
requirement whose build requirement fails to build is dropped alone (installfixes.FAILED_BUILD), not every soft
requirement with it; one that breaks at import when the tests collect is dropped (installfixes.drop_broken). 7: PyYAML
is built from source where it has no wheel for the interpreter (installplan.HEAVY)."""
SCHEMA = 4
"""Version of the spec format and of the build's steps; part of every cache key (a new one never reuses an old
build)."""


class Reason(BaseModel):
    """Why one part of the spec is what it is: shown by ``bosun env show``."""

    field: str
    """python, dependencies, extras, test_command, exclude_newer, ..."""
    value: str
    source: str
    """The file (or rule) it came from and how."""


class TestCommand(BaseModel):
    """How the project's tests run. ``pytest``: ``python -m pytest`` with ``options`` and default ``paths`` (a
    caller naming test ids drops the paths); ``command``: a command line of its own (``bin/test``...)."""

    __test__ = False  # not a pytest test class

    kind: Literal["pytest", "command"] = "pytest"
    argv: list[str] = Field(default_factory=lambda: ["python", "-m", "pytest"])
    """The runner and its options (without the default paths)."""
    paths: list[str] = []
    """Default test paths (tox's or pytest's testpaths); empty: the runner's own default."""

    @property
    def text(self) -> str:
        """The whole command as one shell line."""
        return shlex.join([*self.argv, *self.paths])


class NodeSpec(BaseModel):
    """The Node part of an environment (environments/node.py): the toolchain and how the dependencies install."""

    model_config = ConfigDict(extra="forbid")

    line: str
    """A Node major (``18``: its newest release is installed) or an exact version (``18.20.4``)."""
    package_manager: Literal["npm", "yarn", "pnpm"] = "npm"
    pm_version: str = ""
    """The package manager's version (``1.22.22``; ``berry``: yarn 2 or later); "": the line's default."""
    install: list[str] = Field(default_factory=lambda: ["npm", "ci"])
    """The install command, run in /workspace with network (scripts run)."""
    runner: str = ""
    """The test runner the test script calls (jest, vitest, mocha, ava, node-test, tap...): how its results read."""
    workspaces: bool = False
    before: str = ""
    """No lockfile: what npm installs is resolved as of this moment (``--before``)."""
    root: str = ""
    """A part's folder in the repository (environments/parts.py); "": the top."""
    test: str = ""
    """A part's test command, run in its folder after the main ecosystem's tests; "": its tests are not run."""


class NativeSpec(BaseModel):
    """The Go, Rust or Java part of an environment (environments/golang.py, rust.py, java.py): Debian's toolchain in
    the base (``EnvSpec.apt``), the dependencies fetched by the setup commands into ENV_ROOT, the tests offline."""

    model_config = ConfigDict(extra="forbid")

    language: Literal["go", "rust", "java"]
    package: str
    """The Debian package of the toolchain (``golang-go``, ``cargo``, ``openjdk-21-jdk-headless``)."""
    offline: dict[str, str] = {}
    """Variables of the sandboxes only: the dependency fetchers off (``GOPROXY=off``, ``CARGO_NET_OFFLINE``)."""
    versions: str = ""
    """A shell command printing ``NAME VERSION`` lines of the toolchain (run in the build; the record keeps them)."""

    @property
    def runner(self) -> str:
        """How the test command's results read (environments/results.py)."""
        return {"go": "go", "rust": "cargo", "java": "junit"}[self.language]


class ImageSpec(BaseModel):
    """A declared image environment (environments/image.py): the system is the repository's own image, built
    from its Dockerfile (or named), not a base bosun makes; the setup commands then run in it."""

    model_config = ConfigDict(extra="forbid")

    source: str
    """The file that declared it (``.devcontainer/devcontainer.json``, ``.bosun/environment.toml``)."""
    dockerfile: str = ""
    """The Dockerfile's path in the repository; "" with ``image``."""
    context: str = ""
    """The build context's folder in the repository ("": the repository's root)."""
    build_args: dict[str, str] = {}
    """``--build-arg`` values."""
    target: str = ""
    """The build stage (``--target``); "": the last one."""
    image: str = ""
    """An image reference to start from instead of a Dockerfile (pulled when this engine does not have it)."""
    runner: str = ""
    """The test runner whose results the test command prints (environments/results.py; "unknown": exit code)."""


class EnvSpec(BaseModel):
    """What an environment is made of. Its canonical JSON (with the contents of the files it was read from) is
    the cache key, so everything that changes the build must be in here."""

    model_config = ConfigDict(extra="forbid")

    origin: Literal["detected", "declared", "override"] = "detected"
    """detected from the repository's files; declared by its .bosun/environment.toml (or Dockerfile,
    devcontainer.json); or an operator's override file (BOSUN_ENV_OVERRIDES)."""
    python: str
    """Interpreter version, major.minor: one of interpreters.AVAILABLE."""
    apt: list[str] = []
    """Extra Debian packages in the base root filesystem."""
    install_project: bool = True
    """Install the project itself, editable, from /workspace."""
    project_name: str | None = None
    """The project's distribution name (when known: it alone is built from source in a wheels-first install)."""
    extras: list[str] = []
    """Extras of the project to install with it (test, testing, dev...)."""
    requirements: list[str] = []
    """More requirement specifiers (test dependencies, pytest plugins, test imports)."""
    declared_only: bool = False
    """Only what a declaration names is installed (``detect = false``: a reference harness's recipe): nothing that
    detection finds or guesses beside it, and a collection error moves no pytest back (its pytest is the
    declaration's)."""
    overrides: list[str] = []
    """Pins that win over every other requirement of the install (uv's ``--override``): a recipe's packages, which
    the reference harness installs with pip after the requirement files, over their pins (pylint 3.0's
    ``astroid==3.0.0a6`` over requirements_test_min.txt's 3.0.0a8). The project, installed last, still gets what it
    requires."""
    guessed: list[str] = []
    """Soft requirements: guessed from the tests' imports, or a Pipfile's dev packages; dropped when the index does
    not know them, and in the last install attempt."""
    requirement_files: list[str] = []
    """Requirement files of the repository (paths relative to its root), passed to the installer as ``-r``."""
    optional_files: list[str] = []
    """Requirement files tried first and left out when the install fails with them (dev requirements)."""
    exclude_newer: str | None = None
    """Resolve as of this moment (RFC 3339, UTC): the commit's date. None: the newest versions."""
    build_isolation: bool = True
    """False: the project is built against what the environment has (its build requirements installed first),
    as ``pip install --no-build-isolation`` does."""
    project_last: bool = False
    """The requirements installed first, then the project (with its extras) on its own: what the project requires
    wins over their pins, as successive pip installs give (the SWE-bench harness's ``pip_packages``, then
    ``pip install -e .[test]``)."""
    resolve_for_python: str | None = None
    """Resolve the versions as if for this (older) interpreter -- the ones its users had -- and install them on the
    environment's own (the first attempt; the next ones resolve for the environment's)."""
    prepare: list[str] = []
    """Shell commands run before the install, with network, in /workspace, as the unprivileged build user (edits
    of the build's files)."""
    setup: list[str] = []
    """Shell commands run after the install, with network, in /workspace, as the unprivileged build user."""
    setup_best_effort: bool = False
    """The setup commands are detection's (a Dockerfile's RUN, a devcontainer's postCreateCommand, tox's installs),
    not a declaration's: one that fails is noted and the build goes on (astropy 5.2's devcontainer runs ``conda
    init bash && sudo cp ...``; neither is in a build)."""
    env: dict[str, str] = {}
    """Environment variables of the build and of every sandbox of the environment."""
    standins: list[str] = []
    """Public test services the tests call by name (``httpbin.org``), answered by a local stand-in when they are
    judged (environments/standins.py); the services' packages are soft requirements."""
    test: TestCommand = Field(default_factory=TestCommand)
    scm_version: str | None = None
    """The version setuptools_scm is told (SETUPTOOLS_SCM_PRETEND_VERSION): the source has no .git."""
    per_revision: bool = False
    """The build compiles the project's own code (C extensions): the source tree is part of the key."""
    compilers: bool = False
    """Needs a C compiler and Python headers (the base's build variant)."""
    node: NodeSpec | None = None
    """A JavaScript/TypeScript project: Node, its package manager and the install (environments/node.py); the
    Python parts then install nothing."""
    native: NativeSpec | None = None
    """A Go, Rust or Java project: Debian's toolchain, the dependencies its own tool fetches (environments/golang.py,
    rust.py, java.py); the Python parts then install nothing."""
    node_part: NodeSpec | None = None
    """A JavaScript/TypeScript part beside the main ecosystem (environments/parts.py): its Node and dependencies,
    installed in its folder (``root``); its tests run after the main ones when the CI runs them."""
    image: ImageSpec | None = None
    """A declared image (a Dockerfile, a devcontainer's): the system is the image's, the setup commands run in it,
    nothing else is installed; its sandboxes run on docker only."""

    def as_of(self) -> str | None:
        """The moment the install resolves as of (RFC 3339, UTC: the commit's day, or a declared date); None when
        no date bounds it (the newest versions, or a lockfile's)."""
        dates = [self.exclude_newer or "", *(n.before for n in (self.node, self.node_part) if n is not None)]
        return max(dates) or None

    def undated(self) -> EnvSpec:
        """The spec without its resolution date: what the install takes as input, whatever the day."""
        return self.model_copy(update={"exclude_newer": None, **{
            name: part.model_copy(update={"before": ""}) for name, part in (("node", self.node),
                                                                             ("node_part", self.node_part))
            if part is not None}})

    def path(self) -> str:
        """PATH in the environment's sandboxes (and its build, before the build's tools): its tools first ("" for an
        image: the image's own)."""
        if self.image is not None:
            return ""
        if self.node is not None:
            return f"{NODE}/bin:/workspace/node_modules/.bin:{SANDBOX_PATH}"
        part = "" if self.node_part is None else \
            f"{NODE}/bin:{posixpath.join('/workspace', self.node_part.root, 'node_modules/.bin')}:"
        if self.native is not None:
            return f"{part}{SANDBOX_PATH}"
        return f"{VENV}/bin:{part}{SANDBOX_PATH}"

    def sandbox_env(self) -> dict[str, str]:
        """The variables of every process in the environment's sandboxes beside PATH (the interpreter's aside)."""
        node = {"CI": "true", "COREPACK_HOME": f"{ENV_ROOT}/corepack", "COREPACK_ENABLE_NETWORK": "0",
                "npm_config_offline": "true", "npm_config_update_notifier": "false", "HOME": "/tmp/home"}
        if self.node is not None:
            return {**node, **self.env}
        part = node if self.node_part is not None else {}
        if self.native is not None:
            return {"HOME": "/tmp/home", **part, **self.env, **self.native.offline}
        if self.image is not None:
            return {"HOME": "/tmp/home", **self.env}
        return {"VIRTUAL_ENV": VENV, **part, **self.env}

    def canonical(self) -> str:
        """The spec as key material: fields left at their defaults are not in it, so a field added later (with
        a default that changes nothing) keeps every existing key; a change of meaning bumps SCHEMA."""
        return json.dumps(self.model_dump(mode="json", exclude_defaults=True), sort_keys=True, separators=(",", ":"))


class Detection(BaseModel):
    """A spec and everything needed to key and explain it."""

    spec: EnvSpec
    reasons: list[Reason] = []
    files: dict[str, str] = {}
    """Files that shaped the spec (repository-relative path -> sha256 of the content)."""
    tree: str = ""
    """The source tree's id: in the key when the spec is per revision."""
    commit: str = ""
    commit_date: str = ""
    repository: str = ""
    """Where the source came from (a path or URL), for people."""
    notes: list[str] = []
    warning: str = ""
    """What detection could not do, said before anything else (a repository of another language than Python, with
    no declaration: what was found and the declaration that would do); empty when it could."""

    def key(self, base_key: str) -> str:
        """The cache key: base + spec + the dependency files' content (+ the tree for per-revision builds)."""
        h = hashlib.sha256()
        h.update(f"schema={SCHEMA}\nbase={base_key}\nspec={self.spec.canonical()}\n".encode())
        for path in sorted(self.files):
            h.update(f"file={path}\0{self.files[path]}\n".encode())
        if self.spec.per_revision:
            h.update(f"tree={self.tree}\n".encode())
        if self.spec.node is not None or self.spec.node_part is not None:
            h.update(f"node_toolchain_rules={NODE_TOOLCHAIN_RULES}\n".encode())
        return h.hexdigest()[:20]

    def family(self, base_key: str) -> str:
        """The key without the resolution date: the environments of one family install the same inputs (the same
        dependency files, interpreter and toolchain), each resolved as of its own day."""
        return self.model_copy(update={"spec": self.spec.undated()}).key(base_key)


def env_id_for(key: str) -> str:
    return f"env-{key}"


class EnvRecord(BaseModel):
    """A built environment, as the cache keeps it (``<cache>/envs/<key>/env.json``)."""

    env_id: str
    key: str
    python: str
    """The interpreter's full version (3.11.2)."""
    base: str
    """The base it is layered on (suite-variant-hash)."""
    spec: EnvSpec
    test_command: str
    backend_refs: dict[str, str] = {}
    """docker: the image tag; bwrap: the directory bound at ENV_ROOT (the base's root filesystem is shared)."""
    rootfs: str = ""
    """The base's root filesystem on the host (bwrap binds its directories read-only)."""
    seed: bool = False
    repository: str = ""
    commit: str = ""
    built_at: str = ""
    build_s: float = 0.0
    size_mb: dict[str, float] = {}
    """docker_layer, docker_image, bwrap (the environment's own directory)."""
    exclude_newer_used: str | None = None
    """The date the install was resolved as of (after any fallback)."""
    family: str = ""
    """The key without the resolution date (``Detection.family``): a later commit whose detection has the same
    family reuses this environment ("": built before families, reused by its own key only)."""
    attempts: list[str] = []
    """Each install attempt and how it ended."""
    rules: int = 0
    """The build rules' version it was built by (``BUILD_RULES``)."""
    seed_unignored: list[str] = []
    """The seed's files that git does not ignore: a path, or a directory the build made (``build/``). Workspaces get
    them, and the host's import of an agent's work leaves them out as if the repository's .gitignore named them (a
    path tracked in the run's start commit is always imported). Written in the build container: validated by
    ``parse_unignored`` when read."""
    warnings: list[str] = []
    """What the build made that will not work as it did in the build (files git does not ignore that cannot be
    left out of diffs, which workspaces therefore do not get): read before trusting what the environment's tests
    say."""
    last_used: float = 0.0
    toolchain: dict[str, str] = {}
    """The toolchain the build installed beside the base's Python, by role and version (node, npm, yarn, pnpm),
    from the npm registry (environments/toolchains.py)."""
    tool_python: str = ""
    """The interpreter that runs the tool server in the environment's sandboxes ("": the base's /usr/bin/python3;
    an image environment's own python3)."""

    @property
    def outdated(self) -> bool:
        """Built by older rules than this bosun's (``BUILD_RULES``): it works as built."""
        return self.rules < BUILD_RULES


def parse_unignored(data: bytes) -> list[str]:
    """The seed's entries git does not ignore, from the list the build container wrote (NUL-separated; untrusted):
    each a relative path of non-empty components other than ``.`` and ``..``, with no line break, a trailing ``/``
    for a directory. ValueError naming the first entry that is not, or when the list is too large."""
    if len(data) > SEED_UNIGNORED_MAX:
        raise ValueError(f"the list is larger than {SEED_UNIGNORED_MAX} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the list is not UTF-8 (byte {exc.start})") from None
    entries = [e for e in text.split("\0") if e]
    for entry in entries:
        parts = entry.removesuffix("/").split("/")
        if len(entry) > 4096 or "\n" in entry or "\r" in entry or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"entry {entry[:200]!r} is not a relative path inside the source tree")
    return sorted(set(entries))
