"""Rebuilding an edit around the file's own blank lines (the ``blank_lines`` level).

At that level the old text matched with other runs of blank lines than the file has between two of its lines (one
missing, one too many). The edit is a *script* of ``(kind, text)`` items (``" "`` kept, ``"-"`` removed, ``"+"``
added) whose old side is the snippet; ``realign`` returns a script whose old side is the file block itself, so that
every kept line is copied from the file. Between two matched lines (a *gap*):

* the same number of blank lines as the file: nothing to do;
* only blank lines (kept, removed or added): a new text with the file's count keeps it; otherwise the file's count
  changes by what the edit changes there (``new - old``), as long as that stays between the new text's count and
  the file's; beyond that, the new text's count (it is what the model wrote: issue 52);
* added lines next to one run of kept blank lines: that run takes the file's count (refused when the added lines
  have blank lines of their own: which blank lines are the kept ones is then unclear). When the file has more blank
  lines there than the old text, the added lines must replace the line before the gap and come before the run;
* added lines replacing the line before the gap, no blank line in the old text: the file's blank lines go right
  before the next line (refused when the added lines have blank lines of their own: the file's may be among them,
  moved, or stay where they are);
* blank lines of the file between two lines a group replaces: they go between the same two lines of the
  replacement, when it replaces line for line (``_spread``); otherwise refused;
* anything else (lines inserted between two kept lines where the file has blank lines the old text lacks) leaves
  open on which side of the insertion the blank lines belong: refused.

Between two lines the edit keeps, with lines changed between them, where the old text has other blank lines than
the file but the new text as many as the file, the new text's lines are the result there (``_restated``): the old
text merely missed or added a blank line (models drop blank lines from what they quote, rarely from what they
write). That holds too where the file has only blank lines between the two and the new text puts lines there,
restating the file's run both right after the first line and right before the second (``_split_around``); with
the run on one side only it is refused, since the new text may have dropped the file's other one as the old did.

``skeleton_script`` lines the texts up on their non-blank lines only, so that each run of blank lines is compared
with the run at the same place; ``engine`` applies an edit only when that and the line-for-line alignment agree.
"""

from __future__ import annotations

from .replacement import line_opcodes

Script = list[tuple[str, str]]
_ISLAND = "~"  # a blank line of the file between two replaced lines, until ``_spread`` places it


class BlankPlacement(Exception):
    """The edit cannot be placed around the file's blank lines without guessing."""

    def __init__(self, message: str, row: int) -> None:
        super().__init__(message)
        self.message = message
        self.row = row


class BlankPileUp(BlankPlacement):
    """The lined-up texts would keep both the file's blank lines and the new text's in one place."""


def _gap(items: Script, file_blanks: list[str], left: str, right: str, row: int) -> Script:
    """The items between two matched lines, rebuilt for the file's blank lines ``file_blanks``."""
    kept = [i for i, (kind, _) in enumerate(items) if kind == " "]
    removed = sum(kind == "-" for kind, _ in items)
    added = [text for kind, text in items if kind == "+"]
    b_file = len(file_blanks)
    if len(kept) + removed == b_file:
        return items
    if not added and not kept and not removed and left == right == "-":
        return [(_ISLAND, t) for t in file_blanks]  # between two replaced lines: placed by ``_spread``
    if all(not text.strip() for text in added):
        return _blank_gap(len(kept) + removed, len(kept) + len(added), file_blanks, row)
    if removed:
        raise BlankPlacement(
            f"the edit removes blank lines and adds lines after line {row + 1}, where the file has {b_file} blank "
            "line(s) and the old text another number",
            row,
        )
    if kept:
        if any(not text.strip() for text in added):
            raise BlankPlacement(
                f"the new text has blank lines of its own among the added lines after line {row + 1}, and the file "
                f"has {b_file} blank line(s) there, not {len(kept)}: which of them to resize is unclear",
                row,
            )
        first, last = kept[0], kept[-1]
        if last - first + 1 != len(kept):
            raise BlankPlacement(
                f"the added lines after line {row + 1} sit between blank lines, and the file has {b_file} blank "
                f"line(s) there, not {len(kept)}",
                row,
            )
        if b_file > len(kept) and (left != "-" or last + 1 != len(items)):
            raise BlankPlacement(
                f"the file has {b_file} blank line(s) after line {row + 1}, the old text {len(kept)}, and the new "
                "text inserts lines next to them: it is unclear on which side of the new lines the missing blank "
                "lines go",
                row,
            )
        return [*items[:first], *((" ", t) for t in file_blanks), *items[last + 1 :]]
    if left == "-" and right in (" ", "-"):
        if any(not text.strip() for text in added):
            raise BlankPlacement(
                f"the new lines after line {row + 1} have blank lines of their own, and the file has {b_file} blank "
                "line(s) there that the old text does not have: whether they are the same blank lines is unclear",
                row,
            )
        return [*items, *((" ", t) for t in file_blanks)]
    raise BlankPlacement(
        f"the file has {b_file} blank line(s) after line {row + 1} that the old text does not have, and the new "
        "text inserts lines right there: it is unclear on which side of them the new lines go",
        row,
    )


def _blank_gap(old: int, new: int, file_blanks: list[str], row: int) -> Script:
    """A gap of blank lines only: ``old`` in the old text, ``new`` in the new text, ``file_blanks`` in the file.

    The file's count changes by what the edit changes (``new - old``): an edit that keeps the count keeps the
    file's, one that removes a blank line removes one of the file's. A new text with the file's count keeps it
    (the old text missed one of the file's blank lines, or has one more), and one whose count that change would
    overshoot is taken as written: the new text's blank lines are the intent.
    """
    b_file = len(file_blanks)
    keep = max(0, b_file + new - old)
    if new == b_file:
        keep = new  # the file's count: the old text missed one of its blank lines, or has one more
    if not min(new, b_file) <= keep <= max(new, b_file):
        raise BlankPlacement(
            f"the file has {b_file} blank line(s) after line {row + 1}, the old text {old} and the new text {new}: "
            "whether the edit changes them is unclear",
            row,
        )
    out: Script = [(" ", t) for t in file_blanks[:keep]] + [("-", t) for t in file_blanks[keep:]]
    return out + [("+", "")] * (keep - b_file) if keep > b_file else out


def _cuts(runs: list[list[str]], added: list[str]) -> list[int] | None:
    """Where the added lines of a replaced group split between its runs of removed lines (None: unclear).

    Only a line-for-line replacement (as many added as removed lines) says where: the blank lines between
    removed lines ``k`` and ``k + 1`` go between added lines ``k`` and ``k + 1``.
    """
    sizes = [len(r) for r in runs]
    if sum(sizes) != len(added):
        return None
    return [sum(sizes[: k + 1]) for k in range(len(runs) - 1)]


def _spread(script: Script) -> Script:
    """Blank lines the file has between two replaced lines, put between the new lines that replace them."""
    out: Script = []
    i = 0
    while i < len(script):
        if script[i][0] != "-" or not any(kind == _ISLAND for kind, _ in script[i : _group_end(script, i)]):
            out.append(script[i])
            i += 1
            continue
        end = _group_end(script, i)
        group = script[i:end]
        runs: list[list[str]] = [[]]
        islands: list[Script] = []  # islands[k]: between runs[k] and runs[k + 1]
        for kind, text in group:
            if kind == _ISLAND:
                if runs[-1]:
                    runs.append([])
                    islands.append([])
                islands[-1].append((" ", text))
            elif kind == "-":
                runs[-1].append(text)
        added = [text for kind, text in group if kind == "+"]
        cuts = _cuts(runs, added) if added else [0] * (len(runs) - 1)
        if cuts is None:
            raise BlankPlacement(
                "the file has blank lines between lines the edit replaces, and the new lines do not show where they go",
                -1,
            )
        bounds = [0, *cuts, len(added)]
        for k, run in enumerate(runs):
            out += [("-", t) for t in run] + [("+", t) for t in added[bounds[k] : bounds[k + 1]]]
            if k < len(runs) - 1:
                out += islands[k]
        i = end
    return out


def _group_end(script: Script, i: int) -> int:
    """One past a change group starting at ``i`` (removed lines, deferred blank lines, added lines)."""
    while i < len(script) and script[i][0] in ("-", _ISLAND):
        i += 1
    while i < len(script) and script[i][0] == "+":
        i += 1
    return i


def _runs(lines: list[str]) -> tuple[list[str], list[str], list[list[str]]]:
    """``(blank lines before the first line, the non-blank lines, the blank lines after each)``."""
    lead: list[str] = []
    body: list[str] = []
    after: list[list[str]] = []
    for line in lines:
        if line.strip():
            body.append(line)
            after.append([])
        elif body:
            after[-1].append(line)
        else:
            lead.append(line)
    return lead, body, after


def _paired_blanks(old: list[str], new: list[str]) -> Script:
    """One run of blank lines of the old text against the corresponding run of the new text."""
    common = min(len(old), len(new))
    return [(" ", t) for t in old[:common]] + [("-", t) for t in old[common:]] + [("+", t) for t in new[common:]]


def skeleton_script(old: list[str], new: list[str]) -> Script:
    """``old`` -> ``new`` as a diff body, aligned on their non-blank lines.

    Blank lines belong to the run that follows a non-blank line (or starts the text). The run after a line the
    edit keeps is paired with the new text's run at the same place; after a group of changed lines, the run
    closing the group is paired with the run closing its replacement; a deleted group's runs share the new run
    left in its place, first come first kept. Runs inside a changed group go with its removed or added lines.
    ``realign`` then sees, between two lines, only the blank lines the two texts put there.
    """
    o_lead, o_body, o_after = _runs(old)
    n_lead, n_body, n_after = _runs(new)
    script: Script = _paired_blanks(o_lead, n_lead)
    ops = line_opcodes(o_body, n_body)
    for index, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            for k in range(i2 - i1):
                script.append((" ", o_body[i1 + k]))
                last = k == i2 - i1 - 1
                if last and index + 1 < len(ops) and ops[index + 1][0] == "delete":
                    continue  # the run after this line is shared with the deleted lines' runs
                script += _paired_blanks(o_after[i1 + k], n_after[j1 + k])
            continue
        if tag == "delete":
            shared = n_after[j1 - 1] if j1 > 0 else []
            runs = ([o_after[i1 - 1]] if i1 > 0 else []) + [o_after[k] for k in range(i1, i2)]
            kept = len(shared)
            for n, run in enumerate(runs):
                if n or i1 == 0:
                    script.append(("-", o_body[i1 + n - (0 if i1 == 0 else 1)]))
                take = min(kept, len(run))
                script += [(" ", b) for b in run[:take]] + [("-", b) for b in run[take:]]
                kept -= take
            script += [("+", "")] * kept
            continue
        for k in range(i1, i2):
            script.append(("-", o_body[k]))
            if k < i2 - 1 or j2 == j1:
                script += [("-", b) for b in o_after[k]]
        for k in range(j1, j2):
            script.append(("+", n_body[k]))
            if k < j2 - 1 or i2 == i1:
                script += [("+", b) for b in n_after[k]]
        if i2 > i1 and j2 > j1:
            script += _paired_blanks(o_after[i2 - 1], n_after[j2 - 1])
    return script


def realign(script: Script, rows: tuple[int, ...], file_lines: list[str]) -> Script:
    """``script`` (old side: the matched snippet) rewritten so that its old side is the matched file block.

    ``rows`` gives the file line of each old line of the script, -1 for a blank line between two others.
    Raises ``BlankPlacement``.
    """
    anchors: list[tuple[int, int]] = []  # (script index, file row)
    o = 0
    for i, (kind, _) in enumerate(script):
        if kind == "+":
            continue
        if rows[o] >= 0:
            anchors.append((i, rows[o]))
        o += 1
    if not anchors:
        return script
    # the block's edges as two kept lines more, so that a region may start or end there
    bounds = [(-1, anchors[0][1] - 1), *anchors, (len(script), anchors[-1][1] + 1)]
    kept = [True, *(script[i][0] == " " for i, _ in anchors), True]
    out: Script = []
    n = 0
    while n < len(bounds) - 1:
        (ia, ra), m = bounds[n], next((k for k in range(n + 1, len(bounds)) if kept[k]), None) if kept[n] else None
        region = None if m is None else _restated(script[ia + 1 : bounds[m][0]], file_lines[ra + 1 : bounds[m][1]])
        if region is None:
            m = n + 1
            (ib, rb) = bounds[m]
            region = (script[ia + 1 : ib] if n == 0 or m == len(bounds) - 1
                      else _gap(script[ia + 1 : ib], file_lines[ra + 1 : rb], script[ia][0], script[ib][0], ra))
        out += region
        if m < len(bounds) - 1:
            out.append(script[bounds[m][0]])
        n = m
    if any(kind == _ISLAND for kind, _ in out):
        out = _spread(out)
    if sum(kind != "+" for kind, _ in out) != anchors[-1][1] - anchors[0][1] + 1 + _outside(script, anchors):
        raise BlankPlacement("the edit could not be lined up with the file's lines", -1)
    _no_new_run(out, script, file_lines[anchors[0][1] : anchors[-1][1] + 1])
    return out


def _no_new_run(out: Script, script: Script, block: list[str]) -> None:
    """Refuse a result with a longer run of blank lines than both the new text and the file's block have: the
    file's blank lines and the new text's were both kept there (which of them the edit keeps is a guess)."""
    longest = _longest_run([text for kind, text in out if kind != "-"])
    limit = max(_longest_run([text for kind, text in script if kind != "-"]), _longest_run(block))
    if longest > limit:
        raise BlankPileUp(
            f"kept both as the file has them and as the new text has them, the blank lines would make a run of "
            f"{longest} where neither the file nor the new text has more than {limit}", -1)


def _longest_run(lines: list[str]) -> int:
    """The longest run of blank lines in ``lines``."""
    best = n = 0
    for line in lines:
        n = n + 1 if not line.strip() else 0
        best = max(best, n)
    return best


def _restated(items: Script, region: list[str]) -> Script | None:
    """Between two kept lines: the new text's lines, over the file's ``region``, when lines change there and the
    old text has other blank lines than the file but the new text the file's, in the same places relative to the
    two kept lines (``_shape``; see the module docstring); else None. The file's blank lines stay, as the new
    text places them."""
    if not any(kind != " " and text.strip() for kind, text in items):
        return None  # only blank lines change: the gaps' rules
    blank = [not t.strip() for t in region]
    old = sum(kind != "+" and not text.strip() for kind, text in items)
    new_side = [text for kind, text in items if kind != "-"]
    theirs, ours = _shape(new_side), _shape(region)
    if old == sum(blank):
        return None
    if all(blank) and _split_around(theirs, len(region)):
        return _split_script(items, region)
    if len(theirs) != len(ours) or not all(map(_same_place, theirs, ours)):
        return None
    out: Script = []
    f = 0
    for kind, text in items:
        if kind == "-":
            continue
        if text.strip():
            out.append(("+", text))
            continue
        while not blank[f]:
            out.append(("-", region[f]))
            f += 1
        out.append((" ", region[f]))
        f += 1
    return out + [("-", line) for line in region[f:]]


def _split_around(theirs: list[tuple[int, bool, bool]], b_file: int) -> bool:
    """Whether new lines put between two kept lines, where the file has only its ``b_file`` blank lines, restate
    them on both sides: the new text's run right after the first line and its run right before the second have
    the file's size (none, for none). Then the old text merely missed or added a blank line there; a run on one
    side only is refused (the new text may have dropped the file's on the other side, as the old text did)."""
    head = next((size for size, start, _ in theirs if start), 0)
    tail = next((size for size, _, end in theirs if end), 0)
    return head == tail == b_file and not any(start and end for _, start, end in theirs)


def _split_script(items: Script, region: list[str]) -> Script:
    """The new text's lines between two kept lines over a ``region`` of blank lines only: the first of its runs
    that restates them keeps the file's own blank lines, the rest is added as written."""
    new_side = [text for kind, text in items if kind != "-"]
    out: Script = []
    f = 0
    for text in new_side:
        if not text.strip() and f < len(region) and not any(t.strip() for _, t in out):
            out.append((" ", region[f]))
            f += 1
        else:
            out.append(("+", text))
    return out + [("-", line) for line in region[f:]]


def _same_place(new: tuple[int, bool, bool], file: tuple[int, bool, bool]) -> bool:
    """A run of blank lines of the new text in the place of one of the file's (``_shape``): of its size, and right
    after the first kept line, or right before the second, wherever the file's is."""
    return new[0] == file[0] and (new[1] or not file[1]) and (new[2] or not file[2])


def _shape(lines: list[str]) -> list[tuple[int, bool, bool]]:
    """The runs of blank lines of a region between two kept lines: (size, at its start, at its end) each."""
    runs: list[tuple[int, bool, bool]] = []
    i = 0
    while i < len(lines):
        if lines[i].strip():
            i += 1
            continue
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        runs.append((j - i, i == 0, j == len(lines)))
        i = j
    return runs


def _outside(script: Script, anchors: list[tuple[int, int]]) -> int:
    """Old lines before the first matched line and after the last one (none at the ``blank_lines`` level)."""
    return sum(kind != "+" for kind, _ in script[: anchors[0][0]]) + sum(
        kind != "+" for kind, _ in script[anchors[-1][0] + 1 :]
    )
