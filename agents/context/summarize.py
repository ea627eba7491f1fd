"""Summaries of long tool outputs, one summarizer per kind of output, for compaction.

Each summarizer keeps what an agent needs to go on and drops the bulk:

- ``pytest`` (``pytest_output``): every failing test id, every error line (exception and ``assert`` lines, chained
  ones too), the key stack frames (``file:line in function``: the test's frame and the deepest ones, repeated
  frames folded), the counts. Passed-test lines, source listings and captured output go.
- ``traceback``: Python (``Traceback (most recent call last)``), JavaScript (``at f (file:line:col)``) and Go
  (``panic:`` + goroutine frames, ``--- FAIL:`` test lines): the exception lines and the key frames.
- ``diff``: files changed with status (added, deleted, renamed), hunk counts, lines added/removed, and the
  enclosing function of the first hunks.
- ``read_file``: path, line range and an outline (def/class/func lines with their numbers).
- ``grep``: matches per file with line numbers.
- ``generic``: head and tail, plus error-looking lines from the middle.

Every summarizer returns ``Facts`` as well (failing tests, error lines, frames, files read or changed), which the
compaction event records (``summary``: the types and shared helpers).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from agents.context.pytest_output import looks_like_pytest, summarize_pytest
from agents.context.summary import Facts, Summary, cut, fold_frames

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
