"""Hostile text on the operator's terminal (infra/safetext.py) and hostile tool-call ids (agents/messages.py)."""

from __future__ import annotations

import io
import json

from agents.messages import Message, ToolCall, safe_call_id
from infra.safetext import SafeStream, printable


def test_control_and_bidi_characters_are_shown_not_obeyed():
    hostile = "ok\x1b]0;pwned\x07 \x1b[2J\u202eevil\u2066 \x9b31m tab\tnew\nline\r"
    shown = printable(hostile)
    assert "\x1b" not in shown and "\u202e" not in shown and "\x9b" not in shown and "\x07" not in shown
    assert shown.startswith("ok\\u001b]0;pwned\\u0007") and "tab\tnew\nline\\u000d" in shown


def test_json_stays_valid_and_equal_through_the_safe_stream():
    value = {"goal": "a\u202eb", "esc": "\x1b[31m"}
    out = io.StringIO()
    SafeStream(out).write(json.dumps(value, ensure_ascii=False))
    assert json.loads(out.getvalue()) == value


def test_hostile_call_ids_get_a_stable_plain_stand_in():
    for bad in ("\x1b]0;x\x07", "../../etc", "a" * 200, "id with space", "", "#1"):
        sid = safe_call_id(bad)
        assert sid.startswith("call_") and len(sid) == 29 and sid == safe_call_id(bad)
    assert safe_call_id("call_abc-1:2.3") == "call_abc-1:2.3" and safe_call_id("toolu_01A") == "toolu_01A"
    call = ToolCall(id="\x1b[2J", name="read_file")
    result = Message(role="tool", tool_call_id="\x1b[2J", content="x")
    assert call.id == result.tool_call_id == safe_call_id("\x1b[2J")  # the pair still matches
