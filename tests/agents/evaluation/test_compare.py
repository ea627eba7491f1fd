"""Paired comparison of variants: McNemar's exact test and the instances a difference needs."""

from __future__ import annotations

import pytest

from agents.evaluation.compare import compare, instances_needed, mcnemar_exact


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
