"""Locating and applying diff hunks (shared by unified diffs and Codex ``apply_patch``).

A hunk's *old block* is its context plus removed lines. Each hunk is located on its own, with the line levels
``exact``, ``trailing_ws``, ``indent_offset``, ``edge_blank_lines`` (only blank *context* lines at the hunk's edges
may be dropped), ``blank_lines`` and ``unicode``, inside its *window*: after the hunk before it and before the hunk
after it (hunks come in file order). At the strictest level with a match in the window the match must be unique;
when several remain, the hunk's ``@@ -N`` line number may pick the one starting exactly there. Hunks that are unique
in the whole file are placed first and narrow their neighbours' windows; hunks that still match several places
are placed together when only one in-order placement of all of them exists (``order``), and refused otherwise.

apply_patch ``@@ context`` lines (anchors) say where a chunk is: after the first line of the file equal to the
anchor (nested anchors: each after the previous one), or holding that line as context, whether or not an earlier
chunk already passed it, and preferably inside that line's block (the lines indented under it).
``*** End of File`` requires the block to end the file.

A hunk whose old block is not found but whose new block is present exactly once is reported as already applied
(a new block that is part of the old one, as the hunk only deletes lines, must be there as it is). A
hunk that adds an elision line (``...``, ``# ... existing code ...``) in place of lines is refused (``elision``).
All hunks are located before anything is written; any failure refuses the whole diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .applying import Applied, applied_elsewhere, check_depth, check_shift
from .blanks import BlankPlacement, realign
from .document import Document
from .elision import elision_message, marker_kind, one_sided_elisions
from .hints import closest_hint, spans_text
from .matching import (
    ALL_LINE_LEVELS,
    EXACT_LINES,
    BlockMatch,
    FileLines,
    already_there,
    contains_run,
    find_block,
    indent_of,
    new_text_elsewhere,
    plan_restyle,
    width,
)
from .model import EditRefused, loosest
from .order import ordered_choice
from .replacement import IndentConflict, build_from_script


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


def _after(lo: int) -> str:
    return f" after line {lo}" if lo else " in the file"


# ---- anchors ----------------------------------------------------------------------------------------------------


def _anchor_lines(fl: FileLines, anchor: str, lo: int) -> list[int]:
    """Lines at or after ``lo`` equal to ``anchor`` at the strictest level that finds one."""
    for level in ALL_LINE_LEVELS:
        if level.trim_edges and level.key != "fold":
            continue
        found = find_block(fl, [anchor], level, lo)
        if found:
            return [m.start for m in found]
    return []


def _scope_end(lines: list[str], row: int) -> int:
    """One past the last line indented under ``lines[row]`` (closing brackets at its level included)."""
    base = width(indent_of(lines[row]), 4)
    i = row + 1
    while i < len(lines):
        line = lines[i]
        if line.strip() and width(indent_of(line), 4) <= base and not line.lstrip().startswith((")", "]", "}")):
            break
        i += 1
    return i


@dataclass
class _Anchored:
    """What a hunk's anchors say: it starts at or after ``lo``, preferably inside one of ``scopes``."""

    lo: int = 0
    scopes: list[tuple[int, int]] = field(default_factory=list)


def _anchored(fl: FileLines, hunk: Hunk, what: str) -> _Anchored:
    out = _Anchored()
    for anchor in hunk.anchors:
        rows = _anchor_lines(fl, anchor, out.lo)
        if not rows:
            raise EditRefused(
                f"{what}, {hunk.label}: the context line '@@ {anchor.strip()}' was not found{_after(out.lo)}; "
                f"nothing was changed.\n{closest_hint(fl.lines, [anchor])}",
                "no_match",
            )
        out.lo = rows[0]
        out.scopes = [(r, _scope_end(fl.lines, r)) for r in rows]
    return out


# ---- locating one hunk ------------------------------------------------------------------------------------------


@dataclass
class _Found:
    """A hunk's matches at the strictest level that has any in its window (``already``: of its new block)."""

    matches: list[BlockMatch]
    level: str
    tried: list[str]
    already: bool = False
    note: str = ""
    complete: bool = True
    """False when counting stopped at the search's ``limit``: there may be more matches than these."""


def _narrow(hunk: Hunk, anchored: _Anchored, found: list[BlockMatch]) -> tuple[list[BlockMatch], str]:
    """Of several matches, the one inside the anchor's block, or the one the ``@@ -N`` number points at."""
    if len(found) < 2:
        return found, ""
    inside = [m for m in found if any(s < m.start and m.end <= e for s, e in anchored.scopes)]
    if inside and len(inside) < len(found):
        found = inside
        if len(found) == 1:
            return found, " (the only match inside the @@ line's block)"
    if hunk.old_start is not None:
        pointed = [m for m in found if m.start - m.trim[0] + 1 == hunk.old_start]
        if len(pointed) == 1:
            return pointed, f" (of {len(found)} matches, the @@ line number picked this one)"
    return found, ""


def _search(fl: FileLines, hunk: Hunk, anchored: _Anchored, lo: int, hi: int, limit: int | None = None) -> _Found:
    """The hunk's matches inside lines ``lo..hi-1``; its new block's when its old block is nowhere there.

    With anchors, a match must end after the (last) anchor's line: start after it, or hold it as context.
    ``limit`` stops counting at that many matches of a level (enough to tell a unique match).
    """
    if hunk.anchors or hunk.at_eof or hunk.old_start is not None:
        limit = None  # matches are filtered or picked after counting: count them all
    n = len(fl.lines)
    flags = _edge_context_flags(hunk.lines)
    tried: list[str] = []
    if hunk.anchors:
        lo = max(lo, anchored.lo - len(hunk.old) + 1)
    for level in ALL_LINE_LEVELS:
        found = find_block(fl, hunk.old, level, lo, hi, trimmable=flags, limit=limit)
        if hunk.at_eof:
            found = [m for m in found if m.end == n]
        if hunk.anchors:
            found = [m for m in found if m.end > anchored.lo]
        tried.append(f"{level.name} {len(found)}")
        if found:
            complete = limit is None or len(found) < limit
            found, note = _narrow(hunk, anchored, found)
            if len(found) == 1 and already_there(fl, hunk.new, found[0], lo, hi, old=hunk.old):
                return _Found(find_block(fl, hunk.new, EXACT_LINES, lo, hi) or found, level.name, tried, already=True)
            return _Found(found, level.name, tried, note=note, complete=complete)
    new = hunk.new
    if any(t.strip() for t in new) and new != hunk.old:
        # a new block that is part of the old one (lines deleted around it) only counts as it is
        for level in (EXACT_LINES,) if contains_run(hunk.old, new) else ALL_LINE_LEVELS:
            found = find_block(fl, new, level, lo, hi)
            if hunk.at_eof:
                found = [m for m in found if m.end == n]
            if hunk.anchors:
                found = [m for m in found if m.end > anchored.lo]
            if found:
                return _Found(found, level.name, tried, already=True)
    return _Found([], "", tried)


def _not_found(fl: FileLines, hunk: Hunk, found: _Found, lo: int, what: str) -> EditRefused:
    stated = f" (the @@ header says line {hunk.old_start})" if hunk.old_start is not None else ""
    extra = ""
    old = hunk.old
    n = len(fl.lines)
    if lo > 0 and find_block(fl, old, ALL_LINE_LEVELS[1], 0, min(n, lo + len(old) - 1)):
        extra = f" It does occur before line {lo + 1}, where the previous hunk ended: hunks must be in file order."
    if any(marker_kind(t) for t in old):
        extra += (
            " Its context has an elision line ('...'): the context and removed lines of a diff must be copied from "
            "the file as they are."
        )
    return EditRefused(
        f"{what}, {hunk.label} was not found{_after(lo)}{stated}; nothing was changed. Levels tried: "
        f"{', '.join(found.tried)}.{extra}\n{closest_hint(fl.lines, old)}",
        "no_match",
    )


def _ambiguous(hunk: Hunk, found: _Found, lo: int, what: str, why: str = "") -> EditRefused:
    spans = [(m.start, m.end) for m in found.matches]
    stated = (
        f" The @@ header says line {hunk.old_start}, which is not the start of exactly one of them."
        if hunk.old_start is not None
        else ""
    )
    return EditRefused(
        f"{what}, {hunk.label} matches {len(spans)} places at level '{found.level}' ({spans_text(spans)})"
        f"{_after(lo)}{why}.{stated} Add context lines so it matches once. Nothing was changed.",
        "ambiguous",
        level=found.level,
        lines=[s + 1 for s, _ in spans],
    )


# ---- locating every hunk ----------------------------------------------------------------------------------------


@dataclass
class _Slot:
    """One hunk being located: its window bounds from anchors, and where it went once decided."""

    hunk: Hunk
    anchored: _Anchored
    found: _Found | None = None
    window: tuple[int, int] | None = None
    """The lines ``found`` was searched in."""
    match: BlockMatch | None = None


def _window(slots: list[_Slot], k: int, n: int) -> tuple[int, int]:
    """Lines where hunk ``k`` may be: after the placed hunk before it, before the placed hunk after it."""
    lo = 0
    hi = n
    before = next((s.match for s in reversed(slots[:k]) if s.match is not None), None)
    after = next((s.match for s in slots[k + 1 :] if s.match is not None), None)
    if before is not None:
        lo = max(lo, before.end)
    if after is not None:
        hi = after.start
    return lo, hi


def _place_unique(fl: FileLines, slots: list[_Slot]) -> None:
    """Place every hunk that has one match in its window, until nothing changes."""
    n = len(fl.lines)
    progress = True
    while progress:
        progress = False
        for k, slot in enumerate(slots):
            if slot.match is not None:
                continue
            slot.window = _window(slots, k, n)
            slot.found = _search(fl, slot.hunk, slot.anchored, *slot.window, limit=2)
            if len(slot.found.matches) == 1:
                slot.match = slot.found.matches[0]
                progress = True


def _place_run(fl: FileLines, slots: list[_Slot], k: int, j: int, what: str) -> None:
    """Place hunks ``k..j-1`` (none placed yet) together: refused unless exactly one in-order placement exists."""
    lo, hi = _window(slots, k, len(fl.lines))
    run = slots[k:j]
    found: list[_Found] = []
    for slot in run:
        # what placing the unique ones found stands when it counted every match in this same window
        kept = slot.found is not None and slot.found.complete and slot.window == (lo, hi)
        got = slot.found if kept else _search(fl, slot.hunk, slot.anchored, lo, hi)
        if not got.matches:
            raise _not_found(fl, slot.hunk, got, max(lo, slot.anchored.lo), what)
        found.append(got)
    choice = ordered_choice([[(m.start, m.end) for m in f.matches] for f in found])
    if choice.picks is None:
        if choice.stuck is not None:
            why = ", none of them after the hunks before it (hunks must be in file order)"
            raise _ambiguous(run[choice.stuck].hunk, found[choice.stuck], lo, what, why)
        why = ", and the hunks around it do not decide which"
        raise _ambiguous(run[choice.open[0]].hunk, found[choice.open[0]], lo, what, why)
    for slot, got, pick in zip(run, found, choice.picks, strict=True):
        got.note += " (placed by the order of the hunks)"
        slot.found, slot.match = got, got.matches[pick]


def _place_runs(fl: FileLines, slots: list[_Slot], what: str) -> None:
    """Place each run of hunks that still match several places (see ``_place_run``)."""
    k = 0
    while k < len(slots):
        if slots[k].match is not None:
            k += 1
            continue
        j = k
        while j < len(slots) and slots[j].match is None:
            j += 1
        _place_run(fl, slots, k, j, what)
        k = j


# ---- applying ---------------------------------------------------------------------------------------------------


def _new_lines(fl: FileLines, hunk: Hunk, match: BlockMatch, what: str) -> tuple[list[str], str]:
    """The replacement lines of a hunk placed at ``match``, and a note on how they were written."""
    lead, trail = match.trim
    script = _core_script(hunk.lines, lead, trail)
    block = fl.lines[match.start : match.end]
    restyle = None
    note = ""
    if match.imap is not None:
        check_shift([t for k, t in script if k != "+"], [t for k, t in script if k != "-"], match,
                    f"{what}, {hunk.label}")
    if match.imap is None:
        restyle = plan_restyle(fl, [t for k, t in script if k != "+"], [t for k, t in script if k != "-"])
        if restyle is not None:
            note = f"; {restyle.description}"
    try:
        if match.rows is not None:
            script = realign(script, match.rows, fl.lines)
            note += "; blank lines kept as the file has them"
        lines = build_from_script(block, script, match, restyle)
        if match.imap is not None:
            check_depth(fl.lines, match, lines, f"{what}, {hunk.label}")
        return lines, note
    except IndentConflict as exc:
        raise EditRefused(
            f"{what}, {hunk.label} matched {spans_text([(match.start, match.end)])} at level '{match.level.name}' "
            f"with a different indentation, but this added line cannot be re-indented: {exc.line!r}. Nothing was "
            "changed.",
            "indent_conflict",
            level=match.level.name,
        ) from None
    except BlankPlacement as exc:
        raise EditRefused(
            f"{what}, {hunk.label} matched {spans_text([(match.start, match.end)])} at level '{match.level.name}' "
            f"(other blank lines than the file has), but {exc.message}. Nothing was changed; copy the context "
            "with the file's blank lines.",
            "ambiguous",
            level=match.level.name,
            lines=[exc.row + 1] if exc.row >= 0 else [],
        ) from None


def _core_script(lines: list[tuple[str, str]], lead: int, trail: int) -> list[tuple[str, str]]:
    """The hunk's lines without the ``lead``/``trail`` blank context lines the edge rule dropped."""
    return lines[lead : len(lines) - trail]


def _pure_insertion(fl: FileLines, hunk: Hunk, what: str) -> tuple[int, list[str]]:
    if not fl.lines or hunk.at_eof:
        return len(fl.lines), hunk.new
    raise EditRefused(
        f"{what}, {hunk.label} has no context or removed lines, so there is nothing to locate it by; include a few "
        "unchanged lines around the insertion point. Nothing was changed.",
        "no_match",
    )


def apply_hunks(doc: Document, hunks: list[Hunk], what: str) -> Applied:
    """Locate every hunk, then apply them together; raises ``EditRefused``."""
    if not any(h.changes for h in hunks):
        raise EditRefused(f"{what} adds and removes no lines; it would change nothing.", "noop")
    fl = FileLines(doc.lines, doc.text)
    splices: list[tuple[int, int, str]] = []
    notes: list[str] = []
    levels: list[str] = []
    applied_any = False
    slots: list[_Slot] = []
    for hunk in hunks:
        if not hunk.changes:
            continue
        problems = one_sided_elisions(hunk.lines, fl.lines)
        if problems:
            raise EditRefused(elision_message(f"{what}, {hunk.label}", problems), "elision_mismatch", level="elision")
        if not hunk.old:
            pos, new_lines = _pure_insertion(fl, hunk, what)
            splices.append(doc.block_splice(pos, pos, new_lines))
            notes.append(f"{hunk.label}: added at the end of the file")
            levels.append("exact")
            applied_any = True
            continue
        slots.append(_Slot(hunk, _anchored(fl, hunk, what)))
    _place_unique(fl, slots)
    _place_runs(fl, slots, what)
    for slot in slots:
        hunk, match, found = slot.hunk, slot.match, slot.found
        assert match is not None and found is not None
        where = spans_text([(match.start, match.end)])
        levels.append(match.level.name)
        if found.already:
            notes.append(f"{hunk.label}: already applied at {where}")
            continue
        elsewhere = new_text_elsewhere(fl, hunk.new, hunk.old, match)
        if elsewhere is not None:
            raise applied_elsewhere(f"{what}, {hunk.label}", match, elsewhere)
        new_lines, how = _new_lines(fl, hunk, match, what)
        notes.append(f"{hunk.label}: {where} ({match.level.name}){found.note}{how}")
        applied_any = True
        splices.append(doc.block_splice(match.start, match.end, new_lines))
    level = loosest(levels)
    if not applied_any:
        return Applied(doc, "already_applied", level, f"{what}: every hunk is already applied; nothing changed.")
    new_doc = doc.splice(splices)
    if new_doc.text == doc.text:
        return Applied(doc, "already_applied", level, f"{what}: the file already has this content; nothing changed.")
    return Applied(new_doc, "applied", level, f"{what}: applied " + "; ".join(notes) + ".")
