"""The replacement text of a match: the new lines written in the file's style (its indentation through the match's
map, folded characters as the file has them), line by line against the old text (``line_script``)."""

from __future__ import annotations

from difflib import SequenceMatcher

from .matching import BlockMatch, Restyle, fold, indent_of
from .snippet import is_blank


def _restore_folded(new_content: str, old_content: str, file_content: str) -> str:
    """Write characters of ``new_content`` copied from ``old_content`` as the file has them."""
    old_content, file_content = old_content.rstrip(), file_content.rstrip()
    if len(old_content) != len(file_content):
        return new_content
    out = list(new_content)
    matcher = SequenceMatcher(None, old_content, new_content, autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        for t in range(size):
            o, f = old_content[a + t], file_content[a + t]
            if o != f and fold(o) == fold(f):
                out[b + t] = f
    return "".join(out)


class IndentConflict(Exception):
    """A replacement line cannot be re-indented (it would need a negative indentation)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def render_new_line(
    new_line: str,
    pair: int | None,
    file_block: list[str],
    old: list[str],
    match: BlockMatch,
    restyle: Restyle | None = None,
) -> str:
    """A replacement line in the file's style (``pair`` = index of the old line it replaces).

    Without an indentation map (``exact``/``trailing_ws``) the line is written as given, or
    through ``restyle`` when there is one (see ``plan_restyle``).
    """
    if match.imap is None:
        return new_line if restyle is None else restyle.line(new_line)
    if is_blank(new_line):
        return ""
    indent = match.imap.render(indent_of(new_line))
    if indent is None:
        raise IndentConflict(new_line)
    content = new_line.lstrip(" \t")
    if match.level.key == "fold" and pair is not None:
        f_line, o_line = file_block[pair], old[pair]
        f_content = f_line[len(indent_of(fold(f_line))) :]
        o_content = o_line[len(indent_of(fold(o_line))) :]
        content = _restore_folded(content, o_content, f_content)
    return indent + content


def _pair_lines(old: list[str], new: list[str], match: BlockMatch) -> list[int | None]:
    """For each new line, the most similar old line (ratio > 0.5) or None.

    Pairs only matter for restoring folded characters, so they are computed at the ``unicode``
    level only, and only for change groups of reasonable size.
    """
    if match.level.key != "fold" or not old or len(old) * len(new) > 2500:
        return [None] * len(new)
    pairs: list[int | None] = []
    matcher = SequenceMatcher(None, autojunk=False)
    for line in new:
        matcher.set_seq2(line.strip())
        best, best_ratio = None, 0.5
        for idx, cand in enumerate(old):
            matcher.set_seq1(cand.strip())
            if matcher.quick_ratio() <= best_ratio:
                continue
            ratio = matcher.ratio()
            if ratio > best_ratio:
                best, best_ratio = idx, ratio
        pairs.append(best)
    return pairs


def line_opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes aligning ``old`` and ``new`` lines, fast for large blocks.

    Common leading and trailing lines are peeled off first; the middle is aligned with
    ``SequenceMatcher`` (with its popular-line heuristic when the middle is large). Any valid
    alignment is correct for ``build_replacement``: a better one only copies more lines from the
    file instead of rendering them from the new text.
    """
    pre = 0
    limit = min(len(old), len(new))
    while pre < limit and old[pre] == new[pre]:
        pre += 1
    suf = 0
    while suf < limit - pre and old[len(old) - 1 - suf] == new[len(new) - 1 - suf]:
        suf += 1
    mid_old, mid_new = old[pre : len(old) - suf], new[pre : len(new) - suf]
    ops: list[tuple[str, int, int, int, int]] = []
    if pre:
        ops.append(("equal", 0, pre, 0, pre))
    if mid_old or mid_new:
        large = len(mid_old) * len(mid_new) > 40_000
        matcher = SequenceMatcher(None, mid_old, mid_new, autojunk=large)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            ops.append((tag, i1 + pre, i2 + pre, j1 + pre, j2 + pre))
    if suf:
        ops.append(("equal", len(old) - suf, len(old), len(new) - suf, len(new)))
    return ops


def line_script(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    """``old`` -> ``new`` as a diff body (``" "`` kept, ``"-"`` removed, ``"+"`` added), lines compared as they are."""
    script: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag == "equal":
            script += [(" ", t) for t in old[i1:i2]]
        else:
            script += [("-", t) for t in old[i1:i2]]
            script += [("+", t) for t in new[j1:j2]]
    return script


def build_replacement(
    file_block: list[str], old: list[str], new: list[str], match: BlockMatch, restyle: Restyle | None = None
) -> list[str]:
    """Replacement lines for ``file_block`` (matched by ``old``) when the edit says ``new``.

    Lines equal in ``old`` and ``new`` are copied from the file; the others are rendered with
    ``render_new_line`` (and ``restyle``). Raises ``IndentConflict``.
    """
    out: list[str] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag == "equal":
            out.extend(file_block[i1:i2])
        elif tag in ("replace", "insert"):
            base = i1
            pairs = _pair_lines(old[i1:i2], new[j1:j2], match)
            for line, pair in zip(new[j1:j2], pairs, strict=True):
                out.append(
                    render_new_line(line, None if pair is None else base + pair, file_block, old, match, restyle)
                )
    return out


def build_from_script(
    file_block: list[str], script: list[tuple[str, str]], match: BlockMatch, restyle: Restyle | None = None
) -> list[str]:
    """Replacement lines from a diff body (``" "`` keep, ``"-"`` drop, ``"+"`` add) matched at ``match``.

    ``script`` holds only the lines that took part in the match (edge-trimmed context removed).
    Context lines are copied from the file; added lines are paired with the removed lines of
    the same change group for re-indentation and character restoration.
    """
    old = [text for kind, text in script if kind != "+"]
    out: list[str] = []
    old_idx = 0
    group_removed: list[int] = []
    pending_added: list[str] = []

    def flush() -> None:
        if pending_added:
            removed_lines = [old[i] for i in group_removed]
            pairs = _pair_lines(removed_lines, pending_added, match)
            for line, pair in zip(pending_added, pairs, strict=True):
                real_pair = None if pair is None else group_removed[pair]
                out.append(render_new_line(line, real_pair, file_block, old, match, restyle))
        group_removed.clear()
        pending_added.clear()

    for kind, text in script:
        if kind == " ":
            flush()
            out.append(file_block[old_idx])
            old_idx += 1
        elif kind == "-":
            if pending_added:
                flush()
            group_removed.append(old_idx)
            old_idx += 1
        else:
            pending_added.append(text)
    flush()
    return out
