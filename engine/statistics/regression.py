"""Linear fits: the least-squares line of y on x, and a ridge regression on standardised columns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class Line:
    """y = ``intercept`` + ``slope`` · x; ``r``: Pearson's r of x and y; ``n`` points."""

    slope: float
    intercept: float
    r: float
    n: int


def least_squares_line(x: Sequence[float], y: Sequence[float]) -> Line:
    """The ordinary least-squares line of ``y`` on ``x`` (``scipy.stats.linregress``)::

        slope = Σ (x_i − x̄)(y_i − ȳ) / Σ (x_i − x̄)²,   intercept = ȳ − slope · x̄

    (Draper & Smith 1998, ch. 1). Raises ValueError when every x is the same (no line is defined).
    """
    from scipy.stats import linregress

    xs, ys = list(x), list(y)
    if len(set(xs)) < 2:
        raise ValueError("a least-squares line needs at least two distinct x values")
    fit = linregress(xs, ys)
    return Line(float(fit.slope), float(fit.intercept), float(fit.rvalue), len(xs))


@dataclass(frozen=True)
class RidgeFit:
    """Ridge coefficients on the standardised columns with the intercept, and the column ``means`` and ``scales``
    that standardise a new row: prediction = intercept + Σ coef_j (x_j − mean_j) / scale_j."""

    coef: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]
    scales: tuple[float, ...]


def ridge_standardised(rows: Any, y: Any, alpha: float = 1.0) -> RidgeFit:
    """Ridge regression (Hoerl & Kennard 1970) of ``y`` on the columns of ``rows``, each standardised to
    z_j = (x_j − mean_j) / sd_j (population SD; a constant column keeps scale 1; a missing value takes its column's
    mean, so it adds nothing), through scikit-learn ``Ridge``::

        (b0, b) = argmin Σ_i (y_i − b0 − z_i·b)² + alpha · ‖b‖²

    with the intercept unpenalised (b0 = ȳ, the columns being centred). A column with no value has mean 0.
    """
    from sklearn.linear_model import Ridge

    x = np.asarray(rows).astype(float)
    means = np.array([np.nanmean(c) if np.isfinite(c).any() else 0.0 for c in x.T])
    x = np.where(np.isnan(x), means, x)
    scales = x.std(axis=0)
    scales[scales == 0] = 1.0
    z = (x - means) / scales
    m = Ridge(alpha=alpha).fit(z, y)
    return RidgeFit(tuple(m.coef_.tolist()), float(m.intercept_), tuple(means.tolist()), tuple(scales.tolist()))
