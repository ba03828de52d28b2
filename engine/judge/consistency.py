"""Exact early stopping for self-consistency: stop sampling once no further sample can change any median.

The judge's score per item is the median of N samples (:func:`engine.judge.runner.aggregate`: the median of the valid
numeric values, NA when NA answers outnumber them; an unscored sample counts for no item). After k samples the
remaining r = N − k could each be anything: missing (unscored, or this item left out), any level of the scale,
or NA where the item allows it. The median is monotone in each value, so over every completion with b more
values it lies between median(observed + b × lowest level) and median(observed + b × highest level); with the NA
rule on top, :func:`possible_outcomes` enumerates (NA answers, values) counts — at most (r+1)² cases. When every
item has exactly one possible outcome, the full run's medians are already known, and sampling stops.

So the early-stopped result's medians are identical to the fixed-N run's by construction; only the sample count
(and the spread, which is over the samples taken) changes. ``tests/test_consistency.py`` replays the 36 recorded
sample results to show it.
"""
from __future__ import annotations

import statistics
from typing import Iterable, Optional, Sequence

from engine.core import ITEMS, Item, Scale

Outcome = tuple[bool, Optional[float]]  # (is NA, median)


def _median(values: Sequence[float]) -> Optional[float]:
    return float(statistics.median(values)) if values else None


def _outcome(nums: list[float], n_na: int) -> Outcome:
    """What :func:`engine.judge.runner.aggregate` reports for an item with these values."""
    is_na = (n_na + len(nums)) > 0 and n_na > len(nums)
    return is_na, (None if is_na or not nums else _median(nums))


def possible_outcomes(observed: Iterable[Optional[float]], remaining: int, item: Item) -> set[Outcome]:
    """Every (is NA, median) that ``remaining`` more samples could still produce for ``item``."""
    vals = list(observed)
    nums = sorted(v for v in vals if v is not None)
    n_na = len(vals) - len(nums)
    lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
    out: set[Outcome] = set()
    for a in range(remaining + 1 if item.allows_na else 1):  # a more NA answers
        for b in range(remaining - a + 1):  # b more values (the rest missing)
            for fill in ((lo,), (hi,)) if b else ((),):
                out.add(_outcome(nums + list(fill) * b, n_na + a))
    return out


def item_fixed(observed: Iterable[Optional[float]], remaining: int, item: Item) -> bool:
    return remaining <= 0 or len(possible_outcomes(observed, remaining, item)) == 1


def all_fixed(sample_values: Sequence[dict], taken: int, n_total: int) -> bool:
    """True when the medians over ``n_total`` samples are already decided after ``taken`` samples, given the
    valid ones' values (each a dict item -> value, None = NA, a missing key = not given)."""
    remaining = n_total - taken
    if remaining <= 0:
        return True
    for item in ITEMS:
        observed = [s[item.key] for s in sample_values if item.key in s]
        if not item_fixed(observed, remaining, item):
            return False
    return True
