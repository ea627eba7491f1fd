"""JavaScript and TypeScript: a repository's ``package.json`` and lockfile -> the Node line, the package manager, the
install command and the test command, with a reason for each (pure: no network, no Docker).

- **Node**: ``.nvmrc``, ``.node-version``, ``package.json``'s ``volta.node`` or ``engines.node`` (an npm range), in
  that order; the LTS line of the commit's date when it satisfies the range (or nothing names one), else the newest
  line the range allows that existed by then, else the oldest it allows. The build takes the newest release of the
  line (environments/toolchains.py).
- **Package manager**: corepack's ``packageManager`` field, else the lockfile: ``pnpm-lock.yaml`` -> pnpm,
  ``yarn.lock`` -> yarn (berry when ``.yarnrc.yml`` is there), ``package-lock.json``/``npm-shrinkwrap.json`` -> npm;
  none: npm, resolved as of the commit's date (``npm install --before``). Installs are frozen to the lockfile.
- **Tests**: ``scripts.test`` run through the package manager (``npm test``); the runner it calls (jest, vitest,
  mocha, ava, node's test runner, tap, karma...) is named for reading its results. npm's placeholder ("no test
  specified") is no test command.
- **Workspaces**: ``package.json``'s ``workspaces`` (npm, yarn) or ``pnpm-workspace.yaml``: installed from the root.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import nodesemver

from environments.models import NodeSpec, Reason, TestCommand

NODE_FILES = ("package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
              "pnpm-workspace.yaml", ".nvmrc", ".node-version", ".yarnrc.yml", ".yarnrc", ".npmrc", "bun.lockb",
              "bun.lock", "lerna.json")
"""The files at the top of a repository that shape its Node environment (read when ``package.json`` is there)."""
SHAPING = ("package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
           "pnpm-workspace.yaml", ".nvmrc", ".node-version", ".yarnrc.yml", ".npmrc")
"""Those whose content is part of the environment's key (what the install installs)."""

LTS: tuple[tuple[int, date], ...] = ((8, date(2017, 10, 31)), (10, date(2018, 10, 30)), (12, date(2019, 10, 21)),
                                      (14, date(2020, 10, 27)), (16, date(2021, 10, 26)), (18, date(2022, 10, 25)),
                                      (20, date(2023, 10, 24)), (22, date(2024, 10, 29)), (24, date(2025, 10, 28)))
"""Each Node line and the day it became LTS (the Node release schedule)."""
FIRST: dict[int, date] = {8: date(2017, 5, 30), 9: date(2017, 10, 31), 10: date(2018, 4, 24), 11: date(2018, 10, 23),
                          12: date(2019, 4, 23), 13: date(2019, 10, 22), 14: date(2020, 4, 21), 15: date(2020, 10, 20),
                          16: date(2021, 4, 20), 17: date(2021, 10, 19), 18: date(2022, 4, 19), 19: date(2022, 10, 18),
                          20: date(2023, 4, 18), 21: date(2023, 10, 17), 22: date(2024, 4, 24), 23: date(2024, 10, 16),
                          24: date(2025, 5, 6), 25: date(2025, 10, 15)}
"""The day each Node line's first release came out."""
OLDEST = 8
"""The oldest line bosun installs (older lines' binaries are not on the registry as packages)."""

RUNNERS = (("vitest", "vitest"), ("jest", "jest"), ("react-scripts test", "jest"), ("mocha", "mocha"),
           ("ava", "ava"), ("node --test", "node-test"), ("node:test", "node-test"), ("tap ", "tap"),
           ("tape", "tap"), ("karma", "karma"), ("jasmine", "jasmine"), ("playwright", "playwright"),
           ("lab ", "lab"), ("qunit", "qunit"), ("uvu", "uvu"))
"""Words of a test script and the runner they call (first match wins)."""
PLACEHOLDER = "no test specified"
"""npm init's test script (``echo "Error: no test specified" && exit 1``): not a test command."""


@dataclass
class NodeFacts:
    """What a repository's Node files say."""

    package: dict[str, Any] = field(default_factory=dict)
    lockfile: str = ""
    files: set[str] = field(default_factory=set)
    version_file: tuple[str, str] | None = None
    """(file, what it says) of the first file naming the Node version."""
    notes: list[str] = field(default_factory=list)


def facts(texts: dict[str, str], present: set[str]) -> NodeFacts:
    """The facts of the top-level Node files: ``texts`` (path -> content, as read), ``present`` (every path)."""
    out = NodeFacts(files={p for p in NODE_FILES if p in present})
    try:
        package = json.loads(texts.get("package.json", "{}"))
        out.package = package if isinstance(package, dict) else {}
        if not isinstance(package, dict):
            out.notes.append("package.json is not a JSON object: ignored")
    except ValueError as e:
        out.notes.append(f"package.json is not JSON ({str(e)[:100]}): ignored")
    for name in ("pnpm-lock.yaml", "yarn.lock", "package-lock.json", "npm-shrinkwrap.json", "bun.lockb", "bun.lock"):
        if name in present:
            out.lockfile = name
            break
    for name in (".nvmrc", ".node-version"):
        text = texts.get(name, "").strip()
        if text:
            out.version_file = (name, text.splitlines()[0].strip())
            break
    else:
        volta = _get(out.package, "volta", "node")
        engines = _get(out.package, "engines", "node")
        if isinstance(volta, str) and volta.strip():
            out.version_file = ("package.json volta.node", volta.strip())
        elif isinstance(engines, str) and engines.strip():
            out.version_file = ("package.json engines.node", engines.strip())
    return out


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def lts_line(day: date) -> int:
    """The newest LTS line as of ``day`` (the oldest bosun knows before that)."""
    line = LTS[0][0]
    for major, since in LTS:
        if since <= day:
            line = major
    return line


LTS_SUPPORT = timedelta(days=913)
"""How long an LTS line is supported after it becomes LTS (30 months)."""


def supported_line(day: date) -> int:
    """The oldest LTS line still supported on ``day``: the Node the newest versions of packages still run on (the
    install that takes them when none of the commit's date satisfies its ranges)."""
    alive = [major for major, since in LTS if since <= day < since + LTS_SUPPORT]
    return alive[0] if alive else LTS[-1][0]


def node_line(wanted: tuple[str, str] | None, day: date) -> tuple[str, str]:
    """The Node line (a major, or an exact version a file names) and why, as of ``day``."""
    lts = lts_line(day)
    if wanted is None:
        return str(lts), f"no version named: the LTS line of the commit's date ({day.isoformat()})"
    source, text = wanted
    text = text.removeprefix("v").strip()
    alias = text.lower()
    if alias in ("lts/*", "lts", "node", "stable", "latest", "current") or alias.startswith("lts/"):
        return str(lts), f"{source} says {text!r}: the LTS line of the commit's date ({day.isoformat()})"
    if re.fullmatch(r"\d+\.\d+\.\d+", text) and int(text.split(".")[0]) >= OLDEST:
        return text, f"{source} names {text}"
    lines = [m for m in sorted(FIRST) if m >= OLDEST]
    allowed = [m for m in lines if _satisfies(f"{m}.99.99", text) or _satisfies(f"{m}.0.0", text)]
    if not allowed:
        return str(lts), f"{source} says {text!r}, which no Node line bosun knows satisfies: the LTS line of the " \
                         f"commit's date ({day.isoformat()})"
    if lts in allowed:
        return str(lts), f"{source} allows {text!r}: the LTS line of the commit's date ({day.isoformat()})"
    existing = [m for m in allowed if FIRST[m] <= day]
    if existing:
        return str(max(existing)), f"{source} allows {text!r}: its newest line by the commit's date"
    return str(min(allowed)), f"{source} allows {text!r}: its oldest line (none existed by the commit's date)"


def _satisfies(version: str, rng: str) -> bool:
    try:
        return bool(nodesemver.satisfies(version, rng, loose=True))
    except (ValueError, TypeError, AttributeError, IndexError):
        return False


def package_manager(f: NodeFacts) -> tuple[str, str, str]:
    """(npm, yarn or pnpm; its version, "" for the line's default; why)."""
    field_ = f.package.get("packageManager")
    if isinstance(field_, str):
        m = re.fullmatch(r"(npm|yarn|pnpm)@(\d+\.\d+\.\d+[\w.+-]*)", field_.strip().split("+")[0])
        if m:
            return m[1], m[2], f"package.json packageManager {field_.strip()[:60]}"
    if f.lockfile == "pnpm-lock.yaml":
        return "pnpm", "", "pnpm-lock.yaml"
    if f.lockfile == "yarn.lock":
        berry = ".yarnrc.yml" in f.files
        return "yarn", "" if not berry else "berry", "yarn.lock" + (" and .yarnrc.yml (yarn 2+)" if berry else "")
    if f.lockfile in ("package-lock.json", "npm-shrinkwrap.json"):
        return "npm", "", f.lockfile
    return "npm", "", "no lockfile: npm"


def install_command(pm: str, pm_version: str, lockfile: str) -> list[str]:
    """The install, frozen to the lockfile when there is one (scripts run: packages build what they need)."""
    if pm == "pnpm":
        return ["pnpm", "install", "--frozen-lockfile"] if lockfile == "pnpm-lock.yaml" else ["pnpm", "install"]
    if pm == "yarn":
        major = int(pm_version.split(".")[0]) if pm_version[:1].isdigit() else (2 if pm_version == "berry" else 1)
        if major >= 2:
            return ["yarn", "install", "--immutable"] if lockfile == "yarn.lock" else ["yarn", "install"]
        return ["yarn", "install", "--frozen-lockfile", "--non-interactive"] if lockfile == "yarn.lock" \
            else ["yarn", "install", "--non-interactive"]
    if lockfile in ("package-lock.json", "npm-shrinkwrap.json"):
        return ["npm", "ci", "--no-audit", "--no-fund"]
    return ["npm", "install", "--no-audit", "--no-fund"]


UNDATED = ("the newest versions the ranges allow, on the commit's Node: none of the commit's date satisfies (a "
           "registry whose publish times are not the packages' own: a mirror's)")
NEWEST = "the newest versions: none of the commit's date satisfies"
"""Why the install that takes the newest versions is tried (on the oldest Node still supported, when the
commit's is older: ``supported_line``)."""


def install_attempts(node: NodeSpec) -> list[tuple[list[str], dict[str, str], str]]:
    """The installs a build tries in turn, each (command, its variables, why): the spec's own (frozen to the
    lockfile, or as of the commit's date), then what npm users fall back to when that fails: an install that
    updates a lockfile out of step with package.json, peer-dependency conflicts let through (npm 7+ refuses what
    npm 6 accepted), the install without the project's own lifecycle scripts (``prepare: husky install && husky
    set ...`` fails in a source without .git; the dependencies' scripts run by ``npm rebuild``), the newest versions
    the ranges allow on the commit's Node (no version of that date satisfies a range: an old one, or a registry
    mirror's publish times), then on a newer Node (``supported_line``), and at last those without install scripts,
    the rebuild's failure let through (said in the log)."""
    first = (list(node.install), {"npm_config_before": node.before} if node.before else {}, "as detected")
    if node.package_manager != "npm":
        return [first]
    plain = ["npm", "install", "--no-audit", "--no-fund"]
    dated = {"npm_config_before": node.before} if node.before else {}
    out = [first]
    if node.install[:2] == ["npm", "ci"]:
        out.append((plain, {}, "the lockfile is out of step with package.json: npm install updates it"))
    out.append(([*plain, "--legacy-peer-deps"], dated, "peer-dependency conflicts let through (as npm 6 did)"))
    again = shlex.join([*plain, "--legacy-peer-deps", "--ignore-scripts"])
    out.append((["sh", "-c", f"{again} && npm rebuild"], dated,
                "the project's own install scripts failed (a git hook set-up without .git, a build step): the "
                "dependencies installed without them, their own scripts run by npm rebuild"))
    if node.before:  # (no lockfile of the repository's: what the attempts before wrote goes, with their modules)
        newest = shlex.join([*plain, "--legacy-peer-deps"])
        out.append((["sh", "-c", f"rm -rf node_modules package-lock.json && {newest}"], {}, UNDATED))
        out.append((["sh", "-c", f"rm -rf node_modules package-lock.json && {newest}"], {}, NEWEST))
        out.append((["sh", "-c", f"rm -rf node_modules package-lock.json && {newest} --ignore-scripts && "
                     f"{{ npm rebuild || echo {shlex.quote(REBUILD_FAILED)}; }}"], {}, NEWEST_NO_SCRIPTS))
    return out


NEWEST_NO_SCRIPTS = ("the newest versions without install scripts (a dependency's download from a host the build "
                     "does not reach: phantomjs, a browser), then every dependency's build that still works")
REBUILD_FAILED = "bosun: npm rebuild failed: a dependency's own build did not run (its tests may need it)"


def runner_of(script: str) -> str:
    """The test runner a script (or a command line) calls ("" when it names none bosun knows): a needle of RUNNERS
    as a word of its own (``ts-mocha`` calls mocha; ``javac`` and ``gitlab`` name no ava and no lab)."""
    for needle, runner in RUNNERS:
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(needle.strip())}(?![A-Za-z0-9_])", script):
            return runner
    return ""


def test_command(f: NodeFacts, pm: str) -> tuple[TestCommand | None, str, str]:
    """(the test command, the runner it calls, why): ``scripts.test`` through the package manager."""
    scripts = f.package.get("scripts") if isinstance(f.package.get("scripts"), dict) else {}
    script = scripts.get("test") if isinstance(scripts.get("test"), str) else ""
    if not script.strip() or PLACEHOLDER in script:
        return None, "", "package.json has no test script" if not script.strip() else "package.json's test " \
                                                                                       "script is npm's placeholder"
    argv = [pm, "test"] if pm != "yarn" else ["yarn", "test"]
    runner = runner_of(script) or _runner_from_scripts(scripts, script)
    why = f"package.json scripts.test: {script[:100]}" + (f" ({runner})" if runner else "")
    return TestCommand(kind="command", argv=argv), runner, why


def _runner_from_scripts(scripts: dict, script: str) -> str:
    """The runner of a test script that calls another script (``npm run test:unit``) one level down."""
    for word in shlex_words(script):
        if word in scripts and isinstance(scripts[word], str) and word != "test":
            return runner_of(scripts[word])
    m = re.search(r"(?:npm run|yarn|pnpm(?: run)?)\s+([\w:.-]+)", script)
    if m and isinstance(scripts.get(m[1]), str) and m[1] != "test":
        return runner_of(scripts[m[1]])
    return ""


def shlex_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def workspaces(f: NodeFacts) -> bool:
    ws = f.package.get("workspaces")
    return bool(ws) or "pnpm-workspace.yaml" in f.files


def plan(f: NodeFacts, commit_date: datetime | None) -> tuple[NodeSpec, TestCommand | None, list[Reason]]:
    """The Node part of an environment: the spec, the test command (None: none found) and the reasons."""
    day = (commit_date or datetime.now()).date()
    line, line_why = node_line(f.version_file, day)
    pm, pm_version, pm_why = package_manager(f)
    test, runner, test_why = test_command(f, pm)
    spec = NodeSpec(line=line, package_manager=pm, pm_version=pm_version,
                    install=install_command(pm, pm_version, f.lockfile), runner=runner, workspaces=workspaces(f),
                    before="" if f.lockfile else f"{day.isoformat()}T23:59:59Z")
    reasons = [Reason(field="node", value=line, source=line_why),
               Reason(field="package_manager", value=f"{pm} {pm_version}".strip(), source=pm_why),
               Reason(field="install", value=shlex.join(spec.install),
                      source=f"frozen to {f.lockfile}" if f.lockfile else "no lockfile: as of the commit's date"),
               Reason(field="test_command", value=test.text if test else "-", source=test_why)]
    if spec.workspaces:
        reasons.append(Reason(field="workspaces", value="yes", source="package.json workspaces"
                              if f.package.get("workspaces") else "pnpm-workspace.yaml"))
    return spec, test, reasons
