"""Model mistakes found on real changes of large projects (issue 14), as corpus variants.

* ``elision_new_only`` (must be refused): the new text abbreviates unchanged lines with an elision line (``...``,
  ``# ... existing code ...``, ``// ...``, ``[...]`` ...) that the old text does not have; in a diff, the elided lines
  are removed and the marker added.
* ``indent_mismatch`` (must be refused): the old text is shifted to another indentation but the new text is written
  at the file's own indentation, so no single offset turns the snippet into the file.
* ``blank_line_missing`` / ``blank_line_extra`` (must apply): the old text lacks a blank line the file has, or has
  one the file does not have (both sides, as context); ``blank_line_missing_old`` / ``blank_line_extra_old`` the
  same in the old text only, the new text the real one (issue 52).
* ``multi_hunk_window`` (must apply): several hunks with three lines of context, some of which occur elsewhere in the
  file but exactly once between the neighbouring hunks; ``multi_hunk_perturbed`` the same with one model mistake on
  every hunk; ``multi_hunk_span`` a ``str_replace`` whose old text spans every hunk.
* ``anchor_passed`` / ``multi_hunk_anchor`` (must apply): apply_patch chunks headed by their enclosing ``def``/``class``
  line, a scope that an earlier chunk may already be inside; ``anchor_fuzzy``: the ``@@`` line and the chunk with
  trailing whitespace or another indentation.

The classes a held-out corpus still found (issue 38):

* ``repeated_block_pinned`` / ``repeated_block_unpinned``: SEARCH/REPLACE blocks of which one matches several places,
  right below the block before it (must apply) or not (must be refused: their order alone is a guess).
* ``reindent_shifted``, ``reindent_bare``, ``indent_shift_bare``, ``indent_mismatch_bare``: a snippet shifted by 4
  columns (or to column 0), with or without unchanged edge lines, of changes that re-indent lines or not; the old
  text alone shifted must be refused.
* ``trailing_ws_two_places`` (must be refused): a one-line old text that is a whole line (ignoring trailing
  whitespace) and part of a deeper line; ``elision_marker_styles`` (must be refused): more ways to elide code in the
  new text.
* ``blank_line_omitted`` / ``blank_line_omitted_ambiguous``: a run of blank lines of the file left out of both texts,
  where the two texts' lines say where it goes (must apply) or not (must be refused).
* ``already_applied_fuzzy``, ``already_applied_deletion``, ``already_applied_elision`` (must answer "already
  applied"): the edit sent again, its old text still matching at a tolerant level where its new text is, its new
  text part of its old text, or its text elided.

Every premise is checked with the independent helpers of :mod:`bench.editcases.render`; a case whose premise does not
hold is dropped. Expected results are the real new version (or the old one with one hunk spliced in).
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

from bench.editcases.render import (
    Builder,
    Change,
    FileChange,
    Script,
    block_starts,
    cascade_spans,
    cascade_target,
    count_substring,
    first_content_line,
    grow_unique,
    has_marker_lines,
    new_of,
    old_of,
    ordered_targets,
    pinned_targets,
    render,
    render_search_replace,
    render_str_replace,
    renderable,
    rng_of,
    text_of,
    uniform_shift_matches,
)

#: Elision lines a model writes for "unchanged code here".
ELISION_MARKERS = (
    "...",
    "# ... existing code ...",
    "# ...",
    "// ...",
    "[...]",
    "\u2026",
    "# ... rest of the code unchanged ...",
    "/* ... */",
    "[... existing code ...]",
)
#: More ways models write "unchanged code here" (public transcripts): other words, a count, a bare comment word,
#: a placeholder body with a marker comment.
ELISION_MARKER_STYLES = (
    "# ... other fields ...",
    "# ... rest of __init__ ...",
    "# ... 50 lines unchanged ...",
    "# unchanged",
    "# (omitted)",
    "# [snip]",
    "# etc.",
    "pass  # ... existing code ...",
    "# ... (rest unchanged)",
    "# Rest of the code remains the same",
    "# ... previous code ...",
    "// ... rest of code ...",
    "# \u2026 existing code \u2026",
    "#...",
)
MAX_SPAN_LINES = 80
MAX_WINDOW_GROWTH = 10


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _width(line: str) -> int:
    return len(_indent(line).expandtabs(4))


# ---- elision in the new text only -------------------------------------------------------------------------------


def _context_runs(script: Script) -> list[tuple[int, int]]:
    """Runs of context items holding a non-blank line other than ``pass`` (``(start, end)`` script indices)."""
    runs, i = [], 0
    while i < len(script):
        if script[i][0] != " ":
            i += 1
            continue
        j = i
        while j < len(script) and script[j][0] == " ":
            j += 1
        body = [t.strip() for _, t in script[i:j] if t.strip()]
        if body and any(t != "pass" for t in body):
            while not script[i][1].strip():
                i += 1
            while not script[j - 1][1].strip():
                j -= 1
            runs.append((i, j))
        i = j
    return runs


def in_doctest(lines: list[str], k: int) -> bool:
    """True when a ``>>>`` line comes shortly before ``lines[k]`` (a bare ``...`` is then a doctest prompt)."""
    return any(t.strip().startswith(">>>") for t in lines[max(0, k - 12) : k])


def looks_like_stub(lines: list[str], k: int) -> bool:
    """True when ``lines[k]`` could be a Python ``...`` body: after a less indented ``:`` line, alone in its block."""
    prev = next((lines[i] for i in range(k - 1, -1, -1) if lines[i].strip()), None)
    nxt = next((lines[i] for i in range(k + 1, len(lines)) if lines[i].strip()), None)
    if prev is None or not prev.rstrip().endswith(":") or _width(prev) >= _width(lines[k]):
        return False
    return nxt is None or _width(nxt) < _width(lines[k])


def elision_new_only_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str,
                           markers: tuple[str, ...] = ELISION_MARKERS, category: str = "elision_new_only") -> None:
    """Unchanged lines replaced by an elision line in the new text only: code would silently disappear."""
    runs = _context_runs(ch.script)
    if not runs:
        return
    seed = "elide-new" if category == "elision_new_only" else category
    lo, hi = runs[rng_of(hid, seed) % len(runs)]
    marker = markers[rng_of(hid, "elide-marker") % len(markers)]
    line = _indent(ch.script[lo][1]) + marker
    script = [*ch.script[:lo], *[("-", t) for _, t in ch.script[lo:hi]], ("+", line), *ch.script[hi:]]
    new = new_of(script)
    k = new.index(line)
    if (marker in ("...", "\u2026") and looks_like_stub(new, k)) or (marker == "..." and in_doctest(new, k)):
        return  # indistinguishable from a real `...` body or doctest prompt
    hunk = Change(ch.start, script)
    for fmt in bl.formats(hid + seed):
        if renderable(fmt, [hunk]):
            bl.add(f"{hid}:{category}:{fmt}", fmt, fc.path, a_text, render(fmt, fc.path, [hunk]), None, category)


# ---- re-indentation that no single offset explains --------------------------------------------------------------


def _shifted(lines: list[str]) -> list[str]:
    indents = [_width(t) for t in lines if t.strip()]
    d = min(indents) if indents else 0
    if d >= 4:
        return [t[d:] if t.strip() else t for t in lines]
    return ["    " + t if t.strip() else t for t in lines]


def indent_mismatch_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str) -> None:
    """The old text shifted, the new text at the file's indentation (its unchanged lines show it)."""
    old, new = old_of(ch.script), new_of(ch.script)
    if "\t" in "".join(old + new) or len([t for t in old if t.strip()]) < 2:
        return
    if not any(k == " " and t.strip() for k, t in ch.script):
        return  # no unchanged line: nothing shows which indentation the new text is in
    s_old = _shifted(old)
    if count_substring(a_text, text_of(s_old)) or block_starts(fc.a, s_old, "rstrip"):
        return
    if uniform_shift_matches(fc.a, s_old) != [ch.start] or _shifted(new) == new:
        return
    for fmt in bl.formats(hid + "indent-mismatch", ("str_replace", "search_replace"), k=1):
        edit = render_str_replace(s_old, new) if fmt == "str_replace" else render_search_replace(fc.path,
                                                                                                [(s_old, new)])
        bl.add(f"{hid}:indent_mismatch:{fmt}", fmt, fc.path, a_text, edit, None, "indent_mismatch")


# ---- blank lines ------------------------------------------------------------------------------------------------


def _old_neighbours(script: Script, i: int) -> tuple[int | None, int | None]:
    """Script indices of the nearest non-blank old lines before and after item ``i``."""
    before = next((j for j in range(i - 1, -1, -1) if script[j][0] != "+" and script[j][1].strip()), None)
    after = next((j for j in range(i + 1, len(script)) if script[j][0] != "+" and script[j][1].strip()), None)
    return before, after


def _placement_is_clear(script: Script, i: int, p: int, q: int) -> bool:
    """Whether the blank lines between old lines ``p`` and ``q`` still say where the edit goes without item ``i``.

    Without added lines between ``p`` and ``q`` the edit only keeps or removes blank lines there: their number is
    what matters, not their place. Added lines before item ``i`` after a removed ``p`` and before an unchanged ``q``
    put the blank lines right before ``q``. Anything else (lines inserted between two unchanged lines, removed blank
    lines next to added ones) leaves open on which side of the insertion the blank lines go.
    """
    between = script[p + 1 : q]
    if any(k == "+" and not t.strip() for k, t in between):
        return False  # blank lines added next to the kept ones: which are which is open
    added = {t for k, t in script if k == "+"}
    if script[p][1] in added or script[q][1] in added:
        return False  # an added copy of a neighbour: the new lines could be aligned on either side of it
    adds_before = any(k == "+" for k, _ in script[p + 1 : i])
    adds_after = any(k == "+" for k, _ in script[i + 1 : q])
    if not adds_before and not adds_after:
        return True
    if any(k == "-" for k, _ in between):
        return False
    return not adds_after and script[p][0] == "-" and script[q][0] == " "


def _insertion_points(script: Script) -> list[int]:
    """Where an extra blank context line can go: between two unchanged lines, with only unchanged lines between them.

    (Next to removed lines, the new text would have one blank line more than the real new version, and where it
    goes depends on how the two texts are aligned.)
    """
    out = []
    for i in range(1, len(script)):
        p = next((j for j in range(i - 1, -1, -1) if script[j][0] != "+" and script[j][1].strip()), None)
        q = next((j for j in range(i, len(script)) if script[j][0] != "+" and script[j][1].strip()), None)
        if p is not None and q is not None and all(k == " " for k, _ in script[p : q + 1]):
            out.append(i)
    return out


def _blank_premise(a: list[str], hunk: Change, target: int) -> bool:
    """The old text lands on its place only once blank runs are ignored, and the new text is not in the file as it
    is (which would read as the edit already applied: one that adds or removes blank lines cannot tell)."""
    return cascade_target(a, old_of(hunk.script), blank_runs=True) == target and not cascade_spans(
        a, new_of(hunk.script))


def blank_line_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, expected: str) -> None:
    """A blank context line left out of the snippet, or an extra one added, inside the old text."""
    script, a = ch.script, fc.a
    target = first_content_line(ch)
    interior = []
    for i, (k, t) in enumerate(script):
        if k != " " or t.strip():
            continue
        p, q = _old_neighbours(script, i)
        if p is not None and q is not None and _placement_is_clear(script, i, p, q):
            interior.append(i)
    if interior:
        i = interior[rng_of(hid, "blank-missing") % len(interior)]
        missing = Change(ch.start, script[:i] + script[i + 1 :])
        if _blank_premise(a, missing, target):
            _emit(bl, fc, f"{hid}:blank_line_missing", "blank_line_missing", a_text, expected, [missing],
                  bl.formats(hid + "blank-missing"))
    points = _insertion_points(script)
    if points:
        i = points[rng_of(hid, "blank-extra") % len(points)]
        extra = Change(ch.start, [*script[:i], (" ", ""), *script[i:]])
        if _blank_premise(a, extra, target):
            _emit(bl, fc, f"{hid}:blank_line_extra", "blank_line_extra", a_text, expected, [extra],
                  bl.formats(hid + "blank-extra"))
    _old_side_blank_cases(bl, fc, hid, ch, a_text, expected)


def _old_side_blank_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, expected: str) -> None:
    """The old text alone misses a blank line of the file, or has one the file does not, and the new text is the
    real one (issue 52: models drop blank lines from what they quote, rarely from what they write).

    ``blank_line_missing_old`` / ``blank_line_extra_old`` (must apply: the new text's blank lines are the intent), in
    the two formats that send whole texts (a diff's ``+`` blank line says "add one", not "this is the result").
    """
    script, a = ch.script, fc.a
    target = first_content_line(ch)
    fmts = ("str_replace", "search_replace")
    blanks = [i for i, (k, t) in enumerate(script) if k == " " and not t.strip()
              and all(n is not None for n in _old_neighbours(script, i)) and not _run_changes(script, i)]
    if blanks:
        i = blanks[rng_of(hid, "blank-missing-old") % len(blanks)]
        missing = Change(ch.start, [*script[:i], ("+", script[i][1]), *script[i + 1:]])
        if _blank_premise(a, missing, target):
            _emit(bl, fc, f"{hid}:blank_line_missing_old", "blank_line_missing_old", a_text, expected, [missing],
                  bl.formats(hid + "blank-missing-old", fmts))
    points = _insertion_points(script)
    if points:
        i = points[rng_of(hid, "blank-extra-old") % len(points)]
        extra = Change(ch.start, [*script[:i], ("-", ""), *script[i:]])
        if _blank_premise(a, extra, target):
            _emit(bl, fc, f"{hid}:blank_line_extra_old", "blank_line_extra_old", a_text, expected, [extra],
                  bl.formats(hid + "blank-extra-old", fmts))


def _run_changes(script: list[tuple[str, str]], i: int) -> bool:
    """Whether the change adds or removes a blank line in the run of blank lines around ``script[i]``. Dropping a
    kept blank line of such a run from the old text alone gives the texts of a change that keeps the run's count,
    with both texts missing one of its blank lines (``blank_line_omitted``), and another expected result: no
    engine can tell the two apart, so neither case is made there."""
    j = i
    while j > 0 and not script[j - 1][1].strip():
        j -= 1
    k = i
    while k + 1 < len(script) and not script[k + 1][1].strip():
        k += 1
    return any(kind != " " for kind, _ in script[j : k + 1])


def _emit(bl: Builder, fc: FileChange, cid: str, category: str, original: str, expected: str | None,
          hunks: list[Change], fmts: list[str], **opts: Any) -> None:
    for fmt in fmts:
        if renderable(fmt, hunks):
            bl.add(f"{cid}:{fmt}", fmt, fc.path, original, render(fmt, fc.path, hunks, **opts), expected, category,
                   len(hunks))


# ---- several hunks, each unique between its neighbours ----------------------------------------------------------


def _grow_in_window(a: list[str], ch: Change, lo: int, hi: int) -> Change | None:
    """``ch`` with context added inside ``a[lo:hi]`` until its old text occurs once there (None if never)."""
    start, script = ch.start, list(ch.script)
    for _ in range(MAX_WINDOW_GROWTH + 1):
        if len(block_starts(a, old_of(script), "raw", lo, hi)) == 1:
            return Change(start, script)
        end = start + len(old_of(script))
        if start <= lo and end >= hi:
            return None
        if start > lo:
            start -= 1
            script.insert(0, (" ", a[start]))
        if end < hi:
            script.append((" ", a[end]))
    return None


def window_hunks(a: list[str], raw: list[Change]) -> list[Change] | None:
    """The hunks, each grown until its old text is unique between the previous hunk's end and the next one's start."""
    out: list[Change] = []
    for k, ch in enumerate(raw):
        lo = out[-1].end if out else 0
        hi = raw[k + 1].start if k + 1 < len(raw) else len(a)
        grown = _grow_in_window(a, ch, lo, hi)
        if grown is None:
            return None
        out.append(grown)
    return out


def _enclosing_header(a: list[str], ch: Change) -> str | None:
    """The nearest ``def``/``class`` line above the hunk's first changed line that is less indented than it."""
    first = ch.start + sum(k == " " for k, _ in ch.script[: next(i for i, (k, _) in enumerate(ch.script) if k != " ")])
    while first < len(a) - 1 and not a[first].strip():
        first += 1
    width = _width(a[first]) if first < len(a) else 0
    for j in range(first - 1, -1, -1):
        line = a[j]
        if line.strip() and _width(line) < width:
            if line.lstrip().startswith(("def ", "class ", "async def ")):
                return line
            width = _width(line)
    return None


def multi_hunk_window_cases(bl: Builder, fc: FileChange, base: str, raw: list[Change], a_text: str,
                            b_text: str) -> None:
    """Several hunks of one file in every format, located independently and in order."""
    a = fc.a
    hunks = window_hunks(a, raw)
    if hunks is None or text_of(_splice(a, hunks)) != b_text:
        return
    if ordered_targets(a, [old_of(h.script) for h in hunks]) != [first_content_line(h) for h in hunks]:
        return  # the hunks could be placed in order in more than one way
    everywhere_unique = all(count_substring(a_text, text_of(old_of(h.script))) == 1 for h in hunks)
    category = "multi_hunk" if everywhere_unique else "multi_hunk_window"
    # diff hunks come in file order; SEARCH/REPLACE blocks do not: a repeated block must be pinned by the one before
    if pinned_targets(a, [old_of(h.script) for h in hunks]) == [first_content_line(h) for h in hunks]:
        _emit(bl, fc, f"{base}:win:{category}", category, a_text, b_text, hunks, ["search_replace"])
    else:
        _unpinned(bl, fc, f"{base}:win", a_text, hunks)
    _emit(bl, fc, f"{base}:win:{category}", category, a_text, b_text, hunks, ["udiff", "apply_patch"])
    _emit(bl, fc, f"{base}:win:{category}_no_numbers", category, a_text, b_text, hunks, ["udiff"], no_numbers=True)
    _span_case(bl, fc, base, hunks, a_text, b_text)
    _perturbed_multi_hunk(bl, fc, base, hunks, a_text, b_text)
    headers = [_enclosing_header(a, h) for h in hunks]
    if all(headers) and renderable("apply_patch", hunks):
        passed = any(headers[k] == headers[k - 1] for k in range(1, len(headers)))
        category = "anchor_passed" if passed else "multi_hunk_anchor"
        bl.add(f"{base}:win:{category}:apply_patch", "apply_patch", fc.path, a_text,
               render("apply_patch", fc.path, hunks, anchors=headers), b_text, category, len(hunks))


def _span_case(bl: Builder, fc: FileChange, base: str, hunks: list[Change], a_text: str, b_text: str) -> None:
    """One ``str_replace`` whose old text runs from the first hunk to the last (unchanged lines between included)."""
    a = fc.a
    span = a[hunks[0].start : hunks[-1].end]
    if len(span) > MAX_SPAN_LINES or count_substring(a_text, text_of(span)) != 1:
        return
    full = _splice(a, hunks)
    new_span = full[hunks[0].start : hunks[0].start + len(span) + len(full) - len(a)]
    bl.add(f"{base}:win:multi_hunk_span:str_replace", "str_replace", fc.path, a_text,
           render_str_replace(span, new_span), b_text, "multi_hunk_span", len(hunks))


def _splice(a: list[str], hunks: list[Change]) -> list[str]:
    out = list(a)
    for h in reversed(hunks):
        out = out[: h.start] + new_of(h.script) + out[h.end :]
    return out


_PERTURBATIONS = ("trailing_ws", "indent_shift", "blank_line_missing", "edge_blank_extra")


def _perturb(kind: str, script: Script) -> Script | None:
    if kind == "trailing_ws":
        return [(k, t + "  " if k != "+" and t.strip() else t) for k, t in script]
    if kind == "indent_shift":
        if "\t" in "".join(t for _, t in script):
            return None
        old_new = [t for _, t in script]
        shifted = _shifted(old_new)
        return [(k, s) for (k, _), s in zip(script, shifted, strict=True)]
    if kind == "edge_blank_extra":
        return [(" ", ""), *script, (" ", "")]
    blanks = [i for i, (k, t) in enumerate(script) if k == " " and not t.strip()]
    for i in blanks:
        p, q = _old_neighbours(script, i)
        if p is not None and q is not None and _placement_is_clear(script, i, p, q):
            return script[:i] + script[i + 1 :]
    return None


def _perturbed_multi_hunk(bl: Builder, fc: FileChange, base: str, hunks: list[Change], a_text: str,
                          b_text: str) -> None:
    """One model mistake applied to every hunk; each must still land on its own place, between its neighbours."""
    kind = _PERTURBATIONS[rng_of(base, "multi-perturb") % len(_PERTURBATIONS)]
    out = []
    for h in hunks:
        script = _perturb(kind, h.script)
        if script is None:
            return
        out.append(Change(h.start, script))
    blocks = [old_of(h.script) for h in out]
    if ordered_targets(fc.a, blocks, blank_runs=True) != [first_content_line(h) for h in hunks]:
        return
    fmts = bl.formats(base + "multi-perturb", ("search_replace", "udiff", "apply_patch"), k=2)
    if pinned_targets(fc.a, blocks, blank_runs=True) != [first_content_line(h) for h in hunks]:
        fmts = [f for f in fmts if f != "search_replace"]  # a repeated block that no block pins down
    _emit(bl, fc, f"{base}:win:multi_hunk_perturbed[{kind}]", "multi_hunk_perturbed", a_text, b_text, out, fmts,
          no_numbers=True)


# ---- apply_patch anchors ----------------------------------------------------------------------------------------


def anchor_fuzzy_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, expected: str) -> None:
    """A single chunk under its enclosing header, the header and body with trailing whitespace or re-indented."""
    header = _enclosing_header(fc.a, ch)
    if header is None:
        return
    if rng_of(hid, "anchor-fuzzy") % 2:
        script = [(k, t + "  " if k != "+" and t.strip() else t) for k, t in ch.script]
        if len(block_starts(fc.a, old_of(script), "rstrip")) != 1:
            return
        anchor = header + "   "
    else:
        script = ch.script
        anchor = header.strip()
    hunk = Change(ch.start, script)
    if renderable("apply_patch", [hunk]):
        bl.add(f"{hid}:anchor_fuzzy:apply_patch", "apply_patch", fc.path, a_text,
               render("apply_patch", fc.path, [hunk], anchors=[anchor]), expected, "anchor_fuzzy")


# ---- issue 38: the classes a held-out corpus still found --------------------------------------------------------


def change_runs(script: Script) -> list[tuple[int, int]]:
    """Maximal runs of removed and added items, as ``(start, end)`` script indices."""
    runs, i = [], 0
    while i < len(script):
        if script[i][0] == " ":
            i += 1
            continue
        j = i
        while j < len(script) and script[j][0] != " ":
            j += 1
        runs.append((i, j))
        i = j
    return runs


def _grow_back(a: list[str], ch: Change, max_extra: int = MAX_WINDOW_GROWTH) -> Change | None:
    """``ch`` with file lines put before it until its old text has one placement (None if never)."""
    start, script = ch.start, list(ch.script)
    for _ in range(max_extra + 1):
        if len(cascade_spans(a, old_of(script))) == 1:
            return Change(start, script)
        if start == 0:
            return None
        start -= 1
        script.insert(0, (" ", a[start]))
    return None


def _touches(span: tuple[int, int], spans: list[tuple[int, int]], lines: list[str]) -> bool:
    """Whether ``span`` overlaps one of ``spans`` or has only blank lines between it and one of them."""
    lo, hi = span
    for s, e in spans:
        if lo < e and s < hi:
            return True
        gap = range(hi, s) if hi <= s else range(e, lo)
        if all(not lines[i].strip() for i in gap):
            return True
    return False


def repeated_block_cases(bl: Builder, fc: FileChange, base: str, raw: list[Change], a_text: str) -> None:
    """SEARCH/REPLACE blocks of which one has text that occurs several times in the file.

    ``repeated_block_pinned`` (must apply): one real hunk with two runs of changes, sent as two blocks: the first
    runs up to the second run, which is sent alone and whose removed lines occur elsewhere too; the first block ends
    right above one occurrence. ``repeated_block_unpinned`` (must be refused): such a repeated run sent with another
    hunk of the file that ends right above none of its occurrences (before or after it), or with the first block
    cut short above the context between the runs.
    """
    a = fc.a
    repeated: list[tuple[Change, int]] = []  # (the run alone, its hunk's index)
    for k, ch in enumerate(raw):
        for r, (lo, hi) in enumerate(change_runs(ch.script)):
            removed = [t for kind, t in ch.script[lo:hi] if kind == "-"]
            if not any(t.strip() for t in removed) or len(block_starts(a, removed)) < 2:
                continue
            run = Change(ch.start + len(old_of(ch.script[:lo])), ch.script[lo:hi])
            repeated.append((run, k))
            if r == 0:
                continue
            head = _grow_back(a, Change(ch.start, ch.script[:lo]))
            if head is None:
                continue
            whole = Change(head.start, head.script + run.script)
            blocks = [old_of(head.script), old_of(run.script)]
            if pinned_targets(a, blocks) != [first_content_line(head), run.start] or not renderable(
                    "search_replace", [whole]):
                continue
            bl.add(f"{base}:h{k}r{r}:repeated_block_pinned:search_replace", "search_replace", fc.path, a_text,
                   render_search_replace(fc.path, [(old_of(head.script), new_of(head.script)),
                                                   (old_of(run.script), new_of(run.script))]),
                   text_of(whole.expected(a)), "repeated_block_pinned", 2)
            # the first block without the unchanged lines between the runs: it ends a few lines above
            gap = [i for i, (kind, _) in enumerate(head.script) if kind != " "]
            short = Change(head.start, head.script[: gap[-1] + 1])
            if len(cascade_spans(a, old_of(short.script))) == 1 and any(
                    t.strip() for _, t in head.script[gap[-1] + 1 :]):
                _unpinned(bl, fc, f"{base}:h{k}r{r}:gap", a_text, [short, run])
    if not repeated:
        return
    run, k = repeated[rng_of(base, "repeated") % len(repeated)]
    occurrences = [(s, s + len(old_of(run.script))) for s in block_starts(a, old_of(run.script))]
    others = [g for j, h in enumerate(raw) if j != k and (g := grow_unique(a, h)) is not None
              and not _touches((g.start, g.end), occurrences, a)]
    if others:
        other = others[rng_of(base, "repeated-other") % len(others)]
        _unpinned(bl, fc, f"{base}:rep-other", a_text, [other, run])
        _unpinned(bl, fc, f"{base}:rep-other-after", a_text, [run, other])


def _unpinned(bl: Builder, fc: FileChange, cid: str, a_text: str, hunks: list[Change]) -> None:
    """A refusal case: blocks placed in order, one of them repeated and pinned by nothing.

    No place of a repeated block may be inside another block: applied one after the other, that block could then
    change it and leave one place.
    """
    a = fc.a
    blocks = [old_of(h.script) for h in hunks]
    spans = [cascade_spans(a, b) for b in blocks]
    if any(not found for found in spans) or pinned_targets(a, blocks) is not None:
        return
    for k, found in enumerate(spans):
        others = [(h.start, h.end) for j, h in enumerate(hunks) if j != k]
        if len(found) > 1 and any(s < e2 and s2 < e for s, e in found for s2, e2 in others):
            return
    if not renderable("search_replace", hunks):
        return
    bl.add(f"{cid}:repeated_block_unpinned:search_replace", "search_replace", fc.path, a_text,
           render_search_replace(fc.path, [(old_of(h.script), new_of(h.script)) for h in hunks]), None,
           "repeated_block_unpinned", len(hunks))


# ---- re-indentation with a shifted snippet ----------------------------------------------------------------------


def _reindents(script: Script) -> bool:
    """Whether the change moves lines it keeps: a removed and an added line equal but for their indentation."""
    removed = {}
    for kind, t in script:
        if kind == "-" and t.strip():
            removed.setdefault(t.strip(), set()).add(_width(t))
    return any(kind == "+" and t.strip() in removed and _width(t) not in removed[t.strip()] for kind, t in script)


def _bare(ch: Change) -> Change:
    """The change without its unchanged lines at the edges."""
    runs = change_runs(ch.script)
    lo, hi = runs[0][0], runs[-1][1]
    return Change(ch.start + lo, ch.script[lo:hi])


def _edges_kept(script: Script) -> bool:
    """Whether the first and last non-blank lines of the old text are unchanged lines."""
    rows = [kind for kind, t in script if kind != "+" and t.strip()]
    return bool(rows) and rows[0] == " " and rows[-1] == " "


def _edge_indents_equal(script: Script) -> bool:
    """Whether the first (and the last) non-blank lines of the old and the new text have the same indentation."""
    old = [t for t in old_of(script) if t.strip()]
    new = [t for t in new_of(script) if t.strip()]
    return bool(old and new) and _width(old[0]) == _width(new[0]) and _width(old[-1]) == _width(new[-1])


def _shift_target(a: list[str], a_text: str, old: list[str], start: int) -> bool:
    """The shifted old text has no exact or trailing-whitespace match and one uniform-shift match, at ``start``."""
    return (not count_substring(a_text, text_of(old)) and not block_starts(a, old, "rstrip")
            and uniform_shift_matches(a, old) == [start])


def reindent_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, expected: str) -> None:
    """Old text at another indentation than the file's (by 4 columns, or at column 0), at the ``indent_offset`` level.

    * ``reindent_shifted`` (must apply): a change that re-indents lines it keeps, the whole snippet shifted; its
      unchanged first and last lines show at which indentation the new text is written.
    * ``reindent_bare``: the same without unchanged lines at the edges. It must apply when the new text's first or
      last line stays at the old text's indentation and neither moves by the file's shift; otherwise whether the
      new text is written at the old text's indentation or at the file's is open, and it must be refused.
    * ``indent_shift_bare`` (must apply): a change whose first and last lines keep their indentation, without
      unchanged lines at the edges, the whole snippet shifted.
    * ``indent_mismatch_bare`` (must be refused): the same with only the old text shifted.
    """
    a, script = fc.a, ch.script
    if "\t" in "".join(t for _, t in script) or not change_runs(script):
        return
    if not all(t.strip() or t == "" for _, t in script):
        return  # whitespace-only lines: shifting them says nothing
    bare = _bare(ch)
    fmts = bl.formats(hid + "reindent")
    if _reindents(script):
        if _edges_kept(script):
            shifted = Change(ch.start, _shift_script(script))
            if _shift_target(a, a_text, old_of(shifted.script), ch.start):
                _emit(bl, fc, f"{hid}:reindent_shifted", "reindent_shifted", a_text, expected, [shifted], fmts)
        shifted = Change(bare.start, _shift_script(bare.script))
        if len([t for t in old_of(bare.script) if t.strip()]) >= 2 and _shift_target(
                a, a_text, old_of(shifted.script), bare.start):
            edges, same = _edge_shifts(bare.script)
            delta = _shift_delta([t for _, t in bare.script])
            clear = 0 in edges and (edges != {delta} if same else delta not in edges)
            _emit(bl, fc, f"{hid}:reindent_bare", "reindent_bare", a_text, expected if clear else None, [shifted],
                  fmts)
        return
    if bare.start == ch.start and bare.end == ch.end or not _edge_indents_equal(bare.script):
        return
    if len([t for t in old_of(bare.script) if t.strip()]) < 2 or not new_of(bare.script):
        return
    shifted = Change(bare.start, _shift_script(bare.script))
    if not _shift_target(a, a_text, old_of(shifted.script), bare.start):
        return
    _emit(bl, fc, f"{hid}:indent_shift_bare", "indent_shift_bare", a_text, text_of(ch.expected(a)), [shifted],
          fmts)
    s_old, new = old_of(shifted.script), new_of(bare.script)
    if _shifted(new) != new:
        for fmt in bl.formats(hid + "indent-mismatch-bare", ("str_replace", "search_replace"), k=1):
            edit = (render_str_replace(s_old, new) if fmt == "str_replace"
                    else render_search_replace(fc.path, [(s_old, new)]))
            bl.add(f"{hid}:indent_mismatch_bare:{fmt}", fmt, fc.path, a_text, edit, None, "indent_mismatch_bare")


def _edge_shifts(script: Script) -> tuple[set[int], bool]:
    """How far the change moves its edges, new against old, in columns: its first and last non-blank lines, only
    those that have the same text on both sides when there are such (then the flag is True).

    A snippet shifted as a whole is clearly written at its old text's indentation when an edge stays there: for
    same-text edges, unless every one moved by the file's shift; for changed edges, unless one did.
    """
    old = [t for t in old_of(script) if t.strip()]
    new = [t for t in new_of(script) if t.strip()]
    edges = [(old[0], new[0]), (old[-1], new[-1])]
    same = [(o, n) for o, n in edges if o.strip() == n.strip()]
    return {_width(n) - _width(o) for o, n in (same or edges)}, bool(same)


def _shift_delta(lines: list[str]) -> int:
    """The file's indentation minus the snippet's once :func:`_shifted` shifted ``lines``."""
    indents = [_width(t) for t in lines if t.strip()]
    d = min(indents) if indents else 0
    return d if d >= 4 else -4


def _shift_script(script: Script) -> Script:
    """Every line of the script shifted the same way as :func:`_shifted` shifts them."""
    shifted = _shifted([t for _, t in script])
    return [(kind, s) for (kind, _), s in zip(script, shifted, strict=True)]


# ---- blank lines left out of both texts -------------------------------------------------------------------------


def _omitted_blank_placement(script: Script, i: int, j: int) -> list[str] | None | bool:
    """Where the model's snippet (``script`` without the blank lines ``script[i:j]``) puts those blank lines back:
    the new text with them, ``None`` when the snippet leaves it open, ``False`` when the case is left out.

    The snippet's old and new texts are lined up with ``difflib`` (the model sends texts, not a diff). The old
    lines around the run are P (before) and Q (after). Two unchanged lines keep it between them, unless the new
    text inserts lines there (open: before or after them?). Next to a group of changes the group takes the place of
    the lines it removes, so the run stays on the unchanged side. A run between two removed lines is left out.
    """
    rest = script[:i] + script[j:]
    old, new = old_of(rest), new_of(rest)
    p = len(old_of(script[:i])) - 1  # old index of P; Q is p + 1
    if p < 0 or p + 1 >= len(old) or not old[p].strip() or not old[p + 1].strip():
        return False
    image: dict[int, int] = {}  # old index -> new index, for unchanged lines
    for tag, i1, i2, j1, _j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            image.update({i1 + k: j1 + k for k in range(i2 - i1)})
    p_kept, q_kept = p in image, p + 1 in image
    if p_kept and q_kept:
        if image[p + 1] != image[p] + 1:
            return None  # lines inserted between two unchanged lines
        at = image[p] + 1
    elif p_kept:
        at = image[p] + 1  # right after P, before the group that replaces Q
    elif q_kept:
        at = image[p + 1]  # right before Q, after the group that replaces P
    else:
        return False
    blanks = [t for _, t in script[i:j]]
    return new[:at] + blanks + new[at:]


def blank_line_omitted_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str,
                             expected: str) -> None:
    """A run of blank lines of the file, between two lines, left out of both the old and the new text.

    ``blank_line_omitted`` (must apply): the snippet says where the run goes (:func:`_omitted_blank_placement`) and
    that is where the real change has it. ``blank_line_omitted_ambiguous`` (must be refused): the snippet leaves it
    open. Cases where the snippet says a place and the real change has the run elsewhere (a line moved across the
    blank lines) are left out.
    """
    script, a = ch.script, fc.a
    runs, i = [], 0
    while i < len(script):
        if script[i][0] == " " and not script[i][1].strip():
            j = i
            while j < len(script) and script[j][0] == " " and not script[j][1].strip():
                j += 1
            if 0 < i and j < len(script):
                runs.append((i, j))
            i = j
        else:
            i += 1
    if not runs or not change_runs(script):
        return
    i, j = runs[rng_of(hid, "blank-omitted") % len(runs)]
    added = {t for kind, t in script if kind == "+"}
    if any(script[k][0] != "+" and script[k][1] in added for k in (i - 1, j)):
        return  # an added copy of a neighbour: the texts can be lined up on either side of it
    if any(script[k][0] == "+" and not script[k][1].strip() for k in (i - 1, j)):
        return  # the change adds blank lines right there: the new text states that many (they are the intent)
    placed = _omitted_blank_placement(script, i, j)
    if placed is False or (placed is not None and placed != new_of(script)):
        return
    hunk = Change(ch.start, script[:i] + script[j:])
    if not _blank_premise(a, hunk, first_content_line(ch)):
        return
    category = "blank_line_omitted" if placed is not None else "blank_line_omitted_ambiguous"
    _emit(bl, fc, f"{hid}:{category}", category, a_text, expected if placed is not None else None, [hunk],
          bl.formats(hid + "blank-omitted"))


# ---- the edit sent again, its old text still matching at a tolerant level ----------------------------------------


def already_applied_fuzzy_cases(bl: Builder, fc: FileChange, hid: str, ch: Change) -> None:
    """The edit sent again after it was applied, when its old text still matches the result at a tolerant level
    (an edit of indentation, blank lines or trailing whitespace) at the place where its new text now is.

    ``already_applied_fuzzy`` (must answer "already applied", nothing changed): the result holds the new text once
    and the old text nowhere as it is.
    """
    b = ch.expected(fc.a)
    old, new = old_of(ch.script), new_of(ch.script)
    if not any(t.strip() for t in new) or has_marker_lines(old + new) or block_starts(b, old):
        return
    found = block_starts(b, new)
    if len(found) != 1:
        return
    lo, hi = found[0], found[0] + len(new)
    spans = cascade_spans(b, old, blank_runs=True)
    if not spans or any(not (s < hi and lo < e) for s, e in spans):
        return
    b_text = text_of(b)
    _emit(bl, fc, f"{hid}:already_applied_fuzzy", "already_applied_fuzzy", b_text, b_text, [ch],
          bl.formats(hid + "again-fuzzy"))


# ---- trailing whitespace: a whole-line match and a match inside a longer line ------------------------------------


def trailing_ws_two_places_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str) -> None:
    """A one-line old text that the file has as a whole line and, more indented, inside another line.

    ``trailing_ws_two_places`` (must be refused): a removed line of the change, sent alone with the lines its run
    adds, while the file also has its text at a deeper indentation elsewhere, so the old text is part of that line
    too. Trailing whitespace either in the file on the removed line (the old text is then no exact substring there;
    with two new lines or more) or in the snippet (exact nowhere). Only the match that ignores trailing whitespace
    is a whole line; the other is a substring.
    """
    a = fc.a
    deeper_widths: dict[str, set[int]] = {}
    for t in a:
        deeper_widths.setdefault(t.strip(), set()).add(_width(t))
    picks = []
    for lo, hi in change_runs(ch.script):
        for i in range(lo, hi):
            kind, line = ch.script[i]
            if (kind == "-" and len(line.strip()) >= 8 and line[:1] == " " and line == line.rstrip()
                    and any(w > _width(line) for w in deeper_widths[line.strip()])
                    and len(block_starts(a, [line], "rstrip")) == 1):
                picks.append((i, line, [t for k, t in ch.script[lo:hi] if k == "+"]))
    if not picks:
        return
    i, line, added = picks[rng_of(hid, "tws-two") % len(picks)]
    row = ch.start + len(old_of(ch.script[:i]))
    if len(added) >= 2 and rng_of(hid, "tws-two-file") % 2:
        a_ws = list(a)
        a_ws[row] = line + "  "
        original, old = text_of(a_ws), [line]
    else:
        original, old = a_text, [line + "  "]
    if count_substring(original, text_of(old)) > 1:
        return
    bl.add(f"{hid}:trailing_ws_two_places:str_replace", "str_replace", fc.path, original,
           render_str_replace(old, added), None, "trailing_ws_two_places")
