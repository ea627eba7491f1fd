"""Summaries of long tool outputs, one summarizer per kind of output, for compaction.

Each summarizer keeps what an agent needs to go on and drops the bulk:

- ``pytest``: every failing test id, every error line (exception and ``assert`` lines, chained ones too), the
  key stack frames (``file:line in function``: the test's frame and the deepest ones, repeated frames folded),
  the counts. Passed-test lines, source listings and captured output go.
- ``traceback``: Python (``Traceback (most recent call last)``), JavaScript (``at f (file:line:col)``) and Go
  (``panic:`` + goroutine frames, ``--- FAIL:`` test lines): the exception lines and the key frames.
- ``diff``: files changed with status (added, deleted, renamed), hunk counts, lines added/removed, and the
  enclosing function of the first hunks.
- ``read_file``: path, line range and an outline (def/class/func lines with their numbers).
- ``grep``: matches per file with line numbers.
- ``generic``: head and tail, plus error-looking lines from the middle.

Every summarizer returns ``Facts`` as well (failing tests, error lines, frames, files read or changed), which the
compaction event records.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel, Field

LINE_CAP = 240
"""Longest line kept in a summary (longer ones are cut, with an ellipsis)."""


class Facts(BaseModel):
    """Information a summary kept, in machine-readable form."""

    failing_tests: list[str] = Field(default_factory=list)
    error_lines: list[str] = Field(default_factory=list)
    frames: list[str] = Field(default_factory=list)
    """Key stack frames as ``file:line in function``."""
    files_read: list[str] = Field(default_factory=list)
    """``path:start-end`` of files read."""
    files_changed: list[str] = Field(default_factory=list)
    tests_summary: str = ""
    """A test runner's summary line (``3 failed, 297 passed in 1.2s``)."""

    def merge(self, other: Facts) -> Facts:
        def union(a: list[str], b: list[str]) -> list[str]:
            return list(dict.fromkeys(a + b))
        return Facts(failing_tests=union(self.failing_tests, other.failing_tests),
                     error_lines=union(self.error_lines, other.error_lines),
                     frames=union(self.frames, other.frames),
                     files_read=union(self.files_read, other.files_read),
                     files_changed=union(self.files_changed, other.files_changed),
                     tests_summary=other.tests_summary or self.tests_summary)


class Summary(BaseModel):
    """A tool output's summary: which summarizer made it, the text the model sees, and the kept facts."""

    kind: str
    text: str
    facts: Facts = Field(default_factory=Facts)


def cut(line: str, cap: int = LINE_CAP) -> str:
    line = line.rstrip()
    return line if len(line) <= cap else line[:cap - 1] + "…"


# --------------------------------------------------------------------------------------------------- frames
def fold_frames(frames: list[str], head: int = 1, tail: int = 2) -> list[str]:
    """Consecutive repeats folded to ``frame (xN)``; then the first ``head`` and last ``tail`` entries kept."""
    folded: list[str] = []
    counts: list[int] = []
    for f in frames:
        if folded and folded[-1] == f:
            counts[-1] += 1
        else:
            folded.append(f)
            counts.append(1)
    shown = [f if n == 1 else f"{f} (x{n})" for f, n in zip(folded, counts, strict=True)]
    if len(shown) > head + tail + 1:
        hidden = sum(counts[head:len(counts) - tail])
        shown = shown[:head] + [f"... {hidden} more frames ..."] + shown[len(shown) - tail:]
    return shown


# --------------------------------------------------------------------------------------------------- pytest
_TOP = re.compile(r"^=+ (?P<title>.+?) =+$")
_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_CAPTURED = re.compile(r"^-{3,} (Captured|captured) .* -{3,}$")
_SHORT = re.compile(r"^(?P<status>FAILED|ERROR) (?P<id>[^\s\[]+(?:\[.*?\])?)(?: - (?P<msg>.*))?$")
_VERBOSE = re.compile(r"^(?P<id>\S+::\S+?(?:\[.*?\])?) (?P<status>FAILED|ERROR|PASSED)\b")
_PASSED = re.compile(r"^PASSED \S")
_FAILED_LIST = re.compile(r"^failed: (?P<ids>.+)$")
_FAILED_MESSAGE = re.compile(r"^  (?P<id>[^\s:]+::\S+?(?:\[.*?\])?): (?P<msg>.+)$")  # run_tests' head
_COUNTS = re.compile(r"\b\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b")
_FRAME_SHORT = re.compile(r"^(?P<path>[^\s:][^:\s]*):(?P<line>\d+): in (?P<func>\S+)\s*$")
_FRAME_LONG = re.compile(r"^(?P<path>[^\s:][^:\s]*\.\w+):(?P<line>\d+): ?(?P<exc>[\w.]*)\s*$")
_FRAME_NATIVE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_DEF = re.compile(r"^>?\s*(?:async\s+)?def (?P<func>\w+)\s*\(")
_EXC_LINE = re.compile(r"^(assert\b|AssertionError\b|[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failed|Failure|"
                       r"Warning|Timeout|Refused|Aborted|Iteration)\b|[A-Za-z_][\w.]*: )")
_NOISE = re.compile(r"^(Omitting \d+ identical items|Use -v|Full diff:|\(pytest_assertion plugin)")
_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")


class _Failure:
    def __init__(self, name: str, top: str) -> None:
        self.name = name
        self.top = top
        self.lines: list[str] = []
        self.captured = 0


def _section_key(name: str) -> str:
    return re.sub(r"^ERROR (at (setup|teardown|call) of|collecting) ", "", name).strip()


def _id_key(test_id: str) -> str:
    parts = test_id.split("::")
    return ".".join(parts[1:]) if len(parts) > 1 else test_id


def _failure_details(f: _Failure) -> tuple[list[str], list[str], list[str]]:
    """(principal error lines, other error lines, frames) of one failure section."""
    principal: list[str] = []
    detail: list[str] = []
    frames: list[str] = []
    last_def: str | None = None
    block_first = True
    for line in f.lines:
        if any(line.startswith(c) for c in _CHAINED):
            block_first = True
            continue
        if line.startswith("E ") or line == "E":
            text = line[1:].strip()
            if not text:
                continue
            if block_first or _EXC_LINE.match(text):
                if text not in principal:
                    principal.append(text)
            elif text not in detail:
                detail.append(text)
            block_first = False
            continue
        if line.startswith("_ _"):  # pytest's separator between the frames of one traceback
            block_first = True
        m = _DEF.match(line.strip()) if line.startswith(("    ", ">")) else None
        if m:
            last_def = m["func"]
            continue
        m = _FRAME_SHORT.match(line)
        if m:
            frames.append(f"{m['path']}:{m['line']} in {m['func']}")
            last_def = None
            continue
        m = _FRAME_NATIVE.match(line)
        if m:
            frames.append(f"{m['path']}:{m['line']}" + (f" in {m['func']}" if m["func"] else ""))
            continue
        m = _FRAME_LONG.match(line)
        if m:
            frames.append(f"{m['path']}:{m['line']}" + (f" in {last_def}" if last_def else ""))
            last_def = None
            block_first = True
    return principal, detail, frames


def summarize_pytest(text: str, *, max_detail: int = 1) -> Summary:
    """Failing tests with their error lines and key frames; counts for the rest."""
    read = _PytestOutput()
    for raw in text.splitlines():
        read.feed(raw.rstrip())
    for i in read.listed:
        read.short.setdefault(i, "")
    entries = _paired(read.failures, read.short)
    facts = Facts(tests_summary=read.summary_line)
    out = [f"pytest: {read.summary_line or 'no summary line'}"
           + (f" ({read.passed} PASSED lines omitted)" if read.passed else "")]
    if entries:
        out.append(f"failing ({len(entries)}):")
    for test_id, f in entries:
        facts.failing_tests.append(test_id)
        if f is None:
            msg = read.short.get(test_id, "")
            out.append(f"- {test_id}" + (f" - {cut(msg)}" if msg else ""))
            if msg:
                facts.error_lines.append(msg)
            continue
        out += _failure_lines(test_id, f, facts, max_detail)
    facts.error_lines = list(dict.fromkeys(facts.error_lines))
    return Summary(kind="pytest", text="\n".join(out), facts=facts)


class _PytestOutput:
    """What pytest's output says, line by line: the failure sections, the short summary's ids and messages, the
    ids of a verbose run, the passed count and the summary line."""

    def __init__(self) -> None:
        self.top = ""
        """The section the lines are in (FAILURES, ERRORS, short test summary info, ...)."""
        self.failures: list[_Failure] = []
        self.current: _Failure | None = None
        self.in_captured = False
        self.short: OrderedDict[str, str] = OrderedDict()
        """Failing test ids and their messages, in order."""
        self.listed: list[str] = []
        self.passed = 0
        self.summary_line = ""

    def feed(self, line: str) -> None:
        m = _TOP.match(line)
        if m:
            self.top = m["title"].strip().upper()
            self.current, self.in_captured = None, False
            if _COUNTS.search(line) and " in " in line:
                self.summary_line = m["title"].strip()
            return
        if self.top in ("FAILURES", "ERRORS") and self._in_failures(line):
            return
        if m := _SHORT.match(line):
            self.short.setdefault(m["id"], (m["msg"] or "").strip())
        elif m := _VERBOSE.match(line):
            if m["status"] == "PASSED":
                self.passed += 1
            else:
                self.short.setdefault(m["id"], "")
        elif _PASSED.match(line):
            self.passed += 1
        elif m := _FAILED_LIST.match(line):
            self.listed += [i.strip() for i in m["ids"].split(", ") if i.strip()]
        elif (m := _FAILED_MESSAGE.match(line)) and not self.top:
            if not self.short.get(m["id"]):
                self.short[m["id"]] = m["msg"].strip()
        elif not self.summary_line and _COUNTS.search(line) and re.search(r" in [\d.]+s", line):
            self.summary_line = line.strip()

    def _in_failures(self, line: str) -> bool:
        """A line of the FAILURES or ERRORS sections: a test's header, its captured output or its body."""
        s = _SECTION.match(line)
        if s:
            self.current, self.in_captured = _Failure(s["name"], self.top), False
            self.failures.append(self.current)
            return True
        if _CAPTURED.match(line):
            self.in_captured = True
            return True
        if self.current is not None:
            if self.in_captured:
                self.current.captured += 1
            else:
                self.current.lines.append(line)
            return True
        return False


def _paired(failures: list[_Failure], short: OrderedDict[str, str]) -> list[tuple[str, _Failure | None]]:
    """Failure sections paired with the full ids of the short summary (same name; the test file among the
    frames), then the ids that have no section."""
    used: set[str] = set()
    entries: list[tuple[str, _Failure | None]] = []
    for f in failures:
        key = _section_key(f.name)
        candidates = [i for i in short if i not in used and (_id_key(i) == key or i == key)]
        body = "\n".join(f.lines)
        chosen = next((i for i in candidates if i.split("::")[0] in body), candidates[0] if candidates else None)
        if chosen is None:
            chosen = key
        used.add(chosen)
        entries.append((chosen, f))
    return entries + [(i, None) for i in short if i not in used]


def _failure_lines(test_id: str, f: _Failure, facts: Facts, max_detail: int) -> list[str]:
    """One failing test with a section: its error lines, its key frames (or the line, when it failed in the test
    itself) and how much it printed; its frames and error lines go into ``facts``."""
    principal, detail, frames = _failure_details(f)
    kept_frames = fold_frames(frames)
    facts.frames += [fr for fr in kept_frames if not fr.startswith("...") and fr not in facts.frames]
    where = ""
    if len(kept_frames) == 1 and test_id.split("::")[0] == kept_frames[0].split(":")[0]:
        where = f" (line {kept_frames[0].split(':')[1].split(' ')[0]})"
        kept_frames = []
    out = [f"- {test_id}{where}" + (" [setup error]" if "at setup of" in f.name else "")]
    out += [f"    E {cut(e)}" for e in principal]
    out += [f"    E {cut(e)}" for e in [d for d in detail if not _NOISE.match(d)][:max_detail]]
    if kept_frames:
        out.append("    at " + " > ".join(kept_frames))
    if f.captured:
        out.append(f"    ({f.captured} lines of captured output)")
    facts.error_lines += principal
    return out


def looks_like_pytest(text: str) -> bool:
    return bool(re.search(r"^=+ (test session starts|FAILURES|ERRORS|short test summary info) =+$", text, re.M)
                or re.search(r"^(FAILED|ERROR) \S+::\S+", text, re.M)
                or re.search(r"^=* ?\d+ (passed|failed)\b.* in [\d.]+s", text, re.M))


# ----------------------------------------------------------------------------------------------- tracebacks
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_PY_REPEATED = re.compile(r"^\s*\[Previous line repeated (?P<n>\d+) more times?\]")
_JS_ERROR = re.compile(r"^(?:Uncaught )?(?P<exc>[A-Z]\w*(?:Error|Exception)|Error)(?:: (?P<msg>.*))?$")
_JS_FRAME = re.compile(r"^\s+at (?:(?P<func>.+?) \()?(?P<path>[^()\s]+?):(?P<line>\d+)(?::\d+)?\)?$")
_GO_PANIC = re.compile(r"^(panic: |fatal error: )", re.M)
_GO_FUNC = re.compile(r"^(?P<func>[\w./*()\-]+)\(.*\)$")
_GO_LOC = re.compile(r"^\t(?P<path>\S+\.go):(?P<line>\d+)")
_GO_FAIL = re.compile(r"^\s*--- FAIL: (?P<name>\S+)", re.M)
_GO_TEST_MSG = re.compile(r"^\s+(?P<loc>\S+_test\.go:\d+): (?P<msg>.*)$")


def looks_like_traceback(text: str) -> bool:
    return ("Traceback (most recent call last):" in text or bool(_GO_PANIC.search(text))
            or bool(re.search(r"^\s+at .+:\d+:\d+\)?$", text, re.M)) or bool(_GO_FAIL.search(text)))


def summarize_traceback(text: str) -> Summary:
    """Exception lines and key frames of Python, JavaScript and Go failures."""
    lines = text.splitlines()
    facts = Facts()
    out: list[str] = []

    # Python: "Traceback (most recent call last):" blocks, chained ones included.
    i = 0
    while i < len(lines):
        if lines[i].startswith("Traceback (most recent call last):"):
            frames = []
            i += 1
            while i < len(lines) and (lines[i].startswith((" ", "\t")) or not lines[i].strip()):
                m = _PY_FRAME.match(lines[i])
                r = _PY_REPEATED.match(lines[i])
                if m:
                    frames.append(f"{m['path']}:{m['line']}" + (f" in {m['func'].strip()}" if m["func"] else ""))
                elif r and frames:
                    frames += [frames[-1]] * int(r["n"])
                i += 1
            exc = lines[i].strip() if i < len(lines) else "(no exception line)"
            kept = fold_frames(frames)
            out.append(f"{cut(exc)}")
            if kept:
                out.append("    at " + " > ".join(kept))
            facts.error_lines.append(exc)
            facts.frames += [f for f in kept if not f.startswith("...")]
        i += 1

    # JavaScript: an error line followed by "    at ..." frames (innermost first).
    for j, line in enumerate(lines):
        m = _JS_ERROR.match(line.strip())
        if m and j + 1 < len(lines) and _JS_FRAME.match(lines[j + 1]):
            frames = []
            for follow in lines[j + 1:]:
                fm = _JS_FRAME.match(follow)
                if not fm:
                    break
                if fm["path"].startswith("node:"):
                    continue
                frames.append(f"{fm['path']}:{fm['line']}" + (f" in {fm['func']}" if fm["func"] else ""))
            out.append(cut(line.strip()))
            if frames:
                out.append("    at " + " < ".join(frames[:3]) + (f" (+{len(frames) - 3} outer)" if len(frames) > 3
                                                                   else ""))
            facts.error_lines.append(line.strip())
            facts.frames += frames[:3]

    # Go: panics with goroutine frames; go test failures.
    for j, line in enumerate(lines):
        if _GO_PANIC.match(line):
            frames = []
            for k in range(j + 1, min(len(lines), j + 200)):
                fm = _GO_FUNC.match(lines[k])
                if fm and k + 1 < len(lines):
                    loc = _GO_LOC.match(lines[k + 1])
                    if loc and not fm["func"].startswith("runtime."):
                        frames.append(f"{loc['path']}:{loc['line']} in {fm['func']}")
            out.append(cut(line))
            if frames:
                out.append("    at " + " < ".join(frames[:3]) + (f" (+{len(frames) - 3} outer)" if len(frames) > 3
                                                                   else ""))
            facts.error_lines.append(line.strip())
            facts.frames += frames[:3]
        m = _GO_FAIL.match(line)
        if m:
            facts.failing_tests.append(m["name"])
            out.append(f"--- FAIL: {m['name']}")
            continue
        m = _GO_TEST_MSG.match(line)
        if m:
            out.append(f"    {m['loc']}: {cut(m['msg'])}")
            facts.error_lines.append(m["msg"].strip())
    if not out:
        return summarize_generic(text)
    return Summary(kind="traceback", text="\n".join(out), facts=facts)


# ----------------------------------------------------------------------------------------------------- diffs
_DIFF_GIT = re.compile(r"^diff --git a/(?P<a>.+?) b/(?P<b>.+)$")
_HUNK = re.compile(r"^@@ -(?P<a>\d+)(?:,(?P<an>\d+))? \+(?P<b>\d+)(?:,(?P<bn>\d+))? @@ ?(?P<ctx>.*)$")


class _DiffFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self.status = "M"
        self.old: str | None = None
        self.similarity = ""
        self.hunks = 0
        self.added = 0
        self.removed = 0
        self.contexts: list[str] = []
        self.binary = False


def looks_like_diff(text: str) -> bool:
    return bool(re.search(r"^diff --git ", text, re.M) or
                (re.search(r"^--- \S", text, re.M) and re.search(r"^\+\+\+ \S", text, re.M)
                 and re.search(r"^@@ -\d", text, re.M)))


def parse_diff(text: str) -> list[_DiffFile]:
    files: list[_DiffFile] = []
    cur: _DiffFile | None = None
    old_left = new_left = 0
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if old_left > 0 or new_left > 0:
            if line.startswith("+"):
                new_left -= 1
                cur.added += 1  # type: ignore[union-attr]
                continue
            if line.startswith("-"):
                old_left -= 1
                cur.removed += 1  # type: ignore[union-attr]
                continue
            if line.startswith("\\"):
                continue
            old_left -= 1
            new_left -= 1
            continue
        m = _DIFF_GIT.match(line)
        if m:
            cur = _DiffFile(m["b"])
            files.append(cur)
            continue
        if line.startswith("--- ") and n + 1 < len(lines) and lines[n + 1].startswith("+++ "):
            old_path = line[4:].split("\t")[0].strip()
            new_path = lines[n + 1][4:].split("\t")[0].strip()
            if cur is None or cur.hunks:  # a plain unified diff: a new file starts here
                path = new_path if new_path != "/dev/null" else old_path
                cur = _DiffFile(re.sub(r"^[ab]/", "", path))
                files.append(cur)
            if old_path == "/dev/null":
                cur.status = "A"
            if new_path == "/dev/null":
                cur.status = "D"
            continue
        if cur is None:
            continue
        if line.startswith("new file mode"):
            cur.status = "A"
        elif line.startswith("deleted file mode"):
            cur.status = "D"
        elif line.startswith("rename from "):
            cur.status, cur.old = "R", line[len("rename from "):]
        elif line.startswith("rename to "):
            cur.path = line[len("rename to "):]
        elif line.startswith("copy from "):
            cur.status, cur.old = "C", line[len("copy from "):]
        elif line.startswith("similarity index "):
            cur.similarity = line[len("similarity index "):]
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            cur.binary = True
        else:
            h = _HUNK.match(line)
            if h:
                cur.hunks += 1
                old_left = int(h["an"]) if h["an"] is not None else 1
                new_left = int(h["bn"]) if h["bn"] is not None else 1
                ctx = h["ctx"].strip()
                if ctx and ctx not in cur.contexts:
                    cur.contexts.append(ctx)
    return files


def summarize_diff(text: str, *, max_files: int = 300, max_contexts: int = 2) -> Summary:
    """Files changed with status, hunks and +/- counts, and where the first hunks are."""
    files = parse_diff(text)
    if not files:
        return summarize_generic(text)
    hunks = sum(f.hunks for f in files)
    added = sum(f.added for f in files)
    removed = sum(f.removed for f in files)
    out = [f"diff: {len(files)} files changed, {hunks} hunks, +{added} -{removed}"]
    for f in files[:max_files]:
        name = f"{f.old} -> {f.path}" if f.old and f.status in "RC" else f.path
        row = f"{f.status} {name}"
        if f.similarity:
            row += f" ({f.similarity})"
        if f.binary:
            row += " (binary)"
        if f.hunks:
            row += f" +{f.added} -{f.removed} in {f.hunks} hunk{'s' if f.hunks > 1 else ''}"
        if f.contexts:
            row += ": " + " | ".join(cut(c, 60) for c in f.contexts[:max_contexts])
            if len(f.contexts) > max_contexts:
                row += " | ..."
        out.append(row)
    if len(files) > max_files:
        dirs: OrderedDict[str, int] = OrderedDict()
        for f in files[max_files:]:
            top = f.path.split("/", 1)[0] + "/" if "/" in f.path else "./"
            dirs[top] = dirs.get(top, 0) + 1
        out.append(f"... {len(files) - max_files} more files: " + ", ".join(f"{d} ({n})" for d, n in dirs.items()))
    changed = []
    for f in files:
        if f.old and f.status == "R":
            changed.append(f.old)
        changed.append(f.path)
    return Summary(kind="diff", text="\n".join(out), facts=Facts(files_changed=list(dict.fromkeys(changed))))


# ------------------------------------------------------------------------------------------ read_file, grep
_NUMBERED = re.compile(r"^\s*(?P<n>\d+)\t(?P<code>.*)$")
_TRAILER = re.compile(r"\[showing lines (?P<a>\d+)-(?P<b>\d+) of (?P<total>\d+)")
_OUTLINE = re.compile(r"^\s*(?:export\s+)?(?:pub(?:\(\w+\))?\s+)?(?:async\s+)?"
                      r"(?:def|class|function|func|fn|interface|struct|impl|trait|enum|type)\s+\S")


def summarize_read_file(arguments: dict[str, Any], text: str, *, max_outline: int = 30) -> Summary:
    """Path, line range and an outline of what was read."""
    path = str(arguments.get("path", "?"))
    numbers: list[int] = []
    outline: list[str] = []
    for line in text.splitlines():
        m = _NUMBERED.match(line)
        if not m:
            continue
        numbers.append(int(m["n"]))
        if _OUTLINE.match(m["code"]):
            outline.append(f"{m['n']}: {cut(m['code'].strip(), 80)}")
    if not numbers:
        return summarize_generic(text)
    first, last = numbers[0], numbers[-1]
    t = _TRAILER.search(text)
    total = f" of {t['total']}" if t else ""
    out = [f"read {path} lines {first}-{last}{total}"]
    if outline:
        out.append("outline: " + "; ".join(outline[:max_outline]) + (" ..." if len(outline) > max_outline else ""))
    return Summary(kind="read_file", text="\n".join(out), facts=Facts(files_read=[f"{path}:{first}-{last}"]))


_GREP = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<text>.*)$")


def summarize_grep(arguments: dict[str, Any], text: str, *, max_files: int = 40, max_lines: int = 12) -> Summary:
    """Match counts per file with line numbers."""
    per_file: OrderedDict[str, list[str]] = OrderedDict()
    for line in text.splitlines():
        m = _GREP.match(line)
        if m:
            per_file.setdefault(m["path"], []).append(m["line"])
    if not per_file:
        return summarize_generic(text)
    total = sum(len(v) for v in per_file.values())
    pattern = arguments.get("pattern")
    head = f"grep {pattern!r}: " if pattern is not None else "matches: "
    out = [f"{head}{total} matches in {len(per_file)} files"]
    for path, nums in list(per_file.items())[:max_files]:
        shown = ", ".join(nums[:max_lines]) + (f", ... ({len(nums)})" if len(nums) > max_lines else "")
        out.append(f"{path}: {shown}")
    if len(per_file) > max_files:
        out.append(f"... {len(per_file) - max_files} more files")
    return Summary(kind="grep", text="\n".join(out))


# --------------------------------------------------------------------------------------------------- generic
_ERRORISH = re.compile(r"\b(error|exception|fail(ed|ure)?|fatal|panic|traceback|denied|not found)\b", re.I)


def summarize_generic(text: str, *, head: int = 10, tail: int = 10, max_errors: int = 8) -> Summary:
    """The first and last lines, and error-looking lines between them."""
    lines = text.splitlines()
    if len(lines) <= head + tail + max_errors:
        kept = [cut(ln, 200) for ln in lines]
        return Summary(kind="generic", text="\n".join(kept))
    middle = lines[head:len(lines) - tail]
    errors = [cut(ln.strip(), 200) for ln in middle if _ERRORISH.search(ln)]
    errors = list(dict.fromkeys(errors))
    out = [cut(ln, 200) for ln in lines[:head]]
    out.append(f"... {len(middle)} lines omitted" + (f"; error-looking lines among them ({len(errors)}):"
                                                     if errors else " ..."))
    out += [f"  {e}" for e in errors[:max_errors]]
    if len(errors) > max_errors:
        out.append(f"  ... {len(errors) - max_errors} more")
    out += [cut(ln, 200) for ln in lines[len(lines) - tail:]]
    return Summary(kind="generic", text="\n".join(out), facts=Facts(error_lines=errors[:max_errors]))


# -------------------------------------------------------------------------------------------------- dispatch
_EXEC_HEAD = re.compile(r"^exit code: (?P<code>[^\n]+)\n")


def detect_kind(text: str) -> str:
    """``pytest``, ``diff``, ``traceback`` or ``generic``, from the text alone."""
    if looks_like_pytest(text):
        return "pytest"
    if looks_like_diff(text):
        return "diff"
    if looks_like_traceback(text):
        return "traceback"
    return "generic"


def summarize_output(tool: str, arguments: dict[str, Any], text: str) -> Summary:
    """Summary of one tool output, by tool name first and by content for commands."""
    if tool == "read_file":
        return summarize_read_file(arguments, text)
    if tool == "grep":
        return summarize_grep(arguments, text)
    if tool == "git_diff":
        return summarize_diff(text)
    exit_line = ""
    body = text
    m = _EXEC_HEAD.match(text)
    if m:
        exit_line = f"exit code: {m['code']}"
        body = text[m.end():]
    kind = "pytest" if tool == "run_tests" else detect_kind(body)
    summary = {"pytest": summarize_pytest, "diff": summarize_diff, "traceback": summarize_traceback,
               "generic": summarize_generic}[kind](body)
    if exit_line:
        summary.text = f"{exit_line}\n{summary.text}"
    return summary
