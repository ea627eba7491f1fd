"""Message helpers: line ranges, numbered excerpts and the closest-region hint.

The closest region is only ever shown to the model; it is never applied.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher

#: Windows below this similarity are not worth showing.
MIN_HINT_RATIO = 0.5
_MAX_EXCERPT_LINES = 12
_WORD = re.compile(r"\w+")
_SHORTLIST = 8  # windows compared character by character
_SAMPLE = 200  # evenly spaced windows tried when no window shares a line with the snippet
_MAX_CHARS = 1500  # longer texts are cut before comparing characters
_CHAR_LEVEL_MAX_LINES = 12
_MAX_LINES = 300  # longer snippets are cut before comparing lines


def spans_text(spans: list[tuple[int, int]]) -> str:
    """``[(0, 2), (9, 10)]`` (0-based, end exclusive) -> ``"lines 1-2, 10"``."""
    parts = [f"{s + 1}" if e - s <= 1 else f"{s + 1}-{e}" for s, e in spans]
    if len(parts) > 8:
        parts = parts[:8] + [f"... ({len(spans)} in all)"]
    return ("line " if len(spans) == 1 and spans[0][1] - spans[0][0] <= 1 else "lines ") + ", ".join(parts)


def excerpt(lines: list[str], start: int, end: int) -> str:
    """Lines ``start..end-1`` numbered like ``cat -n`` (at most a dozen lines)."""
    shown = lines[start : min(end, start + _MAX_EXCERPT_LINES)]
    out = [f"{start + i + 1:6}\t{line}" for i, line in enumerate(shown)]
    if end - start > len(shown):
        out.append(f"   ...\t({end - start - len(shown)} more lines)")
    return "\n".join(out)


def closest_region(lines: list[str], snippet: list[str]) -> tuple[int, int, float] | None:
    """The window of ``len(snippet)`` file lines most similar to ``snippet`` (difflib ratio).

    Windows are first ranked by how many of their (stripped, non-blank) lines occur in the
    snippet, using a sliding count (or, when no line is shared, by the shared words weighted by
    their rarity in the file); only the best few are compared with difflib.
    Returns ``(start, end, ratio)`` (0-based, end exclusive) or None below ``MIN_HINT_RATIO``.
    """
    core = [line.strip() for line in snippet]
    k = min(len(core), len(lines))
    if k == 0:
        return None
    stripped = [line.strip() for line in lines]
    wanted = {line for line in core if line}
    hits = [1.0 if line and line in wanted else 0.0 for line in stripped]
    n_windows = len(lines) - k + 1
    scores = _sliding(hits, k)
    ranked = sorted(range(n_windows), key=lambda i: -scores[i])
    shortlist = [i for i in ranked[:_SHORTLIST] if scores[i] > 0]
    by_lines = bool(shortlist) and k > _CHAR_LEVEL_MAX_LINES  # compare line lists, not characters
    if by_lines:
        target: str | list[str] = core[:_MAX_LINES]
    else:
        target = "\n".join(core)[:_MAX_CHARS]
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)  # type: ignore[arg-type]

    def window(i: int) -> str | list[str]:
        lines_ = stripped[i : i + k]
        return lines_[:_MAX_LINES] if by_lines else "\n".join(lines_)[:_MAX_CHARS]

    if not shortlist:  # no shared line: rank windows by shared words, rare words weighing more
        shortlist = _word_shortlist(stripped, core, k)
    if not shortlist:  # no shared word either: rank evenly spaced windows by the cheap upper bound
        step = max(1, n_windows // _SAMPLE)
        bounds = []
        for i in range(0, n_windows, step):
            matcher.set_seq1(window(i))  # type: ignore[arg-type]
            bounds.append((matcher.quick_ratio(), i))
        shortlist = [i for _, i in sorted(bounds, reverse=True)[:3]]
    if not by_lines and len(target) > 800:  # character comparisons of long texts are costly
        shortlist = shortlist[:3]
    best: tuple[int, int, float] | None = None
    best_ratio = MIN_HINT_RATIO
    for i in shortlist:
        matcher.set_seq1(window(i))  # type: ignore[arg-type]
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best, best_ratio = (i, i + k, ratio), ratio
    return best


def _sliding(values: list[float], k: int) -> list[float]:
    total = sum(values[:k])
    out = [total]
    for i in range(1, len(values) - k + 1):
        total += values[i + k - 1] - values[i - 1]
        out.append(total)
    return out


def _word_shortlist(stripped: list[str], core: list[str], k: int) -> list[int]:
    want = set(_WORD.findall(" ".join(core)))
    if not want:
        return []
    words = [set(_WORD.findall(line)) & want for line in stripped]
    freq = Counter(w for ws in words for w in ws)
    line_scores = [sum(1.0 / freq[w] for w in ws) for ws in words]
    scores = _sliding(line_scores, k)
    ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
    return [i for i in ranked[:_SHORTLIST] if scores[i] > 0]


def closest_hint(lines: list[str], snippet: list[str]) -> str:
    """A paragraph showing the closest region, or a note that nothing is close."""
    found = closest_region(lines, snippet)
    if found is None:
        return "No region of the file is similar to it; re-read the file before editing."
    start, end, ratio = found
    return (
        f"Closest region (a hint only, nothing was applied), {spans_text([(start, end)])}, "
        f"similarity {ratio:.2f}:\n{excerpt(lines, start, end)}"
    )
