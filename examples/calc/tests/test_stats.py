import pytest

from calc.stats import mean, median, spread


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_spread():
    assert spread([5, -1, 3]) == 6


def test_empty_lists_are_refused():
    for fn in (mean, median, spread):
        with pytest.raises(ValueError):
            fn([])
