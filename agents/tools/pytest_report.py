"""Parse pytest's terminal output (run with ``-rA``) into passed/failed test ids and failure messages."""

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
    """Structured result of a pytest run."""

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
