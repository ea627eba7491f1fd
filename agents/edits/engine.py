"""The matching cascade for one old/new text pair, and ``apply_str_replace``.

Levels, strictest first: ``exact`` (a substring for str_replace, whole lines for SEARCH
blocks), ``trailing_ws``, ``indent_offset``, ``edge_blank_lines``, ``blank_lines``, ``unicode``,
``elision``. Every level counts its matches over the whole file (or the window it is given).
One match: apply it. Two or more: refuse at once (a looser level is never consulted, the first
match is never picked), unless the previous SEARCH block's text ends right above exactly one of
them (``pinned``). None: try the next level. A str_replace old text counts as a substring too:
an exact match inside a deeper indentation, or one hidden by trailing whitespace, is a second
place next to a line-level match (refused as ambiguous).

An edit already applied is a success, status ``already_applied``, nothing changed: when no level
matches and the new text is present exactly once (as whole lines, if the new text is part of the
old one: the edit only deletes lines), when the old text only matches at a tolerant level where
the new text is there as it is (an edit of indentation, blank lines or trailing whitespace), when
an elided edit's new pieces are all there in order, or when a repeated SEARCH block's new text is
right below the previous block's. An old text that only matches at a tolerant level while its new
text is elsewhere as it is is refused (already applied there, or meant here?). Otherwise the
refusal names the levels tried and the closest region.

Before any matching, a new text that elides code the old text spells out (``...``,
``# ... existing code ...`` in the new text only) is refused (``elision``). A level that
re-indents must be clear about it: the new text's edges must show that it is written at the old
text's indentation (``unclear_shift``), and the re-indented result must fit the block structure
around it (``depth_problem``); otherwise it is refused (``indent_conflict``); so is an edit the
``blank_lines`` level cannot place around the file's blank lines without guessing.

Placing a located match (and the elision level's pieces) is ``applying``; building its replacement lines,
``replacement``.
"""

from __future__ import annotations

from agents.edits.applying import Applied, apply_at, check_elisions, elided_pieces, tried

from .document import Document, to_lf
from .hints import closest_hint, spans_text
from .matching import (
    EXACT_LINES,
    FUZZY_LEVELS,
    BlockMatch,
    FileLines,
    LineLevel,
    Restyle,
    contains_run,
    find_block,
    has_foldable,
    plan_restyle,
    trimmed,
)
from .model import EditOutcome, EditRefused
from .snippet import prepare, split_lines


def find_all(text: str, needle: str) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence of ``needle`` in ``text``."""
    out: list[int] = []
    pos = text.find(needle)
    while pos != -1:
        out.append(pos)
        pos = text.find(needle, pos + 1)
    return out


def _find_disjoint(text: str, needle: str) -> list[int]:
    out: list[int] = []
    pos = text.find(needle)
    while pos != -1:
        out.append(pos)
        pos = text.find(needle, pos + len(needle))
    return out


def _offset_spans(doc: Document, starts: list[int], length: int) -> list[tuple[int, int]]:
    """Line spans (0-based, end exclusive) of text ranges; ``starts`` must be ascending."""
    text = doc.text
    spans: list[tuple[int, int]] = []
    line, pos = 0, 0
    for s in starts:
        line += text.count("\n", pos, s)
        pos = s
        last = s + max(length - 1, 0)
        spans.append((line, line + text.count("\n", s, last) + 1))
    return spans


def _ambiguous(what: str, level: str, spans: list[tuple[int, int]], attempts, extra: str = "") -> EditRefused:
    return EditRefused(
        f"{what} matches {len(spans)} places at level '{level}' ({spans_text(spans)}); nothing was changed. "
        f"Include more surrounding lines so that it matches exactly one place{extra}. "
        f"Levels tried: {tried(attempts)}.",
        "ambiguous",
        level=level,
        lines=[s + 1 for s, _ in spans],
    )


def _locate_new(doc: Document, fl: FileLines, old: str, new: str, substring: bool):
    """Where the new text already is: ``(level, spans)`` at the first level finding it, or None.

    A new text that is part of the old one (the edit deletes lines around it) is only looked for as it is, as
    whole lines: the old text being nowhere, its lines there as they are say that the deletion is done; a part of
    a line says nothing.
    """
    if not new.strip():
        return None  # an empty new text proves nothing
    if new.strip() in old:
        if substring and not (new.endswith("\n") and old.endswith("\n")):
            return None
        found = find_block(fl, split_lines(new), EXACT_LINES)
        return ("exact", [(m.start, m.end) for m in found]) if found else None
    if substring:
        starts = find_all(doc.text, new)
        if new.endswith("\n"):  # whole lines: only count occurrences that start a line
            starts = [s for s in starts if s == 0 or doc.text[s - 1] == "\n"]
        if starts:
            return "exact", _offset_spans(doc, starts, len(new))
    new_lines = split_lines(new)
    levels: tuple[LineLevel, ...] = FUZZY_LEVELS if substring else (EXACT_LINES, *FUZZY_LEVELS)
    for level in levels:
        found = find_block(fl, new_lines, level)
        if found:
            return level.name, [(m.start, m.end) for m in found]
    return None


def _restyle_substring(doc: Document, fl: FileLines, starts: list[int], old: str, new: str) -> Restyle | None:
    """``plan_restyle`` for exact substring replacements of ``old`` at ``starts``.

    Only when every match is line-aligned: it starts a line, or both texts start with a newline
    (the first, empty line then only ends the line before). A match starting inside a line gives
    no column for the new text's first line, so the new text is written as given.
    """
    text = doc.text
    both_nl = old.startswith("\n") and new.startswith("\n")
    if not both_nl and any(s > 0 and text[s - 1] != "\n" for s in starts):
        return None
    return plan_restyle(fl, split_lines(old), split_lines(new))


def _restyled(restyle: Restyle | None) -> str:
    return f" ({restyle.description})" if restyle is not None else ""


def _inside_indentation(text: str, start: int, old: str, new: str) -> bool:
    """A one-line old text, itself indented, found inside a deeper indentation, with a several-line new text.

    The substring match then only says that the old text is indented less than the file; splicing
    the new text there would indent its first line like the file and the others like the snippet.
    Such a match is left to the line levels, which re-indent every new line by the same offset.
    """
    if "\n" in old.rstrip("\n") or old[:1] not in (" ", "\t") or len(split_lines(new)) < 2:
        return False
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    end = start + len(old)
    at_line_end = old.endswith("\n") or end == len(text) or text[end] == "\n"
    return bool(before) and not before.strip() and at_line_end


def line_candidates(
    fl: FileLines,
    old_lines: list[str],
    levels: tuple[LineLevel, ...],
    attempts: list[tuple[str, str]],
    lo: int = 0,
    hi: int | None = None,
    limit: int | None = None,
) -> list[BlockMatch]:
    """Every match at the strictest line level that finds any inside lines ``lo..hi-1`` (empty: none).

    Each level tried is recorded in ``attempts`` with its count (``n/a`` when it cannot differ from
    the previous one). ``limit`` stops counting at that many matches of a level.
    """
    for level in levels:
        if level.trim_edges and level.name == "edge_blank_lines" and trimmed(old_lines, level) == (0, 0):
            attempts.append((level.name, "n/a"))
            continue
        if level.key == "fold" and not has_foldable(fl.text) and not has_foldable("\n".join(old_lines)):
            attempts.append((level.name, "n/a"))
            continue
        found = find_block(fl, old_lines, level, lo, hi, limit=limit)
        attempts.append((level.name, str(len(found))))
        if found:
            return found
    return []


def pinned(fl: FileLines, found: list[BlockMatch], after: int | None) -> BlockMatch | None:
    """Of several matches of a block, the only one that starts right below line ``after`` (exclusive end of the
    previous block's match), with nothing but blank lines between; None when there is no such single match."""
    if after is None:
        return None
    below = [m for m in found if m.start >= after]
    if not below:
        return None
    first = min(below, key=lambda m: m.start)  # any later match has this one's lines above it
    row = after
    while row < first.start and not fl.lines[row].strip():
        row += 1
    return first if row == first.start else None


def pinned_below(fl: FileLines, old_lines: list[str], level: LineLevel, after: int | None) -> BlockMatch | None:
    """``pinned`` for a block known to match several places at ``level``, without counting them all: the match that
    starts right below line ``after`` (nothing but blank lines between), found in that stretch of the file only."""
    if after is None:
        return None
    row = after
    while row < len(fl.lines) and not fl.lines[row].strip():
        row += 1
    hi = None if level.blank_runs else min(len(fl.lines), row + len(old_lines) + 1)
    return pinned(fl, find_block(fl, old_lines, level, after, hi), after)


def _pinned_new(fl: FileLines, new_lines: list[str], after: int | None, old_lines: list[str]) -> BlockMatch | None:
    """The new text as it is, right below line ``after`` (a SEARCH block sent again after the one before it)."""
    if after is None or not any(line.strip() for line in new_lines) or contains_run(old_lines, new_lines):
        return None
    return pinned(fl, find_block(fl, new_lines, EXACT_LINES), after)


def end_line(result: Applied) -> int | None:
    """The line of ``result.doc`` right after the text the edit wrote (None when it wrote nothing)."""
    if not result.splices:
        return result.span[1] if result.span is not None else None
    s, e, new = max(result.splices)
    shift = sum(len(n) - (e2 - s2) for s2, e2, n in result.splices if s2 < s)
    offset = s + shift + len(new)
    line = result.doc.text.count("\n", 0, offset)
    return line if new == "" or new.endswith("\n") else line + 1


def replace_text(
    doc: Document,
    old: str,
    new: str,
    *,
    substring: bool,
    replace_all: bool = False,
    what: str = "old_str",
    after: int | None = None,
    resent: bool = False,
) -> Applied:
    """Run the cascade for one (already normalised) old/new pair on ``doc``.

    ``substring`` selects str_replace semantics for the exact level (old may be part of a line);
    otherwise the exact level compares whole lines (SEARCH/REPLACE blocks). ``after``: where the
    previous SEARCH block's replacement ends; of several matches, one starting right there is taken
    (``pinned``). ``resent``: that block was already applied; then this one is too when its new text is right
    there, even if its old text matches elsewhere (the same blocks sent again).
    """
    attempts: list[tuple[str, str]] = []
    fl = FileLines(doc.lines, doc.text)
    deferred: list[tuple[int, int]] = []  # an exact substring match the line levels cannot see
    if substring:
        done, deferred = _exact_level(doc, fl, old, new, what, attempts, replace_all)
        if done is not None:
            return done
    done = _line_levels(doc, fl, old, new, what, attempts, substring=substring, after=after, resent=resent,
                        deferred=deferred)
    if done is not None:
        return done
    done = _elision_level(doc, fl, split_lines(old), split_lines(new), what, attempts)
    if done is not None:
        return done
    attempts.append(("elision", "n/a"))
    return _not_found(doc, fl, old, new, what, attempts, substring)


def _exact_level(doc: Document, fl: FileLines, old: str, new: str, what: str, attempts: list[tuple[str, str]],
                 replace_all: bool) -> tuple[Applied | None, list[tuple[int, int]]]:
    """str_replace's exact level: old text as part of the file's text. Applied when it is there once (or every
    time, with ``replace_all``); several places are ambiguous. A single place inside a deeper indentation is left
    to the line levels and returned as ``deferred`` (it counts against a tolerant match elsewhere)."""
    starts = find_all(doc.text, old)
    attempts.append(("exact", str(len(starts))))
    if starts and replace_all:
        check_elisions(split_lines(old), split_lines(new), doc.lines, what)
        disjoint = _find_disjoint(doc.text, old)
        restyle = _restyle_substring(doc, fl, disjoint, old, new)
        written = new if restyle is None else restyle.text(new)
        new_doc = doc.splice([(s, s + len(old), written) for s in disjoint])
        spans = _offset_spans(doc, disjoint, len(old))
        return Applied(
            new_doc,
            "applied",
            "exact",
            f"Replaced {len(disjoint)} exact occurrence(s) at {spans_text(spans)}{_restyled(restyle)}.",
        ), []
    if len(starts) == 1 and _inside_indentation(doc.text, starts[0], old, new):
        attempts[-1] = ("exact", "1 inside a deeper indentation, left to the line levels")
        return None, _offset_spans(doc, starts, len(old))
    if len(starts) == 1:
        check_elisions(split_lines(old), split_lines(new), doc.lines, what)
        return _exact_substring(doc, fl, starts[0], old, new), []
    if len(starts) > 1:
        raise _ambiguous(
            what,
            "exact",
            _offset_spans(doc, starts, len(old)),
            attempts,
            ", or set replace_all to change every occurrence",
        )
    if replace_all:
        return _not_found(doc, fl, old, new, what, attempts, True, replace_all=True), []
    return None, []


def _line_levels(doc: Document, fl: FileLines, old: str, new: str, what: str, attempts: list[tuple[str, str]], *,
                 substring: bool, after: int | None, resent: bool, deferred: list[tuple[int, int]]) -> Applied | None:
    """The whole-line levels (exact lines for SEARCH/REPLACE, then the tolerant ones): one match applies; of
    several, the one right below the previous block (``after``); a new text already there is already applied."""
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    levels: tuple[LineLevel, ...] = FUZZY_LEVELS if substring else (EXACT_LINES, *FUZZY_LEVELS)
    found = line_candidates(fl, old_lines, levels, attempts)
    if found and pinned(fl, found, after) is None and (len(found) > 1 or resent):
        done = _pinned_new(fl, new_lines, after, old_lines)
        if done is not None:
            return Applied(
                doc,
                "already_applied",
                "exact",
                f"{what}: its new text is already right below the previous block's text "
                f"({spans_text([(done.start, done.end)])}); the edit looks already applied, nothing changed.",
                span=(done.start, done.end),
            )
    if len(found) > 1:
        one = pinned(fl, found, after)
        if one is None:
            raise _ambiguous(what, found[0].level.name, [(m.start, m.end) for m in found], attempts)
        applied = apply_at(doc, fl, one, old_lines, new_lines, what)
        applied.message += f" Of {len(found)} matches, this is the one right below the previous block's text."
        return applied
    if not found:
        return None
    if substring:
        others = _substring_elsewhere(fl, found[0], old, deferred)
        if others:
            spans = sorted([(found[0].start, found[0].end), *others])
            raise _ambiguous(what, found[0].level.name, spans, attempts, extra=(
                f" (the match at level '{found[0].level.name}' and {len(others)} place(s) where the old text "
                "is part of a line, inside a deeper indentation or once trailing whitespace is ignored)"))
    return apply_at(doc, fl, found[0], old_lines, new_lines, what)


def _elision_level(doc: Document, fl: FileLines, old_lines: list[str], new_lines: list[str], what: str,
                   attempts: list[tuple[str, str]]) -> Applied | None:
    """Old and new text with '...' elisions: their pieces placed in order around what they elide."""
    got = elided_pieces(doc, fl, old_lines, new_lines, what, attempts)
    if got is None:
        return None
    splices, spans = got
    if not splices:
        return Applied(
            doc,
            "already_applied",
            "elision",
            f"{what} uses '...' elision, and the new text's pieces are already there, in order, at "
            f"{spans_text(spans)}; the edit looks already applied, nothing changed.",
        )
    attempts.append(("elision", "1"))
    applied = Applied(
        doc.splice(splices),
        "applied",
        "elision",
        f"Replaced {len(spans)} piece(s) around '...' elisions at {spans_text(spans)}; the elided lines were kept.",
    )
    applied.splices = splices
    return applied


def _substring_elsewhere(
    fl: FileLines, match: BlockMatch, old: str, deferred: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Places other than ``match`` where a str_replace old text also matches as a substring: the exact match left
    to the line levels (inside a deeper indentation), and, for a ``trailing_ws`` match, the old text found with
    trailing whitespace ignored but not as whole lines (its first line the end of a longer line)."""
    spans = list(deferred)
    if match.level.name == "trailing_ws":
        needle = "\n".join(line.rstrip() for line in old.split("\n"))
        text = fl.rstripped_text
        pos = text.find(needle)
        while pos != -1:
            line = text.count("\n", 0, pos)
            spans.append((line, line + max(1, needle.count("\n", 0, len(needle.rstrip("\n"))) + 1)))
            pos = text.find(needle, pos + 1)
    return [(s, e) for s, e in dict.fromkeys(spans) if not (s < match.end and match.start < e)]


def _exact_substring(doc: Document, fl: FileLines, s: int, old: str, new: str) -> Applied:
    """The unique exact substring match at offset ``s`` replaced."""
    restyle = _restyle_substring(doc, fl, [s], old, new)
    written = new if restyle is None else restyle.text(new)
    new_doc = doc.splice([(s, s + len(old), written)])
    span = _offset_spans(doc, [s], len(old))
    message = f"Replaced {spans_text(span)} (exact match{'; ' + restyle.description if restyle else ''})."
    if new.strip() and new not in old:
        before = find_all(doc.text, new)
        if before:
            where = spans_text(_offset_spans(doc, before, len(new)))
            message += (
                f" Warning: the new text was already present at {where} before this edit; check that "
                "nothing is now duplicated."
            )
    return Applied(new_doc, "applied", "exact", message)


def _not_found(
    doc: Document,
    fl: FileLines,
    old: str,
    new: str,
    what: str,
    attempts,
    substring: bool,
    *,
    replace_all: bool = False,
) -> Applied:
    located = _locate_new(doc, fl, old, new, substring)
    if located is not None:
        level, spans = located
        if len(spans) == 1 or (replace_all and spans):
            return Applied(
                doc,
                "already_applied",
                level,
                f"{what} was not found, but the new text is already present at {spans_text(spans)} "
                f"(level '{level}'); the edit looks already applied, nothing changed.",
                span=spans[0] if len(spans) == 1 else None,
            )
    extra = " (replace_all only uses exact matching)" if replace_all else ""
    raise EditRefused(
        f"{what} was not found in the file{extra}; nothing was changed. Levels tried: {tried(attempts)}.\n"
        f"{closest_hint(fl.lines, split_lines(old))}",
        "no_match",
        level=None,
    )


def apply_str_replace(original: str, old_str: str, new_str: str, *, replace_all: bool = False) -> EditOutcome:
    """Replace ``old_str`` by ``new_str`` in ``original`` (Anthropic ``str_replace`` shape).

    ``old_str`` must identify exactly one place at the first level where it matches at all;
    ``replace_all=True`` replaces every exact occurrence instead (exact level only).
    Raises ``EditRefused``; never changes bytes outside the replaced region.
    """
    doc = Document.parse(original)
    old, new = to_lf(old_str), to_lf(new_str)
    if old == "":
        raise EditRefused(
            "old_str is empty; give the exact text to replace (use a file-creation tool for new files).",
            "empty_old",
        )
    if old == new:
        raise EditRefused("old_str and new_str are identical; the edit would change nothing.", "noop")
    prep = prepare(doc.text, old, new)
    if prep.old == prep.new:
        raise EditRefused(
            "old_str and new_str are identical after removing fences/line numbers; the edit would change nothing.",
            "noop",
        )
    if not prep.old.strip("\n"):
        raise EditRefused("old_str contains only blank lines; give the text to replace.", "empty_old")
    result = replace_text(doc, prep.old, prep.new, substring=True, replace_all=replace_all)
    return outcome(result, prep.notes, original)


def outcome(result: Applied, notes: list[str], original: str) -> EditOutcome:
    """Turn an ``Applied`` into the public ``EditOutcome`` (the original text when nothing changed)."""
    message = result.message
    if notes:
        message += " Note: " + "; ".join(notes) + "."
    text = original if result.status == "already_applied" else result.doc.render()
    return EditOutcome(result.status, text, message, result.level)  # type: ignore[arg-type]
