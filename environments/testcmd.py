"""The project's test command, from its configuration (pure).

Order: a declared ``test_command``; tox's ``commands`` when they run pytest (their paths and the options that
matter kept); pytest when anything configures it (pytest.ini, [tool:pytest], [tool.pytest.ini_options], a
conftest.py); a runner of the project's own (``runtests.py``, ``tests/runtests.py``, ``bin/test``); else pytest on
the usual test directory.
"""

from __future__ import annotations

import re
import shlex

from environments.models import Reason, TestCommand

PYTEST = ["python", "-m", "pytest"]
DROP_OPTIONS = ("--junitxml", "--junit-xml", "--basetemp", "--durations", "--color", "--numprocesses",
                "--result-log", "--html", "--self-contained-html", "-v", "-vv", "-vvv", "-q", "-qq", "-s",
                "--verbose", "--quiet", "-x", "--exitfirst", "--maxfail", "--pdb", "--lf", "--ff", "-l",
                "--showlocals", "--strict", "--strict-markers", "--strict-config", "-n", "--dist", "--forked",
                "--boxed")
DROP_PREFIXES = ("--cov", "--no-cov", "-W", "--junit", "-r", "--html", "--durations", "--hypothesis-")
"""tox options about reporting, strictness or parallelism, not about which tests run: dropped (a warnings filter
made an error under newer dependencies would fail tests that pass upstream)."""
WITH_VALUE = ("-n", "--numprocesses", "--dist", "--basetemp", "--junitxml", "--cov", "--cov-report", "--durations",
              "-p", "-c", "--rootdir", "-m", "-k", "--ignore", "--deselect", "--confcutdir")
"""Options whose value is the next word."""
KEEP_WITH_VALUE = ("-m", "-k", "--ignore", "--deselect", "-p", "-c", "--rootdir", "--confcutdir")


def from_tox(commands: list[str]) -> TestCommand | None:
    """The pytest invocation among tox's commands, as a TestCommand (None when they do not run pytest)."""
    for raw in commands:
        raw = re.sub(r"\{posargs:([^{}]*)\}", r"\1", raw.replace("{posargs}", ""))
        try:
            words = shlex.split(raw.replace("\\\n", " "))
        except ValueError:
            continue
        idx = next((i for i, w in enumerate(words) if w in ("pytest", "py.test") or w.endswith("/pytest")
                    or (w == "-m" and i + 1 < len(words) and words[i + 1] == "pytest")), None)
        if idx is None:
            continue
        if words[idx] == "-m":
            idx += 1
        options: list[str] = []
        paths: list[str] = []
        rest = words[idx + 1:]
        i = 0
        while i < len(rest):
            word = rest[i]
            i += 1
            if "{" in word:
                continue
            head = word.split("=", 1)[0]
            takes_value = head in WITH_VALUE and "=" not in word
            value = rest[i] if takes_value and i < len(rest) else None
            if takes_value:
                i += 1
            if head in DROP_OPTIONS or head.startswith(DROP_PREFIXES):
                continue
            if word.startswith("-"):
                if head in KEEP_WITH_VALUE or not takes_value:
                    options += [word] + ([value] if value is not None else [])
            else:
                paths.append(word.removeprefix("./"))
        return TestCommand(kind="pytest", argv=[*PYTEST, *options], paths=paths)
    return None


def tox_installs(commands: list[str]) -> list[str]:
    """tox's ``pip install ...`` commands (other than the project itself) as setup commands for uv (so they
    resolve as of the same date)."""
    out = []
    for raw in commands:
        m = re.match(r"^(?:\{envpython\}\s+-m\s+|python[\d.]*\s+-m\s+)?pip\s+install\s+(.*)$", raw.strip())
        if not m:
            continue
        args = m.group(1).replace("{toxinidir}/", "").replace("{toxinidir}", ".")
        words = [w for w in shlex_words(args) if w not in ("-q", "--quiet", "-U", "--upgrade")]
        if "{" in args or not words or words in (["-e", "."], ["."]):
            continue
        out.append(shlex.join(["uv", "pip", "install", *words]))
    return out


def shlex_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return []


def test_dirs(paths: list[str]) -> list[str]:
    """The usual test directory of the tree, if it holds test files."""
    for d in ("tests", "test", "testing"):
        if any(p.startswith(d + "/") and p.rsplit("/", 1)[-1].startswith("test") and p.endswith(".py")
               for p in paths):
            return [d]
    return []


def choose(declared: str | None, tox_commands: list[str], pytest_config: list[str], paths: list[str],
           testpaths: list[str]) -> tuple[TestCommand, Reason]:
    """(command, why) by the order of the module docstring."""
    if declared:
        argv = shlex.split(declared)
        kind = "pytest" if "pytest" in " ".join(argv[:4]) else "command"
        return (TestCommand(kind=kind, argv=argv, paths=[]),
                Reason(field="test_command", value=declared, source="declared test_command"))
    tox = from_tox(tox_commands)
    if tox is not None:
        return tox, Reason(field="test_command", value=tox.text, source="tox.ini [testenv] commands run pytest")
    conftests = [p for p in paths if p in ("conftest.py", "tests/conftest.py", "test/conftest.py",
                                           "testing/conftest.py")]
    if pytest_config or conftests:
        cmd = TestCommand(kind="pytest", argv=list(PYTEST), paths=[] if testpaths else test_dirs(paths))
        why = ", ".join(pytest_config or conftests)
        return cmd, Reason(field="test_command", value=cmd.text, source=f"pytest is configured ({why})")
    for runner, argv in (("runtests.py", ["python", "runtests.py"]), ("tests/runtests.py",
                                                                      ["python", "tests/runtests.py"]),
                         ("bin/test", ["python", "bin/test"])):
        if runner in paths:
            return (TestCommand(kind="command", argv=argv, paths=[]),
                    Reason(field="test_command", value=shlex.join(argv), source=f"the project's own runner {runner}"))
    cmd = TestCommand(kind="pytest", argv=list(PYTEST), paths=test_dirs(paths))
    return cmd, Reason(field="test_command", value=cmd.text, source="default: pytest (runs unittest tests too)")
