"""Applying what the cascade located (engine.py): the replacement spliced in at a match, its indentation and blank
lines checked against the file's; and the elision level, whose pieces between '...' lines are placed in order."""

from __future__ import annotations

from dataclasses import dataclass, field

from .blanks import BlankPileUp, BlankPlacement, realign, skeleton_script
from .document import Document
from .elision import elision_message, marker_kind, one_sided_elisions
from .hints import closest_hint, spans_text
from .matching import (
    EXACT_LINES,
    FUZZY_LEVELS,
    BlockMatch,
    FileLines,
    Restyle,
    already_there,
    find_block,
    new_text_elsewhere,
    plan_restyle,
)
from .model import EditRefused
from .replacement import IndentConflict, build_from_script, build_replacement, line_script
from .shifts import depth_problem, unclear_shift
from .snippet import elision_markers, split_elisions


@dataclass
class Applied:
    """Result of one old/new replacement on a document.

    ``splices`` (line-level and elision matches) are the changes in the original document's
    offsets, so that several independently located edits can be applied together.
    """

    doc: Document
    status: str  # "applied" | "already_applied"
    level: str
    message: str
    notes: list[str] = field(default_factory=list)
    splices: list[tuple[int, int, str]] | None = None
    span: tuple[int, int] | None = None
    """Lines of ``doc`` (end exclusive) where the new text already is, for an edit already applied."""


def _trim_new(new_lines: list[str], trim: tuple[int, int]) -> list[str]:
    """Drop up to ``trim`` blank lines at the edges of the new text (mirroring the old text)."""
    lead, trail = trim
    start = 0
    while start < lead and start < len(new_lines) and new_lines[start].strip() == "":
        start += 1
    end = len(new_lines)
    while trail > 0 and end > start and new_lines[end - 1].strip() == "":
        end -= 1
        trail -= 1
    return new_lines[start:end]


def tried(attempts: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {result}" for name, result in attempts)


def _apply_block(
    doc: Document, fl: FileLines, match: BlockMatch, old_lines: list[str], new_lines: list[str], what: str
) -> tuple[tuple[int, int, str], list[str], Restyle | None]:
    lead, trail = match.trim
    core_old = old_lines[lead : len(old_lines) - trail]
    core_new = _trim_new(new_lines, match.trim)
    block = fl.lines[match.start : match.end]
    where = spans_text([(match.start, match.end)])
    check_elisions(core_old, core_new, fl.lines, what)
    if match.imap is not None:
        check_shift(core_old, core_new, match, what)
    restyle = plan_restyle(fl, core_old, core_new) if match.imap is None else None
    try:
        if match.rows is not None:
            repl = _around_blank_lines(block, core_old, core_new, match, fl)
        else:
            repl = build_replacement(block, core_old, core_new, match, restyle)
    except IndentConflict as exc:
        raise EditRefused(
            f"The old text matched {where} at level '{match.level.name}' "
            f"with a different indentation, but this new line cannot be re-indented to match the file "
            f"(it is less indented than the block allows): {exc.line!r}. Nothing was changed; copy the "
            "old text with the file's exact indentation.",
            "indent_conflict",
            level=match.level.name,
            lines=[match.start + 1],
        ) from None
    except BlankPlacement as exc:
        raise EditRefused(
            f"The old text matched {where} at level '{match.level.name}' (other blank lines than the file has), "
            f"but {exc.message}. Nothing was changed; copy the old text with the file's blank lines.",
            "ambiguous",
            level=match.level.name,
            lines=[exc.row + 1] if exc.row >= 0 else [],
        ) from None
    if match.imap is not None:
        check_depth(fl.lines, match, repl, what)
    return doc.block_splice(match.start, match.end, repl), repl, restyle


def check_shift(old: list[str], new: list[str], match: BlockMatch, what: str) -> None:
    """Refuse (``indent_conflict``) a shifted match where re-indenting the new text would be a guess
    (``unclear_shift``)."""
    assert match.imap is not None
    why = unclear_shift(old, new, match.imap)
    if why is None:
        return
    where = spans_text([(match.start, match.end)])
    if why == "file":
        detail = (
            "but the new text's first or last line (or the lines it keeps) is already at the file's indentation, "
            "not at the old text's: no single offset turns the snippet into the file"
        )
    else:
        detail = (
            "and the new text's edges (its first and last lines, or those of them it keeps unchanged) do not stay at "
            "the old text's indentation: whether it is written at the old text's indentation or at the file's is "
            "unclear"
        )
    raise EditRefused(
        f"{what} matched {where} at level '{match.level.name}' only with another indentation "
        f"({match.imap.description}), {detail}. Nothing was changed; copy the old text with the file's exact "
        "indentation (and write the new text at that indentation).",
        "indent_conflict",
        level=match.level.name,
        lines=[match.start + 1],
    )


def check_depth(lines: list[str], match: BlockMatch, repl: list[str], what: str) -> None:
    """Refuse (``indent_conflict``) a re-indented replacement that would sit at the wrong depth (``depth_problem``)."""
    assert match.imap is not None
    if match.imap.prefix == "" or match.imap.delta == 0:
        return
    problem = depth_problem(lines, match.start, match.end, repl, match.imap.tab)
    if problem is None:
        return
    raise EditRefused(
        f"{what} matched {spans_text([(match.start, match.end)])} at level '{match.level.name}' only with another "
        f"indentation ({match.imap.description}); re-indented by that offset, the new text does not fit there: "
        f"{problem}. Nothing was changed; copy the old text with the file's exact indentation (and write the new "
        "text at that indentation).",
        "indent_conflict",
        level=match.level.name,
        lines=[match.start + 1],
    )


def _around_blank_lines(
    block: list[str], core_old: list[str], core_new: list[str], match: BlockMatch, fl: FileLines
) -> list[str]:
    """Replacement lines for a ``blank_lines`` match: the same whichever way the texts' blank lines are paired.

    The old and new text are lined up twice, line for line and on their non-blank lines only; each
    is rebuilt around the file's blank lines (``blanks.realign``). When the two results differ, where
    the file's blank lines go is a guess, and the edit is refused (``BlankPlacement``). Except when the
    line-for-line result alone would pile the file's and the new text's blank lines up in one place
    (``BlankPileUp``): difflib then paired a blank line across changed lines, and the skeleton's result stands.
    """
    results: list[list[str] | BlankPlacement] = []
    for script in (line_script(core_old, core_new), skeleton_script(core_old, core_new)):
        try:
            results.append(build_from_script(block, realign(script, match.rows or (), fl.lines), match))
        except BlankPlacement as exc:
            results.append(exc)
    by_lines, by_skeleton = results
    if isinstance(by_lines, BlankPileUp) and not isinstance(by_skeleton, BlankPlacement):
        return by_skeleton  # line for line, a blank line was paired across changed lines: the skeleton's stands
    for result in results:
        if isinstance(result, BlankPlacement):
            raise result
    if by_lines != by_skeleton:
        raise BlankPlacement("the new text's blank lines can be lined up with the file's in two ways", -1)
    return by_lines


def elided_pieces(
    doc: Document, fl: FileLines, old_lines: list[str], new_lines: list[str], what: str, attempts
) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]]] | None:
    """Match each piece between ``...`` lines uniquely and in order; None if there are no markers.

    The new text must use the same marker lines (identical after stripping whitespace) in the
    same order. A new-text line counts as a marker only if it is of a kind the old text uses, so
    a bare ``...`` (a Python body) is only a marker when the old text's marker is a bare ``...``.
    """
    old_markers = elision_markers(old_lines)
    if not old_markers:
        return None
    kinds = set(old_markers)
    new_markers = elision_markers(new_lines, kinds)
    if new_markers != old_markers:
        shown = ", ".join(repr(m) for m in dict.fromkeys(old_markers))
        raise EditRefused(
            f"{what} uses {len(old_markers)} elision line(s) ({shown}) but the new text has "
            f"{len(new_markers)} matching one{'' if len(new_markers) == 1 else 's'}"
            f"{'' if len(new_markers) != len(old_markers) else ' in a different order'}; both texts must use the "
            "same marker lines (identical text) in the same places so the elided code can be kept. A bare '...' "
            "in the new text is only a marker when the old text's marker is a bare '...' too. Nothing was changed.",
            "elision_mismatch",
            level="elision",
        )
    old_pieces = split_elisions(old_lines, kinds) or []
    new_pieces = split_elisions(new_lines, kinds) or []
    splices: list[tuple[int, int, str]] = []
    spans: list[tuple[int, int]] = []
    prev_end = 0
    for idx, (piece, new_piece) in enumerate(zip(old_pieces, new_pieces, strict=True)):
        if all(line.strip() == "" for line in piece):
            if any(line.strip() for line in new_piece):
                raise EditRefused(
                    f"Piece {idx + 1} of {what} is empty (it starts or ends with '...') but the new text puts "
                    "lines there; there is no anchor to place them. Nothing was changed.",
                    "elision_mismatch",
                    level="elision",
                )
            continue
        found = _strictest(fl, piece)
        if not found:
            done = _new_pieces_in_order(fl, old_pieces, new_pieces)
            if done is not None:
                return [], done
            raise EditRefused(
                f"{what} uses '...' elision; piece {idx + 1} was not found at any level. Levels tried: "
                f"{tried(attempts)}.\n{closest_hint(fl.lines, piece)}",
                "no_match",
                level="elision",
            )
        if len(found) > 1:
            piece_spans = [(m.start, m.end) for m in found]
            raise EditRefused(
                f"{what} uses '...' elision; piece {idx + 1} matches {len(found)} places at level "
                f"'{found[0].level.name}' ({spans_text(piece_spans)}). Every piece must be unique; nothing was "
                "changed.",
                "ambiguous",
                level="elision",
                lines=[s + 1 for s, _ in piece_spans],
            )
        match = found[0]
        if match.start < prev_end:
            raise EditRefused(
                f"{what} uses '...' elision; piece {idx + 1} is at {spans_text([(match.start, match.end)])}, "
                f"before the previous piece (which ends at line {prev_end}). Pieces must be in file order; "
                "nothing was changed.",
                "no_match",
                level="elision",
            )
        prev_end = match.end
        spans.append((match.start, match.end))
        if new_piece == piece or already_there(fl, new_piece, match, old=piece):
            continue  # this piece reads as its new text already
        splice, _, _ = _apply_block(doc, fl, match, piece, new_piece, what)
        splices.append(splice)
    return splices, spans


def _strictest(fl: FileLines, lines: list[str]) -> list[BlockMatch]:
    """Every match of ``lines`` at the strictest line level that has any."""
    for level in (EXACT_LINES, *FUZZY_LEVELS):
        found = find_block(fl, lines, level)
        if found:
            return found
    return []


def _new_pieces_in_order(
    fl: FileLines, old_pieces: list[list[str]], new_pieces: list[list[str]]
) -> list[tuple[int, int]] | None:
    """Where an elided edit's new pieces already are: each once and in order, those that differ from the old
    pieces as they are; None when they are not (so the edit is not already applied)."""
    spans: list[tuple[int, int]] = []
    changed = False
    prev_end = 0
    for piece, new_piece in zip(old_pieces, new_pieces, strict=True):
        if not any(line.strip() for line in new_piece):
            continue
        differs = new_piece != piece
        changed |= differs
        found = find_block(fl, new_piece, EXACT_LINES) if differs else _strictest(fl, new_piece)
        if len(found) != 1 or found[0].start < prev_end:
            return None
        spans.append((found[0].start, found[0].end))
        prev_end = found[0].end
    return spans if changed and spans else None


def check_elisions(old_lines: list[str], new_lines: list[str], file_lines: list[str], what: str) -> None:
    """Refuse (``elision_mismatch``) a new text that elides code the old text (matched in the file) spells out."""
    if not any(marker_kind(t) for t in new_lines):
        return  # only an added marker line can elide code: skip the diff
    problems = one_sided_elisions(line_script(old_lines, new_lines), file_lines)
    if problems:
        raise EditRefused(elision_message(what, problems), "elision_mismatch", level="elision")


def apply_at(doc: Document, fl: FileLines, match: BlockMatch, old_lines: list[str], new_lines: list[str],
             what: str) -> Applied:
    """The edit applied at ``match`` (status ``already_applied`` when it changes nothing there).

    A ``blank_lines`` match next to the new text present as it is counts as already applied: an
    edit that adds or removes blank lines, sent again, matches that way.
    """
    if already_there(fl, new_lines, match, old=old_lines):
        return _already_applied_fuzzy(doc, match, what)
    elsewhere = new_text_elsewhere(fl, new_lines, old_lines, match)
    if elsewhere is not None:
        raise applied_elsewhere(what, match, elsewhere)
    splice, _repl, restyle = _apply_block(doc, fl, match, old_lines, new_lines, what)
    new_doc = doc.splice([splice])
    span = spans_text([(match.start, match.end)])
    level = match.level.name
    if new_doc.text == doc.text:
        return Applied(
            doc,
            "already_applied",
            level,
            f"{what} matched {span} at level '{level}', and the file already reads as the new text there; "
            "nothing changed.",
            span=(match.start, match.end),
        )
    how = f"level '{level}'"
    if match.imap is not None and match.imap.description:
        how += f", re-indented: {match.imap.description}"
    if restyle is not None:
        how += f", {restyle.description}"
    if match.rows is not None:
        how += ", blank lines kept as the file has them"
    applied = Applied(new_doc, "applied", level, f"Replaced {span} ({how}).")
    applied.splices = [splice]
    return applied


def applied_elsewhere(what: str, match: BlockMatch, elsewhere: BlockMatch) -> EditRefused:
    """The refusal for ``new_text_elsewhere``: already applied there, or meant for the tolerant match?"""
    where = spans_text([(match.start, match.end)])
    return EditRefused(
        f"{what} only matches {where} at level '{match.level.name}' (not as it is), and its new text is already "
        f"present as it is at {spans_text([(elsewhere.start, elsewhere.end)])}: either the edit is already applied "
        f"there, or it is meant for {where}. Nothing was changed; if it is meant for {where}, copy the old text "
        "exactly as the file has it there.",
        "ambiguous",
        level=match.level.name,
        lines=sorted([match.start + 1, elsewhere.start + 1]),
    )


def _already_applied_fuzzy(doc: Document, match: BlockMatch, what: str) -> Applied:
    span = spans_text([(match.start, match.end)])
    how = "with other blank lines" if match.rows is not None else f"at level '{match.level.name}'"
    return Applied(
        doc,
        "already_applied",
        match.level.name,
        f"{what} only matches {span} {how}, and the new text is there as it is: the edit looks already applied, "
        "nothing changed.",
        span=(match.start, match.end),
    )
