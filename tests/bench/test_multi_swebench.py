"""bench/multi_swebench.py puts bosun's test ids in the Multi-SWE-bench harness's forms (its parsers' ids)."""

from __future__ import annotations

from bench.multi_swebench import harness_ids
from environments.results import parse_output

JEST = """\
PASS test/display.test.js
  ✓ Format no formatStr (4ms)
  Difference
    ✓ MonthDiff (2ms)
FAIL test/timezone.test.js
  ✕ TZ with Locale (3ms)

  ● TZ with Locale

    expected 9

Tests:       1 failed, 2 passed, 3 total
"""

MOCHA = """\
  app
    .param
      ✓ should work
      1) should fail
  2 passing (3ms)
  1 failing
"""


def test_jest_ids_are_suites_and_file_title_pairs():
    output = JEST
    passed, failed = harness_ids(parse_output("jest", output, 1), "jest", output)
    assert passed == {"test/display.test.js", "test/display.test.js:Format no formatStr",
                      "test/display.test.js:MonthDiff"}
    assert failed == {"test/timezone.test.js", "test/timezone.test.js:TZ with Locale"}


def test_mocha_ids_are_titles_or_full_titles():
    report = parse_output("mocha", MOCHA, 1)
    assert harness_ids(report, "title", MOCHA) == ({"should work"}, {"should fail"})
    from bench.multi_swebench import _form
    assert _form("Data URL > should support requesting data URL as a String (text)", "title") == \
        "should support requesting data URL as a String"  # the harness's reader takes "(text)" for a duration
    assert harness_ids(report, "fulltitle", MOCHA) == ({"app .param should work"}, {"app .param should fail"})
