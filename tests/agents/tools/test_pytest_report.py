from agents.tools.pytest_report import parse_pytest_output

OUT = """\
..F.                                                                     [100%]
=================================== FAILURES ===================================
______________________________ test_median_even ________________________________
E       assert 3 == 2.5
=========================== short test summary info ============================
PASSED tests/test_stats.py::test_mean
PASSED tests/test_stats.py::test_median_odd
FAILED tests/test_stats.py::test_median_even - assert 3 == 2.5
PASSED tests/test_stats.py::test_spread
1 failed, 3 passed in 0.03s
"""


def test_parses_ids_messages_and_counts():
    r = parse_pytest_output(OUT, 1)
    assert r.failed == ["tests/test_stats.py::test_median_even"]
    assert r.messages["tests/test_stats.py::test_median_even"] == "assert 3 == 2.5"
    assert len(r.passed) == 3
    assert r.summary == "1 failed, 3 passed in 0.03s"
    assert r.counts == {"failed": 1, "passed": 3}
    assert not r.green


def test_timeout_and_bar_summary():
    r = parse_pytest_output("===== 2 passed, 1 skipped in 0.1s =====", None)
    assert r.summary == "2 passed, 1 skipped in 0.1s" and r.headline() == "tests timed out"
    assert parse_pytest_output("===== 2 passed in 0.1s =====", 0).green


# The short summary of requests 2.22.0's own suite under pytest 4.6 (its environment's pytest): "FAIL", not
# "FAILED", and parameter ids with spaces.
OLD_PYTEST = """\
=========================== short test summary info ============================
FAIL tests/test_requests.py::TestRequests::test_DIGEST_HTTP_200_OK_GET
PASSED tests/test_utils.py::TestSuperLen::test_super_len_correctly_calculates_len_of_partially_read_file
PASSED tests/test_utils.py::test_unquote_header_value[value with spaces-value with spaces]
FAILED tests/test_help.py::test_idna[a - b] - AssertionError: x - y
7 failed, 524 passed, 12 skipped, 1 xfailed in 60.96 seconds
"""


def test_old_pytest_fail_lines_and_ids_with_spaces():
    r = parse_pytest_output(OLD_PYTEST, 1)
    assert r.failed == ["tests/test_requests.py::TestRequests::test_DIGEST_HTTP_200_OK_GET",
                        "tests/test_help.py::test_idna[a - b]"]
    assert r.messages["tests/test_help.py::test_idna[a - b]"] == "AssertionError: x - y"
    assert "tests/test_utils.py::test_unquote_header_value[value with spaces-value with spaces]" in r.passed
    assert r.counts == {"failed": 7, "passed": 524, "skipped": 12}
