"""Each test's status from a test runner's output, read the way the SWE-bench reference harness reads it.

The published FAIL_TO_PASS / PASS_TO_PASS lists hold the names the harness's log parsers produced, so a verdict
agrees with the published one only if the names are taken exactly as the harness takes them, quirks included:

- ``pytest``: a line starting with a status word (``PASSED t.py::test_a``; for ``FAILED``, ``" - "`` is dropped
  first): the second word is the name, the first the status -- a parameter id with a space is cut there
  (``t.py::test[a b]`` is named ``t.py::test[a``); verbose lines (``t.py::test_a PASSED``) are not read, nor is
  ``XPASS``: such a test is missing (a failure).
- ``pytest_options`` (requests, pylint): as pytest, then a parameter that is an absolute path keeps only its last
  part (``test_x[/tmp/a/b.py]`` -> ``test_x[/b.py]``).
- ``pytest_v2`` (astropy, scikit-learn, Sphinx): as pytest, after removing colour codes and control characters,
  and a line that ends with a status names its first word (pytest 3's ``-vv`` lines).
- ``django``: the text before ``" ... "`` is the name, whatever it is -- ``test_x (app.tests.C)``,
  ``test_x (app.tests.C.test_x)`` on Python 3.11, or the first line of a test's docstring, which unittest prints
  instead of the name; ``FAIL: name`` / ``ERROR: name`` lines name their second word; a lone ``ok`` line closes
  the last test seen (output interrupted the status line).
- ``sympy``: ``test_x ok`` / ``test_x F`` / ``test_x E``; the ``___ path.py:test_x ___`` header of a failure
  names ``path.py:test_x`` as failed.
- ``matplotlib``: a line starting with a status, ``MouseButton.LEFT``/``RIGHT`` read as ``1``/``3``.
- ``seaborn``: ``FAILED name``, ``name PASSED ...`` or ``PASSED name``.
- ``pytest_any`` (not the harness's: bosun's runner for other repositories): status lines and verbose lines,
  on any pytest, with the harness's names of absolute-path parameters as aliases.

Statuses are ``PASSED``, ``FAILED``, ``SKIPPED``, ``ERROR`` and ``XFAIL``. The output is the repository's (hostile)
text: it is only matched line by line, never evaluated; a line that matches nothing is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from environments.results import RUNNERS, parse_output

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
STATUSES = (FAILED, PASSED, SKIPPED, ERROR, XFAIL)
PASSING = {PASSED, XFAIL}

_COLOUR = re.compile(r"\[(\d+)m")
_CONTROL = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))
_OPTION = re.compile(r"(.*?)\[(.*)\]")


def _status_first(line: str) -> tuple[str, str] | None:
    """(name, status) of a line that starts with a status word: the second word is the name, the first the
    status (``SKIPPED [1] t.py:12: why`` names "[1]", as in the harness: no published list has such a name)."""
    if not line.startswith(STATUSES):
        return None
    if line.startswith(FAILED):
        line = line.replace(" - ", " ")
    words = line.split()
    return (words[1], words[0]) if len(words) > 1 else None


def _by_line(log: str, read: Callable[[str], tuple[str, str] | None]) -> dict[str, str]:
    """{name: status} of every line ``read`` finds a test in (a later line wins)."""
    out: dict[str, str] = {}
    for line in log.split("\n"):
        found = read(line)
        if found is not None:
            out[found[0]] = found[1]
    return out


def parse_pytest(log: str) -> dict[str, str]:
    return _by_line(log, _status_first)


def _option_name(name: str) -> str:
    m = _OPTION.search(name)
    if not m:
        return name
    main, option = m.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def parse_pytest_options(log: str) -> dict[str, str]:
    return {_option_name(name): status for name, status in parse_pytest(log).items()}


def parse_pytest_v2(log: str) -> dict[str, str]:
    """pytest with colour codes and control characters removed; a line that ends with a status (``t.py::test_a
    PASSED``, as pytest 3 prints with ``-vv``) names its first word."""
    def read(raw: str) -> tuple[str, str] | None:
        line = _COLOUR.sub("", raw).translate(_CONTROL)
        found = _status_first(line)
        if found is None and line.endswith(STATUSES) and len(words := line.split()) > 1:
            found = (words[0], words[1])
        return found
    return _by_line(log, read)


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
    return _by_line(log, lambda line: _status_first(line.replace("MouseButton.LEFT", "1")
                                                    .replace("MouseButton.RIGHT", "3")))


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


_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""A terminal escape sequence (colour): a project's ``addopts = --color=yes`` (astropy) puts them around names."""
_VERBOSE = re.compile(rf"^(\S.*?) ({'|'.join(STATUSES)})(?: \(.*\))?(?: +\[ *\d+%\])?$")
"""A verbose line: the name, the status, a reason (pytest 7: ``SKIPPED (why)``), the progress."""


def parse_pytest_any(log: str) -> dict[str, str]:
    """bosun's own runner for a repository the harness does not know (``pytest -rA -v``), on whatever pytest its
    environment has: the summary's status lines (``-rA`` prints passed tests only from pytest 4.6 on), and
    before them the verbose lines (``t.py::test_a PASSED [ 50%]``; a parameter id may hold spaces). Every name
    whose parameter is an absolute path is also given under the harness's name for it (``test_x[/b.py]``, see
    ``pytest_options``), unless a test already has that name: rows made by the harness name such tests so.
    Terminal escape sequences are removed first (only those: a parameter id may hold ``[5m]``)."""
    def read(raw: str) -> tuple[str, str] | None:
        line = _ESCAPE.sub("", raw)
        found = _status_first(line)
        if found is None and "::" in line and (m := _VERBOSE.match(line.rstrip())):
            found = (m.group(1), m.group(2))
        return found
    out = _by_line(log, read)
    for name, status in list(out.items()):
        out.setdefault(_option_name(name), status)
    return out


# -- Multi-SWE-bench: bosun's readers of each runner, its ids in the harness's form -----------------------------

FORMS = ("jest", "title", "fulltitle")
"""How the Multi-SWE-bench harness names a test: ``jest``: ``FILE`` per suite (its ``PASS FILE`` / ``FAIL FILE``
line) and ``FILE:TITLE`` per test (the leaf title); ``title``: the leaf title (its spec reader drops a last
parenthesised word, as if a duration: ``... String (text)``); ``fulltitle``: the describe chain and the title
joined by spaces (mocha's ``fullTitle``)."""


def harness_form(tid: str, form: str) -> str:
    """A test id of environments/results.py (``FILE > describe > title``) in the harness's ``form``."""
    parts = tid.split(" > ")
    if form == "jest":
        return f"{parts[0]}:{parts[-1]}" if len(parts) > 1 else parts[0]
    if form == "fulltitle":
        return " ".join(parts)
    return re.sub(r"\s\(\d*\.?\d*\s*\w+\)$", "", parts[-1])


def parse_runner(runner: str, form: str, log: str) -> dict[str, str]:
    """{id: status} of a run of ``runner`` (environments/results.py reads it), ids in the harness's ``form``; a
    jest suite's ``PASS FILE`` / ``FAIL FILE`` line is an id of its own. A test both passed and failed (a retry)
    is failed."""
    report = parse_output(runner, log, None)
    out = {harness_form(t, form): PASSED for t in report.passed}
    out |= {harness_form(t, form): FAILED for t in report.failed}
    if form == "jest":
        for line in log.splitlines():
            words = line.strip().split()
            if len(words) >= 2 and words[0] in ("PASS", "FAIL"):
                out[words[1]] = PASSED if words[0] == "PASS" and out.get(words[1]) != FAILED else FAILED
    return out


PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "pytest": parse_pytest, "pytest_options": parse_pytest_options, "pytest_v2": parse_pytest_v2,
    "pytest_any": parse_pytest_any,
    "django": parse_django, "sympy": parse_sympy, "matplotlib": parse_matplotlib, "seaborn": parse_seaborn}


def parse(parser: str, log: str) -> dict[str, str]:
    """Each test's status in ``log`` read by ``parser`` (one of PARSERS, or ``RUNNER:FORM`` of a Multi-SWE-bench
    recipe: ``parse_runner``)."""
    runner, _, form = parser.partition(":")
    if form:
        if form not in FORMS or runner not in RUNNERS:
            raise ValueError(f"unknown test log parser {parser!r}: RUNNER:FORM with a runner of "
                             f"{', '.join(sorted(RUNNERS))} and a form of {', '.join(FORMS)}")
        return parse_runner(runner, form, log)
    try:
        return PARSERS[parser](log)
    except KeyError:
        raise ValueError(f"unknown test log parser {parser!r}; known: {', '.join(PARSERS)}") from None
