"""Elision lines in the new text only: code that would silently disappear.

A model that abbreviates unchanged code writes a line such as ``...``, ``# ... existing code ...``, ``// ...`` or
``[...]`` in its replacement. When the old text has the same line in the same place, the elision level keeps the
elided lines (``engine``); when only the new text has it, applying the edit would write the marker literally and
delete the lines it stands for. A bare ``...`` is valid Python (an Ellipsis expression), so the syntax check cannot
catch it. This module finds such lines so that the edit is refused instead.

An edit is a *script* of ``(kind, text)`` items: ``" "`` kept, ``"-"`` removed, ``"+"`` added. For an old/new
text pair, lines are compared as they are, so a marker counts as kept only where the old text has it with the same
indentation; the check runs once the old text matched the file, whose lines are then real code, never elisions.

A marker added in a change group that also removes non-blank lines stands for those lines: refused, except for a
bare ``...`` that only replaces ``pass`` (a stub body) or sits in a doctest. A marker added without removing
anything is refused unless it is a bare ``...`` that is the whole body of a block (``def f(): ...`` written on two
lines) or a doctest line, or a comment marker the file already uses.
"""

from __future__ import annotations

import re

Script = list[tuple[str, str]]

_ELLIPSIS = ("...", "\u2026")
_COMMENT = re.compile(r"^(?:#+|//+|--|;+|/\*+|<!--|\{/\*)\s*(.*?)\s*(?:\*+/|-->|\*/\})?$")
_BRACKETS = re.compile(r"^[\[({<](.*)[\])}>]$")
_TOKENS = re.compile(r"\.\.\.|\u2026|\w+")
_PUNCTUATION = frozenset(".,:;-()")
#: Words of "unchanged code here" lines; a line made only of these (with an ellipsis) is a marker.
_FILLER = frozenset(
    """existing code codes unchanged rest of the remaining other more previous same as before omitted omit snip
    snipped keep kept here etc and so on function functions method methods class classes file body lines line logic
    implementation imports import tests test stays stay is are untouched elided skip skipped for brevity truncated
    original remains remain unmodified similar above below content contents definitions definition statements
    block blocks this that it everything else""".split()
)
#: Without an ellipsis, a comment is a marker only with one of these words (alone too: ``# unchanged``,
#: ``# (omitted)``, ``# [snip]``), or with "rest of".
_TELLTALE = frozenset("existing unchanged omitted snip snipped untouched elided truncated unmodified etc".split())
#: With an ellipsis, a short comment holding one of these stands for code, whatever its other words name
#: (``# ... other fields ...``, ``# ... rest of __init__ ...``, ``# ... 50 lines unchanged ...``).
_PLACEHOLDER = _TELLTALE | frozenset("rest other others remaining same previous more lines code".split())
_SHORT = 6
_CODE_BEFORE_COMMENT = re.compile(r"^(pass|\.\.\.|\u2026)\s+(#.*|//.*)$")
_DOCTEST_LOOKBACK = 12


def _filler_only(text: str, punctuation: frozenset[str]) -> tuple[bool, list[str], bool]:
    """``(only ellipses, filler words and that punctuation?, the words, has an ellipsis?)`` of ``text``."""
    tokens = _TOKENS.findall(text)
    leftover = _TOKENS.sub("", text)
    words = [t.lower() for t in tokens if t not in _ELLIPSIS]
    ok = all(w in _FILLER for w in words) and all(c.isspace() or c in punctuation for c in leftover)
    return ok, words, any(t in _ELLIPSIS for t in tokens)


def marker_kind(line: str) -> str | None:
    """The kind of elision line ``line`` is, or None.

    ``"bare"``: ``...`` alone (valid Python); ``"bracket"``: ``[...]``, ``... existing code ...``;
    ``"comment"``: ``# ...``, ``# ... existing code ...``, ``// (rest of the code unchanged)``. Outside a comment
    nothing but the ellipsis and filler words may be on the line (``...,`` and ``...]`` are code).
    """
    text = line.strip()
    if not text:
        return None
    if text in _ELLIPSIS:
        return "bare"
    stub = _CODE_BEFORE_COMMENT.match(text)
    if stub is not None:  # ``pass  # ... existing code ...``: a placeholder body that says what it stands for
        return "comment" if marker_kind(stub.group(2)) == "comment" else None
    comment = _COMMENT.match(text)
    body = comment.group(1).strip() if comment else text
    bracketed = _BRACKETS.match(body)
    inner = bracketed.group(1).strip() if bracketed else body
    ok, words, ellipsis = _filler_only(inner, _PUNCTUATION if comment else frozenset())
    if not ok:
        if comment and ellipsis and len(words) <= _SHORT and _PLACEHOLDER & set(words):
            leftover = _TOKENS.sub("", inner)
            return "comment" if all(c.isspace() or c in _PUNCTUATION for c in leftover) else None
        return None
    kind = "comment" if comment else "bracket"
    if ellipsis:
        return kind if comment or bracketed or inner.startswith(_ELLIPSIS) else None
    if not comment:
        return None
    if len(words) == 1:
        return kind if words[0] in _TELLTALE else None
    rest_of = any(a == "rest" and b == "of" for a, b in zip(words, words[1:], strict=False))
    return kind if rest_of or _TELLTALE & set(words) else None


def _groups(script: Script) -> list[tuple[list[str], list[int]]]:
    """Change groups: the removed lines and the script indices of the added lines of each run of changes.

    Runs separated only by kept blank lines form one group (an elision line often replaces a
    paragraph and the blank line around it is aligned as kept).
    """
    groups: list[tuple[list[str], list[int]]] = []
    current: tuple[list[str], list[int]] | None = None
    for i, (kind, text) in enumerate(script):
        if kind == " ":
            if text.strip():
                current = None
            continue
        if current is None:
            current = ([], [])
            groups.append(current)
        if kind == "-":
            current[0].append(text)
        else:
            current[1].append(i)
    return groups


def _width(line: str) -> int:
    return len(line[: len(line) - len(line.lstrip())].expandtabs(4))


def _new_lines(script: Script) -> tuple[list[str], dict[int, int]]:
    """The new text and, for each script index of a kept or added item, its line number in it."""
    lines: list[str] = []
    where: dict[int, int] = {}
    for i, (kind, text) in enumerate(script):
        if kind != "-":
            where[i] = len(lines)
            lines.append(text)
    return lines, where


def _is_stub_body(lines: list[str], k: int) -> bool:
    """``lines[k]`` (a bare ``...``) is the only statement of the block opened by the line before it."""
    prev = next((lines[i] for i in range(k - 1, -1, -1) if lines[i].strip()), None)
    nxt = next((lines[i] for i in range(k + 1, len(lines)) if lines[i].strip()), None)
    if prev is None or not prev.split("#")[0].rstrip().endswith(":") or _width(prev) >= _width(lines[k]):
        return False
    return nxt is None or _width(nxt) < _width(lines[k])


def _in_doctest(lines: list[str], k: int) -> bool:
    """``lines[k]`` follows a ``>>>`` prompt closely (a doctest continuation or an elided traceback)."""
    for i in range(k - 1, max(-1, k - 1 - _DOCTEST_LOOKBACK), -1):
        text = lines[i].strip()
        if text.startswith(">>>"):
            return True
        if text.endswith(('"""', "'''")):
            return False
    return False


def _allowed(kind: str, removed: list[str], lines: list[str], k: int, known: set[str]) -> bool:
    """Whether an added marker line ``lines[k]`` is real content rather than an elision."""
    removed = [t.strip() for t in removed if t.strip()]
    if kind == "bare":
        if lines[k].strip() == "..." and _in_doctest(lines, k):
            return True  # a doctest continuation prompt (never the typographic ellipsis)
        if removed:
            return all(t == "pass" for t in removed)
        return _is_stub_body(lines, k)
    return not removed and lines[k].strip() in known


def one_sided_elisions(script: Script, file_lines: list[str]) -> list[tuple[str, list[str]]]:
    """Marker lines the script adds that stand for code: ``(marker line, the non-blank lines it would delete)``.

    ``file_lines`` tells which comment markers the file itself uses (those may be added where nothing is removed).
    """
    problems: list[tuple[str, list[str]]] = []
    lines, where = _new_lines(script)
    known: set[str] | None = None
    for removed, added in _groups(script):
        for i in added:
            kind = marker_kind(script[i][1])
            if kind is None:
                continue
            if known is None:
                known = {t.strip() for t in file_lines}
            if not _allowed(kind, removed, lines, where[i], known):
                problems.append((script[i][1], [t for t in removed if t.strip()]))
    return problems


def elision_message(what: str, problems: list[tuple[str, list[str]]]) -> str:
    """The refusal message for :func:`one_sided_elisions` problems."""
    line, removed = problems[0]
    if removed:
        shown = "; ".join(repr(t.strip()) for t in removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3
                                                                    else "")
        stands = f"in place of {len(removed)} line(s) of the old text ({shown}), which would be deleted"
    else:
        stands = "which would be written into the file literally"
    return (
        f"{what}: the new text elides code with {line.strip()!r} (a placeholder for unchanged lines) {stands}. "
        "Only the new text has this elision line. Write the replacement out in full, with every line it keeps; or "
        "put the same elision line in the old text, in the same place, so that the elided lines are kept. "
        "Nothing was changed."
    )
