"""A/B comparison of variants on the same instances: paired, because the instances differ far more than the
variants do. For two variants the instances fall into four cells (both resolved, only A, only B, neither); only
the discordant ones (only A, only B) say anything about the difference. McNemar's exact test gives the p-value of
the difference; the sample-size formula for McNemar's test (Connor, 1987) says how many instances a difference of
the observed size would need to be detected at 5% significance with 80% power.
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
            "difference": round(diff, 4), "p_value": round(mcnemar_exact(only_a, only_b), 6),
            "instances_needed": needed,
            "note": (f"a difference this large would need about {needed} instances to be told from chance "
                     "(5% significance, 80% power)" if needed else "no difference on these instances")}
