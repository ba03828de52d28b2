"""What every statistic of the adapter returns (:class:`Estimate`, :class:`TestResult`) and the input handling they
share: rating matrices with missing cells, categories and their codes, t-based intervals, agreement weights.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import stats

WeightName = Literal["unweighted", "identity", "linear", "quadratic", "ordinal"]
Df2Rule = Literal["(n-1)(k-1)", "n(k-1)"]
KrippLevel = Literal["nominal", "ordinal", "interval", "ratio"]


@dataclass(frozen=True)
class Estimate:
    """A coefficient with optional confidence interval.

    ``value``: the point estimate; ``ci_low``/``ci_high``: the interval at
    ``ci_level`` (``None`` where no interval is defined); ``se``: its standard
    error where the method has one; ``p_value``: of the method's default test;
    ``n``: the number of units/subjects used; ``method``: a human-readable
    description of the estimator and CI method; ``extra``: further quantities.
    """

    value: float
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    ci_level: Optional[float] = None
    p_value: Optional[float] = None
    n: int = 0
    method: str = ""
    se: Optional[float] = None
    extra: dict = field(default_factory=dict)

    @property
    def ci(self) -> Optional[tuple[float, float]]:
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_low, self.ci_high)


@dataclass(frozen=True)
class TestResult:
    """A hypothesis test: ``statistic`` and its ``p_value`` under ``alternative``."""

    __test__ = False  # not a pytest test class

    statistic: float
    p_value: float
    n: int
    method: str
    alternative: str = "two-sided"
    extra: dict = field(default_factory=dict)


def is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def as_object_matrix(data: Any) -> np.ndarray:
    """2-D object array, rows = units, columns = raters; missing -> None."""
    if isinstance(data, pd.DataFrame):
        arr = data.to_numpy(dtype=object)
    else:
        arr = np.array(data, dtype=object)
    if arr.ndim != 2:
        raise ValueError("ratings must be 2-D: rows = units/subjects, columns = raters")
    out = np.empty(arr.shape, dtype=object)
    for idx, v in np.ndenumerate(arr):
        out[idx] = None if is_missing(v) else v
    return out


def as_float_matrix(data: Any) -> np.ndarray:
    """2-D float array with NaN for missing (raises for non-numeric ratings)."""
    obj = as_object_matrix(data)
    out = np.full(obj.shape, np.nan)
    for idx, v in np.ndenumerate(obj):
        if v is not None:
            out[idx] = float(v)
    return out


def category_list(obj: np.ndarray, categories: Optional[Sequence] = None) -> list:
    """Sorted observed categories (or the given ones, in the given order)."""
    if categories is not None:
        return list(categories)
    vals = {v for v in obj.ravel() if v is not None}
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=str)


def category_codes(obj: np.ndarray, cats: list) -> np.ndarray:
    """Integer category codes 0..q-1, -1 for missing."""
    index = {c: i for i, c in enumerate(cats)}
    codes = np.full(obj.shape, -1, dtype=int)
    for idx, v in np.ndenumerate(obj):
        if v is not None:
            if v not in index:
                raise ValueError(f"rating {v!r} is not among the categories {cats!r}")
            codes[idx] = index[v]
    return codes


def count_matrix(codes: np.ndarray, q: int) -> np.ndarray:
    """n x q matrix r_ik = number of raters who put unit i in category k."""
    counts = np.zeros((codes.shape[0], q))
    for k in range(q):
        counts[:, k] = (codes == k).sum(axis=1)
    return counts


def t_ci(value: float, se: float, n: int, level: float) -> tuple[float, float]:
    """Gwet's interval: coef +/- t(1-(1-level)/2, n-1) * se, truncated to [-1, 1]."""
    t = stats.t.ppf(1 - (1 - level) / 2, n - 1)
    return max(-1.0, value - t * se), min(1.0, value + t * se)


def t_p(value: float, se: float, n: int) -> Optional[float]:
    """Gwet's p-value 2*(1 - pt(coef/se, n-1)) (as in R irrCAC)."""
    if not se or not np.isfinite(se) or se <= 0:
        return None
    return float(2 * (1 - stats.t.cdf(abs(value) / se, n - 1)))


def agreement_weights(
    categories: Sequence, weights: WeightName | np.ndarray = "unweighted",
    weights_by: Literal["value", "rank"] = "value",
) -> np.ndarray:
    """q x q agreement-weight matrix (1 on the diagonal).

    * ``unweighted``/``identity``: w_kl = 1 if k == l else 0
    * ``linear``:    w_kl = 1 - |x_k - x_l| / (x_max - x_min)
    * ``quadratic``: w_kl = 1 - (x_k - x_l)^2 / (x_max - x_min)^2
    * ``ordinal``  (Gwet 2014, rank based): w_kl = 1 - C(|k-l|+1, 2) / C(q, 2)
      -- this is NOT Krippendorff's ordinal metric.

    ``weights_by="value"`` uses the numeric category values x_k (R irrCAC's
    ``linear.weights(categ)``); ``"rank"`` uses x_k = 1..q, i.e. equal spacing
    over the *observed* category order (R irr ``kappa2``, scikit-learn, SAS
    Cicchetti-Allison, DescTools "equal-spacing").
    """
    q = len(categories)
    if isinstance(weights, np.ndarray) or not isinstance(weights, str):
        w = np.asarray(weights, dtype=float)
        if w.shape != (q, q):
            raise ValueError(f"weight matrix must be {q}x{q}")
        return w
    if weights in ("unweighted", "identity"):
        return np.eye(q)
    if weights == "ordinal":
        k = np.arange(q)
        nkl = np.abs(k[:, None] - k[None, :]) + 1
        raw = nkl * (nkl - 1) / 2.0
        return 1 - raw / raw.max() if q > 1 else np.ones((1, 1))
    if weights_by == "rank":
        x = np.arange(1, q + 1, dtype=float)
    elif weights_by == "value":
        x = np.asarray([float(c) for c in categories])
    else:
        raise ValueError("weights_by must be 'value' or 'rank'")
    span = x.max() - x.min() if q > 1 else 1.0
    d = np.abs(x[:, None] - x[None, :])
    if weights == "linear":
        return 1 - d / span
    if weights == "quadratic":
        return 1 - d**2 / span**2
    raise ValueError(f"unknown weights {weights!r}")


Alternative = Literal["two-sided", "greater", "less"]
