"""Paired comparison of variants: McNemar's exact test, the difference's interval, the instances a difference
needs, and paired means of costs."""

from __future__ import annotations

import pytest

from evaluation.compare import compare, difference_ci, instances_needed, mcnemar_exact, paired_mean, t_975


def test_mcnemar_exact():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 2 ** 10)
    assert mcnemar_exact(6, 4) == pytest.approx(0.7539, abs=1e-4)


def test_instances_needed_grows_as_the_difference_shrinks():
    big, small = instances_needed(0.3, 0.2), instances_needed(0.3, 0.05)
    assert big is not None and small is not None and small > big > 0
    assert instances_needed(0.1, 0.0) is None and instances_needed(0.05, 0.2) is None


def test_compare_counts_the_cells():
    a = {"i1": True, "i2": True, "i3": False, "i4": False, "i5": True}
    b = {"i1": True, "i2": False, "i3": False, "i4": True, "only-b": True}
    c = compare(a, b)
    assert (c["instances"], c["both_resolved"], c["only_a"], c["only_b"], c["neither"]) == (4, 1, 1, 1, 1)
    assert c["difference"] == 0.0 and c["p_value"] == 1.0 and c["note"] == "no difference on these instances"


def test_the_difference_has_a_confidence_interval_that_shrinks_with_instances():
    assert difference_ci(6, 4, 100) == pytest.approx([-0.0440, 0.0832], abs=1e-4)  # worked by hand
    lo, hi = difference_ci(10, 0, 10)
    assert 0 < lo < 10 / 10 <= hi == 1.0  # every discordant instance favours A: the interval excludes 0
    small, large = difference_ci(3, 1, 20), difference_ci(30, 10, 200)
    assert small[1] - small[0] > large[1] - large[0] and large[0] < 0.1 < large[1]
    assert difference_ci(0, 0, 5) == [-difference_ci(0, 0, 5)[1], difference_ci(0, 0, 5)[1]]
    assert difference_ci(0, 0, 0) is None
    c = compare({"i1": True, "i2": True, "i3": False}, {"i1": False, "i2": True, "i3": False})
    assert c["ci95"] == difference_ci(1, 0, 3) and c["ci95"][0] < c["difference"] < c["ci95"][1]


def test_paired_means_of_costs():
    out = paired_mean({"x": 3.0, "y": 5.0, "z": 4.0, "only-a": 9.0}, {"x": 1.0, "y": 2.0, "z": 3.0})
    assert (out["instances"], out["mean_a"], out["mean_b"], out["difference"]) == (3, 4.0, 2.0, 2.0)
    assert out["ci95"] == pytest.approx([2 - 4.303 / 3 ** 0.5, 2 + 4.303 / 3 ** 0.5], abs=1e-4)  # sd 1, t(2)
    assert paired_mean({"x": 1.0}, {"x": 2.0})["ci95"] is None
    assert paired_mean({}, {"x": 2.0}) == {"instances": 0, "mean_a": None, "mean_b": None, "difference": 0.0,
                                           "ci95": None}
    assert t_975(1) == 12.706 and t_975(11) == 2.228 and t_975(1000) == pytest.approx(1.96, abs=1e-3)
