"""Compaction: when a transcript passes a share of the model's window, old tool outputs become summaries.

``compact(messages, window_tokens=..., store_put=...)`` does nothing below ``threshold * window_tokens``
(and says so in ``reason``). Past it, in stages until the estimate is under ``target * window_tokens``:

1. tool outputs (and long tool-call arguments such as whole file contents) older than the last
   ``keep_recent_turns`` assistant turns are stored through ``store_put`` and replaced by a summary from
   ``agents.context.summarize`` that names the stored ``sha256:`` ref, so nothing is lost for good;
2. the same with fewer recent turns kept, down to none;
3. long assistant and user messages other than the task are cut to their head, the rest stored.

The message structure is kept (every tool call still has its result), so providers accept the compacted
transcript as is. A context note is added where a user message is valid: files read and changed, the failing
tests of the latest compacted test run, the pinned instructions (AGENTS.md & co.) again, and the refs. Earlier
notes are replaced, never stacked. The result carries a ``CompactionEvent`` for history: token estimates before
and after, every ref, and what was kept.

Every replaced piece's first line ends with ``full text: sha256:...]``; :func:`compacted_ref` reads that ref
back, so the scripted model (agents/providers/scripted.py) compares a replay with its recording as it was before
compaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, computed_field

from agents.context.summarize import summarize_output
from agents.context.summary import Facts, cut
from agents.context.tokens import estimate_tokens, transcript_tokens
from agents.messages import Message

NOTE_MARK = "[bosun context note]"
"""First text of the context note; a user message starting with it is replaced at the next compaction."""
COMPACTED_MARK = "[compacted "
"""First text of a compacted tool output or argument; compacted content is never compacted again."""
ARG_CAP = 1200
"""Tool-call string arguments longer than this (characters) are stored and replaced when their turn is old."""
EVENT_LIST_CAP = 200
"""Most entries per list of ``CompactionEvent.kept``."""
MESSAGE_CAP = 4000
"""Stage 3: assistant/user messages longer than this (characters) keep only their head."""
EDIT_TOOLS = ("write_file", "str_replace", "apply_patch")
_FULL_TEXT = re.compile(r"; full text: (sha256:[0-9a-f]{64})\]$")
"""How the first line of every compacted output, argument or message ends: the ref of the text it replaced."""
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (?P<path>.+)$|^\*\*\* Move to: (?P<to>.+)$", re.M)


class StoredOutput(BaseModel):
    """One piece of content moved to the artifact store by a compaction."""

    ref: str
    tool: str
    call_id: str | None = None
    what: str = "output"
    """``output`` (a tool result), ``argument:<name>`` (a tool-call argument) or ``message`` (a long message)."""
    kind: str = ""
    """Summarizer used: pytest, traceback, diff, read_file, grep, generic (or ``head`` for cut messages)."""
    chars: int
    tokens_before: int
    tokens_after: int


class CompactionEvent(BaseModel):
    """What one compaction did, for history."""

    before_tokens: int
    after_tokens: int
    window_tokens: int
    threshold: float
    trigger_tokens: int
    """threshold x window: compaction runs above this."""
    target_tokens: int
    stages: list[str] = Field(default_factory=list)
    stored: list[StoredOutput] = Field(default_factory=list)
    kept: Facts = Field(default_factory=Facts)
    """Failing tests, error lines, frames, files read and changed that the summaries and the note kept (each
    list capped at ``EVENT_LIST_CAP`` entries so the event stays small in workflow history)."""
    kept_counts: dict[str, int] = Field(default_factory=dict)
    """Full length of each ``kept`` list before the cap."""
    pinned_reinjected: bool = False
    over_threshold: bool = False
    """Still above the trigger after every stage (the caller should stop or fail the run, not loop)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def refs(self) -> list[str]:
        """Every ``sha256:`` ref this compaction stored."""
        return [s.ref for s in self.stored]


class CompactionResult(BaseModel):
    """The (possibly) compacted transcript and what happened."""

    messages: list[Message]
    compacted: bool
    tokens: int
    """Estimated tokens of ``messages``."""
    reason: str
    event: CompactionEvent | None = None


def compacted_ref(text: str) -> str | None:
    """The ``sha256:`` ref of the full text that compaction replaced by ``text`` (a compacted tool output, tool-call
    argument or message), else None. The artifact store holds that text under the ref, so ``get_text(ref)`` is
    exactly what stood there before."""
    if not text.startswith(COMPACTED_MARK):
        return None
    match = _FULL_TEXT.search(text.partition("\n")[0])
    return match.group(1) if match else None


def needs_compaction(messages: list[Message], *, window_tokens: int, threshold: float = 0.7) -> bool:
    return transcript_tokens(messages) > int(window_tokens * threshold)


def _is_note(m: Message) -> bool:
    return m.role == "user" and m.content.startswith(NOTE_MARK)


def _read_range(args: dict[str, Any]) -> str:
    start = args.get("start_line") or 1
    end = args.get("end_line")
    return f"{args.get('path', '?')}:{start}-{end if end else 'end'}"


def _edited_paths(name: str, args: dict[str, Any]) -> list[str]:
    if name in ("write_file", "str_replace") and isinstance(args.get("path"), str):
        return [args["path"]]
    if name == "apply_patch":
        text = " ".join(v for v in args.values() if isinstance(v, str))
        return [m["path"] or m["to"] for m in _PATCH_FILE.finditer(text)]
    return []


def transcript_activity(messages: list[Message]) -> Facts:
    """Files read (read_file calls) and changed (edit tool calls) anywhere in the transcript."""
    facts = Facts()
    for m in messages:
        for call in m.tool_calls:
            if call.name == "read_file":
                facts.files_read.append(_read_range(call.arguments))
            facts.files_changed += _edited_paths(call.name, call.arguments)
    facts.files_read = list(dict.fromkeys(facts.files_read))
    facts.files_changed = list(dict.fromkeys(facts.files_changed))
    return facts


def _merge_reads(summarized: list[str], requested: list[str]) -> list[str]:
    """Read ranges, one per (path, start line): the summarised (actual) range wins over the requested one."""
    def key(entry: str) -> tuple[str, str]:
        path, _, lines = entry.rpartition(":")
        return path, lines.split("-")[0]
    merged: dict[tuple[str, str], str] = {}
    for entry in requested:
        merged.setdefault(key(entry), entry)
    for entry in summarized:
        merged[key(entry)] = entry
    return list(merged.values())


class _Compactor:
    def __init__(self, msgs: list[Message], store_put: Callable[[str], str], min_output_tokens: int) -> None:
        self.msgs = msgs
        self.store_put = store_put
        self.min_output_tokens = min_output_tokens
        self.calls = {c.id: c for m in msgs for c in m.tool_calls}
        self.stored: list[StoredOutput] = []
        self.facts = Facts()
        self.latest_tests: tuple[int, Facts] | None = None

    def output(self, index: int) -> bool:
        m = self.msgs[index]
        if m.content.startswith(COMPACTED_MARK) or estimate_tokens(m.content) < self.min_output_tokens:
            return False
        call = self.calls.get(m.tool_call_id or "")
        tool = m.name or (call.name if call else "tool")
        raw = m.content
        summary = summarize_output(tool, call.arguments if call else {}, raw)
        before = estimate_tokens(raw)
        head = f"{COMPACTED_MARK}{tool} output: {len(raw):,} chars (~{before:,} tokens); full text: "
        if estimate_tokens(head + summary.text) + 20 >= before:  # a summary that saves nothing is not worth it
            return False
        ref = self.store_put(raw)
        m.content = f"{head}{ref}]\n{summary.text}"
        self.stored.append(StoredOutput(ref=ref, tool=tool, call_id=m.tool_call_id, kind=summary.kind,
                                        chars=len(raw), tokens_before=before,
                                        tokens_after=estimate_tokens(m.content)))
        self.facts = self.facts.merge(summary.facts)
        if summary.kind == "pytest" and (summary.facts.tests_summary or summary.facts.failing_tests):
            if self.latest_tests is None or index > self.latest_tests[0]:
                self.latest_tests = (index, summary.facts)
        return True

    def arguments(self, index: int) -> int:
        changed = 0
        for call in self.msgs[index].tool_calls:
            for key, value in list(call.arguments.items()):
                if not isinstance(value, str) or len(value) <= ARG_CAP or value.startswith(COMPACTED_MARK):
                    continue
                ref = self.store_put(value)
                n_lines = value.count("\n") + 1
                # A patch keeps its file header lines, so later compactions still see which files it changed.
                headers = [m.group(0) for m in _PATCH_FILE.finditer(value)]
                short = f"{COMPACTED_MARK}{key}: {len(value):,} chars, {n_lines} lines; full text: {ref}]"
                if headers:
                    short += "\n" + "\n".join(headers)
                call.arguments[key] = short
                self.stored.append(StoredOutput(ref=ref, tool=call.name, call_id=call.id, what=f"argument:{key}",
                                                kind="argument", chars=len(value),
                                                tokens_before=estimate_tokens(value),
                                                tokens_after=estimate_tokens(short)))
                changed += 1
        return changed

    def long_message(self, index: int) -> bool:
        m = self.msgs[index]
        if len(m.content) <= MESSAGE_CAP or m.content.startswith(COMPACTED_MARK):
            return False
        ref = self.store_put(m.content)
        head = m.content[:MESSAGE_CAP // 2]
        text = f"{COMPACTED_MARK}{m.role} message: {len(m.content):,} chars; full text: {ref}]\n{head}\n[...]"
        self.stored.append(StoredOutput(ref=ref, tool=m.role, what="message", kind="head", chars=len(m.content),
                                        tokens_before=estimate_tokens(m.content), tokens_after=estimate_tokens(text)))
        m.content = text
        return True


def _note_index(msgs: list[Message]) -> int:
    """Where a user message may go: the end, unless the last assistant turn still waits for tool results."""
    last = max((i for i, m in enumerate(msgs) if m.role == "assistant"), default=None)
    if last is not None and msgs[last].tool_calls:
        answered = {m.tool_call_id for m in msgs[last + 1:] if m.role == "tool"}
        if not all(c.id in answered for c in msgs[last].tool_calls):
            return last
    return len(msgs)


def _note(stored: int, activity: Facts, tests: Facts | None, old_tests_line: str | None, pinned: str | None) -> str:
    lines = [f"{NOTE_MARK} {stored} earlier tool outputs or arguments were replaced by summaries to fit the context "
             "window. This is not a new request: continue the task. Each summary names the sha256 ref of the full "
             "text."]
    if activity.files_read:
        lines.append("Files read: " + ", ".join(activity.files_read[-40:]))
    if activity.files_changed:
        lines.append("Files changed by you: " + ", ".join(activity.files_changed))
    if tests is not None:
        ids = tests.failing_tests
        shown = ", ".join(ids[:30]) + (f", ... ({len(ids) - 30} more)" if len(ids) > 30 else "")
        lines.append(f"Latest compacted test run ({tests.tests_summary}): "
                     + (f"failing: {shown}" if ids else "no failing tests"))
    elif old_tests_line:
        lines.append(old_tests_line)
    if pinned and pinned.strip():
        lines += ["Project instructions (still in force):", pinned.strip()]
    return "\n".join(lines)


def compact(messages: list[Message], *, window_tokens: int, threshold: float = 0.7, keep_recent_turns: int = 2,
            store_put: Callable[[str], str], pinned: str | None = None, target: float = 0.5,
            min_output_tokens: int = 200, force: bool = False) -> CompactionResult:
    """Compact ``messages`` when their estimate passes ``threshold`` of ``window_tokens`` (module docstring).

    ``store_put(text) -> "sha256:..."`` stores each raw output (the artifact store's ``put_text``).
    ``pinned`` is the pinned-instructions block to re-inject (``StaticContext.pinned``). ``target`` is the share
    of the window to get under (at most ``threshold``). ``force`` compacts even below the threshold.
    """
    if window_tokens <= 0 or not 0 < threshold <= 1:
        raise ValueError("window_tokens must be > 0 and threshold in (0, 1]")
    before = transcript_tokens(messages)
    trigger = int(window_tokens * threshold)
    goal = int(window_tokens * min(target, threshold))
    if before <= trigger and not force:
        return CompactionResult(messages=list(messages), compacted=False, tokens=before,
                                reason=f"~{before:,} tokens <= {threshold:.0%} of a {window_tokens:,}-token window")
    old_tests_line = next((ln for m in messages if _is_note(m) for ln in m.content.splitlines()
                           if ln.startswith("Latest compacted test run")), None)
    msgs = [m.model_copy(deep=True) for m in messages if not _is_note(m)]
    work = _Compactor(msgs, store_put, min_output_tokens)
    stages: list[str] = []
    first_user = next((i for i, m in enumerate(msgs) if m.role == "user"), -1)
    assistant_at = [i for i, m in enumerate(msgs) if m.role == "assistant"]
    note_reserve = 300 + (estimate_tokens(pinned) if pinned else 0)

    def total() -> int:
        return transcript_tokens(msgs) + note_reserve

    for keep in range(max(0, keep_recent_turns), -1, -1):
        if keep == 0:
            cutoff = len(msgs)
        elif len(assistant_at) >= keep:
            cutoff = assistant_at[-keep]
        else:
            continue
        outputs = sum(work.output(i) for i in range(cutoff) if msgs[i].role == "tool")
        args = sum(work.arguments(i) for i in range(cutoff) if msgs[i].role == "assistant")
        if outputs or args:
            stages.append(f"kept the last {keep} turns: summarised {outputs} tool outputs, stored {args} arguments")
        if total() <= goal:
            break
    if total() > goal:
        cut_count = sum(work.long_message(i) for i, m in enumerate(msgs)
                        if m.role in ("assistant", "user") and i != first_user and i < len(msgs) - 1)
        if cut_count:
            stages.append(f"cut {cut_count} long messages to their head")

    if not work.stored:
        after = transcript_tokens(messages)
        event = CompactionEvent(before_tokens=before, after_tokens=after, window_tokens=window_tokens,
                                threshold=threshold, trigger_tokens=trigger, target_tokens=goal,
                                stages=["nothing to compact: no old tool output, argument or message is long enough"],
                                over_threshold=after > trigger)
        return CompactionResult(messages=list(messages), compacted=False, tokens=after, event=event,
                                reason=f"~{before:,} tokens > {threshold:.0%} of {window_tokens:,}, but nothing is "
                                       "left to compact: the system prompt, the task and short outputs remain")
    activity = transcript_activity(msgs)
    activity.files_read = _merge_reads(work.facts.files_read, activity.files_read)
    tests = work.latest_tests[1] if work.latest_tests else None
    note = _note(len(work.stored), activity, tests, old_tests_line, pinned)
    msgs.insert(_note_index(msgs), Message(role="user", content=note))
    after = transcript_tokens(msgs)
    kept = work.facts.merge(Facts(files_changed=activity.files_changed))
    kept.files_read = activity.files_read
    counts = {name: len(getattr(kept, name)) for name in ("failing_tests", "error_lines", "frames", "files_read",
                                                           "files_changed")}
    for name in counts:
        setattr(kept, name, getattr(kept, name)[:EVENT_LIST_CAP])
    event = CompactionEvent(before_tokens=before, after_tokens=after, window_tokens=window_tokens,
                            threshold=threshold, trigger_tokens=trigger, target_tokens=goal, stages=stages,
                            stored=work.stored, kept=kept, kept_counts=counts,
                            pinned_reinjected=bool(pinned and pinned.strip()), over_threshold=after > trigger)
    reason = (f"~{before:,} tokens > {threshold:.0%} of {window_tokens:,}: compacted to ~{after:,} "
              f"({len(work.stored)} items stored)")
    if event.over_threshold:
        reason += "; STILL above the threshold: the recent turns alone are too big for this window"
    return CompactionResult(messages=msgs, compacted=True, tokens=after, reason=reason, event=event)


def compaction_summary(event: CompactionEvent) -> str:
    """One line for history: before/after and what was kept."""
    n = event.kept_counts
    return cut(f"compacted ~{event.before_tokens:,} -> ~{event.after_tokens:,} tokens; {len(event.stored)} stored; "
               f"kept {n.get('failing_tests', 0)} failing tests, {n.get('error_lines', 0)} error lines, "
               f"{n.get('files_changed', 0)} changed files" + (" (STILL OVER)" if event.over_threshold else ""), 300)


def dump_event(event: CompactionEvent) -> str:
    return json.dumps(event.model_dump(mode="json"), sort_keys=True)
