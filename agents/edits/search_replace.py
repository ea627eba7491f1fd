"""Aider-style SEARCH/REPLACE blocks for one file.

::

    path/to/file.py
    ```python
    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE
    ```

Every block is first located on the original file, on its own, with the same cascade as
``apply_str_replace`` except that the exact level compares whole lines. A block that matches
several places is only placed when the block before it pins it down: that block's match ends
right above one of the places (nothing but blank lines between) and above no other. The order of
the blocks alone decides nothing (models do not always write blocks in file order). When every
block is placed that way (without overlaps), they are applied together. Otherwise (a block that
only matches the result of an earlier block, an elision...) blocks apply in order, each to the
result of the previous one, and each must then match one place. All or nothing: if any block is
refused, the whole call is refused and nothing changes. An empty SEARCH section is only accepted
for an empty file (it then creates the content).

The ``=======`` divider is the only line between ``<<<<<<< SEARCH`` and ``>>>>>>> REPLACE``
made of five to nine ``=`` signs; when the code itself has such lines (reStructuredText
underlines in docstrings), the one that is exactly ``=======`` at column 0 is the divider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .applying import Applied, apply_at
from .document import Document, to_lf
from .engine import end_line, line_candidates, outcome, pinned_below, replace_text
from .hints import spans_text
from .matching import EXACT_LINES, FUZZY_LEVELS, BlockMatch, FileLines, find_block
from .model import EditOutcome, EditRefused, loosest
from .snippet import prepare, split_lines

_HEAD = re.compile(r"^\s*<{5,9} ?SEARCH\b.*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_TAIL = re.compile(r"^\s*>{5,9} ?REPLACE\b.*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass
class Block:
    """One SEARCH/REPLACE block; ``line`` is its 1-based position in the blocks text."""

    search: str
    replace: str
    filename: str | None
    line: int


def _filename(line: str) -> str | None:
    name = line.strip().strip("`*:").strip()
    if not name or " " in name or len(name) > 250 or not any(c in name for c in "./\\"):
        return None
    return name


def _divider(body: list[str], head: int) -> int:
    """Index in ``body`` (the lines between SEARCH and REPLACE markers) of the ``=======`` divider."""
    found = [i for i, line in enumerate(body) if _DIVIDER.match(line)]
    if len(found) > 1:
        found = [i for i in found if body[i].rstrip() == "======="] or found
    if not found:
        raise EditRefused(
            f"The SEARCH block starting at line {head + 1} has no '=======' divider. Nothing was changed.",
            "invalid_patch",
        )
    if len(found) > 1:
        raise EditRefused(
            f"The block starting at line {head + 1} has {len(found)} lines that could be its '=======' divider "
            f"(lines {', '.join(str(head + 2 + i) for i in found)}); write the divider as exactly '=======' at the "
            "start of a line. Nothing was changed.",
            "invalid_patch",
        )
    return found[0]


def parse_blocks(blocks_text: str) -> list[Block]:
    """Parse every SEARCH/REPLACE block; raises ``EditRefused(reason="invalid_patch")``."""
    lines = to_lf(blocks_text).split("\n")
    blocks: list[Block] = []
    last_text: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _HEAD.match(line):
            if _DIVIDER.match(line) or _TAIL.match(line):
                raise EditRefused(
                    f"Line {i + 1} ({line.strip()!r}) is outside a SEARCH/REPLACE block; each block must be "
                    "'<<<<<<< SEARCH', old lines, '=======', new lines, '>>>>>>> REPLACE'. Nothing was changed.",
                    "invalid_patch",
                )
            if line.strip() and not _FENCE.match(line):
                last_text = line
            i += 1
            continue
        head = i
        i += 1
        while i < len(lines) and not _TAIL.match(lines[i]):
            if _HEAD.match(lines[i]):
                raise EditRefused(
                    f"The block starting at line {head + 1} has no '>>>>>>> REPLACE' before the next "
                    f"'<<<<<<< SEARCH' (line {i + 1}). Nothing was changed.",
                    "invalid_patch",
                )
            i += 1
        body = lines[head + 1 : i]
        cut = _divider(body, head)
        if i >= len(lines):
            raise EditRefused(
                f"The block starting at line {head + 1} is not terminated ('>>>>>>> REPLACE' missing). Nothing "
                "was changed.",
                "invalid_patch",
            )
        i += 1
        search, replace = body[:cut], body[cut + 1 :]
        blocks.append(
            Block(
                "\n".join(search) + ("\n" if search else ""),
                "\n".join(replace) + ("\n" if replace else ""),
                _filename(last_text) if last_text is not None else None,
                head + 1,
            )
        )
        last_text = None
    if not blocks:
        raise EditRefused(
            "No SEARCH/REPLACE block found. Use '<<<<<<< SEARCH', the exact old lines, '=======', the new "
            "lines, '>>>>>>> REPLACE'.",
            "invalid_patch",
        )
    return blocks


def _what(n: int, blocks: list[Block]) -> str:
    return f"SEARCH block {n} of {len(blocks)} (line {blocks[n - 1].line})"


def _together(doc: Document, blocks: list[Block]) -> Applied | None:
    """Every block located on the original file and applied at once; None when that is not possible.

    Not possible: an empty SEARCH section, a block that only the elision level (or nothing) matches,
    a block that matches several places and is not pinned down by the block before it
    (``pinned``), overlapping blocks. Refusals that do not depend on the other blocks (identical
    SEARCH and REPLACE, one-sided elision...) are raised.
    """
    if len(blocks) < 2:
        return None
    fl = FileLines(doc.lines, doc.text)
    levels = (EXACT_LINES, *FUZZY_LEVELS)
    prepared = []
    for n, block in enumerate(blocks, 1):
        what = _what(n, blocks)
        if block.search.strip() == "":
            return None
        if block.search == block.replace:
            raise EditRefused(f"{what}: SEARCH and REPLACE are identical. Nothing was changed.", "noop")
        prep = prepare(doc.text, block.search, block.replace)
        old_lines = split_lines(prep.old)
        found = line_candidates(fl, old_lines, levels, [], limit=2)  # one, or several: counted below if need be
        if not found:
            return None
        prepared.append((what, prep, old_lines, found))
    matches: list[BlockMatch] = []
    for what, _prep, old_lines, found in prepared:
        after = matches[-1].end if matches else None
        match = found[0] if len(found) == 1 else pinned_below(fl, old_lines, found[0].level, after)
        if match is None:
            found = find_block(fl, old_lines, found[0].level)
            if any(m.start < f.end and f.start < m.end for m in matches for f in found):
                return None  # an earlier block edits one of the places: applied in order, the blocks may decide
            raise _unpinned(what, found, matches[-1] if matches else None)
        matches.append(match)
    ordered = sorted(matches, key=lambda m: m.start)
    if any(a.end > b.start for a, b in zip(ordered, ordered[1:], strict=False)):
        return None
    results = []
    for n, ((what, prep, old_lines, found), match) in enumerate(zip(prepared, matches, strict=True)):
        result = apply_at(doc, fl, match, old_lines, split_lines(prep.new), what)
        result.message = f"{what}: {result.message}"
        if len(found) > 1:
            result.message += (
                f" Of several matches, this is the one right below block {n} (which ends at line "
                f"{matches[n - 1].end})."
            )
        if prep.notes:
            result.message += " Note: " + "; ".join(prep.notes) + "."
        results.append(result)
    splices = [s for r in results for s in (r.splices or [])]
    return _combined(doc.splice(splices), results)


def _unpinned(what: str, found: list[BlockMatch], before: BlockMatch | None) -> EditRefused:
    spans = [(m.start, m.end) for m in found]
    why = (
        "it is the first block, so no block before it pins it down"
        if before is None
        else f"the block before it ends at line {before.end}, right above none of them or above more than one"
    )
    return EditRefused(
        f"{what} matches {len(found)} places at level '{found[0].level.name}' ({spans_text(spans)}), and {why}; "
        "the order of the blocks alone does not decide. Nothing was changed. Include more surrounding lines in "
        "this block (a line that differs between the places) so that it matches exactly one place.",
        "ambiguous",
        level=found[0].level.name,
        lines=[s + 1 for s, _ in spans],
    )


def _combined(doc: Document, results: list[Applied]) -> Applied:
    applied = [r for r in results if r.status == "applied"]
    status = "applied" if applied else "already_applied"
    level = loosest([r.level for r in (applied or results)])
    return Applied(doc, status, level, " ".join(r.message for r in results))


def _in_sequence(doc: Document, blocks: list[Block]) -> Applied:
    """Every block applied to the result of the previous one."""
    results: list[Applied] = []
    after: int | None = None  # the line (in ``doc``) where the previous block's replacement ends
    for n, block in enumerate(blocks, 1):
        what = _what(n, blocks)
        if block.search.strip() == "":
            if doc.text.strip() == "":
                new_doc = Document(block.replace, bom=doc.bom, sep=doc.sep, seps=None)
                results.append(Applied(new_doc, "applied", "exact", f"{what}: wrote the content of the empty file."))
                doc, after = new_doc, None
                continue
            raise EditRefused(
                f"{what} has an empty SEARCH section but the file is not empty; put the lines to replace (or "
                "the lines next to the insertion point) in SEARCH. Nothing was changed.",
                "empty_old",
            )
        if block.search == block.replace:
            raise EditRefused(f"{what}: SEARCH and REPLACE are identical. Nothing was changed.", "noop")
        prep = prepare(doc.text, block.search, block.replace)
        try:
            result = replace_text(doc, prep.old, prep.new, substring=False, what=what, after=after,
                                  resent=bool(results) and results[-1].status == "already_applied")
        except EditRefused as exc:
            if n > 1 and exc.reason == "ambiguous":
                exc.message += (
                    " The block before it does not pin it down (its match does not end right above exactly one of "
                    "these places), and the order of the blocks alone does not decide."
                )
            if n > 1:
                exc.message += f" (Blocks 1-{n - 1} matched but were not applied either: all or nothing.)"
            exc.args = (exc.message,)
            raise
        result.message = f"{what}: {result.message}"
        if prep.notes:
            result.message += " Note: " + "; ".join(prep.notes) + "."
        results.append(result)
        after = end_line(result)
        doc = result.doc
    return _combined(doc, results)


def apply_search_replace(original: str, blocks_text: str) -> EditOutcome:
    """Apply every SEARCH/REPLACE block of ``blocks_text`` to ``original`` (all or nothing)."""
    blocks = parse_blocks(blocks_text)
    names = {b.filename for b in blocks if b.filename}
    if len(names) > 1:
        raise EditRefused(
            f"The blocks name several files ({', '.join(sorted(names))}); send the blocks of one file per call. "
            "Nothing was changed.",
            "unsupported",
        )
    doc = Document.parse(original)
    final = _together(doc, blocks) or _in_sequence(doc, blocks)
    return outcome(final, [], original)
