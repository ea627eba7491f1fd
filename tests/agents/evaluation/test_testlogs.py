"""Test statuses from the runners' real output formats (pytest -rA and -v, sympy's bin/test, Django's runtests)."""

from __future__ import annotations

import pytest

from agents.evaluation.runners import command, django_label, runner_for
from agents.evaluation.testlogs import parse, unittest_id

PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.9.20, pytest-5.4.3, py-1.11.0, pluggy-0.13.1
collected 5 items

tests/test_utils.py::test_super_len PASSED                               [ 20%]
tests/test_utils.py::test_guess_filename[value0] FAILED                  [ 40%]
tests/test_utils.py::test_skip SKIPPED                                   [ 60%]

=================================== FAILURES ===================================
_________________________ test_guess_filename[value0] _________________________
E       assert None == 'file.txt'
=========================== short test summary info ============================
PASSED tests/test_utils.py::test_super_len
PASSED tests/test_utils.py::test_to_key_val_list[value1-expected1]
FAILED tests/test_utils.py::test_guess_filename[value0] - assert None == 'file.txt'
XFAIL tests/test_utils.py::test_known_bug
  reason: not fixed yet
ERROR tests/test_broken.py - ModuleNotFoundError: No module named 'brotli'
========== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 error in 0.52s ==========
"""

SYMPY = """\
============================= test process starts ==============================
executable:         /usr/bin/python3  (3.9.20-final-0) [CPython]
architecture:       64-bit
random seed:        12345678

sympy/core/tests/test_basic.py[3]
test__aresame ok
test_structure F
test_equality E
sympy/core/tests/test_expr.py[2]
test_not_implemented f
test_slow_thing s                                                           [FAIL]

________________________________________________________________________________
_________ sympy/core/tests/test_basic.py:test_structure ________________________
"""

DJANGO = """\
Testing against Django installed in '/testbed/django'
Importing application queries
test_ticket_24605 (queries.tests.Queries6Tests) ... ok
test_values_in_subquery (queries.tests.ValuesSubqueryTests)
Subquery with values() ... FAIL
test_exists (queries.tests.ExistsSql.test_exists) ... ERROR
test_skipped (queries.tests.Queries6Tests) ... skipped 'Database has feature(s) supports_slicing'
test_known (queries.tests.Queries6Tests) ... expected failure

======================================================================
FAIL: test_values_in_subquery (queries.tests.ValuesSubqueryTests)
"""


def test_pytest_summary_and_verbose_lines():
    got = parse("pytest", PYTEST)
    assert got == {"tests/test_utils.py::test_super_len": "PASSED",
                   "tests/test_utils.py::test_guess_filename[value0]": "FAILED",
                   "tests/test_utils.py::test_skip": "SKIPPED",
                   "tests/test_utils.py::test_to_key_val_list[value1-expected1]": "PASSED",
                   "tests/test_utils.py::test_known_bug": "XFAIL",
                   "tests/test_broken.py": "ERROR"}
    assert parse("pytest", "\x1b[32mPASSED\x1b[0m t.py::test_a") == {"t.py::test_a": "PASSED"}
    # pytest before 5 (requests 2.22's environment) writes FAIL in the short summary
    assert parse("pytest", "FAIL tests/test_requests.py::test_a\nPASSED t.py::b") == {
        "tests/test_requests.py::test_a": "FAILED", "t.py::b": "PASSED"}


def test_pytest_names_are_the_first_word_after_the_status_as_the_harness_takes_them():
    log = ("PASSED tests/test_ext.py::test_trans[a b]\n"
           "FAILED tests/test_ext.py::test_plural[x - y] - AssertionError: no\n"
           "SKIPPED [1] tests/test_ext.py:12: needs babel\n")
    got = parse("pytest", log)
    assert got["tests/test_ext.py::test_trans[a"] == "PASSED"  # as in the published FAIL_TO_PASS lists
    assert got["tests/test_ext.py::test_plural[x"] == "FAILED"


def test_sympy_bin_test():
    assert parse("sympy", SYMPY) == {"test__aresame": "PASSED", "test_structure": "FAILED",
                                     "test_equality": "ERROR", "test_not_implemented": "XFAIL"}


def test_django_and_unittest_with_docstrings_and_new_style_names():
    assert parse("django", DJANGO) == {
        "test_ticket_24605 (queries.tests.Queries6Tests)": "PASSED",
        "test_values_in_subquery (queries.tests.ValuesSubqueryTests)": "FAILED",
        "test_exists (queries.tests.ExistsSql)": "ERROR",
        "test_skipped (queries.tests.Queries6Tests)": "SKIPPED",
        "test_known (queries.tests.Queries6Tests)": "XFAIL"}
    assert unittest_id("test_a", "m.C.test_a") == "test_a (m.C)" and unittest_id("test_a", "m.C") == "test_a (m.C)"


def test_hostile_output_is_only_matched():
    log = "PASSED $(rm -rf /)\n" + "x" * 100_000 + "\nFAILED t.py::test_b - ; echo pwned\n"
    assert parse("pytest", log) == {"$(rm": "PASSED", "t.py::test_b": "FAILED"}  # matched as names, never run
    with pytest.raises(ValueError, match="unknown test runner 'nose'"):
        parse("nose", "")


def test_runners_and_commands():
    assert runner_for("sympy/sympy", set()) == "sympy" and runner_for("django/django", set()) == "django"
    assert runner_for("acme/app", {"tests/runtests.py"}) == "django" and runner_for("psf/requests", set()) == "pytest"
    assert command("pytest", ["tests/test_a.py", "tests/it's.py", "--evil"]) == \
        "python -m pytest -rA -p no:cacheprovider tests/test_a.py 'tests/it'\"'\"'s.py'"
    assert command("django", ["tests/queries/tests.py", "docs/x.txt"]).endswith("--parallel 1 queries.tests")
    sympy = command("sympy", ["sympy/core/tests/test_basic.py"])
    assert "bin/test -C --verbose sympy/core/tests/test_basic.py" in sympy
    assert django_label("django/db/x.py") is None
