"""Each test's status from a test runner's output, read the way the SWE-bench reference harness reads it.

The published FAIL_TO_PASS / PASS_TO_PASS lists hold the names the harness's log parsers produced, so a verdict
agrees with the published one only if the names are taken exactly as the harness takes them, quirks included:

- ``pytest``: a line starting with a status (``PASSED t.py::test_a``; for ``FAILED``, ``" - "`` is dropped first,
  so ``FAILED t.py::test_a - msg`` names ``t.py::test_a``), the name being the first word after it (a parameter
  id with a space is cut there: ``t.py::test[a b]`` is named ``t.py::test[a``); or a verbose line
  ``t.py::test_a PASSED``. ``SKIPPED [2] t.py:12: reason`` (a skip summary) names no test. ``XPASS`` is not a
  status the harness knows: such a test is missing (a failure).
- ``pytest_options`` (requests, pylint): as pytest, then a parameter that is an absolute path keeps only its last
  part (``test_x[/tmp/a/b.py]`` -> ``test_x[/b.py]``).
- ``pytest_v2`` (astropy, scikit-learn, Sphinx): as pytest, after removing colour codes and control characters.
- ``django``: the text before ``" ... "`` is the name, whatever it is -- ``test_x (app.tests.C)``,
  ``test_x (app.tests.C.test_x)`` on Python 3.11, or the first line of a test's docstring, which unittest prints
  instead of the name; ``FAIL: name`` / ``ERROR: name`` lines name their second word; a lone ``ok`` line closes
  the last test seen (output interrupted the status line).
- ``sympy``: ``test_x ok`` / ``test_x F`` / ``test_x E``; the ``___ path.py:test_x ___`` header of a failure
  names ``path.py:test_x`` as failed.
- ``matplotlib``: a line starting with a status, ``MouseButton.LEFT``/``RIGHT`` read as ``1``/``3``.
- ``seaborn``: ``FAILED name``, ``name PASSED ...`` or ``PASSED name``.

Statuses are ``PASSED``, ``FAILED``, ``SKIPPED``, ``ERROR`` and ``XFAIL``. The output is the repository's (hostile)
text: it is only matched line by line, never evaluated; a line that matches nothing is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
STATUSES = (FAILED, PASSED, SKIPPED, ERROR, XFAIL)
PASSING = {PASSED, XFAIL}

_STATUS = "|".join(STATUSES)
_STATUS_FIRST = re.compile(rf"^({_STATUS})\s+(\S+)")
_TEST_FIRST = re.compile(rf"^(\S+)\s+({_STATUS})(?:\s|$)")
_SKIP_COUNT = re.compile(r"\[\d+\]")
_COLOUR = re.compile(r"\[(\d+)m")
_CONTROL = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))


def _pytest_line(line: str) -> tuple[str, str] | None:
    """(name, status) of one pytest result line, or None."""
    m = _STATUS_FIRST.match(line)
    if m:
        status, name = m.groups()
        if status == FAILED:
            name = line.replace(" - ", " ").split()[1]
        if status == SKIPPED and _SKIP_COUNT.match(name):
            return None  # "SKIPPED [3] t.py:12: reason" counts skips; it names no test
        return name, status
    m = _TEST_FIRST.match(line)
    return (m.group(1), m.group(2)) if m else None


def _pytest_lines(log: str, clean: Callable[[str], str] = lambda s: s,
                  name: Callable[[str], str] = lambda s: s) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in log.split("\n"):
        found = _pytest_line(clean(line))
        if found is not None:
            out[name(found[0])] = found[1]
    return out


def parse_pytest(log: str) -> dict[str, str]:
    return _pytest_lines(log)


def _option_name(name: str) -> str:
    m = re.search(r"(.*?)\[(.*)\]", name)
    if not m:
        return name
    main, option = m.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def parse_pytest_options(log: str) -> dict[str, str]:
    return _pytest_lines(log, name=_option_name)


def parse_pytest_v2(log: str) -> dict[str, str]:
    return _pytest_lines(log, clean=lambda s: _COLOUR.sub("", s).translate(_CONTROL))


_DJANGO_PASS = (" ... ok", " ... OK", " ...  OK")
_DJANGO_INTERRUPTED = [re.compile(p, re.MULTILINE) for p in (
    r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$")]


def parse_django(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    last: str | None = None
    for raw in log.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:
            out["--version is equivalent to version"] = PASSED
        if " ... " in line:
            last = line.split(" ... ")[0]
        for suffix in _DJANGO_PASS:
            if line.endswith(suffix):
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()  # a migration's progress ran into the status line
                out[line.rsplit(suffix, 1)[0]] = PASSED
                break
        if " ... skipped" in line:
            out[line.split(" ... skipped")[0]] = SKIPPED
        if line.endswith(" ... FAIL"):
            out[line.split(" ... FAIL")[0]] = FAILED
        if line.startswith("FAIL:") and len(line.split()) > 1:
            out[line.split()[1].strip()] = FAILED
        if line.endswith(" ... ERROR"):
            out[line.split(" ... ERROR")[0]] = ERROR
        if line.startswith("ERROR:") and len(line.split()) > 1:
            out[line.split()[1].strip()] = ERROR
        if line.startswith("ok") and last is not None:
            out[last] = PASSED  # the status came on a line of its own after other output
    for pattern in _DJANGO_INTERRUPTED:
        for m in pattern.finditer(log):
            out[m.group(1)] = PASSED
    return out


_SYMPY_FAILURE = re.compile(r"(_*) (.*)\.py:(.*) (_*)")


def parse_sympy(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _SYMPY_FAILURE.finditer(log):
        out[f"{m.group(2)}.py:{m.group(3)}"] = FAILED
    for raw in log.split("\n"):
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        if line.endswith(" E"):
            out[line.split()[0]] = ERROR
        if line.endswith(" F"):
            out[line.split()[0]] = FAILED
        if line.endswith(" ok"):
            out[line.split()[0]] = PASSED
    return out


def parse_matplotlib(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in log.split("\n"):
        line = raw.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3")
        if not line.startswith(STATUSES):
            continue
        if line.startswith(FAILED):
            line = line.replace(" - ", " ")
        words = line.split()
        if len(words) > 1:
            out[words[1]] = words[0]
    return out


def parse_seaborn(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in log.split("\n"):
        if line.startswith(FAILED):
            words = line.split()
            if len(words) > 1:
                out[words[1]] = FAILED
        elif f" {PASSED} " in line:
            words = line.split()
            if len(words) > 1 and words[1] == PASSED:
                out[words[0]] = PASSED
        elif line.startswith(PASSED):
            words = line.split()
            if len(words) > 1:
                out[words[1]] = PASSED
    return out


PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "pytest": parse_pytest, "pytest_options": parse_pytest_options, "pytest_v2": parse_pytest_v2,
    "django": parse_django, "sympy": parse_sympy, "matplotlib": parse_matplotlib, "seaborn": parse_seaborn}


def parse(parser: str, log: str) -> dict[str, str]:
    """Each test's status in ``log`` read by ``parser`` (one of PARSERS)."""
    try:
        return PARSERS[parser](log)
    except KeyError:
        raise ValueError(f"unknown test log parser {parser!r}; known: {', '.join(PARSERS)}") from None
