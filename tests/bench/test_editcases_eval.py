"""``bosun eval edits`` (bench.editcases.eval.eval_main): bad input, a small corpus, every strategy."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bench.editcases.eval import CLASSES, STRATEGIES, by_class, eval_main, evaluate, format_classes, parse_cases

ORIGINAL = "def f():\n    x = 1\n    return x\n\n\ndef g():\n    x = 1\n    return x + 1\n"
EXPECTED_F = ORIGINAL.replace("    x = 1\n    return x\n", "    x = 2\n    return x\n", 1)


def cases() -> list[dict]:
    patch = ("*** Begin Patch\n*** Update File: m.py\n@@\n def f():\n-    x = 1\n+    x = 2\n     return x\n"
             "*** End Patch\n")
    udiff = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f():\n-    x = 1\n+    x = 2\n     return x\n"
    blocks = ("m.py\n```python\n<<<<<<< SEARCH\ndef f():\n    x = 1\n=======\ndef f():\n    x = 2\n"
              ">>>>>>> REPLACE\n```\n")
    ambiguous = {"old_str": "    x = 1\n", "new_str": "    x = 3\n", "replace_all": False}
    return [
        {"id": "sr", "format": "str_replace", "path": "m.py", "original": ORIGINAL,
         "edit": {"old_str": "def f():\n    x = 1\n", "new_str": "def f():\n    x = 2\n"}, "expected": EXPECTED_F},
        {"id": "blocks", "format": "search_replace", "path": "m.py", "original": ORIGINAL, "edit": blocks,
         "expected": EXPECTED_F},
        {"id": "udiff", "format": "udiff", "path": "m.py", "original": ORIGINAL, "edit": udiff, "expected": EXPECTED_F},
        {"id": "patch", "format": "apply_patch", "path": "m.py", "original": ORIGINAL, "edit": patch,
         "expected": EXPECTED_F, "category": "exact"},
        {"id": "again", "format": "apply_patch", "path": "m.py", "original": EXPECTED_F, "edit": patch,
         "expected": EXPECTED_F, "category": "already_applied"},
        {"id": "indent", "format": "str_replace", "path": "m.py", "original": ORIGINAL,
         "edit": {"old_str": "  def f():\n      x = 1\n      return x\n",
                  "new_str": "  def f():\n      x = 2\n      return x\n"},
         "expected": EXPECTED_F, "category": "indent_shift"},
        {"id": "ambiguous", "format": "str_replace", "path": "m.py", "original": ORIGINAL, "edit": ambiguous,
         "expected": None, "category": "ambiguous"},
        {"id": "missing", "format": "udiff", "path": "m.py", "original": ORIGINAL,
         "edit": "@@ -1,2 +1,2 @@\n-def h():\n+def k():\n", "expected": None, "category": "hallucinated"},
    ]


def write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = eval_main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_bosun_on_a_small_corpus(tmp_path, capsys):
    path = write(tmp_path / "cases.jsonl", cases())
    code, out, err = run(capsys, ["edits", "--cases", str(path)])
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in lines] == [c["id"] for c in cases()]
    assert all(set(r) == {"id", "status", "result", "message"} for r in lines)
    status = {r["id"]: r["status"] for r in lines}
    assert status == {"sr": "applied", "blocks": "applied", "udiff": "applied", "patch": "applied",
                      "again": "already_applied", "indent": "applied", "ambiguous": "refused", "missing": "refused"}
    assert all(r["result"] == EXPECTED_F for r in lines if r["status"] != "refused")
    assert next(r for r in lines if r["id"] == "ambiguous")["result"] is None
    table = err.splitlines()
    assert table[0].split()[:3] == ["strategy", "cases", "apply"]
    assert table[1].split() == ["bosun", "8", "100.0%", "of", "6", "100.0%", "of", "2", "0", "0",
                                *table[1].split()[-2:]]


def test_out_file_and_gzip_input(tmp_path, capsys):
    src = tmp_path / "cases.jsonl.gz"
    with gzip.open(src, "wt") as f:
        f.writelines(json.dumps(c) + "\n" for c in cases())
    out_file = tmp_path / "results.jsonl"
    code, out, err = run(capsys, ["edits", "--cases", str(src), "--out", str(out_file)])
    assert code == 0 and err == ""
    assert out.startswith("strategy") and "bosun" in out
    assert len(out_file.read_text().splitlines()) == len(cases())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy(tmp_path, capsys, strategy):
    path = write(tmp_path / "cases.jsonl", cases())
    code, out, err = run(capsys, ["edits", "--cases", str(path), "--strategy", strategy])
    assert code == 0
    status = {json.loads(line)["id"]: json.loads(line)["status"] for line in out.splitlines()}
    row = err.splitlines()[1].split()
    assert row[0] == strategy
    if strategy == "bosun":
        assert status["ambiguous"] == "refused" and status["indent"] == "applied"
    else:
        # first-match finds the re-indented snippet but writes the new text with the snippet's indentation
        assert status["indent"] == ("refused" if strategy != "first-match" else "applied")
        assert status["again"] == "refused", "baselines do not detect an edit already applied"
        # first-match takes the first of two places; replace-all changes both; exact-count refuses.
        expected = {"first-match": "applied", "replace-all": "applied", "exact-count": "refused"}[strategy]
        assert status["ambiguous"] == expected
    misapply = int(row[-4])
    assert misapply == {"bosun": 0, "first-match": 2, "replace-all": 1, "exact-count": 0}[strategy]
    if strategy != "bosun":
        assert "failures by category/format/verdict" in err
        assert "ambiguous/str_replace/" in err or strategy == "exact-count"


@pytest.mark.parametrize("rows,message", [
    (['{"id": "a"', ], "cases.jsonl:1: invalid JSON"),
    ([cases()[0], "not json"], "cases.jsonl:2: invalid JSON"),
    ([{**cases()[0], "format": "ed"}], "cases.jsonl:1: unknown format 'ed'"),
    ([{k: v for k, v in cases()[0].items() if k != "expected"}], "cases.jsonl:1: missing field(s) expected"),
    ([{**cases()[0], "edit": "text"}], "cases.jsonl:1: a str_replace edit must be an object"),
    ([{**cases()[1], "edit": {"x": 1}}], "cases.jsonl:1: a search_replace edit must be a string"),
    ([{**cases()[0], "expected": 3}], "cases.jsonl:1: field 'expected' must be a string or null"),
    ([cases()[0], cases()[0]], "cases.jsonl:2: duplicate id 'sr'"),
    ([{**cases()[0], "hunks": 0}], "cases.jsonl:1: field 'hunks' must be a positive integer"),
    ([{**cases()[0], "hunks": "2"}], "cases.jsonl:1: field 'hunks' must be a positive integer"),
    (["[1, 2]"], "cases.jsonl:1: expected a JSON object"),
    ([], "no cases"),
])
def test_bad_input_names_the_line(tmp_path, capsys, rows, message):
    path = write(tmp_path / "cases.jsonl", rows)
    code, out, err = run(capsys, ["edits", "--cases", str(path)])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


@pytest.mark.parametrize("argv,message", [
    (["edits", "--cases", "/nonexistent/cases.jsonl"], "cannot read /nonexistent/cases.jsonl"),
    (["edits", "--cases", "CASES", "--strategy", "aider"], "unknown strategy 'aider'"),
    (["edits"], "the following arguments are required: --cases"),
    (["patches", "--cases", "x"], "unknown evaluation 'patches'"),
    ([], "unknown evaluation 'nothing'"),
])
def test_bad_arguments(tmp_path, capsys, argv, message):
    write(tmp_path / "CASES", cases())
    argv = [str(tmp_path / "CASES") if a == "CASES" else a for a in argv]
    code, out, err = run(capsys, argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_unreadable_input(tmp_path, capsys):
    path = tmp_path / "binary.jsonl"
    path.write_bytes(b"\xff\xfe\x00")
    code, _, err = run(capsys, ["edits", "--cases", str(path)])
    assert code == 2 and "cannot read" in err
    code, _, err = run(capsys, ["edits", "--cases", str(tmp_path)])
    assert code == 2 and "cannot read" in err


def test_summary_breaks_results_down_by_format_category_and_hunks():
    rows = [*cases(), {**cases()[2], "id": "two", "hunks": 2, "category": "multi_hunk"}]
    summary = evaluate(parse_cases([json.dumps(r) for r in rows]), "first-match")
    report = summary.to_dict()
    assert report["by_hunks"]["multi"] == {"should_apply": 1, "correct_apply_pct": 100.0, "should_refuse": 0,
                                           "correct_refusal_pct": None, "silent_misapply": 0}
    assert report["by_hunks"]["single"]["should_apply"] == 6
    assert set(report["by_format"]) == {"str_replace", "search_replace", "udiff", "apply_patch"}
    assert report["by_category"]["ambiguous"]["silent_misapply"] == 1  # first-match picks one of two places
    assert report["by_format"]["str_replace"]["correct_refusal_pct"] == 0.0


def test_classes_of_issue_38_with_every_strategy_side_by_side():
    rows = [*cases(), {**cases()[6], "id": "rep", "category": "repeated_block_unpinned"},
            {**cases()[4], "id": "again2", "category": "already_applied_fuzzy"}]
    parsed = parse_cases([json.dumps(r) for r in rows])
    summaries = [evaluate(parsed, s) for s in ("bosun", "first-match")]
    table = by_class(summaries)
    assert set(table) == set(CLASSES)
    assert table["repeated_block"]["strategies"]["bosun"]["correct_refusal_pct"] == 100.0
    assert table["repeated_block"]["strategies"]["first-match"]["silent_misapply"] == 1
    assert table["already_applied"]["strategies"]["bosun"]["should_apply"] == 2
    text = format_classes(table)
    assert "repeated_block   bosun" in text and "first-match" in text and "reindent" not in text
