"""Clean-up of the snippets a model sends: code fences, line-number prefixes, elision markers.

(Elision lines in the new text only are found by ``elision``.)

Each clean-up is only applied when the raw snippet does not occur verbatim in the file (the
caller checks) and when the pattern is unmistakable: a fence must open the first line and close
the last one; line-number prefixes must be on every line, in one format, and (for the old text)
numbered consecutively.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})[\w.+#-]*\s*$")

#: Line-number prefix formats: cat -n / editor view ("    12\t"), Claude-style ("    12→"),
#: "12: " and "12 | ". Group 1 is the number; the whole match is removed.
_PREFIX_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tab", re.compile(r"^ *(\d+)\t")),
    ("arrow", re.compile(r"^ *(\d+)\u2192")),
    ("colon", re.compile(r"^ *(\d+):(?: |$)")),
    ("pipe", re.compile(r"^ *(\d+) \|(?: |$)")),
)

_ELISION = re.compile(
    r"^\s*(?:(?:#|//|--|;|/\*|<!--)\s*)?(?:\.\.\.|\u2026|\[\s*(?:\.\.\.|\u2026)\s*\])"
    r"(?:\s*(?:existing|unchanged|rest|remaining|other|more)\b[^\n]*)?\s*(?:\*/|-->)?\s*$",
    re.IGNORECASE,
)


def split_lines(snippet: str) -> list[str]:
    """Lines of a snippet; one trailing newline ends the last line rather than adding one."""
    if snippet == "":
        return []
    if snippet.endswith("\n"):
        snippet = snippet[:-1]
    return snippet.split("\n")


def strip_fence(snippet: str) -> str | None:
    """Return the inside of a snippet wrapped in a Markdown code fence, or None if not fenced."""
    lines = snippet.split("\n")
    while lines and lines[-1].strip() == "":
        lines.pop()
    if len(lines) < 2:
        return None
    opening = _FENCE_OPEN.match(lines[0].strip())
    if not opening or lines[-1].strip() != opening.group(1):
        return None
    inner = lines[1:-1]
    return "\n".join(inner) + ("\n" if inner else "")


def _detect_prefix(lines: list[str]) -> tuple[str, list[int]] | None:
    for name, pattern in _PREFIX_FORMATS:
        numbers: list[int] = []
        for line in lines:
            m = pattern.match(line)
            if not m:
                break
            numbers.append(int(m.group(1)))
        else:
            return name, numbers
    return None


def strip_line_numbers(snippet: str, *, require_format: str | None = None) -> tuple[str, str] | None:
    """Remove a line-number prefix present on every line of ``snippet``.

    Without ``require_format`` (used for the old text) the numbers must be consecutive and, for
    the ambiguous ``colon``/``pipe`` formats, there must be at least two lines. With it (used for
    the new text) every line must carry that same format; numbers may jump. Returns
    ``(stripped, format)`` or None.
    """
    trailing_nl = snippet.endswith("\n")
    lines = split_lines(snippet)
    if not lines:
        return None
    found = _detect_prefix(lines)
    if found is None:
        return None
    fmt, numbers = found
    if require_format is not None:
        if fmt != require_format:
            return None
    else:
        if any(b != a + 1 for a, b in zip(numbers, numbers[1:], strict=False)):
            return None
        if fmt in ("colon", "pipe") and len(lines) < 2:
            return None
    pattern = dict(_PREFIX_FORMATS)[fmt]
    stripped = [line[pattern.match(line).end() :] for line in lines]  # type: ignore[union-attr]
    return "\n".join(stripped) + ("\n" if trailing_nl else ""), fmt


def is_elision(line: str) -> bool:
    """True for a line that stands for omitted code: ``...``, ``…``, ``[...]``, ``# ... existing code ...``."""
    return bool(_ELISION.match(line))


def elision_markers(lines: list[str], kinds: set[str] | None = None) -> list[str]:
    """The elision marker lines of ``lines``, stripped, in order.

    With ``kinds`` only markers whose stripped text is one of them count: the new text's
    markers are those of the old text's kinds, so a Python ``...`` body in the new text is not
    taken for the old text's ``# ... existing code ...``.
    """
    return [line.strip() for line in lines if is_elision(line) and (kinds is None or line.strip() in kinds)]


def split_elisions(lines: list[str], kinds: set[str] | None = None) -> list[list[str]] | None:
    """Split lines at elision markers (only those of ``kinds`` when given); None when there is none."""
    if not elision_markers(lines, kinds):
        return None
    pieces: list[list[str]] = [[]]
    for line in lines:
        if is_elision(line) and (kinds is None or line.strip() in kinds):
            pieces.append([])
        else:
            pieces[-1].append(line)
    return pieces


def is_blank(line: str) -> bool:
    """True for an empty or whitespace-only line."""
    return line.strip() == ""


def edge_blank_counts(lines: list[str]) -> tuple[int, int]:
    """Number of blank lines at the start and at the end (0, 0 when all lines are blank)."""
    lead = 0
    while lead < len(lines) and is_blank(lines[lead]):
        lead += 1
    if lead == len(lines):
        return 0, 0
    trail = 0
    while is_blank(lines[len(lines) - 1 - trail]):
        trail += 1
    return lead, trail


@dataclass
class Prepared:
    """Old and new snippet after clean-up, with notes describing what was cleaned."""

    old: str
    new: str
    notes: list[str]


def prepare(file_text: str, old: str, new: str) -> Prepared:
    """Strip fences and line-number prefixes from ``old`` (and correspondingly ``new``).

    Nothing is stripped while ``old`` occurs verbatim in ``file_text``: the file may really
    contain a fence or ``12: `` text.
    """
    notes: list[str] = []
    if old not in file_text:
        inner = strip_fence(old)
        if inner is not None and inner.strip():
            old = inner
            new_inner = strip_fence(new)
            if new_inner is not None:
                new = new_inner
            notes.append("removed the code fence around the snippet")
    if old not in file_text:
        got = strip_line_numbers(old)
        if got is not None:
            old, fmt = got
            got_new = strip_line_numbers(new, require_format=fmt)
            if got_new is not None:
                new = got_new[0]
            notes.append("removed line-number prefixes from the snippet")
    return Prepared(old, new, notes)
