"""Monotone maps from a predictor to a 1-5 scale, fitted to ratings by isotonic regression (one fit,
:func:`isotonic_fit`): the isotonic step function (:func:`isotonic_steps`), and a strictly increasing map that never
ties or reorders what the predictor ranks apart.

:func:`monotone_knots` fits isotonic regression (scikit-learn ``IsotonicRegression``, bounded to 1-5); each block of
equal fitted level becomes one knot at its mean predictor, the levels pulled :data:`TIE_SLOPE` inside 1-5.
:func:`monotone_apply` interpolates linearly between knots (strictly increasing, since the levels strictly
increase from block to block) and beyond them continues with the end segment's slope, bending towards 1 and 5
without reaching them; with a single knot a small slope keeps the order.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

TIE_SLOPE = 0.05  # with a single isotonic block: mapped = level ± this × tanh(standardised predictor)


def isotonic_fit(x: np.ndarray, y: np.ndarray):
    """The isotonic (pool-adjacent-violators) regression of ``y`` on ``x`` bounded to 1-5: the non-decreasing step
    function f minimising Σ (y_i − f(x_i))² (Barlow, Bartholomew, Bremner & Brunk 1972; Ayer et al. 1955), through
    scikit-learn ``IsotonicRegression``; outside the fitted range it holds the end levels."""
    from sklearn.isotonic import IsotonicRegression

    return IsotonicRegression(y_min=1.0, y_max=5.0, increasing=True, out_of_bounds="clip").fit(x, y)


def isotonic_steps(x: np.ndarray, y: np.ndarray) -> tuple[list, list]:
    """The isotonic step function's thresholds (x, level) (:func:`isotonic_fit`): interpolated linearly between
    them it is the step map, under which predictors on one step tie."""
    iso = isotonic_fit(x, y)
    return [float(v) for v in iso.X_thresholds_], [float(v) for v in iso.y_thresholds_]


def monotone_knots(x: np.ndarray, y: np.ndarray) -> tuple[list, list]:
    """Knots of the strictly increasing map: one per block of equal isotonic level (:func:`isotonic_fit`), at the
    block's mean predictor (levels strictly increase from block to block, so linear interpolation between knots is
    strictly increasing); levels are pulled :data:`TIE_SLOPE` inside 1-5 so the tails stay strictly increasing."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    fitted = isotonic_fit(x, y).predict(x)
    xs, ys = [], []
    for level in np.unique(np.round(fitted, 9)):
        xs.append(float(np.mean(x[np.isclose(fitted, level)])))
        ys.append(float(1.0 + TIE_SLOPE + (level - 1.0) * (4.0 - 2 * TIE_SLOPE) / 4.0))  # inside [1.05, 4.95]:
        # the tails keep room to bend towards 1 and 5 without reaching them
    order = np.argsort(xs)
    return [xs[i] for i in order], [ys[i] for i in order]


def monotone_apply(x: float, xk: Sequence[float], yk: Sequence[float], spread: float) -> float:
    """The strictly increasing map through the knots: linear between them; beyond them it continues with the end
    segment's slope and bends towards 1 (below) or 5 (above) without reaching them (:func:`_bend`); a single knot gets a small
    slope around its level (:data:`TIE_SLOPE`)."""
    spread = spread if spread > 0 else 1.0
    if len(xk) == 1:
        return float(yk[0] + TIE_SLOPE * math.tanh((x - xk[0]) / spread))
    if xk[0] <= x <= xk[-1]:
        return float(np.interp(x, xk, yk))
    if x > xk[-1]:
        return float(yk[-1] + _bend((yk[-1] - yk[-2]) / (xk[-1] - xk[-2]), x - xk[-1], 5.0 - yk[-1]))
    return float(yk[0] - _bend((yk[1] - yk[0]) / (xk[1] - xk[0]), xk[0] - x, yk[0] - 1.0))


def _bend(slope: float, d: float, room: float) -> float:
    """room · s·d / (room + s·d): starts with the end segment's slope and approaches ``room`` without reaching it
    (slowly enough to stay strictly increasing in floating point far beyond the knots)."""
    return room * slope * d / (room + slope * d)
