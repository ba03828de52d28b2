"""Statistics of scores against a reference with a percentile interval from a bootstrap of whole groups (every
summary of a case together, :func:`engine.statistics.bootstrap.cluster_bootstrap`): Spearman's rho and the mean
absolute error."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from engine.statistics.bootstrap import cluster_bootstrap
from engine.statistics.significance import spearman_defined


@dataclass(frozen=True)
class ClusterEstimate:
    """``value`` on all rows (None where undefined) and its percentile interval ``ci`` over a bootstrap of whole
    groups (None with fewer than 3 groups or fewer than half the resamples defined); ``n`` rows, ``groups`` groups."""

    value: Optional[float]
    ci: Optional[tuple[float, float]]
    n: int
    groups: int
    method: str = ""


def _clustered(fn: Callable[[np.ndarray], Optional[float]], n: int, groups: Any, n_boot: int, seed: int,
               level: float, method: str) -> ClusterEstimate:
    g = np.asarray(groups)
    return ClusterEstimate(fn(np.arange(n)), cluster_bootstrap(fn, g, n_boot, seed, level), n,
                           len(np.unique(g)), method)


def spearman_clustered(x: Any, y: Any, groups: Any, n_boot: int = 1000, seed: int = 0,
                       level: float = 0.95) -> ClusterEstimate:
    """Spearman's rho of ``x`` with ``y`` (None for fewer than 3 pairs or a constant side,
    :func:`engine.statistics.significance.spearman_defined`) with the percentile interval of rho over ``n_boot``
    resamples of whole groups (Efron & Tibshirani 1993, ch. 13; Davison & Hinkley 1997, section 3.8)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return _clustered(lambda i: spearman_defined(a[i], b[i]), len(a), groups, n_boot, seed, level,
                      "Spearman rho; percentile interval from a bootstrap of whole groups")


def mean_absolute_error_clustered(x: Any, y: Any, groups: Any, n_boot: int = 1000, seed: int = 0,
                                  level: float = 0.95) -> ClusterEstimate:
    """Mean absolute error MAE = (1/n) Σ |x_i − y_i| (None for no rows) with the percentile interval of the MAE
    over ``n_boot`` resamples of whole groups (Efron & Tibshirani 1993, ch. 13)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)

    def mae(i: np.ndarray) -> Optional[float]:
        return float(np.mean(np.abs(a[i] - b[i]))) if len(i) else None

    return _clustered(mae, len(a), groups, n_boot, seed, level,
                      "mean absolute error; percentile interval from a bootstrap of whole groups")
