"""Placing several edits in order when some of them match more than one place.

Each edit has candidate spans ``(start, end)`` (file lines, end exclusive); a placement picks one span per edit such
that every span starts at or after the end of the previous one. ``ordered_choice`` counts those placements (capped
at 2): exactly one means every edit is determined by its neighbours; more means some edit could go to several
places; none means the edits cannot be in this order.
"""

from __future__ import annotations

from dataclasses import dataclass

Span = tuple[int, int]


@dataclass
class Choice:
    """The result of ``ordered_choice``.

    ``picks``: the candidate index of each edit when exactly one placement exists (else None).
    ``open``: edits that could go to more than one place (several placements).
    ``stuck``: the first edit with no candidate after the ones before it (no placement).
    """

    picks: list[int] | None
    open: list[int]
    stuck: int | None


def _forward(spans: list[list[Span]]) -> list[list[int]]:
    """ways[k][c]: placements (capped at 2) of edits 0..k with edit k at candidate c."""
    ways: list[list[int]] = []
    for k, cands in enumerate(spans):
        if k == 0:
            ways.append([1] * len(cands))
            continue
        prev = spans[k - 1]
        ways.append([min(2, sum(w for w, (_, end) in zip(ways[-1], prev, strict=True) if end <= start))
                     for start, _ in cands])
    return ways


def _backward(spans: list[list[Span]]) -> list[list[int]]:
    """ways[k][c]: placements (capped at 2) of edits k..n-1 with edit k at candidate c."""
    ways: list[list[int]] = [[] for _ in spans]
    for k in range(len(spans) - 1, -1, -1):
        if k == len(spans) - 1:
            ways[k] = [1] * len(spans[k])
            continue
        nxt = spans[k + 1]
        ways[k] = [min(2, sum(w for w, (start, _) in zip(ways[k + 1], nxt, strict=True) if start >= end))
                   for _, end in spans[k]]
    return ways


def ordered_choice(spans: list[list[Span]]) -> Choice:
    """How many in-order placements the candidate ``spans`` allow, and the placement when there is one."""
    if not spans:
        return Choice([], [], None)
    fwd = _forward(spans)
    total = min(2, sum(fwd[-1]))
    if total == 0:
        stuck = next(k for k, row in enumerate(fwd) if not any(row))
        return Choice(None, [], stuck)
    bwd = _backward(spans)
    possible = [[c for c in range(len(spans[k])) if fwd[k][c] and bwd[k][c]] for k in range(len(spans))]
    if total == 1:
        return Choice([p[0] for p in possible], [], None)
    return Choice(None, [k for k, p in enumerate(possible) if len(p) > 1], None)
