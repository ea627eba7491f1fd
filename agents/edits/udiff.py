"""Unified diffs for one file.

Accepts ``diff --git``/``---``/``+++`` headers (optional), ``@@ -a,b +c,d @@`` headers (the
numbers are optional and only used to break ties), hunk lines starting with ``" "``, ``"-"``,
``"+"``, ``\\ No newline at end of file`` markers (ignored: the file keeps its own final
newline), code fences around the diff, and empty lines inside a hunk (read as empty context
lines, since editors often strip the lone space). Hunk line counts are not trusted.
"""

from __future__ import annotations

import re

from .document import Document, to_lf
from .engine import outcome
from .hunks import Hunk, apply_hunks
from .model import EditOutcome, EditRefused
from .snippet import strip_fence

_HUNK_HEADER = re.compile(r"^@@+\s*(?:-(\d+)(?:,(\d+))?\s*(?:\+(\d+)(?:,(\d+))?)?\s*)?@*.*$")
_META = (
    "diff ",
    "index ",
    "new file mode",
    "deleted file mode",
    "similarity index",
    "rename from",
    "rename to",
    "old mode",
    "new mode",
    "Binary files",
)


def _path(header: str) -> str:
    name = header[4:].split("\t")[0].strip()
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


def parse_udiff(diff_text: str) -> tuple[list[Hunk], str | None, str | None]:
    """Hunks plus the ``---`` and ``+++`` paths (None when absent); raises ``invalid_patch``."""
    text = to_lf(diff_text)
    inner = strip_fence(text)
    if inner is not None:
        text = inner
    lines = text.split("\n")
    hunks: list[Hunk] = []
    old_path: str | None = None
    new_path: str | None = None
    current: Hunk | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.startswith("--- ") and nxt.startswith("+++ "):
            if old_path is not None and (_path(line), _path(nxt)) != (old_path, new_path):
                raise EditRefused(
                    "The diff touches several files; send one file's diff per call. Nothing was changed.",
                    "unsupported",
                )
            old_path, new_path = _path(line), _path(nxt)
            current = None
            i += 2
            continue
        if line.startswith("@@"):
            m = _HUNK_HEADER.match(line)
            old_start = int(m.group(1)) if m and m.group(1) is not None else None
            current = Hunk([], old_start=old_start, label=f"hunk {len(hunks) + 1} ({line.strip()[:60]})")
            hunks.append(current)
            i += 1
            continue
        if current is None:
            i += 1  # preamble (commit message, diff --git, index ...)
            continue
        if line[:1] in (" ", "-", "+"):
            current.lines.append((line[0], line[1:]))
        elif line.startswith("\\"):
            pass  # "\ No newline at end of file"
        elif line == "":
            if any(rest.strip() for rest in lines[i + 1 :]) and not _ends_hunk(lines, i + 1):
                current.lines.append((" ", ""))
        elif line.startswith(_META):
            current = None
        else:
            raise EditRefused(
                f"Diff line {i + 1} ({line[:60]!r}) does not start with ' ', '-' or '+'. Inside a hunk, unchanged "
                "lines need a leading space. Nothing was changed.",
                "invalid_patch",
            )
        i += 1
    if not hunks:
        raise EditRefused(
            "No hunk found: a unified diff needs '@@' hunk headers followed by ' ', '-' and '+' lines.",
            "invalid_patch",
        )
    return hunks, old_path, new_path


def _ends_hunk(lines: list[str], j: int) -> bool:
    """True when the next non-empty line starts a new hunk or file (so a blank line is a separator)."""
    while j < len(lines) and lines[j] == "":
        j += 1
    if j >= len(lines):
        return True
    nxt = lines[j]
    return (
        nxt.startswith("@@")
        or nxt.startswith(_META)
        or (nxt.startswith("--- ") and j + 1 < len(lines) and lines[j + 1].startswith("+++ "))
    )


def apply_udiff(original: str, diff_text: str) -> EditOutcome:
    """Apply a unified diff for one file to ``original``; all hunks or none."""
    hunks, old_path, new_path = parse_udiff(diff_text)
    doc = Document.parse(original)
    if new_path == "/dev/null":
        raise EditRefused("The diff deletes the file; this tool only edits file contents.", "unsupported")
    if old_path == "/dev/null":
        if doc.text.strip():
            raise EditRefused(
                "The diff creates the file (--- /dev/null) but the file already has content. Nothing was changed.",
                "file_exists",
            )
        for hunk in hunks:
            hunk.lines = [(k, t) for k, t in hunk.lines if k == "+"]
            hunk.at_eof = True
    result = apply_hunks(doc, hunks, "diff")
    return outcome(result, [], original)
