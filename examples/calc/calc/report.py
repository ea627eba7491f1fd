"""Formatting helpers for reports."""


def percent(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole``, one decimal: percent(1, 4) == '25.0%'. A zero whole gives '0.0%'."""
    return f"{part / whole * 10:.1f}%"
