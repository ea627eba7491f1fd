"""Model mistakes found on real changes of large projects (issue 14), as corpus variants.

* ``elision_new_only`` (must be refused): the new text abbreviates unchanged lines with an elision line (``...``,
  ``# ... existing code ...``, ``// ...``, ``[...]`` ...) that the old text does not have; in a diff, the elided lines
  are removed and the marker added.
* ``indent_mismatch`` (must be refused): the old text is shifted to another indentation but the new text is written
  at the file's own indentation, so no single offset turns the snippet into the file.
* ``blank_line_missing`` / ``blank_line_extra`` (must apply): the old text lacks a blank line the file has, or has
  one the file does not have (both sides, as context).
* ``multi_hunk_window`` (must apply): several hunks with three lines of context, some of which occur elsewhere in the
  file but exactly once between the neighbouring hunks; ``multi_hunk_perturbed`` the same with one model mistake on
  every hunk; ``multi_hunk_span`` a ``str_replace`` whose old text spans every hunk.
* ``anchor_passed`` / ``multi_hunk_anchor`` (must apply): apply_patch chunks headed by their enclosing ``def``/``class``
  line, a scope that an earlier chunk may already be inside; ``anchor_fuzzy``: the ``@@`` line and the chunk with
  trailing whitespace or another indentation.

Every premise is checked with the independent helpers of :mod:`bench.editcases.render`; a case whose premise does not
hold is dropped. Expected results are the real new version (or the old one with one hunk spliced in).
"""

from __future__ import annotations

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


def elision_new_only_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str) -> None:
    """Unchanged lines replaced by an elision line in the new text only: code would silently disappear."""
    runs = _context_runs(ch.script)
    if not runs:
        return
    lo, hi = runs[rng_of(hid, "elide-new") % len(runs)]
    marker = ELISION_MARKERS[rng_of(hid, "elide-marker") % len(ELISION_MARKERS)]
    line = _indent(ch.script[lo][1]) + marker
    script = [*ch.script[:lo], *[("-", t) for _, t in ch.script[lo:hi]], ("+", line), *ch.script[hi:]]
    new = new_of(script)
    k = new.index(line)
    if (marker in ("...", "\u2026") and looks_like_stub(new, k)) or (marker == "..." and in_doctest(new, k)):
        return  # indistinguishable from a real `...` body or doctest prompt
    hunk = Change(ch.start, script)
    for fmt in bl.formats(hid + "elide-new"):
        if renderable(fmt, [hunk]):
            bl.add(f"{hid}:elision_new_only:{fmt}", fmt, fc.path, a_text, render(fmt, fc.path, [hunk]), None,
                   "elision_new_only")


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
