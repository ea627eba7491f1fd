from calc.report import percent


def test_percent():
    assert percent(1, 4) == "25.0%"
    assert percent(2, 3) == "66.7%"


def test_percent_of_nothing():
    assert percent(0, 0) == "0.0%"
