"""The bootstrap, once: resampling counts over units, the percentile interval, the two-sided bootstrap p, and the
cluster (case) bootstrap with its resampled values.

Most statistics here are sums over units (coincidence matrices, sums of squares), so a resample is a vector of
draw counts per unit (multinomial, ``numpy.random.default_rng(seed)``) and every resample's statistic is one
matrix product — :func:`resample_counts`. ``scipy.stats.bootstrap`` redraws the data and calls the statistic once
per resample, which these vectorised forms do not need; the interval is the same percentile interval
(Efron & Tibshirani 1993, ch. 13).
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np


def resample_counts(n: int, n_boot: int, seed: int, with_observed: bool = False) -> np.ndarray:
    """(n_boot, n) float array: how often each of ``n`` units is drawn in each resample (each row sums to ``n``);
    with ``with_observed`` a first row of ones (the observed sample) is prepended."""
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    return np.vstack([np.ones(n), w]) if with_observed else w


def percentile_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The (a/2, 1 − a/2) percentile interval of bootstrap values, a = 1 − ``level`` (NaN, NaN when empty)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    a = 1.0 - level
    lo, hi = np.quantile(v, [a / 2, 1 - a / 2])
    return float(lo), float(hi)


def two_sided_p(differences: Sequence[float]) -> float:
    """Two-sided bootstrap p for "no difference": twice the smaller share of resampled differences on one side of
    0, at most 1 (NaN when empty)."""
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return math.nan
    return float(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())))


def cluster_bootstrap_values(fn: Callable[[np.ndarray], Optional[float]], groups: Sequence, n_boot: int,
                             seed: int) -> list[float]:
    """``fn(row indices)`` over ``n_boot`` bootstrap resamples of whole groups (e.g. every summary of a case
    together): the distinct groups, in sorted order, are drawn with replacement (``numpy.random.default_rng(seed)``)
    and all rows of each drawn group enter, in row order. Resamples where ``fn`` returns None or a non-finite value
    are left out of the list (Davison & Hinkley 1997, section 3.8, resampling the top level of a hierarchy)."""
    groups = np.asarray(groups)
    uniq = np.unique(groups)
    if len(uniq) == 0:
        return []
    idx_of = {g: np.flatnonzero(groups == g) for g in uniq}
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_boot):
        pick = rng.choice(uniq, size=len(uniq), replace=True)
        v = fn(np.concatenate([idx_of[g] for g in pick]))
        if v is not None and math.isfinite(v):
            vals.append(v)
    return vals


def cluster_bootstrap(fn: Callable[[np.ndarray], Optional[float]], groups: Sequence, n_boot: int, seed: int,
                      level: float = 0.95, min_groups: int = 3) -> Optional[tuple[float, float]]:
    """Percentile interval of ``fn(row indices)`` over a bootstrap of whole groups (:func:`cluster_bootstrap_values`).
    None when fewer than ``min_groups`` groups or fewer than half the resamples gave a value."""
    if len(np.unique(np.asarray(groups))) < min_groups:
        return None
    vals = cluster_bootstrap_values(fn, groups, n_boot, seed)
    if len(vals) < n_boot // 2:
        return None
    return percentile_interval(vals, level)
