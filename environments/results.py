"""Reading a test run's results, for every runner an environment's test command calls: pytest's terminal output
(run with ``-rA``), and the default (or CI) output of jest, vitest, mocha, node's test runner, TAP producers (tap,
tape, node --test's TAP), ava, ``go test -json``, ``cargo test`` and JUnit XML reports (Maven's Surefire, Gradle):
the passed and failed test ids, failure messages, counts and the runner's summary line.

The output is the repository's tests' own text: read as data, bounded by what the sandbox kept, never run. What a
parser cannot read gives no ids and no counts (``parse_output``: a runner bosun does not know gives the exit code
and the output's tail only, never a wrong count). Test ids are ``FILE > title`` where the runner says which file
(jest, vitest), else the title path joined by `` > `` (mocha, node's runner, ava), ``PACKAGE/TestName`` (go),
the test's path (cargo) or ``CLASS#name`` (JUnit XML)."""

from __future__ import annotations

import re

from pydantic import BaseModel

_SUMMARY = re.compile(r"^=+ (?P<body>.*\d+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed|"
                      r"no tests ran).*?) =+$")
# "FAILED t.py::test_a[x y] - AssertionError: ..." (pytest before 5 says FAIL); a parameter id may hold spaces.
_LINE = re.compile(r"^(?P<status>PASSED|FAILED|FAIL|ERROR|XFAIL|XPASS|SKIPPED) (?P<id>[^\s\[]+(?:\[.*?\])?)"
                   r"(?: - (?P<msg>.*))?$")
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped)")


class TestReport(BaseModel):
    """Structured result of a test run."""

    __test__ = False  # not a pytest test class

    exit_code: int | None
    passed: list[str] = []
    failed: list[str] = []
    """Failed and errored test ids."""
    messages: dict[str, str] = {}
    """Failure message per failed test id (pytest's short summary)."""
    summary: str = ""
    """pytest's last summary line, e.g. '1 failed, 3 passed in 0.05s'."""
    counts: dict[str, int] = {}

    @property
    def green(self) -> bool:
        return self.exit_code == 0

    def headline(self, pytest: bool = True) -> str:
        """One line on how the run ended: the runner's summary line when there is one; else "tests timed out",
        "pytest exited N", or, for another runner (``pytest=False``), "exit N"."""
        if self.exit_code is None:
            return "tests timed out"
        return self.summary or (f"pytest exited {self.exit_code}" if pytest else f"exit {self.exit_code}")


def parse_pytest_output(output: str, exit_code: int | None) -> TestReport:
    report = TestReport(exit_code=exit_code)
    for line in output.splitlines():
        line = line.rstrip()
        m = _LINE.match(line)
        if m:
            tid = m["id"]
            if m["status"] in ("PASSED", "XPASS") and tid not in report.passed:
                report.passed.append(tid)
            elif m["status"] in ("FAILED", "FAIL", "ERROR") and tid not in report.failed:
                report.failed.append(tid)
                if m["msg"]:
                    report.messages[tid] = m["msg"]
            continue
        s = _SUMMARY.match(line)
        if s:
            report.summary = s["body"]
    if not report.summary:
        # -q mode prints the summary without '=' bars.
        for line in reversed(output.splitlines()):
            if _COUNT.search(line) and " in " in line:
                report.summary = line.strip()
                break
    for n, what in _COUNT.findall(report.summary):
        report.counts["errors" if what.startswith("error") else what] = int(n)
    return report


# -- every runner --------------------------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
"""Terminal escapes (colours, cursor moves, hyperlinks): removed before anything is read."""
RUNNERS = ("pytest", "jest", "vitest", "mocha", "node-test", "tap", "ava", "go", "cargo", "junit")
"""The runners whose output is read (an environment's ``runner``; "" or another name: exit code and tail only)."""


def parse_output(runner: str, output: str, exit_code: int | None) -> TestReport:
    """The report of a test run by ``runner`` (see ``RUNNERS``); an unknown runner's gives the exit code only."""
    text = ANSI.sub("", output)
    if runner in ("", "pytest"):
        return parse_pytest_output(text, exit_code)
    reader = _READERS.get(runner)
    report = TestReport(exit_code=exit_code)
    if reader is not None:
        reader(text.splitlines(), report)
    report.passed = [t for t in dict.fromkeys(report.passed) if t not in report.failed]
    report.failed = list(dict.fromkeys(report.failed))
    report.counts = {k: v for k, v in report.counts.items() if v}  # (as pytest's summary: no zeros)
    return report


PART_MARK = "::bosun-tests-part::"
"""The line a polyglot test run prints before each part's output (``PART_MARK`` + the part's folder)."""


def parse_parts(runner: str, parts: dict[str, str], output: str, exit_code: int | None) -> TestReport:
    """The report of a test run of several parts (the main ecosystem's output, then each part's after its
    ``PART_MARK`` line): each segment read by its runner (``parts``: folder -> runner), its ids under the part's
    folder, the reports merged; the exit code is the run's."""
    if not parts or PART_MARK not in output:
        return parse_output(runner, output, exit_code)
    segments = f"\n{output}".split(f"\n{PART_MARK}")
    merged = parse_output(runner, segments[0], exit_code) if segments[0].strip() else TestReport(exit_code=exit_code)
    for segment in segments[1:]:
        root, _, text = segment.partition("\n")
        if root not in parts:
            continue
        got = parse_output(parts[root], text, exit_code)
        merged.passed += [_under(root, t) for t in got.passed]
        merged.failed += [_under(root, t) for t in got.failed]
        merged.messages.update({_under(root, t): m for t, m in got.messages.items()})
        for name, n in got.counts.items():
            merged.counts[name] = merged.counts.get(name, 0) + n
        merged.summary = "; ".join(x for x in (merged.summary, f"{root or 'top'}: {got.summary}" if got.summary
                                               else "") if x)
    merged.exit_code = exit_code
    return merged


def _under(root: str, tid: str) -> str:
    """A part's test id in the repository's terms (under the part's folder)."""
    return tid if not root or tid.startswith(f"{root}/") else f"{root}/{tid}"


def _add(report: TestReport, status: str, tid: str, message: str = "") -> None:
    tid = tid.strip()
    if not tid:
        return
    if status == "passed":
        report.passed.append(tid)
    elif status == "failed":
        report.failed.append(tid)
        if message and tid not in report.messages:
            report.messages[tid] = message.strip()[:500]


def _counts(report: TestReport, summary: str, pattern: re.Pattern, names: dict[str, str]) -> None:
    report.summary = summary.strip()
    for n, what in pattern.findall(summary):
        key = names.get(what.lower())
        if key:
            report.counts[key] = report.counts.get(key, 0) + int(n)


_JEST_FILE = re.compile(r"^\s*(PASS|FAIL)\s+(\S+)")
_JEST_TEST = re.compile(r"^\s+(✓|✔|√|✕|✗|×|○|✎)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?\s*m?s\))?$")
_JEST_FAILURE = re.compile(r"^\s*●\s+(.+?)$")
_JEST_SUMMARY = re.compile(r"^Tests:\s+(.*\d+ total.*)$")
_JEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo|pending)")
JEST_NAMES = {"passed": "passed", "failed": "failed", "skipped": "skipped", "todo": "skipped", "pending": "skipped"}


def _jest(lines: list[str], report: TestReport) -> None:
    """jest's default reporter: ``PASS``/``FAIL FILE`` per file; below it (verbose, or a single file) ``✓ title``
    or ``✕ title``, indented under the describe blocks they are in; ``● describe › title`` heads each failure with
    its message; the ``Tests:`` line counts them."""
    file, stack, listing = "", [], False
    for i, line in enumerate(lines):
        if (m := _JEST_FILE.match(line)) is not None:
            file, stack, listing = m[2], [], True
            continue
        if (s := _JEST_SUMMARY.match(line)) is not None:
            _counts(report, s[1], _JEST_COUNT, JEST_NAMES)
            continue
        if (f := _JEST_FAILURE.match(line)) is not None:
            listing = False
            message = next((x.strip() for x in lines[i + 1:i + 8] if x.strip()), "")
            if f[1].startswith("Test suite failed to run"):
                _add(report, "failed", file, message)
            elif file:
                _add(report, "failed", f"{file} > " + " > ".join(p.strip() for p in f[1].split("›")), message)
            continue
        if not listing or not file or not line.strip():
            listing = listing and bool(line.strip())
            continue
        indent = len(line) - len(line.lstrip())
        stack = [(d, n) for d, n in stack if d < indent]
        t = _JEST_TEST.match(line)
        if t is None:
            stack.append((indent, line.strip()))  # a describe block's name, above its tests
        elif t[1] in ("✓", "✔", "√", "✕", "✗", "×"):
            _add(report, "passed" if t[1] in ("✓", "✔", "√") else "failed",
                 " > ".join([file, *(n for _, n in stack), t[2]]))


_VITEST_TEST = re.compile(r"^\s*(✓|✔|√|×|✗|✕|↓|·)\s+(.+?)(?:\s+\d+(?:\.\d+)?\s*m?s)?(?:\s+\[.*\])?$")
_VITEST_FAIL = re.compile(r"^\s*FAIL\s+(.+? > .+?)(?:\s+\[.*\])?$")
_VITEST_SUMMARY = re.compile(r"^\s*Tests\s+(.*\(\d+\).*)$")
_VITEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo)")


def _vitest(lines: list[str], report: TestReport) -> None:
    """vitest: per test (the verbose reporter, or a failure) ``✓ FILE > describe > title`` or ``×``; each failure
    headed ``FAIL FILE > describe > title``; the ``Tests`` line (``2 failed | 40 passed (42)``) counts them. A file
    line (``✓ FILE (5 tests)``) names no test."""
    for i, line in enumerate(lines):
        if (s := _VITEST_SUMMARY.match(line)) is not None:
            _counts(report, s[1], _VITEST_COUNT, JEST_NAMES)
            continue
        f = _VITEST_FAIL.match(line)
        if f:
            message = next((x.strip() for x in lines[i + 1:i + 6] if x.strip() and not set(x.strip()) <= {"⎯"}),
                           "")
            _add(report, "failed", f[1], message)
            continue
        t = _VITEST_TEST.match(line)
        if t and " > " in t[2] and not re.search(r"\(\d+ tests?", t[2]):
            _add(report, "passed" if t[1] in ("✓", "✔", "√") else "failed" if t[1] in ("×", "✗", "✕") else "",
                 t[2])


_MOCHA_PASS = re.compile(r"^(\s+)(?:✓|✔|√)\s+(.+?)(?:\s+\(\d+\s*ms\))?$")
_MOCHA_FAIL = re.compile(r"^(\s+)(\d+)\) (.+)$")
_MOCHA_SUMMARY = re.compile(r"^\s+(\d+) (passing|failing|pending)")


def _mocha(lines: list[str], report: TestReport) -> None:
    """mocha's spec reporter: describe blocks indented, ``✓ title`` or ``N) title`` below them; ``N passing``,
    ``N failing``, ``N pending``; then each failure again as ``N) describe\n   title:`` with its error."""
    stack: list[tuple[int, str]] = []
    numbered: dict[str, str] = {}
    summary: list[str] = []
    listing = False
    for i, line in enumerate(lines):
        s = _MOCHA_SUMMARY.match(line)
        if s:
            key = {"passing": "passed", "failing": "failed", "pending": "skipped"}[s[2]]
            report.counts[key] = int(s[1])
            summary.append(line.strip())
            listing = listing or s[2] == "failing"
            continue
        if listing:
            f = _MOCHA_FAIL.match(line)
            if f and f[2] in numbered:
                message = next((x.strip() for x in lines[i + 1:i + 12] if x.strip().startswith(("Error", "Assertion",
                                "TypeError", "Expected", "expected"))), "")
                if message:
                    report.messages.setdefault(numbered[f[2]], message[:500])
            continue
        p = _MOCHA_PASS.match(line)
        f = _MOCHA_FAIL.match(line)
        if p or f:
            indent = len((p or f)[1])
            stack = [(d, n) for d, n in stack if d < indent]
            title = " > ".join([n for _, n in stack] + [(p[2] if p else f[3])])
            if p:
                _add(report, "passed", title)
            else:
                numbered[f[2]] = title
                _add(report, "failed", title)
            continue
        if line.strip() and not line.strip().startswith(("-", "+", "at ")):
            indent = len(line) - len(line.lstrip())
            if indent >= 2:
                stack = [(d, n) for d, n in stack if d < indent] + [(indent, line.strip())]
    report.summary = ", ".join(summary)


_TAP = re.compile(r"^(\s*)(ok|not ok)\s+\d+(?:\s+-)?\s*(.*?)(?:\s+#\s*(SKIP|TODO)\b.*)?$", re.IGNORECASE)
_TAP_SUBTEST = re.compile(r"^(\s*)# Subtest: (.+)$")
_SPEC_TEST = re.compile(r"^(\s*)(✔|✖|﹣|\*)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?m?s\))?(?:\s+#.*)?$")
_TAP_COUNT = re.compile(r"^#\s*(tests|pass|fail|skipped|skip|todo|cancelled)\s+(\d+)$")
_SPEC_COUNT = re.compile(r"^ℹ\s*(tests|pass|fail|skipped|todo|cancelled)\s+(\d+)$")
TAP_NAMES = {"tests": "", "pass": "passed", "fail": "failed", "skipped": "skipped", "skip": "skipped",
             "todo": "skipped", "cancelled": "failed"}


def _tap(lines: list[str], report: TestReport) -> None:
    """TAP (tap, tape, node --test's TAP reporter) and node's spec reporter: ``ok N - title`` / ``not ok N -
    title`` (subtests indented, named by their ``# Subtest:`` line), ``✔ title`` / ``✖ title``; the ``# pass N``
    (``ℹ pass N``) lines count them. A parent whose subtests are listed is not a test of its own."""
    stack: list[tuple[int, str]] = []
    summary: list[str] = []
    for line in lines:
        c = _TAP_COUNT.match(line.strip()) or _SPEC_COUNT.match(line.strip())
        if c:
            key = TAP_NAMES.get(c[1])
            if key:
                report.counts[key] = report.counts.get(key, 0) + int(c[2])
            summary.append(f"{c[1]} {c[2]}")
            continue
        sub = _TAP_SUBTEST.match(line)
        if sub:
            indent = len(sub[1])
            stack = [(d, n) for d, n in stack if d < indent] + [(indent, sub[2].strip())]
            continue
        t = _TAP.match(line)
        s = _SPEC_TEST.match(line)
        if t:
            indent, ok, title, directive = len(t[1]), t[2].lower() == "ok", t[3], t[4]
        elif s and s[2] in ("✔", "✖"):
            indent, ok, title, directive = len(s[1]), s[2] == "✔", s[3], None
        else:
            continue
        parents = [n for d, n in stack if d < indent]
        if parents and parents[-1] == title:
            parents = parents[:-1]
        children = [n for d, n in stack if d > indent]
        stack = [(d, n) for d, n in stack if d <= indent]
        if children and (t is None or not directive):
            continue  # (a suite: its subtests were reported)
        if directive:
            continue
        _add(report, "passed" if ok else "failed", " > ".join([*parents, title]))
    report.summary = ", ".join(summary)


_AVA_TEST = re.compile(r"^\s*(✔|✘|✖)\s+(?:\[(fail|skip|todo|expected fail)\]:?\s+)?(.+?)(?:\s+\(\d+(?:\.\d+)?m?s\))?$")
_AVA_SUMMARY = re.compile(r"^\s*(\d+) (tests? passed|tests? failed|known failures?|tests? skipped|tests? todo)")


def _ava(lines: list[str], report: TestReport) -> None:
    """ava: ``✔ title`` / ``✘ [fail]: title``; ``N tests passed``, ``N test failed``."""
    summary = []
    for line in lines:
        s = _AVA_SUMMARY.match(line)
        if s:
            what = s[2].split()[-1]
            key = {"passed": "passed", "failed": "failed", "skipped": "skipped", "todo": "skipped"}.get(what)
            if key:
                report.counts[key] = int(s[1])
            summary.append(line.strip())
            continue
        t = _AVA_TEST.match(line)
        if t and t[2] not in ("skip", "todo"):
            _add(report, "failed" if t[1] != "✔" or t[2] == "fail" else "passed", t[3].replace(" › ", " > "))
    report.summary = ", ".join(summary)


def _go(lines: list[str], report: TestReport) -> None:
    """``go test -json``: one JSON event per line; a test's last ``pass``/``fail`` decides (``PACKAGE/Test``)."""
    import json as _json  # noqa: PLC0415  (stdlib; only go's output is JSON)

    final: dict[str, str] = {}
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            ev = _json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("Test") and ev.get("Action") in ("pass", "fail", "skip"):
            final[f"{ev.get('Package', '')}/{ev['Test']}"] = ev["Action"]
    for tid, action in final.items():
        if action != "skip":
            _add(report, "passed" if action == "pass" else "failed", tid)
    report.counts = {k: v for k, v in (("passed", len(report.passed)), ("failed", len(set(report.failed))),
                                       ("skipped", sum(1 for a in final.values() if a == "skip"))) if v}
    report.summary = ", ".join(f"{v} {k}" for k, v in report.counts.items())


_CARGO_TEST = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored)\b")
_DOCTEST_MODE = re.compile(r" - compile(?: fail)?$")
_CARGO_SUMMARY = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")


def _cargo(lines: list[str], report: TestReport) -> None:
    """``cargo test``: ``test path ... ok`` / ``FAILED``; one ``test result:`` line per test binary (summed)."""
    summary = []
    for line in lines:
        t = _CARGO_TEST.match(line)
        if t:
            if t[2] != "ignored":  # (a doc-test that only compiles says so after its name: not part of it)
                _add(report, "passed" if t[2] == "ok" else "failed", _DOCTEST_MODE.sub("", t[1]))
            continue
        s = _CARGO_SUMMARY.match(line)
        if s:
            for key, n in (("passed", s[1]), ("failed", s[2]), ("skipped", s[3])):
                report.counts[key] = report.counts.get(key, 0) + int(n)
            summary.append(line.strip())
    report.summary = summary[-1] if len(summary) == 1 else ", ".join(f"{v} {k}" for k, v in report.counts.items())


_JUNIT_MAX_CASES = 100_000


def _junit_cases(text: str):
    """The ``<testcase>`` elements of ``text``, each as its own text, found by plain searches (linear: an
    unclosed element ends the search, never a rescan)."""
    pos = 0
    for _ in range(_JUNIT_MAX_CASES):
        start = text.find("<testcase", pos)
        if start < 0:
            return
        head_end = text.find(">", start)
        if head_end < 0:
            return
        if text[head_end - 1] == "/":
            end = head_end + 1
        else:
            close = text.find("</testcase>", head_end)
            if close < 0:
                return
            end = close + len("</testcase>")
        yield text[start:end]
        pos = end


def _junit(lines: list[str], report: TestReport) -> None:
    """JUnit XML reports in the output (Surefire's, Gradle's, any runner's ``TEST-*.xml``, printed after the run):
    each ``<testcase>`` on its own, parsed by the standard library's XML parser (no DTD, so no entity of the
    report's is defined; one that does not parse is passed over); ``CLASS#name``, failed when it has a
    ``failure`` or ``error``, skipped with ``skipped``. A test in several reports (a rerun) keeps its last
    status."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415, N817  (stdlib; only JUnit reports are XML)

    final: dict[str, tuple[str, str]] = {}
    for element in _junit_cases("\n".join(lines)):
        try:
            case = ET.fromstring(element)
        except ET.ParseError:
            continue
        name, cls = case.get("name", "").strip(), case.get("classname", "").strip()
        if not name:
            continue
        tid = f"{cls}#{name}" if cls else name
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            final[tid] = ("failed", (bad.get("message") or bad.text or "").strip())
        elif case.find("skipped") is not None:
            final[tid] = ("skipped", "")
        else:
            final[tid] = ("passed", "")
    for tid, (status, message) in final.items():
        _add(report, status, tid, message)
    skipped = sum(1 for status, _ in final.values() if status == "skipped")
    report.counts = {k: v for k, v in (("passed", len(report.passed)), ("failed", len(report.failed)),
                                       ("skipped", skipped)) if v}
    report.summary = ", ".join(f"{v} {k}" for k, v in report.counts.items())


_READERS = {"jest": _jest, "vitest": _vitest, "mocha": _mocha, "node-test": _tap, "tap": _tap, "ava": _ava,
            "go": _go, "cargo": _cargo, "junit": _junit}
