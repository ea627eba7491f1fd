"""bosun eval judges Multi-SWE-bench instances: its rows read as instances, each repository's recipe by pull
request number (evaluation/recipes.toml ``[multi]``), and bosun's test ids in the harness's forms (its parsers'
ids: evaluation/testlogs.py ``RUNNER:FORM``)."""

from __future__ import annotations

import json

import pytest

from evaluation.harness import runner_command
from evaluation.recipes import recipe_for
from evaluation.swebench import Instance, load_instances
from evaluation.testlogs import FAILED, PASSED, harness_form, parse
from infra.errors import ConfigError


def ids(statuses: dict[str, str]) -> tuple[set[str], set[str]]:
    return ({t for t, v in statuses.items() if v == PASSED}, {t for t, v in statuses.items() if v == FAILED})

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
    passed, failed = ids(parse("jest:jest", JEST))
    assert passed == {"test/display.test.js", "test/display.test.js:Format no formatStr",
                      "test/display.test.js:MonthDiff"}
    assert failed == {"test/timezone.test.js", "test/timezone.test.js:TZ with Locale"}


def test_mocha_ids_are_titles_or_full_titles():
    assert ids(parse("mocha:title", MOCHA)) == ({"should work"}, {"should fail"})
    assert harness_form("Data URL > should support requesting data URL as a String (text)", "title") == \
        "should support requesting data URL as a String"  # the harness's reader takes "(text)" for a duration
    assert ids(parse("mocha:fulltitle", MOCHA)) == ({"app .param should work"}, {"app .param should fail"})
    with pytest.raises(ValueError, match="RUNNER:FORM"):
        parse("mocha:shape", MOCHA)


ROW = {"instance_id": "expressjs__express-4852", "org": "expressjs", "repo": "express", "number": 4852,
       "base": {"sha": "a" * 40}, "fix_patch": "diff --git",
       "test_patch": "diff --git a/test/app.js b/test/app.js\n--- a/test/app.js\n+++ b/test/app.js\n",
       "f2p_tests": {"should work": {"run": "NONE", "test": "FAIL", "fix": "PASS"}}, "p2p_tests": {},
       "resolved_issues": [{"title": "param breaks", "body": "with a regexp"}]}


def test_a_multi_swebench_row_is_an_instance_judged_by_its_pull_requests_recipe(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "number": 5000}) + "\n")
    first, second = load_instances(rows)
    assert first.instance_id == "expressjs__express-4852" and first.repo == "expressjs/express"
    assert first.FAIL_TO_PASS == ["should work"] and first.version == "4852" and "param breaks" in \
        first.problem_statement
    spec, other = recipe_for(first.repo, first.version), recipe_for(second.repo, second.version)
    assert spec.parser == "mocha:title" and other.parser == "mocha:fulltitle"  # the harness's per-PR readers
    assert spec.detected and spec.whole_suite  # bosun's detected environment, the whole suite
    assert runner_command(spec, first) == "npm test"  # no test files appended
    dayjs = recipe_for("iamkun/dayjs", "1047")
    assert dayjs.test_cmd == "npm test -- --verbose" and dayjs.parser == "jest:jest"
    assert recipe_for("psf/requests", "2.0").detected is False and isinstance(first, Instance)


@pytest.mark.parametrize("bad, message", [({"f2p_tests": 7}, "FAIL_TO_PASS"), ({"base": "abc"}, "base_commit"),
                                          ({"p2p_tests": [1, 2]}, "PASS_TO_PASS")])
def test_a_multi_swebench_row_that_is_not_one_is_refused_naming_the_field(tmp_path, bad, message):


    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({**ROW, **bad}) + "\n")
    with pytest.raises(ConfigError, match=message):
        load_instances(rows)
