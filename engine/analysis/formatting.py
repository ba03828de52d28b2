"""How statistics are written for people: p-values that never read "p = 0" and estimates with their interval.
"""
from __future__ import annotations

import math
from typing import Optional

from engine import statistics as rel


def format_p(p: Optional[float]) -> str:
    """p-values as a committee reads them: never 'p = 0'."""
    if p is None or not math.isfinite(p):
        return "—"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


BOUNDS = (-1.0, 1.0)  # every agreement coefficient shown (ICC, α, κ, AC1/AC2) lies in [-1, 1]


CLIPPED = "†"
INTERVAL_NOTE = ("† An interval bound past −1 or 1 (on few summaries the F-based interval of an ICC can reach, say, "
                 "−1.09, although the coefficient cannot) is written at the end of the range; the tables give it as "
                 "computed.")


def _bound(v: float, digits: int) -> str:
    """One interval bound; one past the coefficient's range is written at the range's end and marked
    :data:`CLIPPED` (:data:`INTERVAL_NOTE` says once what that means)."""
    if v < BOUNDS[0]:
        return f"{BOUNDS[0]:.{digits}f}{CLIPPED}"
    if v > BOUNDS[1]:
        return f"{BOUNDS[1]:.{digits}f}{CLIPPED}"
    return f"{v:.{digits}f}"


def format_estimate(e: Optional[rel.Estimate], digits: int = 2) -> str:
    """A coefficient with its 95% interval; an interval bound beyond [-1, 1] (the F-based ICC interval on few
    summaries can reach -1.09) is written at -1 or 1 and marked :data:`CLIPPED`."""
    if e is None or e.value is None or not math.isfinite(e.value):
        return "—"
    if e.ci_low is not None and e.ci_high is not None:
        return f"{e.value:.{digits}f} (95% CI {_bound(e.ci_low, digits)} to {_bound(e.ci_high, digits)})"
    return f"{e.value:.{digits}f}"


def format_boot_p(p: float, n_boot: int) -> str:
    """A bootstrap p-value: "< 1/n_boot" when no resample reached the observed value."""
    return f"< {1 / n_boot:.3g}" if p == 0 else format_p(p)


def format_score(v: Optional[float], digits: int = 2) -> str:
    """A score or a median as people read it: at most ``digits`` decimals, no trailing zeros (3.72075 -> "3.72",
    4.5 -> "4.5", 4.0 -> "4"); "—" when missing."""
    if v is None or not math.isfinite(v):
        return "—"
    text = f"{v:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
