"""Syntax checking with tree-sitter (grammars bundled by tree-sitter-language-pack, offline).

``syntax_errors`` lists ERROR and MISSING nodes; ``check_edit_syntax`` refuses an edit whose
result has syntax errors that the text before the edit did not have. Errors are compared as a
multiset of signatures (kind + the erroneous text), so pre-existing errors that merely moved
to other lines do not count as new.

The text is an agent's: each parse runs in a helper process bounded in CPU time and memory
(``sandbox.bounded``, :data:`SYNTAX_BOUNDS`); past them both functions raise ``bounded.OverBound``
(the caller says the syntax was not checked).
"""

from __future__ import annotations

import threading
from collections import Counter

from agents.languages import language_for
from sandbox import bounded

from .model import EditRefused

SYNTAX_BOUNDS = bounded.Bounds(cpu_s=1.5, memory_mb=1024)
"""What checking one file's syntax may cost the host."""

_MAX_ERRORS = 50

_local = threading.local()


def _parser(language: str):
    """A per-thread cached parser (tree-sitter parsers are not thread-safe), or None."""
    cache: dict[str, object] = getattr(_local, "parsers", None) or {}
    _local.parsers = cache
    if language not in cache:
        try:
            from tree_sitter_language_pack import get_parser

            cache[language] = get_parser(language)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a missing/broken grammar means "unsupported"
            cache[language] = None
    return cache[language]


def _describe(node, source: bytes) -> str:
    if node.is_missing:
        return f"missing '{node.type}'"
    snippet = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
    snippet = " ".join(snippet.split())
    if len(snippet) > 40:
        snippet = snippet[:37] + "..."
    return f"unexpected '{snippet}'" if snippet else "syntax error"


def syntax_errors(path: str, text: str) -> list[tuple[int, str]] | None:
    """Syntax errors of ``text`` as ``(1-based line, description)``; None if the language is unsupported.
    ``bounded.OverBound`` when parsing it went past :data:`SYNTAX_BOUNDS`."""
    language = language_for(path)
    if language is None:
        return None
    found = bounded.run(errors_in, language, text.encode("utf-8", "surrogatepass"), bounds=SYNTAX_BOUNDS)
    return None if found is None else [(int(line), str(desc)) for line, desc in found]


def errors_in(language: str, source: bytes) -> list[tuple[int, str]] | None:
    """:func:`syntax_errors` of ``source`` in this process (a helper's; None: no grammar for ``language``)."""
    parser = _parser(language)
    if parser is None:
        return None
    tree = parser.parse(source)  # type: ignore[attr-defined]
    errors: list[tuple[int, str]] = []
    stack = [tree.root_node]
    while stack and len(errors) < _MAX_ERRORS:
        node = stack.pop()
        if node.is_error or node.is_missing:
            errors.append((node.start_point[0] + 1, _describe(node, source)))
            continue  # one report per error region
        if node.has_error:
            stack.extend(reversed(node.children))
    errors.sort()
    return errors


def check_edit_syntax(path: str, before: str, after: str) -> list[tuple[int, str]]:
    """Refuse (``reason="syntax_error"``) when ``after`` has syntax errors ``before`` did not have.

    Returns the errors of ``after`` that were already present (empty when clean or unsupported).
    """
    errs_after = syntax_errors(path, after)
    if not errs_after:
        return []
    errs_before = syntax_errors(path, before) or []
    known = Counter(desc for _, desc in errs_before)
    new: list[tuple[int, str]] = []
    old: list[tuple[int, str]] = []
    for line, desc in errs_after:
        if known[desc] > 0:
            known[desc] -= 1
            old.append((line, desc))
        else:
            new.append((line, desc))
    if not new:
        return old
    lines = after.splitlines()
    shown = []
    for line, desc in new[:5]:
        code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        shown.append(f"line {line}: {desc}" + (f"  |  {code[:80]}" if code else ""))
    more = f" (and {len(new) - 5} more)" if len(new) > 5 else ""
    pre = f"The file already had {len(errs_before)} syntax error(s) before the edit. " if errs_before else ""
    raise EditRefused(
        f"The edit was reverted: it introduces {len(new)} new syntax error(s) in {path}{more}:\n"
        + "\n".join(shown)
        + f"\n{pre}Fix the new text and retry.",
        "syntax_error",
        lines=[line for line, _ in new],
    )
