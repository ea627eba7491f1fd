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
``apply_str_replace`` except that the exact level compares whole lines; a block that matches
several places is placed by the blocks around it when only one in-order placement of all blocks
exists. When every block is placed that way (without overlaps), they are applied together.
Otherwise (a block that only matches the result of an earlier block, an elision...) blocks apply
in order, each to the result of the previous one. All or nothing: if any block is refused, the
whole call is refused and nothing changes. An empty SEARCH section is only accepted for an empty
file (it then creates the content).

The ``=======`` divider is the only line between ``<<<<<<< SEARCH`` and ``>>>>>>> REPLACE``
made of five to nine ``=`` signs; when the code itself has such lines (reStructuredText
underlines in docstrings), the one that is exactly ``=======`` at column 0 is the divider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .document import Document, to_lf
from .engine import Applied, apply_at, line_candidates, outcome, replace_text
from .matching import EXACT_LINES, FUZZY_LEVELS, FileLines
from .model import EditOutcome, EditRefused, loosest
from .order import ordered_choice
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
    blocks that cannot be placed in order in exactly one way, overlapping blocks. Refusals that do
    not depend on the other blocks (identical SEARCH and REPLACE, one-sided elision...) are raised.
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
        found = line_candidates(fl, old_lines, levels, [])
        if not found:
            return None
        prepared.append((what, prep, old_lines, found))
    if all(len(found) == 1 for *_, found in prepared):
        picks = [0] * len(prepared)
    else:
        picks = ordered_choice([[(m.start, m.end) for m in found] for *_, found in prepared]).picks
        if picks is None:
            return None
    matches = [found[pick] for (*_, found), pick in zip(prepared, picks, strict=True)]
    ordered = sorted(matches, key=lambda m: m.start)
    if any(a.end > b.start for a, b in zip(ordered, ordered[1:], strict=False)):
        return None
    results = []
    for (what, prep, old_lines, found), match in zip(prepared, matches, strict=True):
        result = apply_at(doc, fl, match, old_lines, split_lines(prep.new), what)
        result.message = f"{what}: {result.message}"
        if len(found) > 1:
            result.message += f" Of {len(found)} matches, the order of the blocks picked this one."
        if prep.notes:
            result.message += " Note: " + "; ".join(prep.notes) + "."
        results.append(result)
    splices = [s for r in results for s in (r.splices or [])]
    return _combined(doc.splice(splices), results)


def _combined(doc: Document, results: list[Applied]) -> Applied:
    applied = [r for r in results if r.status == "applied"]
    status = "applied" if applied else "already_applied"
    level = loosest([r.level for r in (applied or results)])
    return Applied(doc, status, level, " ".join(r.message for r in results))


def _in_sequence(doc: Document, blocks: list[Block]) -> Applied:
    """Every block applied to the result of the previous one."""
    results: list[Applied] = []
    for n, block in enumerate(blocks, 1):
        what = _what(n, blocks)
        if block.search.strip() == "":
            if doc.text.strip() == "":
                new_doc = Document(block.replace, bom=doc.bom, sep=doc.sep, seps=None)
                results.append(Applied(new_doc, "applied", "exact", f"{what}: wrote the content of the empty file."))
                doc = new_doc
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
            result = replace_text(doc, prep.old, prep.new, substring=False, what=what)
        except EditRefused as exc:
            if n > 1:
                exc.message += f" (Blocks 1-{n - 1} matched but were not applied either: all or nothing.)"
                exc.args = (exc.message,)
            raise
        result.message = f"{what}: {result.message}"
        if prep.notes:
            result.message += " Note: " + "; ".join(prep.notes) + "."
        results.append(result)
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
