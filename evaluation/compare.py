"""A/B comparison of variants on the same instances: paired, because the instances differ far more than the
variants do. For two variants the instances fall into four cells (both resolved, only A, only B, neither); only
the discordant ones (only A, only B) say anything about the difference. McNemar's exact test gives the p-value of
the difference; its 95% confidence interval is Agresti and Min's (2005: the paired Wald interval with half an
instance added to each cell, which stays honest with few instances); the sample-size formula for McNemar's test
(Connor, 1987) says how many instances a difference of the observed size would need to be detected at 5%
significance with 80% power.

Costs (USD, tokens, turns, tool calls, wall time) are compared per instance too: the mean of the paired
differences with its 95% confidence interval (Student's t).
"""

from __future__ import annotations

import math
from typing import Any

Z_ALPHA = 1.959964  # two-sided 5%
Z_BETA = 0.841621   # power 80%


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact p-value of McNemar's test (binomial on the discordant pairs, p = 1/2)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def instances_needed(p_discordant: float, difference: float) -> int | None:
    """Instances needed to detect ``difference`` (in resolve rate) given a discordant share ``p_discordant``;
    None when the difference is zero or the inputs cannot be (difference larger than the discordance)."""
    d = abs(difference)
    if d == 0 or p_discordant <= 0 or d > p_discordant:
        return None
    n = (Z_ALPHA * math.sqrt(p_discordant) + Z_BETA * math.sqrt(p_discordant - d * d)) ** 2 / (d * d)
    return math.ceil(n)


def difference_ci(only_a: int, only_b: int, n: int) -> list[float] | None:
    """95% confidence interval of the paired difference in resolve rate (A - B), Agresti-Min; None without
    instances."""
    if n <= 0:
        return None
    b, c, m = only_a + 0.5, only_b + 0.5, n + 2
    centre = (b - c) / m
    half = Z_ALPHA * math.sqrt(max(0.0, (b + c) - (b - c) ** 2 / m)) / m
    return [round(max(-1.0, centre - half), 4), round(min(1.0, centre + half), 4)]


T_975 = ((1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (6, 2.447), (7, 2.365), (8, 2.306),
         (9, 2.262), (10, 2.228), (12, 2.179), (15, 2.131), (20, 2.086), (25, 2.060), (30, 2.042), (40, 2.021),
         (60, 2.000), (120, 1.980))
"""Student's t, 97.5th percentile, by degrees of freedom (between two rows the lower one's, a little wide)."""


def t_975(df: int) -> float:
    return next((t for d, t in reversed(T_975) if d <= df), T_975[0][1]) if df <= 120 else Z_ALPHA


def paired_mean(a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """A's and B's values of one measure by instance id: the mean of A - B over the instances both have, with
    its 95% confidence interval (None for fewer than two instances)."""
    common = sorted(set(a) & set(b))
    n = len(common)
    diffs = [a[i] - b[i] for i in common]
    mean = sum(diffs) / n if n else 0.0
    ci = None
    if n >= 2:
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        half = t_975(n - 1) * sd / math.sqrt(n)
        ci = [round(mean - half, 6), round(mean + half, 6)]
    return {"instances": n, "mean_a": round(sum(a[i] for i in common) / n, 6) if n else None,
            "mean_b": round(sum(b[i] for i in common) / n, 6) if n else None,
            "difference": round(mean, 6), "ci95": ci}


def compare(a: dict[str, bool], b: dict[str, bool]) -> dict[str, Any]:
    """Variant A's and B's resolved flags by instance id: the paired comparison on the instances both ran."""
    common = sorted(set(a) & set(b))
    both = sum(1 for i in common if a[i] and b[i])
    only_a = sum(1 for i in common if a[i] and not b[i])
    only_b = sum(1 for i in common if b[i] and not a[i])
    n = len(common)
    diff = (only_a - only_b) / n if n else 0.0
    disc = (only_a + only_b) / n if n else 0.0
    needed = instances_needed(disc, diff)
    return {"instances": n, "both_resolved": both, "only_a": only_a, "only_b": only_b,
            "neither": n - both - only_a - only_b,
            "resolve_rate_a": round((both + only_a) / n, 4) if n else None,
            "resolve_rate_b": round((both + only_b) / n, 4) if n else None,
            "difference": round(diff, 4), "ci95": difference_ci(only_a, only_b, n),
            "p_value": round(mcnemar_exact(only_a, only_b), 6),
            "instances_needed": needed,
            "note": (f"a difference this large would need about {needed} instances to be told from chance "
                     "(5% significance, 80% power)" if needed else "no difference on these instances")}
