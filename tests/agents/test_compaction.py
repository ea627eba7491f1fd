"""Compaction on real long tool outputs: a 312-test suite run by the machine's pytest, and a real git diff."""

from __future__ import annotations

import json
import re

import pytest

from agents.context import (
    NOTE_MARK,
    build_static_context,
    compact,
    compaction_summary,
    estimate_tokens,
    needs_compaction,
    transcript_activity,
    transcript_tokens,
)
from agents.context.compaction import COMPACTED_MARK
from agents.messages import Message, ToolCall
from agents.profiles import profile_for
from agents.providers import parse_spec
from environments.results import parse_pytest_output

ERROR_LINE = re.compile(r"^E\s+(?P<text>(assert |[A-Za-z_][\w.]*(Error|Exception)\b).*)$")
PINNED = build_static_context(os_name="Linux", instructions={
    "AGENTS.md": "Run the tests with `make test`. Never edit files under vendor/."}).pinned


def error_lines(raw: str) -> list[str]:
    """The exception and assert lines of a pytest output, found independently of the summarizer."""
    return list(dict.fromkeys(m["text"].strip() for line in raw.splitlines() if (m := ERROR_LINE.match(line))))


def turn(i: int, name: str, args: dict, output: str) -> list[Message]:
    call = ToolCall(id=f"call_{i}", name=name, arguments=args)
    return [Message(role="assistant", content=f"step {i}", tool_calls=[call]),
            Message(role="tool", content=output, tool_call_id=call.id, name=name)]


def transcript(real) -> list[Message]:
    calc = "\n".join(f"def helper_{i}(x):\n    return x + {i}\n" for i in range(120))
    msgs = [Message(role="system", content="You are bosun.\n\n" + PINNED),
            Message(role="user", content="Fix the failing tests.")]
    msgs += turn(1, "run_command", {"command": "python -m pytest"}, real.long.as_run_command())
    msgs += turn(2, "read_file", {"path": "tests/test_mod03.py"}, real.file_text)
    msgs += turn(3, "run_tests", {"args": []}, real.short.as_run_tests())
    msgs += turn(4, "write_file", {"path": "pkg/calc.py", "content": calc}, "wrote pkg/calc.py (3000 bytes)")
    msgs += turn(5, "git_diff", {}, real.diff)
    msgs += turn(6, "run_command", {"command": "python -m pytest -rA --tb=short -q"}, real.short.as_run_command())
    msgs += turn(7, "grep", {"pattern": "def add"}, "pkg/calc.py:4:def add(a, b):")
    return msgs


def by_call(msgs: list[Message]) -> dict[str, Message]:
    return {m.tool_call_id: m for m in msgs if m.role == "tool"}


def assert_well_formed(msgs: list[Message]) -> None:
    """Every tool call has exactly one result after it, before the next assistant turn."""
    for i, m in enumerate(msgs):
        if m.role == "assistant" and m.tool_calls:
            following = []
            for n in msgs[i + 1:]:
                if n.role == "assistant":
                    break
                following.append(n)
            answered = [n.tool_call_id for n in following if n.role == "tool"]
            assert sorted(answered) == sorted(c.id for c in m.tool_calls)


def test_real_outputs_are_long_and_failing(real):
    assert real.long.exit_code == 1 and real.short.exit_code == 1
    report = parse_pytest_output(real.long.output, real.long.exit_code)
    assert report.counts["passed"] + report.counts["failed"] + report.counts["errors"] >= 300
    assert len(report.failed) >= 30 and estimate_tokens(real.long.output) > 8000
    assert "diff --git" in real.diff and estimate_tokens(real.diff) > 4000


@pytest.mark.parametrize("which", ["long", "short"])
def test_pytest_output_5x_smaller_with_every_failing_id_and_error_line(real, store, which):
    run = getattr(real, which)
    raw = run.as_run_command()
    msgs = [Message(role="user", content="task")] + turn(1, "run_command", {"command": "pytest"}, raw) \
        + turn(2, "grep", {"pattern": "x"}, "a.py:1:x")
    result = compact(msgs, window_tokens=4000, keep_recent_turns=1, store_put=store.put)
    out = by_call(result.messages)["call_1"].content
    ratio = estimate_tokens(raw) / estimate_tokens(out)
    assert ratio >= 5, ratio
    failed = parse_pytest_output(run.output, run.exit_code).failed
    assert len(failed) >= 30
    missing_ids = [t for t in failed if t not in out]
    assert not missing_ids
    lines = error_lines(run.output)
    assert len(lines) >= 20
    missing_lines = [e for e in lines if e[:200] not in out]
    assert not missing_lines
    ref = re.search(r"full text: (sha256:[0-9a-f]{64})", out)[1]
    assert store.blobs[ref] == raw  # the raw output stays retrievable by the ref the summary names
    kept = result.event.kept
    assert set(failed) <= set(kept.failing_tests) and set(lines) <= set(kept.error_lines)
    assert any("pkg/tree.py:22 in walk" in f for f in kept.frames)  # the recursive frame, folded
    assert any("pkg/layer7.py:2 in step7" in f for f in kept.frames)  # the deepest frame of an 8-module chain


def test_diff_5x_smaller_with_every_file(real, store):
    msgs = [Message(role="user", content="task")] + turn(1, "git_diff", {}, real.diff) + turn(2, "grep", {}, "x")
    result = compact(msgs, window_tokens=2000, keep_recent_turns=1, store_put=store.put)
    out = by_call(result.messages)["call_1"].content
    assert estimate_tokens(real.diff) / estimate_tokens(out) >= 5
    files = re.findall(r"^diff --git a/\S+ b/(\S+)$", real.diff, re.M)
    assert len(files) >= 20 and all(f in out for f in files)
    assert "R pkg/config.py -> pkg/settings.py" in out and "A pkg/report.py" in out and "D conftest.py" in out
    hunks = len(re.findall(r"^@@ ", real.diff, re.M))
    added = sum(1 for ln in real.diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in real.diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    assert f"{len(files)} files changed, {hunks} hunks, +{added} -{removed}" in out
    assert "pkg/settings.py" in result.event.kept.files_changed


def test_transcript_compaction(real, store):
    msgs = transcript(real)
    before = transcript_tokens(msgs)
    window = int(before / 0.8)  # 80% full: past the 70% threshold
    assert needs_compaction(msgs, window_tokens=window)
    result = compact(msgs, window_tokens=window, keep_recent_turns=2, store_put=store.put, pinned=PINNED)
    ev = result.event
    assert result.compacted and ev.before_tokens == before and ev.after_tokens == result.tokens
    assert ev.after_tokens <= window * 0.5 and not ev.over_threshold
    assert_well_formed(result.messages)

    old = by_call(msgs)
    new = by_call(result.messages)
    # The older turns are compacted at least 5x overall; the last two turns are untouched.
    old_ids = ["call_1", "call_2", "call_3", "call_5"]
    raw_tokens = sum(estimate_tokens(old[i].content) for i in old_ids)
    new_tokens = sum(estimate_tokens(new[i].content) for i in old_ids)
    assert raw_tokens / new_tokens >= 5, raw_tokens / new_tokens
    assert new["call_6"].content == old["call_6"].content and new["call_7"].content == old["call_7"].content
    assert new["call_4"].content == old["call_4"].content  # short outputs are left alone
    # The big write_file argument was stored too; the path stays.
    write = next(c for m in result.messages for c in m.tool_calls if c.id == "call_4")
    assert write.arguments["path"] == "pkg/calc.py" and write.arguments["content"].startswith(COMPACTED_MARK)
    assert {s.what for s in ev.stored} == {"output", "argument:content"}
    assert all(store.blobs[s.ref] for s in ev.stored)

    note = [m for m in result.messages if m.role == "user" and m.content.startswith(NOTE_MARK)]
    assert len(note) == 1 and result.messages[-1] is note[0]
    text = note[0].content
    assert "Files changed by you: pkg/calc.py" in text and "Files read: tests/test_mod03.py:1-78" in text
    assert "Never edit files under vendor/." in text and ev.pinned_reinjected
    latest = parse_pytest_output(real.short.output, 1).failed  # call_3, the latest compacted run
    assert all(t in text for t in latest[:30])
    assert "compacted ~" in compaction_summary(ev)

    # Next turn, compacting again: nothing is stored twice, the note is replaced, not stacked.
    more = result.messages + turn(8, "run_command", {"command": "pytest"}, real.long.as_run_command()) \
        + turn(9, "grep", {"pattern": "y"}, "b.py:2:y") + turn(10, "grep", {"pattern": "z"}, "c.py:3:z")
    again = compact(more, window_tokens=window // 2, keep_recent_turns=2, store_put=store.put, pinned=PINNED)
    assert again.compacted
    assert sum(m.content.startswith(NOTE_MARK) for m in again.messages) == 1
    assert {s.call_id for s in again.event.stored} == {"call_6", "call_8"}
    assert_well_formed(again.messages)


def test_below_threshold_does_nothing_and_says_why(store):
    msgs = [Message(role="user", content="hi")]
    result = compact(msgs, window_tokens=100_000, store_put=store.put)
    assert not result.compacted and result.event is None and "<= 70% of a 100,000-token window" in result.reason
    assert result.messages == msgs and not store.blobs


def test_scripted_profile_window_makes_short_runs_compact(real, store):
    window = profile_for(parse_spec("scripted:trajectory.jsonl")).context_window
    msgs = [Message(role="user", content="task")] + turn(1, "run_tests", {}, real.short.as_run_tests()) \
        + turn(2, "grep", {"pattern": "x"}, "a.py:1:x") + turn(3, "grep", {"pattern": "y"}, "a.py:2:y")
    assert transcript_tokens(msgs) > window * 0.7
    result = compact(msgs, window_tokens=window, store_put=store.put)
    assert result.compacted and not result.event.over_threshold
    out = by_call(result.messages)["call_1"].content
    assert all(t in out for t in parse_pytest_output(real.short.output, 1).failed)


def test_note_goes_before_a_turn_still_waiting_for_results(real, store):
    call = ToolCall(id="pending", name="run_tests", arguments={})
    msgs = [Message(role="user", content="task")] + turn(1, "run_command", {}, real.long.as_run_command()) \
        + turn(2, "grep", {}, "x") + turn(3, "grep", {}, "y") \
        + [Message(role="assistant", content="", tool_calls=[call])]
    result = compact(msgs, window_tokens=4000, store_put=store.put)
    assert result.messages[-1].tool_calls[0].id == "pending"
    assert result.messages[-2].content.startswith(NOTE_MARK)


def test_recent_turns_too_big_are_compacted_last_and_flagged(real, store):
    msgs = [Message(role="user", content="task")] + turn(1, "run_command", {}, real.long.as_run_command())
    result = compact(msgs, window_tokens=3000, keep_recent_turns=2, store_put=store.put)
    assert result.compacted and by_call(result.messages)["call_1"].content.startswith(COMPACTED_MARK)
    assert any("kept the last 0 turns" in s for s in result.event.stages)
    tiny = compact(msgs, window_tokens=500, store_put=store.put)
    assert tiny.event.over_threshold and "STILL above" in tiny.reason


def test_bad_arguments():
    with pytest.raises(ValueError):
        compact([], window_tokens=0, store_put=lambda t: "sha256:x")


def test_over_threshold_with_nothing_to_compact_is_reported(store):
    msgs = [Message(role="system", content="x" * 8000), Message(role="user", content="task")]
    result = compact(msgs, window_tokens=1000, store_put=store.put)
    assert not result.compacted and result.messages == msgs and "nothing is left to compact" in result.reason
    assert result.event.over_threshold and not store.blobs


def test_event_is_small_and_serializable(real, store):
    msgs = [Message(role="user", content="task")] + turn(1, "run_command", {}, real.long.as_run_command()) \
        + turn(2, "grep", {}, "x")
    ev = compact(msgs, window_tokens=4000, keep_recent_turns=1, store_put=store.put).event
    dumped = ev.model_dump(mode="json")
    assert dumped["refs"] == [s.ref for s in ev.stored] and len(dumped["refs"]) == 1
    assert ev.kept_counts["failing_tests"] == 37 and len(json.dumps(dumped)) < 20_000


def test_big_patch_arguments_keep_their_file_headers(real, store):
    patch = "*** Begin Patch\n*** Update File: pkg/calc.py\n@@ def add\n" + "+x = 1\n" * 400 \
        + "*** Add File: pkg/new.py\n+y = 2\n*** End Patch\n"
    msgs = [Message(role="user", content="task")] + turn(1, "apply_patch", {"input": patch}, "patched 2 files") \
        + turn(2, "run_command", {}, real.long.as_run_command()) + turn(3, "grep", {}, "x")
    first = compact(msgs, window_tokens=4000, keep_recent_turns=2, store_put=store.put)
    call = next(c for m in first.messages for c in m.tool_calls if c.id == "call_1")
    assert call.arguments["input"].startswith(COMPACTED_MARK) and store.blobs[first.event.stored[0].ref] == patch
    assert "*** Update File: pkg/calc.py" in call.arguments["input"]
    assert transcript_activity(first.messages).files_changed == ["pkg/calc.py", "pkg/new.py"]
