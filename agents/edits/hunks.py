"""Locating and applying diff hunks (shared by unified diffs and Codex ``apply_patch``).

A hunk's *old block* is its context plus removed lines. It is searched after a forward cursor
(the end of the previous hunk; hunks must come in file order), with the line levels ``exact``,
``trailing_ws``, ``indent_offset``, ``edge_blank_lines`` (only blank *context* lines at the
hunk's edges may be dropped) and ``unicode``. At each level all matches in the search range
are counted: one match applies; several are refused unless the hunk's ``@@ -N`` line number
points exactly at one of them. apply_patch ``@@ anchor`` lines move the start of the search
range to the anchor's line; ``*** End of File`` requires the block to end the file.

A hunk whose old block is not found but whose new block is present exactly once is reported as
already applied. All hunks are located before anything is written; any failure refuses the
whole diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .document import Document
from .engine import Applied
from .hints import closest_hint, spans_text
from .matching import (
    ALL_LINE_LEVELS,
    BlockMatch,
    FileLines,
    IndentConflict,
    build_from_script,
    find_block,
    plan_restyle,
)
from .model import EditRefused, loosest
from .snippet import placeholder_lines


@dataclass
class Hunk:
    """One hunk: ``lines`` as ``(kind, text)`` with kind ``" "``, ``"-"`` or ``"+"``."""

    lines: list[tuple[str, str]]
    old_start: int | None = None
    anchors: list[str] = field(default_factory=list)
    at_eof: bool = False
    label: str = "hunk"

    @property
    def old(self) -> list[str]:
        """Context and removed lines, in order."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new(self) -> list[str]:
        """Context and added lines, in order."""
        return [text for kind, text in self.lines if kind != "-"]

    @property
    def changes(self) -> bool:
        """True when the hunk adds or removes anything."""
        return any(kind != " " for kind, _ in self.lines)


def _edge_context_flags(lines: list[tuple[str, str]]) -> list[bool]:
    """For each old-block line: may the edge-blank rule drop it (context before/after all changes)?"""
    kinds = [kind for kind, _ in lines]
    first = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    last = next((i for i in range(len(kinds) - 1, -1, -1) if kinds[i] != " "), -1)
    return [k == " " and (i < first or i > last) for i, k in enumerate(kinds) if k != "+"]


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    k = len(needle)
    return any(haystack[i : i + k] == needle for i in range(len(haystack) - k + 1))


def _find_anchor(fl: FileLines, anchor: str, lo: int) -> int | None:
    """First line at or after ``lo`` equal to ``anchor`` at the strictest level that finds one."""
    for level in ALL_LINE_LEVELS:
        if level.trim_edges and level.key != "fold":
            continue
        found = find_block(fl, [anchor], level, lo)
        if found:
            return found[0].start
    return None


def _after(lo: int) -> str:
    return f" after line {lo}" if lo else " in the file"


def _script_for(hunk: Hunk, match: BlockMatch) -> list[tuple[str, str]]:
    lead, trail = match.trim
    return hunk.lines[lead : len(hunk.lines) - trail]


@dataclass
class _Located:
    start: int
    end: int
    level: str
    new_lines: list[str] | None  # None: already applied
    note: str


def _locate(doc: Document, fl: FileLines, hunk: Hunk, lo: int, what: str) -> _Located:
    n = len(fl.lines)
    label = f"{what}, {hunk.label}"
    old = hunk.old
    if not old:
        if not fl.lines or hunk.at_eof:
            pos = n
            return _Located(pos, pos, "exact", hunk.new, f"{hunk.label}: added at the end of the file")
        raise EditRefused(
            f"{label} has no context or removed lines, so there is nothing to locate it by; include a few "
            "unchanged lines around the insertion point. Nothing was changed.",
            "no_match",
        )
    flags = _edge_context_flags(hunk.lines)
    tried: list[str] = []
    for level in ALL_LINE_LEVELS:
        found = find_block(fl, old, level, lo, trimmable=flags)
        if hunk.at_eof:
            found = [m for m in found if m.end == n]
        tried.append(f"{level.name} {len(found)}")
        if not found:
            continue
        chosen = found[0]
        note = ""
        if len(found) > 1:
            spans = [(m.start, m.end) for m in found]
            pointed = [m for m in found if hunk.old_start is not None and m.start - m.trim[0] + 1 == hunk.old_start]
            if len(pointed) != 1:
                stated = (
                    f" The @@ header says line {hunk.old_start}, which is not the start of exactly one of them."
                    if hunk.old_start is not None
                    else ""
                )
                raise EditRefused(
                    f"{label} matches {len(found)} places at level '{level.name}' ({spans_text(spans)})"
                    f"{_after(lo)}.{stated} Add context lines so it matches once. Nothing was changed.",
                    "ambiguous",
                    level=level.name,
                    lines=[s + 1 for s, _ in spans],
                )
            chosen = pointed[0]
            note = f" (of {len(found)} matches, the @@ line number picked this one)"
        block = fl.lines[chosen.start : chosen.end]
        script = _script_for(hunk, chosen)
        restyle = None
        if chosen.imap is None:
            restyle = plan_restyle(fl, [t for k, t in script if k != "+"], [t for k, t in script if k != "-"])
            if restyle is not None:
                note += f"; {restyle.description}"
        try:
            new_lines = build_from_script(block, script, chosen, restyle)
        except IndentConflict as exc:
            raise EditRefused(
                f"{label} matched {spans_text([(chosen.start, chosen.end)])} at level '{level.name}' with a "
                f"different indentation, but this added line cannot be re-indented: {exc.line!r}. Nothing was "
                "changed.",
                "indent_conflict",
                level=level.name,
            ) from None
        return _Located(
            chosen.start,
            chosen.end,
            level.name,
            new_lines,
            f"{hunk.label}: {spans_text([(chosen.start, chosen.end)])} ({level.name}){note}",
        )
    # Not found: maybe already applied.
    new = hunk.new
    if new and not _contains_run(old, new) and new != old:
        for level in ALL_LINE_LEVELS:
            found = find_block(fl, new, level, lo)
            if hunk.at_eof:
                found = [m for m in found if m.end == n]
            if len(found) == 1:
                m = found[0]
                where = spans_text([(m.start, m.end)])
                return _Located(m.start, m.end, level.name, None, f"{hunk.label}: already applied at {where}")
            if found:
                break
    stated = f" (the @@ header says line {hunk.old_start})" if hunk.old_start is not None else ""
    earlier = ""
    if lo > 0 and find_block(fl, old, ALL_LINE_LEVELS[1], 0, min(n, lo + len(old) - 1)):
        earlier = f" It does occur before line {lo + 1}, where the previous hunk ended: hunks must be in file order."
    raise EditRefused(
        f"{label} was not found{_after(lo)}{stated}; nothing was changed. Levels tried: {', '.join(tried)}."
        f"{earlier}\n{closest_hint(fl.lines, old)}",
        "no_match",
    )


def apply_hunks(doc: Document, hunks: list[Hunk], what: str) -> Applied:
    """Locate every hunk, then apply them together; raises ``EditRefused``."""
    if not any(h.changes for h in hunks):
        raise EditRefused(f"{what} adds and removes no lines; it would change nothing.", "noop")
    fl = FileLines(doc.lines, doc.text)
    cursor = 0
    splices: list[tuple[int, int, str]] = []
    notes: list[str] = []
    levels: list[str] = []
    applied_any = False
    for hunk in hunks:
        if not hunk.changes:
            continue
        added = [text for kind, text in hunk.lines if kind == "+"]
        placeholders = placeholder_lines(added, hunk.old, fl.lines)
        if placeholders:
            raise EditRefused(
                f"{what}, {hunk.label} adds {placeholders[0].strip()!r}, a placeholder that would be written into "
                "the file literally. Write the real lines instead. Nothing was changed.",
                "elision_mismatch",
            )
        lo = cursor
        for anchor in hunk.anchors:
            found = _find_anchor(fl, anchor, lo)
            if found is None:
                raise EditRefused(
                    f"{what}, {hunk.label}: the context line '@@ {anchor.strip()}' was not found{_after(lo)}; "
                    f"nothing was changed.\n{closest_hint(fl.lines, [anchor])}",
                    "no_match",
                )
            lo = found
        located = _locate(doc, fl, hunk, lo, what)
        notes.append(located.note)
        levels.append(located.level)
        cursor = located.end
        if located.new_lines is not None:
            applied_any = True
            splices.append(doc.block_splice(located.start, located.end, located.new_lines))
    level = loosest(levels)
    if not applied_any:
        return Applied(doc, "already_applied", level, f"{what}: every hunk is already applied; nothing changed.")
    new_doc = doc.splice(splices)
    if new_doc.text == doc.text:
        return Applied(doc, "already_applied", level, f"{what}: the file already has this content; nothing changed.")
    return Applied(new_doc, "applied", level, f"{what}: applied " + "; ".join(notes) + ".")
