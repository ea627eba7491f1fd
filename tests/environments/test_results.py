import json

from environments.results import parse_pytest_output

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


# -- other runners: the shapes below are as each runner writes them (jest 24/29, mocha's spec reporter, node 20's TAP
# and spec reporters, vitest 1, ava 5, go test -json, cargo test), with their titles and timings.

from environments.results import parse_output  # noqa: E402

JEST = """\
PASS test/display.test.js
  ✓ Format no formatStr (4ms)
  Difference
    ✓ empty -> default milliseconds
    ✓ MonthDiff (2ms)

FAIL test/probe.test.js
  ✓ top level passes (1ms)
  ✕ top level fails
  group
    ✓ passes inside a group (1ms)
    inner
      ✕ fails inside (2ms)

  ● group › inner › fails inside

    expect(received).toBe(expected) // Object.is equality

  ● top level fails

    expect(received).toEqual(expected)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       2 failed, 5 passed, 7 total
Snapshots:   0 total
"""


def test_jest_names_each_test_under_its_file_and_describe_blocks():
    r = parse_output("jest", JEST, 1)
    assert r.counts == {"failed": 2, "passed": 5} and r.summary == "2 failed, 5 passed, 7 total"
    assert r.failed == ["test/probe.test.js > top level fails", "test/probe.test.js > group > inner > fails inside"]
    assert "test/display.test.js > Difference > MonthDiff" in r.passed and len(r.passed) == 5
    assert r.messages["test/probe.test.js > group > inner > fails inside"].startswith("expect(received).toBe")
    quiet = "\n".join(line for line in JEST.splitlines() if "✓" not in line and "✕" not in line)
    q = parse_output("jest", quiet, 1)  # (several files, not verbose: the failures only, and the counts)
    assert sorted(q.failed) == sorted(r.failed) and q.passed == [] and q.counts == r.counts


def test_a_jest_suite_that_does_not_run_is_a_failure():
    out = "FAIL test/broken.test.js\n  ● Test suite failed to run\n\n    Cannot find module 'x'\n\n" \
          "Test Suites: 1 failed, 1 total\nTests:       0 total\n"
    r = parse_output("jest", out, 1)
    assert r.failed == ["test/broken.test.js"] and r.messages["test/broken.test.js"] == "Cannot find module 'x'"


MOCHA = """\

  app
    .use(app)
      ✔ should mount the app
      1) should fail here
    .param
      ✓ should work (12ms)

  2 passing (35ms)
  1 failing

  1) app
       .use(app)
         should fail here:
     Error: boom
      at Context.<anonymous> (test/app.js:12:9)
"""


def test_mocha_names_tests_by_their_describe_path_and_reads_the_messages():
    r = parse_output("mocha", MOCHA, 1)
    assert r.passed == ["app > .use(app) > should mount the app", "app > .param > should work"]
    assert r.failed == ["app > .use(app) > should fail here"]
    assert r.messages["app > .use(app) > should fail here"] == "Error: boom"
    assert r.counts == {"passed": 2, "failed": 1} and r.summary == "2 passing (35ms), 1 failing"


TAP = """\
TAP version 13
# Subtest: math
    # Subtest: adds
    ok 1 - adds
      ---
      duration_ms: 0.5
      ...
    # Subtest: divides
    not ok 2 - divides
      ---
      error: 'nope'
      ...
    1..2
not ok 1 - math
# Subtest: top
ok 2 - top
# Subtest: later
ok 3 - later # SKIP not yet
1..3
# tests 4
# pass 2
# fail 1
# skipped 1
"""


def test_tap_and_node_test_read_subtests_not_their_suites():
    r = parse_output("node-test", TAP, 1)
    assert r.passed == ["math > adds", "top"] and r.failed == ["math > divides"]
    assert r.counts == {"passed": 2, "failed": 1, "skipped": 1}
    spec = "✔ top (1.2ms)\n▶ math\n  ✔ adds (0.3ms)\n  ✖ divides (0.4ms)\n▶ math (1ms)\nℹ tests 3\nℹ pass 2\nℹ fail 1\n"
    s = parse_output("node-test", spec, 1)
    assert s.counts == {"passed": 2, "failed": 1} and "divides" in s.failed[0]


VITEST = """\
 ❯ test/math.test.ts (3 tests | 1 failed) 6ms
   ✓ math > adds 1ms
   × math > divides 3ms
     → expected 2 to be 3
   ✓ math > subtracts
 ✓ test/other.test.ts (2 tests) 2ms

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  test/math.test.ts > math > divides
AssertionError: expected 2 to be 3

 Test Files  1 failed | 1 passed (2)
      Tests  1 failed | 4 passed (5)
"""


def test_vitest_reads_per_test_lines_failures_and_its_tests_line():
    r = parse_output("vitest", VITEST, 1)
    assert r.counts == {"failed": 1, "passed": 4} and r.summary == "1 failed | 4 passed (5)"
    assert "test/math.test.ts > math > divides" in r.failed
    assert r.messages["test/math.test.ts > math > divides"] == "AssertionError: expected 2 to be 3"
    assert "math > adds" in r.passed and not any("(2 tests)" in t for t in r.passed)


def test_go_cargo_and_ava():
    go = "\n".join(json.dumps(e) for e in [
        {"Action": "run", "Package": "example.com/x", "Test": "TestA"},
        {"Action": "pass", "Package": "example.com/x", "Test": "TestA"},
        {"Action": "fail", "Package": "example.com/x", "Test": "TestB/sub"},
        {"Action": "skip", "Package": "example.com/x", "Test": "TestC"}]) + "\nnot json\n"
    g = parse_output("go", go, 1)
    assert g.passed == ["example.com/x/TestA"] and g.failed == ["example.com/x/TestB/sub"]
    assert g.counts == {"passed": 1, "failed": 1, "skipped": 1}
    cargo = ("running 3 tests\ntest parse::ok_case ... ok\ntest parse::bad_case ... FAILED\ntest slow ... ignored\n"
             "\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out\n"
             "   Doc-tests x\n\nrunning 2 tests\ntest src/lib.rs - Cfg::probe (line 371) ... ok\n"
             "test src/lib.rs - (line 18) ... ignored, needs a network\n"
             "test src/lib.rs - Key<T>::with (line 159) - compile fail ... ok\n\n"
             "test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n")
    c = parse_output("cargo", cargo, 101)
    assert c.passed == ["parse::ok_case", "src/lib.rs - Cfg::probe (line 371)", "src/lib.rs - Key<T>::with (line 159)"]
    assert c.failed == ["parse::bad_case"] and c.counts == {"passed": 3, "failed": 1, "skipped": 2}
    ava = "  ✔ adds (5ms)\n  ✘ [fail]: divides Error thrown\n  ─\n\n  1 test failed\n  1 test passed\n"
    a = parse_output("ava", ava, 1)
    assert a.counts == {"failed": 1, "passed": 1} and a.passed == ["adds"] and len(a.failed) == 1


def test_an_unknown_runner_gives_the_exit_code_and_no_counts():
    r = parse_output("unknown", "12 tests passed, 3 failed\nPASSED tests/x.py::t\n", 1)
    assert r.exit_code == 1 and r.counts == {} and r.passed == [] and r.failed == [] and not r.green
    assert parse_output("karma", "Executed 3 of 3 SUCCESS", 0).green


def test_terminal_escapes_are_removed_before_reading():
    coloured = "\x1b[1m\x1b[32mPASS\x1b[39m\x1b[22m test/a.test.js\n  \x1b[32m✓\x1b[39m works\n" \
               "\x1b[1mTests:\x1b[22m       \x1b[32m1 passed\x1b[39m, 1 total\n"
    r = parse_output("jest", coloured, 0)
    assert r.passed == ["test/a.test.js > works"] and r.counts == {"passed": 1}
