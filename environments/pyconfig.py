"""Readers of a Python project's configuration files (pure: text in, facts out). Nothing is executed.

pyproject.toml (PEP 621 ``[project]``, PEP 735 ``[dependency-groups]``, Poetry, build-system, pytest and
setuptools_scm tables), setup.cfg, tox.ini, pytest.ini, requirement files and CI configuration.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Any

TEST_EXTRAS = ("test", "tests", "testing", "test-dependencies")
"""Extras and dependency groups installed with the project when present (these first)..."""
DEV_EXTRAS = ("dev", "develop", "development")
"""...else these."""
COMPILED_BUILD_REQUIRES = ("cython", "numpy", "pybind11", "cffi", "setuptools-rust", "setuptools_rust",
                           "scikit-build", "scikit-build-core", "meson-python", "maturin", "extension-helpers")
"""Build requirements that mean the project compiles code of its own (a per-revision build with compilers)."""

PLUGIN_OPTIONS = {
    "--cov": "pytest-cov", "--no-cov": "pytest-cov", "-n": "pytest-xdist", "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist", "--timeout": "pytest-timeout", "--doctest-rst": "pytest-doctestplus",
    "--doctest-plus": "pytest-doctestplus", "--remote-data": "pytest-remotedata", "--mpl": "pytest-mpl",
    "--flake8": "pytest-flake8", "--black": "pytest-black", "--mypy": "pytest-mypy", "--isort": "pytest-isort",
    "--reruns": "pytest-rerunfailures", "--benchmark-skip": "pytest-benchmark",
    "--benchmark-disable": "pytest-benchmark", "--hypothesis-profile": "hypothesis",
    "--hypothesis-show-statistics": "hypothesis", "--ds": "pytest-django", "--pep8": "pytest-pep8",
    "--codestyle": "pytest-codestyle", "--randomly-seed": "pytest-randomly", "-m pep8": "pytest-pep8",
}
"""pytest command-line options -> the plugin that provides them."""
PLUGIN_INI_KEYS = {
    "asyncio_mode": "pytest-asyncio", "timeout": "pytest-timeout", "doctest_plus": "pytest-doctestplus",
    "doctest_rst": "pytest-doctestplus", "text_file_format": "pytest-doctestplus",
    "remote_data_strict": "pytest-remotedata", "mpl-baseline-path": "pytest-mpl", "flake8-ignore": "pytest-flake8",
    "flake8-max-line-length": "pytest-flake8", "env": "pytest-env", "mock_use_standalone_module": "pytest-mock",
    "DJANGO_SETTINGS_MODULE": "pytest-django", "open_files_ignore": "pytest-openfiles",
    "astropy_header": "pytest-astropy-header", "pep8ignore": "pytest-pep8", "pep8maxlinelength": "pytest-pep8",
    "codestyle_ignore": "pytest-codestyle", "qt_api": "pytest-qt", "trio_mode": "pytest-trio",
    "mypy-ini-file": "pytest-mypy", "isort_ignore": "pytest-isort",
}
"""pytest ini keys -> the plugin that reads them."""
PLUGIN_MODULES = {"pytest_cov": "pytest-cov", "xdist": "pytest-xdist", "pytest_mock": "pytest-mock",
                  "pytest_asyncio": "pytest-asyncio", "pytest_timeout": "pytest-timeout",
                  "pytest_httpbin": "pytest-httpbin", "pytest_localserver": "pytest-localserver",
                  "pytest_benchmark": "pytest-benchmark", "hypothesis": "hypothesis",
                  "pytest_doctestplus": "pytest-doctestplus", "pytest_remotedata": "pytest-remotedata",
                  "pytest_django": "pytest-django", "pytest_env": "pytest-env", "trio": "pytest-trio",
                  "anyio": "anyio", "pytester": "", "_pytest.pytester": ""}
"""Plugin modules named by ``-p NAME`` / ``pytest_plugins`` -> their distribution ("" = part of pytest)."""


@dataclass
class Facts:
    """What the configuration files say, gathered from all of them."""

    requires_python: list[tuple[str, str]] = field(default_factory=list)
    """(specifier, source) in order of trust."""
    named_pythons: list[tuple[str, str]] = field(default_factory=list)
    """(text naming versions, source): classifiers, tox envlist, CI matrices."""
    installable: list[str] = field(default_factory=list)
    """Why the project is installable (pyproject [project]/build-system, setup.py, setup.cfg)."""
    extras: dict[str, list[str]] = field(default_factory=dict)
    """Extras the project defines -> their requirements."""
    dependencies: list[str] = field(default_factory=list)
    """The project's own requirements (installed with it; for telling test imports apart)."""
    groups: dict[str, list[Any]] = field(default_factory=dict)
    test_requires: list[tuple[str, str]] = field(default_factory=list)
    """(requirement, source): tests_require, tox deps, Poetry dev dependencies."""
    soft_requires: list[tuple[str, str]] = field(default_factory=list)
    """(requirement, source) tried and dropped when they cannot be installed (a Pipfile's dev packages)."""
    requirement_files: list[tuple[str, str]] = field(default_factory=list)
    soft_files: list[tuple[str, str]] = field(default_factory=list)
    """(requirement file, source) tried and dropped when the install fails with them (CI's, nox's)."""
    pytest_config: list[str] = field(default_factory=list)
    """Files configuring pytest."""
    pytest_options: list[str] = field(default_factory=list)
    """addopts (for plugin detection)."""
    pytest_ini_keys: list[str] = field(default_factory=list)
    testpaths: list[str] = field(default_factory=list)
    tox_commands: list[str] = field(default_factory=list)
    tox_extras: list[str] = field(default_factory=list)
    tox_conditional: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(key, condition, value, source) of tox ``[testenv]`` lines with a factor condition (``!pypy: -r x.txt``):
    whether they apply depends on the environment's factors, known once its interpreter is (``apply_tox``)."""
    scm: list[str] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def req_name(requirement: str) -> str:
    """The normalized distribution name of a requirement string."""
    return re.split(r"[<>=!~;\[ @(]", requirement.strip(), maxsplit=1)[0].strip().lower().replace("_", "-")


def toml(text: str, name: str, notes: list[str]) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        notes.append(f"{name} is not valid TOML ({str(exc)[:120]}): ignored")
        return {}
    return data


def ini(text: str, name: str, notes: list[str]) -> configparser.RawConfigParser | None:
    cfg = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        cfg.read_string(text, source=name)
    except (configparser.Error, ValueError) as exc:
        notes.append(f"{name} is not a valid INI file ({str(exc).splitlines()[0][:120]}): ignored")
        return None
    return cfg


def lines(value: str) -> list[str]:
    """A multi-line INI value as its lines (comments and blanks dropped, ``;`` or ``#`` comments cut)."""
    out = []
    for raw in value.splitlines():
        line = re.split(r"\s+[#;]", raw.strip(), maxsplit=1)[0].strip()
        if line and not line.startswith(("#", ";")):
            out.append(line)
    return out


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return lines(value) if "\n" in value else shlex.split(value, posix=True) if value.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float)]
    return []


_TYPE_NAMES = {dict: "a table", list: "an array", str: "a string"}


def field_of(table: dict[str, Any], key: str, kind: type, where: str, f: Facts) -> Any:
    """``table[key]`` when it has the type the format gives it (``kind``); otherwise None, with a note naming the
    file and the field (a type-confused field is ignored, like a file that does not parse)."""
    value = table.get(key)
    if value is None or isinstance(value, kind):
        return value
    f.notes.append(f"{where} {key} is {type(value).__name__}, not {_TYPE_NAMES.get(kind, kind.__name__)}: ignored")
    return None


def read_pyproject(text: str, f: Facts) -> None:
    data = toml(text, "pyproject.toml", f.notes)
    project = field_of(data, "project", dict, "pyproject.toml", f) or {}
    build = field_of(data, "build-system", dict, "pyproject.toml", f) or {}
    tool = field_of(data, "tool", dict, "pyproject.toml", f) or {}
    if project.get("name") or build.get("build-backend"):
        f.installable.append("pyproject.toml declares " + ("[project]" if project else "a build backend"))
    if isinstance(project.get("requires-python"), str):
        f.requires_python.append((project["requires-python"], "pyproject.toml [project] requires-python"))
    classifiers = [c for c in field_of(project, "classifiers", list, "pyproject.toml [project]", f) or []
                   if isinstance(c, str)]
    if classifiers:
        f.named_pythons.append(("\n".join(c for c in classifiers if "Python ::" in c),
                                "pyproject.toml classifiers"))
    f.dependencies += [str(r) for r in field_of(project, "dependencies", list, "pyproject.toml [project]", f) or []
                       if isinstance(r, str)]
    optional = field_of(project, "optional-dependencies", dict, "pyproject.toml [project]", f) or {}
    for name, reqs in optional.items():
        if isinstance(reqs, list):
            f.extras[str(name)] = [str(r) for r in reqs if isinstance(r, str)]
    for name, reqs in (field_of(data, "dependency-groups", dict, "pyproject.toml", f) or {}).items():
        if isinstance(reqs, list):
            f.groups[str(name)] = reqs
    requires = [str(r).lower() for r in field_of(build, "requires", list, "pyproject.toml [build-system]", f) or []
                if isinstance(r, str)]
    for r in requires:
        base = re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip()
        if base in COMPILED_BUILD_REQUIRES:
            f.compiled.append(f"pyproject.toml build-system requires {base}")
        if base in ("setuptools_scm", "setuptools-scm", "hatch-vcs", "setuptools-git-versioning"):
            f.scm.append(f"pyproject.toml build-system requires {base}")
    if "setuptools_scm" in tool:
        f.scm.append("pyproject.toml [tool.setuptools_scm]")
    _read_poetry(tool.get("poetry"), f)
    pytest_tool = tool.get("pytest") if isinstance(tool.get("pytest"), dict) else {}
    ini_opts = pytest_tool.get("ini_options")
    if isinstance(ini_opts, dict):
        f.pytest_config.append("pyproject.toml [tool.pytest.ini_options]")
        _read_pytest_table({k: v for k, v in ini_opts.items()}, f)
    legacy = (tool.get("tox") or {}).get("legacy_tox_ini") if isinstance(tool.get("tox"), dict) else None
    if isinstance(legacy, str):
        read_tox(legacy, f, "pyproject.toml [tool.tox] legacy_tox_ini")


def _read_poetry(poetry: Any, f: Facts) -> None:
    if not isinstance(poetry, dict):
        return
    f.installable.append("pyproject.toml [tool.poetry]")
    deps = poetry.get("dependencies") if isinstance(poetry.get("dependencies"), dict) else {}
    if isinstance(deps.get("python"), str):
        f.requires_python.append((poetry_constraint(deps["python"]),
                                  "pyproject.toml [tool.poetry.dependencies] python"))
    tables = [("dev-dependencies", poetry.get("dev-dependencies"))]
    for name, group in (field_of(poetry, "group", dict, "pyproject.toml [tool.poetry]", f) or {}).items():
        if isinstance(group, dict) and (name in TEST_EXTRAS or name in DEV_EXTRAS):
            tables.append((f"group.{name}", group.get("dependencies")))
    for where, table in tables:
        if isinstance(table, dict):
            for dist, constraint in table.items():
                if dist == "python":
                    continue
                spec = poetry_constraint(constraint) if isinstance(constraint, str) else ""
                f.test_requires.append((f"{dist}{spec}", f"pyproject.toml [tool.poetry.{where}]"))
    if isinstance(poetry.get("extras"), dict):
        for name, dists in poetry["extras"].items():
            if isinstance(dists, list):
                f.extras[str(name)] = [str(d) for d in dists]


def poetry_constraint(text: str) -> str:
    """A Poetry version constraint as a PEP 440 specifier (lower bounds kept, caret/tilde made ranges)."""
    text = text.strip()
    if text in ("", "*"):
        return ""
    parts = []
    for piece in text.split(","):
        piece = piece.strip()
        m = re.fullmatch(r"([\^~])\s*(\d+(?:\.\d+)*)", piece)
        if m:
            nums = [int(x) for x in m.group(2).split(".")]
            if m.group(1) == "^":
                idx = next((i for i, n in enumerate(nums) if n != 0), len(nums) - 1)
            else:
                idx = 0 if len(nums) == 1 else 1
            upper = nums[:idx + 1]
            upper[-1] += 1
            parts.append(f">={m.group(2)},<{'.'.join(map(str, upper))}")
        elif re.fullmatch(r"\d+(?:\.\d+)*", piece):
            parts.append(f"=={piece}")
        elif re.fullmatch(r"(>=|<=|>|<|==|!=)\s*[\w.*]+", piece):
            parts.append(piece.replace(" ", ""))
    return ",".join(parts)


def read_pipfile(text: str, f: Facts) -> None:
    """A Pipfile: its [requires] python_version, and its [dev-packages] as soft test requirements (the
    environment the project's developers used; dropped when they cannot be installed)."""
    data = toml(text, "Pipfile", f.notes)
    requires = data.get("requires") if isinstance(data.get("requires"), dict) else {}
    if isinstance(requires.get("python_version"), str):
        f.named_pythons.append((requires["python_version"], "Pipfile [requires] python_version"))
    dev = data.get("dev-packages") if isinstance(data.get("dev-packages"), dict) else {}
    for name, value in dev.items():
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", str(name)):
            continue
        if isinstance(value, dict):
            if any(k in value for k in ("path", "git", "file", "editable")):
                continue
            extras = value.get("extras") if isinstance(value.get("extras"), list) else []
            version = value.get("version", "*")
            name = f"{name}[{','.join(str(e) for e in extras)}]" if extras else name
        else:
            version = value
        spec = "" if not isinstance(version, str) or version.strip() == "*" else version.strip()
        if spec and not re.fullmatch(r"[<>=!~,.\w* ]+", spec):
            continue
        f.soft_requires.append((f"{name}{spec}", "Pipfile [dev-packages]"))


def read_setup_cfg(text: str, f: Facts) -> None:
    cfg = ini(text, "setup.cfg", f.notes)
    if cfg is None:
        return
    if cfg.has_section("metadata") and cfg.has_option("metadata", "name"):
        f.installable.append("setup.cfg [metadata]")
    if cfg.has_section("options"):
        if cfg.has_option("options", "install_requires"):
            f.dependencies += lines(cfg.get("options", "install_requires"))
        if cfg.has_option("options", "python_requires"):
            f.requires_python.append((cfg.get("options", "python_requires").strip(),
                                      "setup.cfg [options] python_requires"))
        for key in ("tests_require",):
            if cfg.has_option("options", key):
                f.test_requires += [(r, f"setup.cfg [options] {key}") for r in lines(cfg.get("options", key))]
        for key in ("setup_requires",):
            if cfg.has_option("options", key) and "setuptools_scm" in cfg.get("options", key).replace("-", "_"):
                f.scm.append("setup.cfg [options] setup_requires setuptools_scm")
    if cfg.has_section("options.extras_require"):
        for name, value in cfg.items("options.extras_require"):
            f.extras[name] = lines(value)
    if cfg.has_option("metadata", "classifiers"):
        f.named_pythons.append((cfg.get("metadata", "classifiers"), "setup.cfg classifiers"))
    for section in ("tool:pytest", "pytest"):
        if cfg.has_section(section):
            f.pytest_config.append(f"setup.cfg [{section}]")
            _read_pytest_table(dict(cfg.items(section)), f)


def read_pytest_ini(text: str, name: str, f: Facts) -> None:
    cfg = ini(text, name, f.notes)
    if cfg is None:
        return
    for section in ("pytest", "tool:pytest"):
        if cfg.has_section(section):
            f.pytest_config.append(f"{name} [{section}]")
            _read_pytest_table(dict(cfg.items(section)), f)


def _read_pytest_table(table: dict[str, Any], f: Facts) -> None:
    for key, value in table.items():
        f.pytest_ini_keys.append(str(key))
        if key == "addopts":
            f.pytest_options += _as_list(value) if not isinstance(value, str) else shlex_split(value)
        elif key == "testpaths":
            f.testpaths += _as_list(value) if not isinstance(value, str) else value.split()
        elif key == "required_plugins":
            names = _as_list(value) if not isinstance(value, str) else value.split()
            f.test_requires += [(n, "pytest required_plugins") for n in names]


def shlex_split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def read_tox(text: str, f: Facts, name: str = "tox.ini") -> None:
    cfg = ini(text, name, f.notes)
    if cfg is None:
        return
    if cfg.has_option("tox", "envlist"):
        f.named_pythons.append((cfg.get("tox", "envlist"), f"{name} envlist"))
    for section in ("pytest", "tool:pytest"):
        if cfg.has_section(section):
            f.pytest_config.append(f"{name} [{section}]")
            _read_pytest_table(dict(cfg.items(section)), f)
    if not cfg.has_section("testenv"):
        return
    env = dict(cfg.items("testenv"))
    for key in ("deps", "extras", "commands"):
        for line in lines(env.get(key, "")) if key != "extras" else _extras_lines(env.get(key, "")):
            m = FACTOR_LINE.match(line)
            if m:
                f.tox_conditional.append((key, m.group(1), m.group(2).strip(), f"{name} [testenv] {key}"))
            else:
                _tox_line(key, line, f, f"{name} [testenv] {key}")


FACTOR_LINE = re.compile(r"^([!\w{},.-]+):\s+(.*)$")
"""A tox line with a factor condition: ``py38,py39: x``, ``py38-django31: x``, ``!pypy: x``, ``py{37,38}: x``."""


def _extras_lines(value: str) -> list[str]:
    """tox's ``extras``: one per line, or comma-separated on a line without a factor condition."""
    out = []
    for line in lines(value):
        out += [line] if FACTOR_LINE.match(line) else [e for e in re.split(r"[\s,]+", line) if e]
    return out


def _tox_line(key: str, value: str, f: Facts, source: str) -> None:
    """One applying line of tox's ``deps``, ``extras`` or ``commands``."""
    if key == "extras":
        if "{" not in value and re.fullmatch(r"[\w.-]+", value):
            f.tox_extras.append(value)
    elif key == "commands":
        f.tox_commands.append(value)
    else:
        dep = value.replace("{toxinidir}/", "").replace("{toxinidir}", ".")
        if dep.startswith(("-r", "--requirement")):
            path = dep.split(None, 1)[1] if " " in dep else dep[2:]
            f.requirement_files.append((path.strip().lstrip("./"), source))
        elif dep.startswith(("-e", "-c", "--", "!")) or dep in (".", "..") or "{" in dep:
            return
        else:
            f.test_requires.append((dep, source))


def _expand_braces(text: str, limit: int = 64) -> list[str]:
    """tox's generative names: ``py{37,38}-x`` -> ``py37-x``, ``py38-x`` (at most ``limit``)."""
    m = re.search(r"\{([^{}]*)\}", text)
    if m is None:
        return [text]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out += _expand_braces(text[:m.start()] + alt.strip() + text[m.end():], limit)
        if len(out) >= limit:
            break
    return out[:limit]


def factor_condition(condition: str, factors: set[str]) -> bool:
    """Whether a tox factor condition holds in an environment with ``factors``, as tox reads it: terms separated by
    ``,`` (any of them), each term factors joined by ``-`` (all of them), a factor negated by a leading ``!``;
    ``{a,b}`` generates terms."""
    terms = [t for part in _split_top(condition) for t in _expand_braces(part)]
    for term in terms:
        parts = [p for p in term.split("-") if p]
        if parts and all((p[1:] not in factors) if p.startswith("!") else (p in factors) for p in parts):
            return True
    return False


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside braces."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    return [p.strip() for p in [*out, text[start:]] if p.strip()]


def tox_factors(python: str) -> set[str]:
    """The factors of the environment bosun builds, as tox names a CPython environment for ``python`` (``3.9``):
    ``py39`` (and the ``py3`` and ``py`` of older tox files); never ``pypy``, a platform or a feature factor."""
    major, _, minor = python.partition(".")
    return {"py", f"py{major}", f"py{major}{minor}", f"py{major}.{minor}"}


def apply_tox(f: Facts, python: str) -> list[tuple[str, str, str]]:
    """Add the factor-conditional tox lines that apply to a ``python`` environment (as if unconditional); the
    (key, value, source) of those added."""
    factors = tox_factors(python)
    added = []
    for key, condition, value, source in f.tox_conditional:
        if factor_condition(condition, factors):
            why = f"{source} ({condition}: holds for a py{python.replace('.', '')} environment)"
            _tox_line(key, value, f, why)
            added.append((key, value, why))
    return added


def plugins_for(options: list[str], ini_keys: list[str]) -> list[tuple[str, str]]:
    """(distribution, why) of the pytest plugins the options and ini keys need."""
    found: dict[str, str] = {}
    for i, opt in enumerate(options):
        head = opt.split("=", 1)[0]
        if head in PLUGIN_OPTIONS:
            found.setdefault(PLUGIN_OPTIONS[head], f"pytest option {head}")
        elif head.startswith("--cov"):
            found.setdefault("pytest-cov", f"pytest option {head}")
        elif head == "-p" and i + 1 < len(options):
            dist = PLUGIN_MODULES.get(options[i + 1])
            if dist:
                found.setdefault(dist, f"pytest -p {options[i + 1]}")
        elif head.startswith("-p") and len(head) > 2:
            dist = PLUGIN_MODULES.get(head[2:])
            if dist:
                found.setdefault(dist, f"pytest {head}")
    for key in ini_keys:
        dist = PLUGIN_INI_KEYS.get(key)
        if dist:
            found.setdefault(dist, f"pytest ini key {key}")
    return list(found.items())


REQUIREMENT_FILE = re.compile(
    r"^(?:(?:requirements|reqs)/(?:tests?|testing|dev|develop|ci)[\w.-]*\.(?:txt|in)"
    r"|(?:tests?/)?requirements\.txt"
    r"|(?:test|tests|testing|dev|ci)[-_]requirements\.txt"
    r"|requirements[-_.](?:tests?|testing|dev|develop|ci)[\w.-]*\.txt)$", re.I)
"""Requirement files of a repository that matter for its tests."""


def requirement_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """(test requirement files, dev requirement files): dev ones are tried and dropped when they fail. Where a
    ``.in`` file and the ``.txt`` pip-compile made of it both exist, the ``.in`` (the intent; the lock was made for
    some other interpreter and day); files for one Python version (``tests37.txt``, ``py38.txt``) are left out."""
    chosen = [p for p in paths if REQUIREMENT_FILE.match(p)]
    present = set(chosen)
    test, dev = [], []
    for path in chosen:
        stem = path.rsplit(".", 1)[0]
        if path.endswith(".txt") and f"{stem}.in" in present:
            continue
        if re.search(r"(?:py|[-_.]|[a-z])3?\d{2}$", stem.rsplit("/", 1)[-1]) and re.search(r"\d{2}$", stem):
            continue
        (dev if re.search(r"dev|develop|ci", path.rsplit("/", 1)[-1], re.I) else test).append(path)
    return test, dev


def dependency_group(groups: dict[str, list[Any]], name: str, seen: set[str] | None = None) -> list[str]:
    """A PEP 735 group's requirements, with ``{include-group = ...}`` expanded (cycles refused quietly)."""
    seen = seen or set()
    if name in seen or name not in groups:
        return []
    seen.add(name)
    out: list[str] = []
    for item in groups[name]:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += dependency_group(groups, item["include-group"], seen)
    return out


