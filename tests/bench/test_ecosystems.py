"""bench/ecosystems.py and bench/search.py's Multi-SWE-bench cases: what they read from the runners' reports and
the dataset's rows (pure)."""

from __future__ import annotations

import json
from collections import Counter

from bench.ecosystems import _strip_package, reference
from bench.search import multi_swebench_cases


def test_the_reference_reports_are_read_per_test():
    go = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n    --- FAIL: TestA/sub_case (0.01s)\nok  \tx\t0.1s\n"
    assert reference("go", go) == Counter({("TestA", "passed"): 1, ("TestA/sub_case", "failed"): 1})
    rust = "\n".join(json.dumps(e) for e in [{"type": "test", "event": "started", "name": "a"},
                                             {"type": "test", "event": "ok", "name": "a"},
                                             {"type": "test", "event": "failed", "name": "src/lib.rs - (line 3)"},
                                             {"type": "suite", "event": "ok"}]) + "\nnot json\n"
    assert reference("rust", rust) == Counter({("a", "passed"): 1, ("src/lib.rs - (line 3)", "failed"): 1})
    assert _strip_package("github.com/a/b/v2/TestX/sub/y") == "TestX/sub/y"
    assert _strip_package("example.com/m/ExampleParse") == "ExampleParse"


def test_multi_swebench_rows_become_localisation_cases(tmp_path):
    row = {"org": "o", "repo": "r", "number": 7, "base": {"sha": "abc"},
           "resolved_issues": "[{'number': 1, 'title': 'Crash on parse', 'body': 'see src/parse.js'}]",
           "fix_patch": "diff --git a/src/parse.js b/src/parse.js\n--- a/src/parse.js\n+++ b/src/parse.js\n"
                        "diff --git a/README.md b/README.md\n"}
    empty = {**row, "number": 8, "resolved_issues": "not a literal ["}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(empty) + "\n")
    cases = multi_swebench_cases([tmp_path / "rows.jsonl"], tmp_path)
    assert [c["instance_id"] for c in cases] == ["o__r-7"]
    assert cases[0]["gold"] == ["src/parse.js"] and cases[0]["query"].startswith("Crash on parse")
    assert cases[0]["mirror"] == str(tmp_path / "o+r" / "repo")
