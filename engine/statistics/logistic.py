"""Logistic fits: a logistic regression whose weights are bounded (e.g. never negative), and the logistic curve
closest in least squares to observed rates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class LogisticFit:
    """P(y = 1 | x) = σ(``intercept`` + Σ ``weights``_j x_j), σ(z) = 1 / (1 + e^(−z))."""

    intercept: float
    weights: tuple[float, ...]
    converged: bool = True


def bounded_logistic(X: Sequence[Sequence[float]], y: Sequence[int], lower: Optional[float] = 0.0,
                     upper: Optional[float] = None, l2: float = 1e-2,
                     sample_weight: Optional[Sequence[float]] = None) -> LogisticFit:
    """Logistic regression of the 0/1 ``y`` on the columns of ``X`` with every weight in [``lower``, ``upper``]
    (None: unbounded; the default keeps every weight ≥ 0, a monotone combination) and the intercept free, by
    L-BFGS-B with bounds (Byrd, Lu, Nocedal & Zhu 1995; ``scipy.optimize.minimize``) on the weighted log loss with a
    small ridge penalty on the weights::

        minimise  Σ_i w_i [log(1 + e^(z_i)) − y_i z_i] + l2 · Σ_j b_j²,   z_i = b0 + Σ_j b_j x_ij,  Σ_i w_i = 1

    ``sample_weight`` weighs each row (default: 1), normalised to sum 1. With ``l2 = 0`` and no bound active it is
    the maximum-likelihood logistic regression (Hosmer & Lemeshow 2000, ch. 1). Starts from all zeros.
    """
    import numpy as np
    from scipy.optimize import minimize

    A = np.asarray(X, dtype=float)
    t = np.asarray(y, dtype=float)
    sw = np.ones(len(t)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    sw = sw / sw.sum()

    def loss(theta):
        z = theta[0] + A @ theta[1:]
        p = 1.0 / (1.0 + np.exp(-z))
        ll = np.sum(sw * (np.logaddexp(0.0, z) - t * z)) + l2 * np.sum(theta[1:] ** 2)
        g = np.concatenate([[np.sum(sw * (p - t))], A.T @ (sw * (p - t)) + 2 * l2 * theta[1:]])
        return ll, g

    res = minimize(loss, np.zeros(A.shape[1] + 1), jac=True, method="L-BFGS-B",
                   bounds=[(None, None)] + [(lower, upper)] * A.shape[1])
    return LogisticFit(float(res.x[0]), tuple(float(w) for w in res.x[1:]), bool(res.success))


@dataclass(frozen=True)
class LogisticCurve:
    """rate(x) = 1 / (1 + e^(−(``a`` + ``b`` x)))."""

    a: float
    b: float


def logistic_curve(x: Sequence[float], rate: Sequence[float], p0: tuple[float, float] = (0.0, 1.0),
                   maxfev: int = 20000) -> LogisticCurve:
    """The logistic curve 1 / (1 + e^(−(a + b x))) closest in least squares to the observed ``rate`` at ``x``
    (nonlinear least squares, Levenberg–Marquardt: ``scipy.optimize.curve_fit``; Bates & Watts 1988), started
    from ``p0`` = (a, b) with at most ``maxfev`` function evaluations."""
    import numpy as np
    from scipy.optimize import curve_fit

    (a, b), _ = curve_fit(lambda v, a, b: 1 / (1 + np.exp(-(a + b * v))), np.asarray(x), np.asarray(rate), p0=p0,
                          maxfev=maxfev)
    return LogisticCurve(float(a), float(b))
