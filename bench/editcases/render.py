"""Building blocks of the edit corpus: hunks, the four edit formats, file transforms and premise checks.

A change is a :class:`Change` (a hunk on the old file); :func:`render` writes hunks in one of the four edit formats;
the premise helpers (:func:`block_starts`, :func:`cascade_target`, :func:`skeleton_starts` ...) are simple,
independent line comparisons that decide whether a variant means what it says. :class:`Builder` collects cases.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

FORMATS = ("str_replace", "search_replace", "udiff", "apply_patch")
CONTEXT = 3

Script = list[tuple[str, str]]
"""A hunk body: ``(kind, text)`` with kind ``" "`` (context), ``"-"`` (removed), ``"+"`` (added)."""

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{3,}\b")
KEYWORDS = frozenset("""False None True and as assert async await break class continue def del elif else except
finally for from global if import lambda nonlocal not or pass raise return self try while with yield""".split())
MARKER_LIKE = re.compile(r"^\s*(#\s*)?(\.\.\.|\u2026)")
_SR_MARKERS = re.compile(r"^(<{7} ?SEARCH|={7}\s*$|>{7} ?REPLACE)")
PLACEHOLDER = "# ... existing code ..."


# ---- independent line matching (the premises of the variants) ---------------------------------------------------


def _key(line: str, level: str) -> str:
    if level == "raw":
        return line
    if level == "rstrip":
        return line.rstrip()
    if level == "strip":
        return line.strip()
    return line.translate(_QUOTES).strip()  # "fold"


def block_starts(lines: list[str], block: list[str], level: str = "raw", lo: int = 0, hi: int | None = None
                 ) -> list[int]:
    """Start indices where ``block`` equals ``lines[lo:hi]`` line by line under ``level`` (raw, rstrip, strip, fold)."""
    if not block:
        return []
    hi = len(lines) if hi is None else hi
    keys = [_key(b, level) for b in block]
    first = keys[0]
    out = []
    for i in range(lo, hi - len(block) + 1):
        if _key(lines[i], level) == first and all(_key(lines[i + j], level) == keys[j] for j in range(1, len(keys))):
            out.append(i)
    return out


def skeleton_spans(lines: list[str], block: list[str], lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """Where the non-blank lines of ``block`` occur in ``lines[lo:hi]`` in order, any run of blank lines between them.

    Returns ``(first, end)`` for every placement: the file indices of the block's first non-blank line and one past
    its last (blank lines of the block and of the file are ignored; non-blank lines must be identical).
    """
    hi = len(lines) if hi is None else hi
    want = [b for b in block if b.strip()]
    if not want:
        return []
    out = []
    for i in range(lo, hi):
        if lines[i] != want[0]:
            continue
        row, k = i, 1
        while k < len(want):
            row += 1
            while row < hi and not lines[row].strip():
                row += 1
            if row >= hi or lines[row] != want[k]:
                break
            k += 1
        if k == len(want):
            out.append((i, row + 1))
    return out


def count_substring(text: str, needle: str) -> int:
    """Occurrences of ``needle`` in ``text``, overlapping ones included."""
    if not needle:
        return 0
    n, pos = 0, text.find(needle)
    while pos != -1:
        n += 1
        pos = text.find(needle, pos + 1)
    return n


def trim_blank_edges(block: list[str]) -> list[str]:
    lo, hi = 0, len(block)
    while lo < hi and not block[lo].strip():
        lo += 1
    while hi > lo and not block[hi - 1].strip():
        hi -= 1
    return block[lo:hi]


def absent_at_every_level(lines: list[str], block: list[str]) -> bool:
    """True when ``block`` matches nowhere, even ignoring whitespace, quote style and blank edge lines."""
    core = trim_blank_edges(block)
    return bool(core) and not block_starts(lines, core, "fold")


def _indent_width(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def uniform_shift_matches(lines: list[str], block: list[str], level: str = "strip", lo: int = 0,
                          hi: int | None = None) -> list[int]:
    """Places where ``block`` matches ignoring indentation AND every non-blank line is shifted by the same columns."""
    out = []
    for start in block_starts(lines, block, level, lo, hi):
        deltas = {_indent_width(lines[start + j]) - _indent_width(b) for j, b in enumerate(block) if b.strip()}
        if len(deltas) == 1:
            out.append(start)
    return out


def cascade_spans(lines: list[str], block: list[str], lo: int = 0, hi: int | None = None, *,
                  blank_runs: bool = False) -> list[tuple[int, int]]:
    """Every placement of ``block`` at the strictest level that places it at all, inside ``lines[lo:hi]``.

    Levels: identical lines, trailing whitespace ignored, indentation ignored (uniform shift), the same without blank
    edge lines, the same with curly quotes folded (and, with ``blank_runs``, identical non-blank lines with any runs
    of blank lines between them). A placement is ``(first, end)``: the file index of the block's first non-blank line
    and one past its last line.
    """
    core = trim_blank_edges(block)
    lead = next((i for i, t in enumerate(block) if t.strip()), 0)
    tail = len(block) - lead - len(core)
    levels = [
        lambda: [(s + lead, s + len(block) - tail) for s in block_starts(lines, block, "raw", lo, hi)],
        lambda: [(s + lead, s + len(block) - tail) for s in block_starts(lines, block, "rstrip", lo, hi)],
        lambda: [(s + lead, s + len(block) - tail) for s in uniform_shift_matches(lines, block, "strip", lo, hi)],
        lambda: [(s, s + len(core)) for s in uniform_shift_matches(lines, core, "strip", lo, hi)],
        lambda: [(s, s + len(core)) for s in uniform_shift_matches(lines, core, "fold", lo, hi)],
    ]
    if blank_runs:
        levels.append(lambda: skeleton_spans(lines, block, lo, hi))
    for level in levels:
        found = level()
        if found:
            return found
    return []


def cascade_target(lines: list[str], block: list[str], lo: int = 0, hi: int | None = None, *,
                   blank_runs: bool = False) -> int | None:
    """Where a careful applier must put ``block``: the only match at the strictest level that matches at all.

    See :func:`cascade_spans` for the levels. Returns the file index of the block's first non-blank line; None when
    the first level with a match has several, or no level matches.
    """
    found = cascade_spans(lines, block, lo, hi, blank_runs=blank_runs)
    return found[0][0] if len(found) == 1 else None


def ordered_targets(lines: list[str], blocks: list[list[str]], *, blank_runs: bool = False) -> list[int] | None:
    """Where several blocks must go when each is placed in order: one placement each, every one after the previous.

    Each block's candidates are its placements at the strictest level that places it anywhere in the file
    (:func:`cascade_spans`). Returns the first non-blank line of each block when exactly one ordered, non-overlapping
    choice exists; None otherwise.
    """
    cands = [cascade_spans(lines, b, blank_runs=blank_runs) for b in blocks]
    # ways[k][c]: number (capped at 2) of ordered choices for blocks 0..k that end with candidate c of block k
    ways: list[list[int]] = []
    for k, spans in enumerate(cands):
        row = []
        for first, _end in spans:
            if k == 0:
                row.append(1)
            else:
                row.append(min(2, sum(w for w, (_, e) in zip(ways[-1], cands[k - 1], strict=True) if e <= first)))
        ways.append(row)
    if not cands or sum(ways[-1]) != 1:
        return None
    picks: list[int] = []
    limit = None
    for k in range(len(cands) - 1, -1, -1):
        choice = next(i for i, (w, (first, end)) in enumerate(zip(ways[k], cands[k], strict=True))
                      if w and (limit is None or end <= limit))
        picks.append(cands[k][choice][0])
        limit = cands[k][choice][0]
    return picks[::-1]


def pinned_targets(lines: list[str], blocks: list[list[str]], *, blank_runs: bool = False) -> list[int] | None:
    """Where SEARCH/REPLACE blocks go when a repeated block may only be told apart by the block before it.

    Each block's candidates are its placements at the strictest level that places it anywhere (:func:`cascade_spans`).
    A block with one candidate goes there; one with several goes to the only candidate that starts right after the
    previous block's placement (nothing but blank lines between them). Returns the first non-blank line of each
    block, or None when some block is nowhere, or repeated and not pinned down that way.
    """
    picks: list[int] = []
    prev_end: int | None = None
    for block in blocks:
        spans = cascade_spans(lines, block, blank_runs=blank_runs)
        if len(spans) > 1 and prev_end is not None:
            spans = [(s, e) for s, e in spans if s >= prev_end and not any(t.strip() for t in lines[prev_end:s])]
        if len(spans) != 1:
            return None
        picks.append(spans[0][0])
        prev_end = spans[0][1]
    return picks


def first_content_line(ch: Change) -> int:
    """File index of the first non-blank old line of a change."""
    old = old_of(ch.script)
    return ch.start + next((i for i, t in enumerate(old) if t.strip()), 0)


# ---- hunks ------------------------------------------------------------------------------------------------------


def text_of(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def old_of(script: Script) -> list[str]:
    return [t for k, t in script if k != "+"]


def new_of(script: Script) -> list[str]:
    return [t for k, t in script if k != "-"]


@dataclass
class Change:
    """One hunk on the old file: the script starts at old line ``start`` (0-based)."""

    start: int
    script: Script

    @property
    def end(self) -> int:
        return self.start + len(old_of(self.script))

    def expected(self, lines: list[str]) -> list[str]:
        return lines[: self.start] + new_of(self.script) + lines[self.end :]


def _script(a: list[str], b: list[str], group: list[tuple[str, int, int, int, int]]) -> Script:
    script: Script = []
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            script += [(" ", t) for t in a[i1:i2]]
        else:
            script += [("-", t) for t in a[i1:i2]]
            script += [("+", t) for t in b[j1:j2]]
    return script


def changes(a: list[str], b: list[str]) -> list[Change]:
    """The hunks (three lines of context) turning ``a`` into ``b``."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return [Change(g[0][1], _script(a, b, g)) for g in matcher.get_grouped_opcodes(CONTEXT)]


def grow_unique(a: list[str], change: Change, max_extra: int = 10) -> Change | None:
    """The change with context added on both sides until its old text occurs once in the file (None if never)."""
    text = text_of(a)
    start, script = change.start, list(change.script)
    for _ in range(max_extra + 1):
        if old_of(script) and count_substring(text, text_of(old_of(script))) == 1:
            return Change(start, script)
        end = start + len(old_of(script))
        if start == 0 and end >= len(a):
            return None
        if start > 0:
            start -= 1
            script.insert(0, (" ", a[start]))
        if end < len(a):
            script.append((" ", a[end]))
    return None


# ---- rendering --------------------------------------------------------------------------------------------------


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text}```\n"


def render_str_replace(old: list[str], new: list[str], **opts: Any) -> dict[str, Any]:
    o, n = text_of(old), text_of(new)
    if opts.get("numbers") is not None:
        o, n = _numbered(old, opts["numbers"], opts.get("number_style", "tab")), _numbered(
            new, opts["numbers"], opts.get("number_style", "tab"))
    if opts.get("no_final_newline"):
        o, n = o[:-1], n[:-1] if n else n
    if opts.get("fence"):
        o, n = _fence(o, "python"), _fence(n, "python")
    return {"old_str": o, "new_str": n, "replace_all": bool(opts.get("replace_all"))}


def _numbered(lines: list[str], first: int, style: str) -> str:
    if style == "arrow":
        return "".join(f"{n:6d}\u2192{line}\n" for n, line in enumerate(lines, first))
    return "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(lines, first))


def render_search_replace(path: str, blocks: list[tuple[list[str], list[str]]], **opts: Any) -> str:
    out = []
    for old, new in blocks:
        o, n = text_of(old), text_of(new)
        if opts.get("numbers") is not None:
            o = _numbered(old, opts["numbers"], opts.get("number_style", "tab"))
            n = _numbered(new, opts["numbers"], opts.get("number_style", "tab"))
        out.append(f"{path}\n```python\n<<<<<<< SEARCH\n{o}=======\n{n}>>>>>>> REPLACE\n```\n")
    return "\n".join(out)


def _body(script: Script, strip_blank: bool) -> str:
    rows = []
    for kind, t in script:
        rows.append("" if (strip_blank and kind == " " and t == "") else kind + t)
    return "".join(r + "\n" for r in rows)


def render_udiff(path: str, hunks: list[Change], **opts: Any) -> str:
    out = [] if opts.get("no_header") else [f"--- a/{path}\n+++ b/{path}\n"]
    delta = 0
    for h in hunks:
        n_old, n_new = len(old_of(h.script)), len(new_of(h.script))
        if opts.get("bad_counts"):
            n_old, n_new = n_old + 2, max(0, n_new - 1)
        if opts.get("no_numbers"):
            out.append("@@ @@\n")
        else:
            shift = opts.get("shift", 0)
            old_start = max(1, h.start + 1 + shift)
            out.append(f"@@ -{old_start},{n_old} +{max(1, h.start + 1 + delta + shift)},{n_new} @@\n")
        delta += n_new - n_old
        out.append(_body(h.script, opts.get("strip_blank", False)))
    text = "".join(out)
    return _fence(text, "diff") if opts.get("fence") else text


def render_apply_patch(path: str, hunks: list[Change], anchors: list[str | None] | None = None, **opts: Any) -> str:
    out = ["*** Begin Patch\n", f"*** Update File: {path}\n"]
    for k, h in enumerate(hunks):
        anchor = anchors[k] if anchors else None
        out.append(f"@@ {anchor}\n" if anchor else "@@\n")
        out.append(_body(h.script, opts.get("strip_blank", False)))
        if opts.get("eof") and k == len(hunks) - 1:
            out.append("*** End of File\n")
    out.append("*** End Patch\n")
    text = "".join(out)
    return _fence(text) if opts.get("fence") else text


def render(fmt: str, path: str, hunks: list[Change], **opts: Any) -> Any:
    """The edit payload of one case in format ``fmt``."""
    if fmt == "str_replace":
        (h,) = hunks
        return render_str_replace(old_of(h.script), new_of(h.script), **opts)
    if fmt == "search_replace":
        return render_search_replace(path, [(old_of(h.script), new_of(h.script)) for h in hunks], **opts)
    if fmt == "udiff":
        return render_udiff(path, hunks, **opts)
    return render_apply_patch(path, hunks, **opts)


def renderable(fmt: str, hunks: list[Change]) -> bool:
    """False when a line of the change would be read as format syntax (SEARCH markers, diff file headers)."""
    for h in hunks:
        for kind, t in h.script:
            if fmt == "search_replace" and _SR_MARKERS.match(t):
                return False
            if fmt in ("udiff", "apply_patch") and (kind + t).startswith(("--- ", "+++ ", "*** ", "@@")):
                return False
    return True


# ---- file transforms --------------------------------------------------------------------------------------------


def tabify(line: str) -> str:
    """Leading spaces as tabs (4 columns each), the remainder as spaces."""
    n = len(line) - len(line.lstrip(" "))
    return "\t" * (n // 4) + " " * (n % 4) + line[n:]


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def curl_quotes(line: str) -> str:
    """Straight quotes turned typographic, the way a word processor would."""
    out, double_open, single_open = [], True, True
    for ch in line:
        if ch == '"':
            out.append("\u201c" if double_open else "\u201d")
            double_open = not double_open
        elif ch == "'":
            out.append("\u2018" if single_open else "\u2019")
            single_open = not single_open
        else:
            out.append(ch)
    return "".join(out)


# ---- the case builder -------------------------------------------------------------------------------------------


def rng_of(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


@dataclass
class FileChange:
    pkg: str
    path: str
    a: list[str]
    b: list[str]


class Builder:
    """Accumulates cases as dicts (the JSONL schema of ``bosun eval edits`` plus ``category``)."""

    def __init__(self, formats_per_variant: int = 2) -> None:
        self.cases: list[dict[str, Any]] = []
        self.per_variant = formats_per_variant
        self._ids: set[str] = set()

    def add(self, case_id: str, fmt: str, path: str, original: str, edit: Any, expected: str | None,
            category: str, hunks: int = 1) -> None:
        """Add a case (ignored when ``case_id`` is taken); ``hunks`` is how many regions of the file it edits."""
        if case_id in self._ids:
            return
        self._ids.add(case_id)
        self.cases.append({"id": case_id, "format": fmt, "path": path, "original": original, "edit": edit,
                           "expected": expected, "category": category, "hunks": hunks})

    def formats(self, seed: str, allowed: tuple[str, ...] = FORMATS, k: int | None = None) -> list[str]:
        """A deterministic rotation of ``k`` formats (default: ``formats_per_variant``) out of ``allowed``."""
        k = min(len(allowed), k if k is not None else self.per_variant)
        start = rng_of(seed) % len(allowed)
        return [allowed[(start + i) % len(allowed)] for i in range(k)]


def has_marker_lines(lines: list[str]) -> bool:
    return any(MARKER_LIKE.match(line) for line in lines)
