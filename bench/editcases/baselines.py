"""Baseline appliers that mimic simpler, well-known behaviours (for the evaluation table).

Same signature as ``apply_str_replace``. None of them normalises line endings, fences or line
numbers, and none detects "already applied"; they exist to be compared against the engine.

* ``first_match`` — exact, else the first block whose lines match after trimming whitespace;
  no uniqueness check (like tools that take the first fuzzy hit).
* ``replace_all`` — replaces every exact occurrence (like diff appliers that ignore positions).
* ``exact_count`` — exact only, and the occurrence must be unique (the strict reference rule).
"""

from __future__ import annotations

from agents.edits.model import EditOutcome, EditRefused


def _noop_guard(old_str: str, new_str: str) -> None:
    if old_str == "":
        raise EditRefused("old_str is empty.", "empty_old")
    if old_str == new_str:
        raise EditRefused("old_str and new_str are identical.", "noop")


def first_match(original: str, old_str: str, new_str: str, *, replace_all: bool = False) -> EditOutcome:
    """Exact substring, else the first line block equal after ``strip()``; never checks uniqueness."""
    _noop_guard(old_str, new_str)
    pos = original.find(old_str)
    if pos != -1:
        text = original[:pos] + new_str + original[pos + len(old_str) :]
        return EditOutcome("applied", text, "first exact match", "exact")
    lines = original.splitlines(keepends=True)
    want = [line.strip() for line in old_str.strip("\n").split("\n")]
    k = len(want)
    for i in range(len(lines) - k + 1):
        if [line.strip() for line in lines[i : i + k]] == want:
            ending = "\n" if lines[i + k - 1].endswith("\n") else ""
            repl = new_str.rstrip("\n") + ending if new_str else ""
            text = "".join(lines[:i]) + repl + "".join(lines[i + k :])
            return EditOutcome("applied", text, "first trimmed match", "trailing_ws")
    raise EditRefused("old_str not found.", "no_match")


def replace_all(original: str, old_str: str, new_str: str, *, replace_all: bool = True) -> EditOutcome:
    """Replace every exact occurrence; refuse only when there is none."""
    _noop_guard(old_str, new_str)
    count = original.count(old_str)
    if count == 0:
        raise EditRefused("old_str not found.", "no_match")
    return EditOutcome("applied", original.replace(old_str, new_str), f"replaced {count}", "exact")


def exact_count(original: str, old_str: str, new_str: str, *, replace_all: bool = False) -> EditOutcome:
    """Exact substring only; it must occur exactly once."""
    _noop_guard(old_str, new_str)
    count = original.count(old_str)
    if count == 0:
        raise EditRefused("old_str did not appear verbatim.", "no_match")
    if count > 1:
        raise EditRefused(f"old_str appears {count} times.", "ambiguous")
    return EditOutcome("applied", original.replace(old_str, new_str, 1), "unique exact match", "exact")


BASELINES = {"first_match": first_match, "replace_all": replace_all, "exact_count": exact_count}
