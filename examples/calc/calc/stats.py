"""Descriptive statistics for lists of numbers."""


def mean(values: list[float]) -> float:
    """Arithmetic mean. Raises ValueError for an empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """The middle value; for an even count, the mean of the two middle values."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def spread(values: list[float]) -> float:
    """Largest minus smallest value."""
    if not values:
        raise ValueError("spread of an empty list")
    return max(values) - min(values)
