"""Line-block matching levels and the re-writing of a replacement in the file's own style.

A *line level* decides when a snippet line equals a file line:

=====================  =====================================================================
``exact``              identical lines (used for line-oriented formats: diffs, SEARCH blocks)
``trailing_ws``        identical after removing trailing whitespace
``indent_offset``      identical after removing indentation, and the indentation of the
                       file block is a *uniform* transformation of the snippet's (same
                       prefix added/removed everywhere, or the same column delta, tabs
                       counted at 4, 8 or 2 columns)
``edge_blank_lines``   as ``indent_offset`` after dropping blank lines at the snippet's edges
``blank_lines``        as ``edge_blank_lines``, but a run of blank lines between two snippet
                       lines matches any run of blank lines in the file (none included)
``unicode``            as ``blank_lines`` after folding curly quotes, dashes and odd spaces
                       to ASCII
=====================  =====================================================================

Each level is a superset of the previous one. Matches are always counted over the whole search
range; callers apply only a unique match. A ``blank_lines`` match records the file line of every
non-blank snippet line (``BlockMatch.rows``): the replacement is rebuilt around the file's own
blank lines (``blanks.realign``). When a block matched at a loose level is replaced,
lines the edit keeps are copied from the file byte for byte, new lines are re-indented into
the file's indentation style, and (at the ``unicode`` level) characters that only differed by
that folding are written as the file had them.

At ``exact`` and ``trailing_ws`` there is no indentation map. When the old text has no indented
line (so nothing in it shows the file's style), new lines indented with spaces in a file
indented only with tabs (or the reverse) get their leading whitespace re-rendered in the file's
style (``plan_restyle``); a file or new text mixing both styles is written as given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate

from .snippet import edge_blank_counts, is_blank

_UNICODE_FOLD: dict[int, str] = {}
for _chars, _ascii in (
    ("\u2018\u2019\u201a\u201b\u2032\u02bc", "'"),
    ("\u201c\u201d\u201e\u201f\u2033", '"'),
    ("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    ("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
):
    for _ch in _chars:
        _UNICODE_FOLD[ord(_ch)] = _ascii


_FOLDABLE = re.compile("[" + "".join(chr(c) for c in _UNICODE_FOLD) + "]")


def has_foldable(text: str) -> bool:
    """True when ``fold`` would change ``text``."""
    return not text.isascii() and _FOLDABLE.search(text) is not None


def fold(text: str) -> str:
    """Fold typographic quotes, dashes and odd spaces to ASCII (one character for one)."""
    return text.translate(_UNICODE_FOLD)


def indent_of(line: str) -> str:
    """Leading spaces and tabs of ``line``."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def width(indent: str, tab: int) -> int:
    """Display width of an indentation string with tab stops every ``tab`` columns."""
    col = 0
    for ch in indent:
        col = (col // tab + 1) * tab if ch == "\t" else col + 1
    return col


def _key_raw(line: str) -> str:
    return line


def _key_rstrip(line: str) -> str:
    return line.rstrip()


def _key_strip(line: str) -> str:
    return line.rstrip().lstrip(" \t")


def _key_fold(line: str) -> str:
    return fold(line).rstrip().lstrip(" \t")


_KEYS = {"raw": _key_raw, "rstrip": _key_rstrip, "strip": _key_strip, "fold": _key_fold}


@dataclass(frozen=True)
class LineLevel:
    """A line-comparison level (see module docstring)."""

    name: str
    key: str
    check_indent: bool
    trim_edges: bool
    blank_runs: bool = False


EXACT_LINES = LineLevel("exact", "raw", False, False)
TRAILING_WS = LineLevel("trailing_ws", "rstrip", False, False)
INDENT_OFFSET = LineLevel("indent_offset", "strip", True, False)
EDGE_BLANK = LineLevel("edge_blank_lines", "strip", True, True)
BLANK_RUNS = LineLevel("blank_lines", "strip", True, True, True)
UNICODE = LineLevel("unicode", "fold", True, True, True)

#: Line levels after ``exact`` (``exact`` itself depends on the format: substring or lines).
FUZZY_LEVELS: tuple[LineLevel, ...] = (TRAILING_WS, INDENT_OFFSET, EDGE_BLANK, BLANK_RUNS, UNICODE)
ALL_LINE_LEVELS: tuple[LineLevel, ...] = (EXACT_LINES, *FUZZY_LEVELS)
#: Levels that match a block line for line (blank lines included).
CONTIGUOUS_LEVELS: tuple[LineLevel, ...] = tuple(level for level in ALL_LINE_LEVELS if not level.blank_runs)


class FileLines:
    """The file's lines plus the LF-view text they came from, for fast candidate search.

    Candidate positions are found with C-speed substring search on the text (a line can only
    match a snippet line if it contains that line's comparison key), so matching costs time
    proportional to the number of candidates rather than to the file size.
    """

    def __init__(self, lines: list[str], text: str | None = None) -> None:
        self.lines = lines
        self.text = "\n".join(lines) if text is None else text
        self._folded: str | None = None
        self._rstripped: str | None = None
        self._offsets: list[int] | None = None
        self._tabs: bool | None = None
        self._style: str | None = None
        self._unit: int | None = None

    @property
    def folded_text(self) -> str:
        """``fold(text)``; same length and line structure as ``text``."""
        if self._folded is None:
            self._folded = fold(self.text)
        return self._folded

    @property
    def rstripped_text(self) -> str:
        """``text`` with trailing whitespace removed from every line (same line structure)."""
        if self._rstripped is None:
            self._rstripped = "\n".join(line.rstrip() for line in self.text.split("\n"))
        return self._rstripped

    @property
    def uses_tabs(self) -> bool:
        """True when more lines are indented with a tab than with a space."""
        if self._tabs is None:
            text = self.text
            tabs = text.count("\n\t") + text.startswith("\t")
            spaces = text.count("\n ") + text.startswith(" ")
            self._tabs = tabs > spaces
        return self._tabs

    @property
    def indent_style(self) -> str | None:
        """``"tabs"`` or ``"spaces"`` when every indented line starts with that character; None otherwise.

        None for a file with both kinds of indented lines or with none. A single leading space
        (block-comment alignment such as `` * ``) does not count as indentation.
        """
        if self._style is None:
            tabs = _has_line_starting(self.text, "\t")
            spaces = _has_line_starting(self.text, " ")
            self._style = "tabs" if tabs and not spaces else "spaces" if spaces and not tabs else ""
        return self._style or None

    @property
    def space_unit(self) -> int:
        """The file's indentation step in spaces (``indent_unit`` of its first 5,000 lines)."""
        if self._unit is None:
            self._unit = indent_unit(self.lines[:5000])
        return self._unit

    def offset(self, line: int) -> int:
        """Offset in ``text`` where line ``line`` starts (``len(text) + 1`` past the last line)."""
        if self._offsets is None:
            self._offsets = list(accumulate(map(len, self.lines), initial=0))
        line = min(max(line, 0), len(self.lines))
        return self._offsets[line] + line

    def candidates(self, kind: str, skeys: list[str], lo: int = 0, hi: int | None = None) -> Iterator[int]:
        """Start lines in ``lo..hi-len(skeys)`` where a block with comparison keys ``skeys`` could begin."""
        hi = len(self.lines) if hi is None else hi
        usable = [(j, key) for j, key in enumerate(skeys) if key]
        if not usable:
            yield from range(lo, hi - len(skeys) + 1)
            return
        text = self.folded_text if kind == "fold" else self.text
        longest = sorted(usable, key=lambda jk: -len(jk[1]))[:3]
        j, key = longest[0] if len(longest) == 1 else min(longest, key=lambda jk: text.count(jk[1]))
        whole = lo <= 0 and hi >= len(self.lines)
        first, end = (0, len(text)) if whole else (self.offset(lo + j), self.offset(hi - len(skeys) + j + 1))
        line = 0 if whole else lo + j
        prev = first
        seen: set[int] = set()
        pos = text.find(key, first, end)
        while pos != -1:
            line += text.count("\n", prev, pos)
            prev = pos
            start = line - j
            if start >= 0 and start not in seen:
                seen.add(start)
                yield start
            pos = text.find(key, pos + 1, end)


def _has_line_starting(text: str, lead: str) -> bool:
    """True when a non-blank line of ``text`` is indented and its indentation starts with ``lead``.

    For ``" "`` the indentation must be at least two characters wide.
    """
    pos = 0 if text.startswith(lead) else text.find("\n" + lead)
    while pos != -1:
        start = pos + 1 if text[pos] == "\n" else pos
        end = text.find("\n", start)
        line = text[start:] if end == -1 else text[start:end]
        if line.strip() and (lead == "\t" or len(indent_of(line)) >= 2):
            return True
        if end == -1:
            return False
        pos = text.find("\n" + lead, end)
    return False


def indent_unit(lines: Iterable[str]) -> int:
    """The most common increase of indentation (in characters) between consecutive non-blank lines.

    The first line's indentation counts as an increase from column 0; ties go to the smaller
    step; 0 when no line is indented. One-column steps (alignment under an opening bracket)
    only count when there is no wider step.
    """
    widths = [len(line) - len(rest) for line in lines if (rest := line.lstrip(" \t")).strip()]
    steps = Counter([b - a for a, b in zip([0, *widths], widths, strict=False) if b > a])
    if len(steps) > 1:
        steps.pop(1, None)
    if not steps:
        return 0
    best = max(steps.values())
    return min(step for step, n in steps.items() if n == best)


@dataclass(frozen=True)
class Restyle:
    """Re-rendering of new lines' leading whitespace in the file's style (no indentation map).

    ``to_tabs``: the new text is indented with spaces, ``unit`` of them per tab (a remainder
    stays as spaces); otherwise the new text is indented with tabs (optionally followed by
    spaces), each tab written as ``unit`` spaces. Only leading whitespace is changed.
    """

    to_tabs: bool
    unit: int

    def line(self, line: str) -> str:
        """``line`` with its leading whitespace in the file's style (blank lines as given)."""
        if is_blank(line):
            return line
        ws = indent_of(line)
        if not ws:
            return line
        if self.to_tabs:
            return "\t" * (len(ws) // self.unit) + " " * (len(ws) % self.unit) + line[len(ws) :]
        tabs = len(ws) - len(ws.lstrip("\t"))
        return " " * (tabs * self.unit) + line[tabs:]

    def text(self, snippet: str) -> str:
        """Every line of ``snippet`` through ``line``."""
        return "\n".join(self.line(line) for line in snippet.split("\n"))

    @property
    def description(self) -> str:
        """Human description, e.g. ``"new lines indented with tabs like the file"``."""
        if self.to_tabs:
            return f"new lines indented with tabs like the file, a tab for {self.unit} spaces of the new text"
        return f"new lines indented with spaces like the file, {self.unit} for each tab of the new text"


def plan_restyle(fl: FileLines, old: list[str], new: list[str]) -> Restyle | None:
    """How to write ``new`` in the file's indentation style when no indentation map applies.

    Only when ``old`` (the matched lines) has no indented line, every indented line of ``new``
    uses one style (spaces only, or tabs followed by optional spaces), and the file is indented
    only in the other style (for tabs to spaces: a file without any tab). Spaces per tab come
    from the new text's own indentation step (spaces to tabs) or from the file's (tabs to
    spaces). None: write the new lines as given.
    """
    if any(line[:1] in (" ", "\t") and not is_blank(line) for line in old):
        return None
    indents = [ws for ws in (indent_of(line) for line in new if not is_blank(line)) if ws]
    if not indents:
        return None
    if all("\t" not in ws for ws in indents):
        to_tabs = True
    elif all(ws[0] == "\t" and "\t" not in ws.lstrip("\t") for ws in indents):
        to_tabs = False
    else:
        return None  # the new text mixes both styles: nothing reliable to convert from
    if fl.indent_style != ("tabs" if to_tabs else "spaces"):
        return None
    if not to_tabs and "\t" in fl.text:
        return None  # the file uses tabs for something (alignment, data, recipes): its tabs may be deliberate
    unit = indent_unit(new) if to_tabs else fl.space_unit
    if unit < 2:
        return None
    return Restyle(to_tabs, unit)


@dataclass
class IndentMap:
    """How the snippet's indentation maps onto the file block's.

    ``pairs`` maps each snippet indentation seen in the matched block to the file's; other
    indentations are converted by ``prefix`` (added when ``sign`` is +1, removed when -1) or by
    a column ``delta`` rendered with tabs (``tab`` columns each) or spaces.
    """

    pairs: dict[str, str]
    prefix: str | None
    sign: int
    delta: int
    tab: int
    use_tabs: bool

    def render(self, snippet_indent: str) -> str | None:
        """File indentation for a snippet indentation; None if it would be negative."""
        if snippet_indent in self.pairs:
            return self.pairs[snippet_indent]
        foreign = ("\t" if not self.use_tabs else " ") in snippet_indent
        if self.prefix is not None and not foreign:
            if self.sign > 0:
                return self.prefix + snippet_indent
            if snippet_indent.startswith(self.prefix):
                return snippet_indent[len(self.prefix) :]
        cols = width(snippet_indent, self.tab) + self.delta
        if cols < 0:
            return None
        if self.use_tabs:
            return "\t" * (cols // self.tab) + " " * (cols % self.tab)
        return " " * cols

    @property
    def description(self) -> str:
        """Human description of the re-indentation, e.g. ``"+4 columns"``; empty for none."""
        if self.prefix == "":
            return ""
        if self.prefix is not None:
            shown = self.prefix.replace("\t", "\\t")
            return f"{'added' if self.sign > 0 else 'removed'} indentation '{shown}'"
        return f"{self.delta:+d} columns, written with {'tabs' if self.use_tabs else 'spaces'}"


def indent_map(file_block: list[str], snippet: list[str], *, folded: bool, fl: FileLines) -> IndentMap | None:
    """The uniform indentation mapping from ``snippet`` to ``file_block``, or None if there is none."""
    pairs: dict[str, str] = {}
    plist: list[tuple[str, str]] = []
    for f_line, s_line in zip(file_block, snippet, strict=True):
        if is_blank(s_line):
            continue
        fi = indent_of(fold(f_line) if folded else f_line)
        si = indent_of(fold(s_line) if folded else s_line)
        plist.append((fi, si))
        pairs.setdefault(si, f_line[: len(fi)])  # the file's own characters
    has_tabs = any("\t" in fi for fi, _ in plist)
    use_tabs = has_tabs or (not any(fi for fi, _ in plist) and fl.uses_tabs)
    if not plist or all(fi == si for fi, si in plist):
        return IndentMap(pairs, "", 1, 0, 4, use_tabs)
    fi0, si0 = plist[0]
    if fi0.endswith(si0):
        prefix = fi0[: len(fi0) - len(si0)]
        if all(fi == prefix + si for fi, si in plist):
            return IndentMap(pairs, prefix, 1, width(prefix, 4), 4, use_tabs)
    if si0.endswith(fi0):
        prefix = si0[: len(si0) - len(fi0)]
        if all(si == prefix + fi for fi, si in plist):
            return IndentMap(pairs, prefix, -1, -width(prefix, 4), 4, use_tabs)
    for tab in (4, 8, 2):
        deltas = {width(fi, tab) - width(si, tab) for fi, si in plist}
        if len(deltas) == 1:
            return IndentMap(pairs, None, 1, deltas.pop(), tab, use_tabs)
    return None


@dataclass
class BlockMatch:
    """A snippet matched to file lines ``start..end-1``.

    ``trim`` is how many snippet lines were dropped at (start, end) by the edge-blank rule.
    ``rows`` (``blank_lines`` and ``unicode`` levels) gives, for each line of the trimmed
    snippet, the file line it matched, or -1 for a blank snippet line between two others.
    """

    start: int
    end: int
    level: LineLevel
    imap: IndentMap | None
    trim: tuple[int, int] = (0, 0)
    rows: tuple[int, ...] | None = None


def trimmed(snippet: list[str], level: LineLevel, trimmable: list[bool] | None = None) -> tuple[int, int]:
    """Edge lines the level drops from ``snippet``; ``trimmable`` restricts which lines may go."""
    if not level.trim_edges:
        return 0, 0
    lead, trail = edge_blank_counts(snippet)
    if trimmable is not None:
        lead = next((i for i in range(lead) if not trimmable[i]), lead)
        trail = next((i for i in range(trail) if not trimmable[len(snippet) - 1 - i]), trail)
    return lead, trail


def find_block(
    fl: FileLines,
    snippet: list[str],
    level: LineLevel,
    lo: int = 0,
    hi: int | None = None,
    *,
    trimmable: list[bool] | None = None,
    limit: int | None = None,
) -> list[BlockMatch]:
    """Every placement of ``snippet`` inside file lines ``lo..hi-1`` at ``level`` (the first ``limit`` ones)."""
    hi = len(fl.lines) if hi is None else hi
    lead, trail = trimmed(snippet, level, trimmable)
    core = snippet[lead : len(snippet) - trail]
    if not core:
        return []
    if level.blank_runs:
        return _find_loose_blanks(fl, core, level, lo, hi, (lead, trail))[:limit]
    keyfn = _KEYS[level.key]
    skeys = [keyfn(line) for line in core]
    k = len(skeys)
    out: list[BlockMatch] = []
    lines = fl.lines
    for i in fl.candidates(level.key, skeys, lo, hi):
        if i < lo or i > hi - k:
            continue
        if any(keyfn(lines[i + j]) != skeys[j] for j in range(k)):
            continue
        imap = None
        if level.check_indent:
            imap = indent_map(lines[i : i + k], core, folded=level.key == "fold", fl=fl)
            if imap is None:
                continue
        out.append(BlockMatch(i, i + k, level, imap, (lead, trail)))
        if limit is not None and len(out) >= limit:
            break
    return out


def _walk(lines: list[str], row: int, step: int, bound: int) -> int:
    """The next non-blank line from ``row`` in direction ``step`` (``bound`` if none before it)."""
    row += step
    while row != bound and is_blank(lines[row]):
        row += step
    return row


def _skeleton_rows(lines: list[str], keyfn, keys: list[str], p: int, row: int, lo: int, hi: int) -> list[int] | None:
    """File rows of ``keys`` (non-blank snippet lines) when ``keys[p]`` is at ``row``, skipping blank file lines."""
    rows = [row]
    r = row
    for q in range(p - 1, -1, -1):
        r = _walk(lines, r, -1, lo - 1)
        if r < lo or keyfn(lines[r]) != keys[q]:
            return None
        rows.append(r)
    rows.reverse()
    r = row
    for q in range(p + 1, len(keys)):
        r = _walk(lines, r, 1, hi)
        if r >= hi or keyfn(lines[r]) != keys[q]:
            return None
        rows.append(r)
    return rows


def _find_loose_blanks(
    fl: FileLines, core: list[str], level: LineLevel, lo: int, hi: int, trim: tuple[int, int]
) -> list[BlockMatch]:
    """``find_block`` for levels where runs of blank lines between snippet lines may differ from the file's.

    Blank lines before the first or after the last non-blank snippet line (those the edge rule may
    not drop) must be in the file as they are.
    """
    keyfn = _KEYS[level.key]
    idx = [j for j, line in enumerate(core) if not is_blank(line)]
    if not idx:
        return []
    keys = [keyfn(core[j]) for j in idx]
    lead_blank, trail_blank = idx[0], len(core) - 1 - idx[-1]
    longest = sorted(range(len(keys)), key=lambda q: -len(keys[q]))[:3]
    text = fl.folded_text if level.key == "fold" else fl.text
    p = min(longest, key=lambda q: text.count(keys[q]))
    lines = fl.lines
    out: list[BlockMatch] = []
    seen: set[int] = set()
    for row in fl.candidates(level.key, [keys[p]], lo, hi):
        if row < lo or row >= hi or keyfn(lines[row]) != keys[p]:
            continue
        rows = _skeleton_rows(lines, keyfn, keys, p, row, lo, hi)
        if rows is None or rows[0] in seen:
            continue
        start, end = rows[0] - lead_blank, rows[-1] + 1 + trail_blank
        if start < lo or end > hi or not all(is_blank(t) for t in lines[start : rows[0]] + lines[rows[-1] + 1 : end]):
            continue
        imap = indent_map([lines[r] for r in rows], [core[j] for j in idx], folded=level.key == "fold", fl=fl)
        if imap is None:
            continue
        seen.add(rows[0])
        by_line = [-1] * len(core)
        for j, r in zip(idx, rows, strict=True):
            by_line[j] = r
        for j in range(lead_blank):
            by_line[j] = start + j
        for j in range(trail_blank):
            by_line[idx[-1] + 1 + j] = rows[-1] + 1 + j
        out.append(BlockMatch(start, end, level, imap, trim, tuple(by_line)))
    return out


def already_there(
    fl: FileLines,
    new: list[str],
    match: BlockMatch,
    lo: int = 0,
    hi: int | None = None,
    *,
    old: list[str] | None = None,
) -> bool:
    """True when a tolerant match of the old text is an edit already applied: the new text is there as it is.

    At the ``blank_lines`` level: ``new`` is in the file line for line, once, where the match is (an edit that
    adds or removes blank lines, sent again). At the other tolerant levels (given ``old``): the edit only changes
    what the level ignores (indentation, trailing whitespace, typographic characters: old and new are equal under
    the level's comparison), and ``new`` is in the file exactly, once, where the match is; re-applying it would
    shift or rewrite lines that already read as the new text.
    """
    if not new or all(is_blank(line) for line in new):
        return False
    if match.level.key == "raw":
        return False
    if match.rows is None:
        if old is None:
            return False
        keyfn = _KEYS[match.level.key]
        if [keyfn(t) for t in old if not is_blank(t)] != [keyfn(t) for t in new if not is_blank(t)]:
            return False
        lead, trail = edge_blank_counts(new)
        found = find_block(fl, new[lead : len(new) - trail], EXACT_LINES, lo, hi)
        return len(found) == 1 and found[0].start < match.end and match.start < found[0].end
    for level in CONTIGUOUS_LEVELS:
        found = find_block(fl, new, level, lo, hi)
        if found:
            return len(found) == 1 and found[0].start < match.end and match.start < found[0].end
    return False


def contains_run(lines: list[str], part: list[str]) -> bool:
    """Whether ``part`` is a run of consecutive lines of ``lines``."""
    k = len(part)
    return any(lines[i : i + k] == part for i in range(len(lines) - k + 1))


def new_text_elsewhere(fl: FileLines, new: list[str], old: list[str], match: BlockMatch) -> BlockMatch | None:
    """The new text as it is, once, away from a tolerant ``match`` of the old text (None: not so).

    The old text only matching somewhere at a tolerant level while the new text is elsewhere as it is leaves open
    whether the edit is already applied there or meant for the match: the caller refuses. A new text that is part
    of the old one, or found several times, says nothing.
    """
    if match.level.key == "raw":
        return None
    lead, trail = edge_blank_counts(new)
    core = new[lead : len(new) - trail]
    if not core or contains_run(old, core):
        return None
    found = find_block(fl, core, EXACT_LINES, limit=2)
    if len(found) != 1 or (found[0].start < match.end and match.start < found[0].end):
        return None
    return found[0]


