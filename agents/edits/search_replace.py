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

Blocks apply in order, each to the result of the previous one, with the same cascade as
``apply_str_replace`` except that the exact level compares whole lines. All or nothing: if any
block is refused, the whole call is refused and nothing changes. An empty SEARCH section is
only accepted for an empty file (it then creates the content).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .document import Document, to_lf
from .engine import Applied, outcome, replace_text
from .model import EditOutcome, EditRefused, loosest
from .snippet import prepare

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
        search: list[str] = []
        i += 1
        while i < len(lines) and not _DIVIDER.match(lines[i]):
            if _HEAD.match(lines[i]) or _TAIL.match(lines[i]):
                raise EditRefused(
                    f"The SEARCH block starting at line {head + 1} has no '=======' divider before line {i + 1}. "
                    "Nothing was changed.",
                    "invalid_patch",
                )
            search.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditRefused(
                f"The SEARCH block starting at line {head + 1} is not terminated ('=======' missing). Nothing "
                "was changed.",
                "invalid_patch",
            )
        i += 1
        replace: list[str] = []
        while i < len(lines) and not _TAIL.match(lines[i]):
            if _HEAD.match(lines[i]) or _DIVIDER.match(lines[i]):
                raise EditRefused(
                    f"The block starting at line {head + 1} has no '>>>>>>> REPLACE' before line {i + 1}. "
                    "Nothing was changed.",
                    "invalid_patch",
                )
            replace.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditRefused(
                f"The block starting at line {head + 1} is not terminated ('>>>>>>> REPLACE' missing). Nothing "
                "was changed.",
                "invalid_patch",
            )
        i += 1
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
    results: list[Applied] = []
    for n, block in enumerate(blocks, 1):
        what = f"SEARCH block {n} of {len(blocks)} (line {block.line})"
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
    applied = [r for r in results if r.status == "applied"]
    status = "applied" if applied else "already_applied"
    level = loosest([r.level for r in (applied or results)])
    final = Applied(doc, status, level, " ".join(r.message for r in results))
    return outcome(final, [], original)
