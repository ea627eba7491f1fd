"""Test statuses read from the runners' real output formats exactly as the SWE-bench harness reads them: the
published FAIL_TO_PASS / PASS_TO_PASS names are the harness's, quirks included."""

from __future__ import annotations

import pytest

from evaluation.testlogs import PARSERS, parse

PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.9.20, pytest-7.4.0, pluggy-1.3.0
collected 6 items

tests/test_utils.py .F.sx                                                 [100%]

=================================== FAILURES ===================================
_________________________ test_guess_filename[value0] _________________________
E       assert None == 'file.txt'
=========================== short test summary info ============================
PASSED tests/test_utils.py::test_super_len
PASSED tests/test_utils.py::test_to_key_val_list[value1-expected1]
PASSED tests/test_utils.py::test_trans[a b]
SKIPPED [1] tests/test_utils.py:40: needs brotli
XFAIL tests/test_utils.py::test_known_bug - reason: not fixed yet
XPASS tests/test_utils.py::test_fixed_meanwhile
FAILED tests/test_utils.py::test_guess_filename[value0] - assert None == 'file.txt'
ERROR tests/test_broken.py - ModuleNotFoundError: No module named 'brotli'
========== 1 failed, 3 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error in 0.52s ==========
"""


def test_pytest_as_the_harness_reads_it():
    assert parse("pytest", PYTEST) == {
        "tests/test_utils.py::test_super_len": "PASSED",
        "tests/test_utils.py::test_to_key_val_list[value1-expected1]": "PASSED",
        "tests/test_utils.py::test_trans[a": "PASSED",  # a parameter id with a space is cut there
        "tests/test_utils.py::test_known_bug": "XFAIL",
        "tests/test_utils.py::test_guess_filename[value0]": "FAILED",
        "tests/test_broken.py": "ERROR",
        "[1]": "SKIPPED",  # the skip summary's count, as the harness reads it (no published list names it)
    }  # XPASS is no status the harness knows: that test is missing


def test_verbose_lines_and_colour():
    """Verbose lines are read by pytest_v2 only: the plain parser would otherwise also take the lines of the runs
    pytest's own tests start (pytester), which the published lists do not have."""
    log = "tests/test_a.py::test_one PASSED                     [ 50%]\ntests/test_a.py::test_two FAILED\n"
    assert parse("pytest", log) == {}
    assert parse("pytest_v2", log) == {"tests/test_a.py::test_two": "FAILED"}  # a line that ends with a status
    coloured = "\x1b[32mPASSED\x1b[0m tests/t.py::test_a\n\x1b[31mFAILED\x1b[0m tests/t.py::test_b - boom\n"
    assert parse("pytest", coloured) == {}  # the plain parser (pytest, flask, xarray) reads no colour
    assert parse("pytest_v2", coloured) == {"tests/t.py::test_a": "PASSED", "tests/t.py::test_b": "FAILED"}


def test_options_parser_keeps_only_the_last_part_of_a_path_parameter():
    log = ("PASSED tests/test_self.py::test_run[/tmp/pytest-of-root/x/regrtest_data/a.py]\n"
           "PASSED tests/test_func.py::test_x[//double]\nPASSED tests/test_func.py::test_y[/a/*.py]\n")
    assert parse("pytest_options", log) == {"tests/test_self.py::test_run[/a.py]": "PASSED",
                                            "tests/test_func.py::test_x[//double]": "PASSED",
                                            "tests/test_func.py::test_y[/a/*.py]": "PASSED"}


SYMPY = """\
============================= test process starts ==============================
executable:         /opt/bosun-env/venv/bin/python  (3.9.2-final-0) [CPython]
random seed:        12345678

sympy/core/tests/test_basic.py[4]
test__aresame ok
test_structure F
test_equality E
test_last ok                                                                [FAIL]

sympy/core/tests/test_expr.py[2]
test_not_implemented f
test_slow_thing s                                                             [OK]

________________________________________________________________________________
_________ sympy/core/tests/test_basic.py:test_structure ________________________
Traceback (most recent call last):
"""


def test_sympy_bin_test_as_the_harness_reads_it():
    assert parse("sympy", SYMPY) == {
        "test__aresame": "PASSED", "test_structure": "FAILED", "test_equality": "ERROR",
        "sympy/core/tests/test_basic.py:test_structure": "FAILED",
    }  # the last test of a file ends with [OK]/[FAIL] and is not read; f and s are not statuses


DJANGO = """\
Testing against Django installed in '/workspace/django'
Importing application queries
Creating test database for alias 'default'...
test_ticket_24605 (queries.tests.Queries6Tests) ... ok
test_values_in_subquery (queries.tests.ValuesSubqueryTests)
Subquery with values() ... FAIL
test_exists (queries.tests.ExistsSql.test_exists) ... ERROR
test_skipped (queries.tests.Queries6Tests) ... skipped 'Database has feature(s) supports_slicing'
test_known (queries.tests.Queries6Tests) ... expected failure
test_slow (queries.tests.Slow) ... Internal Server Error: /admin/
ok
test_noisy (queries.tests.Noisy) ... System check identified no issues (0 silenced).
ok

======================================================================
FAIL: test_values_in_subquery (queries.tests.ValuesSubqueryTests)
Subquery with values()
----------------------------------------------------------------------
"""


def test_django_as_the_harness_reads_it():
    assert parse("django", DJANGO) == {
        "test_ticket_24605 (queries.tests.Queries6Tests)": "PASSED",
        "Subquery with values()": "FAILED",  # a test with a docstring is named by it
        "test_values_in_subquery": "FAILED",  # the FAIL: line names its second word
        "test_exists (queries.tests.ExistsSql.test_exists)": "ERROR",  # Python 3.11's names are kept whole
        "test_skipped (queries.tests.Queries6Tests)": "SKIPPED",
        "test_slow (queries.tests.Slow)": "PASSED",  # the ok came on a line of its own
        "test_noisy (queries.tests.Noisy)": "PASSED",
    }  # "expected failure" is no status the harness reads


def test_matplotlib_and_seaborn():
    log = ("PASSED lib/matplotlib/tests/test_widgets.py::test_click[MouseButton.LEFT]\n"
           "FAILED lib/matplotlib/tests/test_axes.py::test_a - AssertionError\nSKIPPED\n")
    assert parse("matplotlib", log) == {"lib/matplotlib/tests/test_widgets.py::test_click[1]": "PASSED",
                                        "lib/matplotlib/tests/test_axes.py::test_a": "FAILED"}
    log = ("tests/test_core.py::test_a PASSED [ 10%]\nPASSED tests/test_core.py::test_b\n"
           "FAILED tests/test_core.py::test_c - boom\nSKIPPED tests/test_core.py::test_d\nFAILED\n")
    assert parse("seaborn", log) == {"tests/test_core.py::test_a": "PASSED", "tests/test_core.py::test_b": "PASSED",
                                     "tests/test_core.py::test_c": "FAILED"}


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_hostile_output_is_only_matched(parser):
    log = ("PASSED $(rm -rf /)\n" + "x" * 100_000 + "\nFAILED\nFAIL:\nERROR:\n\x00\x1b[2J test_a ok\n"
           "test_b ... ok\n" + "_" * 5000 + " a.py:b " + "_" * 5000 + "\n")
    got = parse(parser, log)
    assert isinstance(got, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in got.items())


def test_an_unknown_parser_is_refused():
    with pytest.raises(ValueError, match="unknown test log parser 'nose'"):
        parse("nose", "")


PYTEST_3_2 = """\
============================= test session starts ==============================
platform linux -- Python 3.9.2, pytest-3.2.5, py-1.10.0, pluggy-0.4.0 -- /opt/bosun-env/venv/bin/python
collected 3 items

test_requests.py::RequestsTestCase::test_entry_points PASSED
test_requests.py::RequestsTestCase::test_invalid_url PASSED
test_requests.py::RequestsTestCase::test_no_content_length FAILED

=================================== FAILURES ===================================
____________________ RequestsTestCase.test_no_content_length ____________________
E       TypeError: __init__() got an unexpected keyword argument 'strict'
===================== 1 failed, 2 passed in 0.31 seconds ======================
"""


def test_bosuns_own_runner_reads_verbose_lines_of_a_pytest_before_4_6():
    """pytest 3.2 ignores -rA's A: no status line for a passed test, only the verbose line."""
    assert parse("pytest_any", PYTEST_3_2) == {
        "test_requests.py::RequestsTestCase::test_entry_points": "PASSED",
        "test_requests.py::RequestsTestCase::test_invalid_url": "PASSED",
        "test_requests.py::RequestsTestCase::test_no_content_length": "FAILED"}
    assert parse("pytest", PYTEST_3_2) == {}  # (the harness's parser: every test missing)


@pytest.mark.parametrize("colour", [False, True])
def test_bosuns_own_runner_on_a_real_pytest_run_names_tests_as_the_harness_does(tmp_path, colour):
    """A real run of this machine's pytest with ``-rA -v``: percentages, a parameter with a space, an absolute
    path parameter (also under the harness's name for it), a failure and a skip. ``colour``: the project forces
    it (astropy 5's ``addopts = --color=yes``): every status and name comes wrapped in escape sequences, and none
    was read (every test of a detected environment counted as failed); a parameter id that looks like a colour
    code without the escape (``5m``) stays as it is."""
    import subprocess
    import sys
    if colour:
        (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = --color=yes\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('p', ['a b', '/workspace/tests/mymodule.py', '5m'])\n"
        "def test_p(p):\n    assert p\n"
        "def test_fails():\n    assert 0\n"
        "@pytest.mark.skip(reason='no')\ndef test_skipped():\n    pass\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-v", "-p", "no:cacheprovider", "test_x.py"],
                         cwd=tmp_path, capture_output=True, text=True).stdout
    assert ("\x1b[" in out) == colour
    got = parse("pytest_any", out)
    assert got["test_x.py::test_p[a b]"] == "PASSED"  # the verbose line keeps the space (the summary cuts it)
    assert got["test_x.py::test_p[/workspace/tests/mymodule.py]"] == "PASSED"
    assert got["test_x.py::test_p[/mymodule.py]"] == "PASSED"  # the harness's name of it
    assert got["test_x.py::test_p[5m]"] == "PASSED"
    assert got["test_x.py::test_fails"] == "FAILED"
    assert got["test_x.py::test_skipped"] == "SKIPPED"
    assert not [k for k in got if "\x1b" in k]


def test_an_alias_never_replaces_a_test_of_that_name():
    log = "PASSED t.py::test[/a/b.py]\nFAILED t.py::test[/b.py]\n"
    assert parse("pytest_any", log) == {"t.py::test[/a/b.py]": "PASSED", "t.py::test[/b.py]": "FAILED"}
