"""Rebuilding an edit around the file's own blank lines (the ``blank_lines`` level).

At that level the old text matched with other runs of blank lines than the file has between two of its lines (one
missing, one too many). The edit is a *script* of ``(kind, text)`` items (``" "`` kept, ``"-"`` removed, ``"+"``
added) whose old side is the snippet; ``realign`` returns a script whose old side is the file block itself, so that
every kept line is copied from the file. Between two matched lines (a *gap*):

* the same number of blank lines as the file: nothing to do;
* a new text with as many blank lines there as the file: the gap as the new text has it (the old text merely
  missed or added a blank line: models drop blank lines from what they quote, rarely from what they write);
* only blank lines (kept, removed or added): the file's count changes by what the edit changes there (``new -
  old``), as long as that stays between the new text's count and the file's; otherwise whether the edit adds a
  blank line or merely has the file's is a guess, and the edit is refused;
* added lines next to one run of kept blank lines: that run takes the file's count (refused when the added lines
  have blank lines of their own: which blank lines are the kept ones is then unclear). When the file has more blank
  lines there than the old text, the added lines must replace the line before the gap and come before the run;
* added lines replacing the line before the gap, no blank line in the old text: the file's blank lines go right
  before the next line (refused when the added lines end with blank lines);
* blank lines of the file between two lines a group replaces: they go between the same two lines of the
  replacement, when it replaces line for line (``_spread``); otherwise refused;
* anything else (lines inserted between two kept lines where the file has blank lines the old text lacks) leaves
  open on which side of the insertion the blank lines belong: refused.

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


def _gap(items: Script, file_blanks: list[str], left: str, right: str, row: int) -> Script:
    """The items between two matched lines, rebuilt for the file's blank lines ``file_blanks``."""
    kept = [i for i, (kind, _) in enumerate(items) if kind == " "]
    removed = sum(kind == "-" for kind, _ in items)
    added = [text for kind, text in items if kind == "+"]
    b_file = len(file_blanks)
    if len(kept) + removed == b_file:
        return items
    if sum(kind != "-" and not text.strip() for kind, text in items) == b_file:
        return _as_new(items, file_blanks)
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
        if not added[-1].strip():
            raise BlankPlacement(
                f"the new lines after line {row + 1} end with blank lines, and the file has {b_file} blank line(s) "
                "there that the old text does not have: whether they are the same blank lines is unclear",
                row,
            )
        return [*items, *((" ", t) for t in file_blanks)]
    raise BlankPlacement(
        f"the file has {b_file} blank line(s) after line {row + 1} that the old text does not have, and the new "
        "text inserts lines right there: it is unclear on which side of them the new lines go",
        row,
    )


def _as_new(items: Script, file_blanks: list[str]) -> Script:
    """The gap as the new text has it, its blank lines the file's (as many as the file has there, in order)."""
    blanks = iter(file_blanks)
    return [(" ", next(blanks)) if not text.strip() else ("+", text) for kind, text in items if kind != "-"]


def _blank_gap(old: int, new: int, file_blanks: list[str], row: int) -> Script:
    """A gap of blank lines only: ``old`` in the old text, ``new`` in the new text, ``file_blanks`` in the file.

    The file's count changes by what the edit changes (``new - old``): an edit that keeps the count keeps the
    file's, one that removes a blank line removes one of the file's. When that lands outside the new text's and
    the file's counts (the new text has the file's count while the old text has another: does the edit add a
    blank line, or only copy the file's?), it is a guess, and refused.
    """
    b_file = len(file_blanks)
    keep = max(0, b_file + new - old)
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
    script = _blanks_first(script)
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
    out: Script = list(script[: anchors[0][0] + 1])
    for (ia, ra), (ib, rb) in zip(anchors, anchors[1:], strict=False):
        items = script[ia + 1 : ib]
        out += _gap(items, file_lines[ra + 1 : rb], script[ia][0], script[ib][0], ra)
        out.append(script[ib])
    out += script[anchors[-1][0] + 1 :]
    if any(kind == _ISLAND for kind, _ in out):
        out = _spread(out)
    if sum(kind != "+" for kind, _ in out) != anchors[-1][1] - anchors[0][1] + 1 + _outside(script, anchors):
        raise BlankPlacement("the edit could not be lined up with the file's lines", -1)
    return out


def _blanks_first(script: Script) -> Script:
    """The blank lines that open a replacement moved before the lines it removes (both texts stay the same): they
    are the new text's run between the line before and the replacement, and are compared with the file's there."""
    out: Script = []
    i = 0
    while i < len(script):
        if script[i][0] != "-":
            out.append(script[i])
            i += 1
            continue
        j = i
        while j < len(script) and script[j][0] == "-":
            j += 1
        k = j
        while k < len(script) and script[k][0] == "+" and not script[k][1].strip():
            k += 1
        if k == j or k == len(script) or script[k][0] != "+":
            out += script[i:j]  # no replacement opening with blank lines
            i = j
            continue
        out += script[j:k] + script[i:j]
        i = k
    return out


def _outside(script: Script, anchors: list[tuple[int, int]]) -> int:
    """Old lines before the first matched line and after the last one (none at the ``blank_lines`` level)."""
    return sum(kind != "+" for kind, _ in script[: anchors[0][0]]) + sum(
        kind != "+" for kind, _ in script[anchors[-1][0] + 1 :]
    )
