"""Each test's status from a test runner's output: pytest (``-rA`` summary and verbose lines), sympy's
``bin/test``, Django's ``runtests.py`` and unittest (``--verbosity 2``).

Statuses are ``PASSED``, ``FAILED``, ``ERROR``, ``SKIPPED`` and ``XFAIL`` (an expected failure counts as passing,
as the SWE-bench harness counts it). The output is the repository's (hostile) text: it is only matched line by
line with anchored patterns, never evaluated; a line that matches nothing is ignored.
"""

from __future__ import annotations

import re

PASSED, FAILED, ERROR, SKIPPED, XFAIL = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL"
PASSING = {PASSED, XFAIL}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# pytest -rA short summary: "PASSED tests/test_x.py::test_a", "FAILED tests/x.py::test_b - AssertionError: ...".
# The name is the first word after the status, as the SWE-bench harness takes it: a parameter id with a space in
# it ("t.py::test_a[a b]") is named "t.py::test_a[a" there, and so in the published FAIL_TO_PASS lists.
# pytest before 5 says "FAIL" there.
_PYTEST_SUMMARY = re.compile(r"^(PASSED|FAILED|FAIL|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S+)")
# pytest -v: "tests/test_x.py::test_a PASSED  [ 10%]"
_PYTEST_VERBOSE = re.compile(r"^(\S+::\S+(?:\[.*\])?)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
# sympy bin/test: "test_foo ok", "test_bar F", "test_baz E", "test_qux f" (expected failure), "test_s s"
_SYMPY = re.compile(r"^(test_\w+)\s+(ok|F|E|f|s|X|w)\s*$")
# Django / unittest -v 2: "test_x (module.Class) ... ok", "test_x (module.Class.test_x)\nDocstring ... ok"
_UNITTEST = re.compile(r"^(\w+) \(([\w.]+)\)(?:\s+\S.*?)?\s\.\.\.\s*(ok|FAIL|ERROR|skipped.*|expected failure"
                       r"|unexpected success)\s*$")
_UNITTEST_OPEN = re.compile(r"^(\w+) \(([\w.]+)\)\s*$")
_UNITTEST_CLOSE = re.compile(r"^.*\s\.\.\.\s*(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)\s*$")
_UNITTEST_STATUS = {"ok": PASSED, "FAIL": FAILED, "ERROR": ERROR, "expected failure": XFAIL,
                    "unexpected success": FAILED}
_SYMPY_STATUS = {"ok": PASSED, "F": FAILED, "E": ERROR, "f": XFAIL, "s": SKIPPED, "X": FAILED, "w": SKIPPED}


def parse_pytest(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in log.splitlines():
        line = _ANSI.sub("", raw).strip()
        m = _PYTEST_SUMMARY.match(line)
        if m:
            out[m.group(2)] = _pytest_status(m.group(1))
            continue
        m = _PYTEST_VERBOSE.match(line)
        if m:
            out.setdefault(m.group(1), _pytest_status(m.group(2)))
    return out


def _pytest_status(word: str) -> str:
    return {"XPASS": PASSED, "FAIL": FAILED}.get(word, word)


def parse_sympy(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in log.splitlines():
        m = _SYMPY.match(_ANSI.sub("", raw).strip())
        if m:
            out[m.group(1)] = _SYMPY_STATUS[m.group(2)]
    return out


def unittest_id(name: str, where: str) -> str:
    """SWE-bench's name of a unittest/Django test: ``test_x (module.Class)`` (Django 4+ prints
    ``module.Class.test_x`` inside the parentheses; the class path is taken without the method)."""
    if where.endswith("." + name):
        where = where[: -len(name) - 1]
    return f"{name} ({where})"


def parse_unittest(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pending: str | None = None
    for raw in log.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        m = _UNITTEST.match(line)
        if m:
            out[unittest_id(m.group(1), m.group(2))] = _unittest_status(m.group(3))
            pending = None
            continue
        m = _UNITTEST_OPEN.match(line)
        if m:  # the result comes after a docstring line
            pending = unittest_id(m.group(1), m.group(2))
            continue
        m = _UNITTEST_CLOSE.match(line)
        if m and pending:
            out[pending] = _unittest_status(m.group(1))
            pending = None
    return out


def _unittest_status(word: str) -> str:
    return SKIPPED if word.startswith("skipped") else _UNITTEST_STATUS[word]


PARSERS = {"pytest": parse_pytest, "sympy": parse_sympy, "django": parse_unittest, "unittest": parse_unittest}


def parse(runner: str, log: str) -> dict[str, str]:
    """Each test's status in ``log`` of ``runner`` (pytest, sympy, django, unittest)."""
    try:
        return PARSERS[runner](log)
    except KeyError:
        raise ValueError(f"unknown test runner {runner!r}; known: {', '.join(PARSERS)}") from None
