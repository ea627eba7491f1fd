"""read_output: the model reads back a raw tool output that compaction replaced by a summary."""

from __future__ import annotations

import re

from agents.context.compaction import compact
from agents.messages import Message, ToolCall
from agents.tools.registry import ToolContext
from infra.artifacts import ArtifactStore


async def test_a_compacted_output_is_readable_by_the_ref_its_summary_names(reg, ctx, tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    raw = "\n".join(f"tests/test_mod.py::test_case_{i} FAILED - AssertionError: value {i} != {i + 1}"
                    for i in range(600))
    msgs = [Message(role="user", content="task"),
            Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="run_command",
                                                                       arguments={"command": "pytest"})]),
            Message(role="tool", tool_call_id="c1", name="run_command", content=raw),
            Message(role="assistant", content="", tool_calls=[ToolCall(id="c2", name="grep",
                                                                       arguments={"pattern": "x"})]),
            Message(role="tool", tool_call_id="c2", name="grep", content="a.py:1:x")]
    result = compact(msgs, window_tokens=4000, keep_recent_turns=1, store_put=store.put_text)
    summary = next(m.content for m in result.messages if m.tool_call_id == "c1")
    ref = re.search(r"full text: (sha256:[0-9a-f]{64})", summary)[1]
    assert len(summary) < len(raw) / 3

    tctx = ToolContext(sandbox=ctx.sandbox, artifacts=store.get_text)
    out = await reg.execute("read_output", {"ref": ref, "start_line": 300, "end_line": 302}, tctx)
    assert not out.is_error, out.text
    shown = out.text.splitlines()
    assert shown[:3] == [f"{n:6d}\t{raw.splitlines()[n - 1]}" for n in (300, 301, 302)]
    assert shown[3] == "[showing lines 300-302 of 600; call read_output with start_line=303 for more]"
    assert out.data["total_lines"] == 600 and out.data["truncated"] is True
    whole = await reg.execute("read_output", {"ref": ref}, tctx)
    assert [line.split("\t", 1)[1] for line in whole.text.splitlines()] == raw.splitlines()


async def test_bad_refs_are_clear_errors(reg, ctx, tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    tctx = ToolContext(sandbox=ctx.sandbox, artifacts=store.get_text)
    missing = await reg.execute("read_output", {"ref": "sha256:" + "0" * 64}, tctx)
    assert missing.is_error and "is not in the store" in missing.text and "as a compacted summary names" in missing.text
    for bad in ("../../etc/passwd", "sha256:" + "/" * 55 + "etc/shadow", "sha256:" + "/" * 47 + "proc/self/environ",
                "sha256:" + "F" * 64):
        malformed = await reg.execute("read_output", {"ref": bad}, tctx)
        assert malformed.is_error and malformed.error_kind == "InvalidArguments", bad
        assert "not an artifact ref" in malformed.text and "root:" not in malformed.text
    past = await reg.execute("read_output", {"ref": store.put_text("one\ntwo\n"), "start_line": 9}, tctx)
    assert past.is_error and "has 2 lines; start_line=9 is past the end" in past.text
    none = await reg.execute("read_output", {"ref": "sha256:" + "0" * 64}, ToolContext(sandbox=ctx.sandbox))
    assert none.is_error and "not available" in none.text
