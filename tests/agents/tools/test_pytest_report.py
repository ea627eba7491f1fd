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
