"""Whether a re-indenting edit is clear about it: the new text's edges show it is written at the old text's
indentation (``unclear_shift``), and the re-indented result fits the block structure around it (``depth_problem``)."""

from __future__ import annotations

from difflib import SequenceMatcher

from .matching import IndentMap, indent_of, width


def moved_like_the_file(old: list[str], new: list[str], imap: IndentMap) -> bool:
    """True when the new text's unchanged lines sit at the file's indentation instead of the old text's.

    ``imap`` maps the old text onto the file with a non-zero shift. Lines the edit keeps (equal
    content in the old and new text) normally keep the old text's indentation, above all the
    context at the snippet's edges. When the first and last lines are kept but moved by exactly the
    file's shift (or, when the edges changed, no kept line stayed put and some moved by that
    shift), the new text was written at the file's indentation: re-indenting it by that shift
    again would be wrong, and there is no single consistent offset.
    """
    if imap.prefix == "" or imap.delta == 0:
        return False

    def shift(o_line: str, n_line: str) -> int:
        return width(indent_of(n_line), imap.tab) - width(indent_of(o_line), imap.tab)

    o_body = [t for t in old if t.strip()]
    n_body = [t for t in new if t.strip()]
    if not o_body or not n_body:
        return False
    edges = [(o, n) for o, n in ((o_body[0], n_body[0]), (o_body[-1], n_body[-1])) if o.strip() == n.strip()]
    if edges:
        return all(shift(o, n) == imap.delta for o, n in edges)
    shifts = []
    o_keys, n_keys = [t.strip() for t in old], [t.strip() for t in new]
    for tag, i1, i2, j1, _j2 in SequenceMatcher(None, o_keys, n_keys, autojunk=False).get_opcodes():
        if tag != "equal":
            continue
        for k in range(i2 - i1):
            if any(c.isalnum() for c in o_keys[i1 + k]):  # bare brackets and quotes match anywhere
                shifts.append(shift(old[i1 + k], new[j1 + k]))
    return 0 not in shifts and imap.delta in shifts


def unclear_shift(old: list[str], new: list[str], imap: IndentMap) -> str | None:
    """Why re-indenting ``new`` by ``imap``'s shift would be a guess (None: the shift is clear).

    ``imap`` maps the old text onto the file with a non-zero shift. The new text may be written at the old
    text's indentation (then it takes the same shift) or at the file's (then it must not). Its edges tell: the
    first and the last non-blank lines of the new text against the old text's. Edge lines the edit keeps (the same
    text on both sides, typically unchanged context) are the evidence when there are any: the shift is clear when
    one of them stays at the old text's indentation, and the new text is at the file's when all of them moved by
    the file's shift. Otherwise the changed edge lines are compared, a weaker sign: the shift is clear when one
    stays at the old text's indentation and none moves by the file's shift. In both cases the lines the edit keeps
    must not have moved like the file (``moved_like_the_file``). Returns ``"file"`` (the new text is at the file's
    indentation) or ``"edges"`` (the edit moves its edges: which indentation it is written at is open).
    """
    if imap.prefix == "" or imap.delta == 0:
        return None
    o_body = [t for t in old if t.strip()]
    n_body = [t for t in new if t.strip()]
    if not o_body or not n_body:
        return None
    edges = [(o, n) for o, n in ((o_body[0], n_body[0]), (o_body[-1], n_body[-1]))]
    kept = [(o, n) for o, n in edges if o.strip() == n.strip()]
    shifts = {width(indent_of(n), imap.tab) - width(indent_of(o), imap.tab) for o, n in (kept or edges)}
    at_file = shifts == {imap.delta} if kept else imap.delta in shifts
    if at_file or moved_like_the_file(old, new, imap):
        return "file"
    return None if 0 in shifts else "edges"


_OPENS = (":", "{", "(", "[", ",", "\\", "=", "+", "-", "*", "/", "|", "&", "%", "<", ">", "->", "=>")


def depth_problem(lines: list[str], start: int, end: int, repl: list[str], tab: int = 4) -> str | None:
    """Why ``repl`` in place of ``lines[start:end]`` would sit at the wrong depth (None: it fits).

    Checked where the replacement's first or last line is at another indentation than the block's, and only where
    the file itself keeps to that structure there: its first line may only be deeper than the line above when that
    line opens a block (ends with ``:``, a bracket, a comma, an operator...); the line below may only be deeper
    than its last line when that one opens a block.
    """
    def w(line: str) -> int:
        return width(indent_of(line), tab)

    def opens(line: str) -> bool:
        code = line.rstrip()
        if not code.endswith(_OPENS) and "#" in code:
            code = code[: code.index("#")].rstrip()  # a trailing comment
        return code.endswith(_OPENS)

    block = [t for t in lines[start:end] if t.strip()]
    body = [t for t in repl if t.strip()]
    if not block or not body:
        return None
    prev = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), None)
    nxt = next((lines[i] for i in range(end, len(lines)) if lines[i].strip()), None)
    if prev is not None and w(body[0]) != w(block[0]) and w(body[0]) > w(prev) and not opens(prev) and (
            w(block[0]) <= w(prev)):
        return (
            f"its first line would be indented {w(body[0])} columns, deeper than the line above it "
            f"({prev.strip()!r}, {w(prev)} columns), which opens no block"
        )
    if nxt is not None and w(body[-1]) != w(block[-1]) and w(nxt) > w(body[-1]) and not opens(body[-1]) and (
            w(nxt) <= w(block[-1]) or opens(block[-1])):
        return (
            f"its last line would be indented {w(body[-1])} columns, less than the line below it "
            f"({nxt.strip()!r}, {w(nxt)} columns), and opens no block"
        )
    return None
