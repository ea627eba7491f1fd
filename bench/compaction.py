"""Compaction benchmark on real tool outputs.

Run: ``.venv/bin/python bench/compaction.py``. Generates a project with 312 tests (about 37 failing with assertion
errors, exceptions through 8-module call chains, 30-deep recursion, chained exceptions and setup errors), runs
it with the machine's ``python3 -m pytest`` (long tracebacks as a model would type it, and ``-rA --tb=short``
as run_tests runs it), makes a big ``git diff`` between two generated versions of a project, and takes the diff
of this repository's last commits when there are any. Each output is compacted as an old tool result; the JSON
printed gives the token estimates before and after, the ratio, and whether every failing test id, every error
line (exception and assert lines) and every changed file survived. It ends with a whole-transcript compaction.
Exits 1 when a check fails or a ratio is under 5.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.context import compact, estimate_tokens, transcript_tokens  # noqa: E402
from agents.messages import Message, ToolCall  # noqa: E402
from environments.results import parse_pytest_output  # noqa: E402
from tests.agents.realdata import machine_python, produce  # noqa: E402

ERROR_LINE = re.compile(r"^E\s+(?P<text>(assert |[A-Za-z_][\w.]*(Error|Exception)\b).*)$")
MIN_RATIO = 5.0


def _store():
    import hashlib

    blobs: dict[str, str] = {}

    def put(text: str) -> str:
        ref = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        blobs[ref] = text
        return ref
    return put, blobs


def compact_one(tool: str, args: dict, raw: str) -> tuple[str, float]:
    """Compact ``raw`` as an old tool output; return the compacted text and the seconds it took."""
    put, _ = _store()
    call = ToolCall(id="c1", name=tool, arguments=args)
    msgs = [Message(role="user", content="task"), Message(role="assistant", tool_calls=[call]),
            Message(role="tool", content=raw, tool_call_id="c1", name=tool),
            Message(role="assistant", tool_calls=[ToolCall(id="c2", name="grep", arguments={})]),
            Message(role="tool", content="a.py:1:x", tool_call_id="c2", name="grep")]
    started = time.perf_counter()
    result = compact(msgs, window_tokens=2000, keep_recent_turns=1, store_put=put)
    elapsed = time.perf_counter() - started
    return next(m.content for m in result.messages if m.tool_call_id == "c1"), elapsed


def pytest_case(name: str, run, text: str, tool: str) -> dict:
    out, seconds = compact_one(tool, {}, text)
    failed = parse_pytest_output(run.output, run.exit_code).failed
    # Error lines present in the text the tool returned (run_tests returns only the last 12,000 characters).
    errors = list(dict.fromkeys(m["text"].strip() for ln in text.splitlines() if (m := ERROR_LINE.match(ln))))
    before, after = estimate_tokens(text), estimate_tokens(out)
    return {"output": name, "tool": tool, "tokens_before": before, "tokens_after": after,
            "ratio": round(before / after, 2), "failing_tests": len(failed),
            "failing_tests_kept": sum(t in out for t in failed),
            "error_lines": len(errors), "error_lines_kept": sum(e[:200] in out for e in errors),
            "seconds": round(seconds, 4)}


def diff_case(name: str, diff: str) -> dict:
    out, seconds = compact_one("git_diff", {}, diff)
    files = re.findall(r"^diff --git a/\S+ b/(\S+)$", diff, re.M)
    before, after = estimate_tokens(diff), estimate_tokens(out)
    return {"output": name, "tool": "git_diff", "tokens_before": before, "tokens_after": after,
            "ratio": round(before / after, 2), "files": len(files), "files_kept": sum(f in out for f in files),
            "seconds": round(seconds, 4)}


def repo_diff() -> str | None:
    """This repository's changes over its last commits, when it is a git checkout with history."""
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), "diff", "--no-color", "-M", "HEAD~2", "HEAD"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 and proc.stdout.count("\n") > 200 else None


def transcript_case(real) -> dict:
    put, _ = _store()
    outputs = [("run_command", {"command": "python -m pytest"}, real.long.as_run_command()),
               ("read_file", {"path": "tests/test_mod03.py"}, real.file_text),
               ("run_tests", {}, real.short.as_run_tests()),
               ("git_diff", {}, real.diff),
               ("run_command", {"command": "python -m pytest -rA --tb=short -q"}, real.short.as_run_command()),
               ("grep", {"pattern": "def add"}, "pkg/calc.py:4:def add(a, b):")]
    msgs = [Message(role="system", content="You are bosun."), Message(role="user", content="Fix the tests.")]
    for i, (tool, args, text) in enumerate(outputs):
        msgs += [Message(role="assistant", tool_calls=[ToolCall(id=f"c{i}", name=tool, arguments=args)]),
                 Message(role="tool", content=text, tool_call_id=f"c{i}", name=tool)]
    before = transcript_tokens(msgs)
    window = int(before / 0.8)
    result = compact(msgs, window_tokens=window, keep_recent_turns=2, store_put=put)
    ev = result.event
    old = [m for m in msgs if m.role == "tool" and m.tool_call_id in ("c0", "c1", "c2", "c3")]
    new = [m for m in result.messages if m.role == "tool" and m.tool_call_id in ("c0", "c1", "c2", "c3")]
    old_tokens = sum(estimate_tokens(m.content) for m in old)
    new_tokens = sum(estimate_tokens(m.content) for m in new)
    return {"window_tokens": window, "before_tokens": ev.before_tokens, "after_tokens": ev.after_tokens,
            "old_outputs_ratio": round(old_tokens / new_tokens, 2), "stored": len(ev.stored),
            "kept_failing_tests": len(ev.kept.failing_tests), "kept_error_lines": len(ev.kept.error_lines),
            "kept_frames": len(ev.kept.frames), "files_read": ev.kept.files_read,
            "files_changed": len(ev.kept.files_changed), "stages": ev.stages, "over_threshold": ev.over_threshold}


def main() -> int:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bosun-bench-compaction-") as tmp:
        real = produce(Path(tmp))
    produced = time.perf_counter() - started
    cases = [pytest_case("pytest (long tracebacks) via run_command", real.long, real.long.as_run_command(),
                         "run_command"),
             pytest_case("pytest -rA --tb=short via run_command", real.short, real.short.as_run_command(),
                         "run_command"),
             pytest_case("run_tests tool output (already cut to its last 12,000 chars)", real.short,
                         real.short.as_run_tests(), "run_tests"),
             diff_case("git diff between two generated versions", real.diff)]
    own = repo_diff()
    if own:
        cases.append(diff_case("git diff HEAD~2 HEAD of this repository", own))
    ok = True
    for c in cases:
        c["all_kept"] = all(c.get(f"{what}_kept") == c.get(what) for what in ("failing_tests", "error_lines", "files"))
        ok &= c["all_kept"]
        if not c["tool"] == "run_tests":  # run_tests' own output is capped at 12k chars: no 5x promise there
            ok &= c["ratio"] >= MIN_RATIO
    whole = transcript_case(real)
    ok &= whole["old_outputs_ratio"] >= MIN_RATIO and not whole["over_threshold"]
    print(json.dumps({"pytest": machine_python(), "produce_seconds": round(produced, 2), "min_ratio": MIN_RATIO,
                      "cases": cases, "transcript": whole, "ok": ok}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
