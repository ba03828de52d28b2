"""Paired and two-sample tests and correlations through scipy: Wilcoxon signed-rank, Mann-Whitney U, Pearson r
(Fisher z interval), Spearman rho (and where it is defined), mid-ranks.
"""
from __future__ import annotations

import math
from typing import Any, Literal, Optional

import numpy as np
from scipy import stats

from engine.statistics.base import Alternative, Estimate, TestResult, as_float_matrix


def _pair(x: Any, y: Any = None) -> tuple[np.ndarray, np.ndarray]:
    if y is None:
        m = as_float_matrix(x)
        if m.shape[1] != 2:
            raise ValueError("pass x and y, or one array with two columns")
        return m[:, 0], m[:, 1]
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def wilcoxon_signed_rank(
    x: Any, y: Any = None, alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "normal"] = "auto", continuity: bool = True,
    zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox",
) -> TestResult:
    """Wilcoxon signed-rank test on d = x - y (``scipy.stats.wilcoxon``).

    W+ = sum of ranks of |d_i| with d_i > 0 (R's ``V``), W- likewise.
    ``zero_method="wilcox"`` drops zero differences (R default); ties get
    mid-ranks. Normal approximation: z = (W+ - n(n+1)/4 [-/+ 0.5]) / sigma with
    sigma^2 = n(n+1)(2n+1)/24 - sum(t^3 - t)/48 (tie-corrected).

    ``method="auto"`` follows R ``wilcox.test``: exact when n < 50 and there
    are no ties and no zeros, otherwise normal; ``continuity=True`` is R's
    default ``correct=TRUE`` (scipy's default is False). ``statistic`` is
    scipy's: min(W+, W-) for two-sided, W+ for one-sided; both are in ``extra``.
    Reference: Wilcoxon (1945) Biometrics Bull 1:80; Hollander & Wolfe (1999).
    """
    xv, yv = _pair(x, y)
    ok = ~(np.isnan(xv) | np.isnan(yv))
    d = (xv - yv)[ok]
    nz = d[d != 0] if zero_method == "wilcox" else d
    ranks = stats.rankdata(np.abs(nz))
    w_plus = float(ranks[nz > 0].sum())
    w_minus = float(ranks[nz < 0].sum())
    has_ties = len(np.unique(np.abs(nz))) < len(nz)
    has_zeros = bool((d == 0).any())
    if method == "auto":
        method = "exact" if (len(nz) < 50 and not has_ties and not has_zeros) else "normal"
    sp_method = "exact" if method == "exact" else "asymptotic"
    res = stats.wilcoxon(xv[ok], yv[ok], zero_method=zero_method, correction=continuity,
                         alternative=alternative, method=sp_method)
    extra = {"W_plus": w_plus, "W_minus": w_minus, "T_min": min(w_plus, w_minus),
             "n_nonzero": int((d != 0).sum()), "n_zero": int((d == 0).sum()), "ties": has_ties}
    if getattr(res, "zstatistic", None) is not None:
        extra["z"] = float(res.zstatistic)
    desc = "exact" if method == "exact" else (
        "normal approximation" + (" with continuity correction" if continuity else ""))
    return TestResult(float(res.statistic), float(res.pvalue), int(ok.sum()),
                      f"Wilcoxon signed-rank test (scipy), {desc}, zero_method={zero_method}",
                      alternative, extra)


def mann_whitney_u(
    x: Any, y: Any, alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "normal"] = "auto", continuity: bool = True,
) -> TestResult:
    """Mann-Whitney U / Wilcoxon rank-sum test (``scipy.stats.mannwhitneyu``).

    U_x = R_x - n_x (n_x + 1) / 2 (R_x = rank sum of x in the pooled sample;
    = R's ``W``); U_y = n_x n_y - U_x. Normal approximation with tie-corrected
    variance n_x n_y / 12 * ((N+1) - sum(t^3 - t) / (N (N-1))) and optional
    continuity correction (R default). ``method="auto"`` follows R: exact when
    both n < 50 and there are no ties. Missing values are dropped.
    ``extra["rank_biserial"]`` = 2 U_x / (n_x n_y) - 1.
    Reference: Mann & Whitney (1947) Ann Math Stat 18:50.
    """
    xv = np.asarray(x, dtype=float)
    yv = np.asarray(y, dtype=float)
    xv, yv = xv[~np.isnan(xv)], yv[~np.isnan(yv)]
    pooled = np.concatenate([xv, yv])
    ties = len(np.unique(pooled)) < len(pooled)
    if method == "auto":
        method = "exact" if (len(xv) < 50 and len(yv) < 50 and not ties) else "normal"
    sp_method = "exact" if method == "exact" else "asymptotic"
    res = stats.mannwhitneyu(xv, yv, use_continuity=continuity, alternative=alternative,
                             method=sp_method)
    u_x = float(res.statistic)
    nx, ny = len(xv), len(yv)
    desc = "exact" if method == "exact" else (
        "normal approximation (tie-corrected)" + (" with continuity correction" if continuity else ""))
    return TestResult(u_x, float(res.pvalue), nx + ny, f"Mann-Whitney U test (scipy), {desc}",
                      alternative, {"U_x": u_x, "U_y": nx * ny - u_x, "n_x": nx, "n_y": ny,
                                    "ties": ties, "rank_biserial": 2 * u_x / (nx * ny) - 1})


def pearson_r(x: Any, y: Any = None, alternative: Alternative = "two-sided",
              ci_level: float = 0.95) -> Estimate:
    """Pearson's r (``scipy.stats.pearsonr``) with Fisher-z CI.

    r = cov(x, y) / (s_x s_y); t = r sqrt((n-2)/(1-r^2)) ~ t_{n-2} under H0;
    CI = tanh(atanh(r) +/- z_{1-a/2} / sqrt(n-3)) (one-sided bounds for
    one-sided alternatives), as R ``cor.test``. Pairs with a missing value are dropped.
    """
    xv, yv = _pair(x, y)
    ok = ~(np.isnan(xv) | np.isnan(yv))
    xv, yv = xv[ok], yv[ok]
    res = stats.pearsonr(xv, yv, alternative=alternative)
    ci = res.confidence_interval(confidence_level=ci_level)
    n = len(xv)
    r = float(res.statistic)
    t = r * math.sqrt((n - 2) / (1 - r**2)) if abs(r) < 1 else math.copysign(math.inf, r)
    return Estimate(r, float(ci.low), float(ci.high), ci_level, float(res.pvalue), n,
                    "Pearson r (scipy); t test, Fisher z CI",
                    extra={"t": t, "df": n - 2, "alternative": alternative})


def spearman_rho(x: Any, y: Any = None, alternative: Alternative = "two-sided") -> Estimate:
    """Spearman's rho (``scipy.stats.spearmanr``): Pearson r of the (mid-)ranks.

    p-value from the t approximation t = rho sqrt((n-2)/(1-rho^2)) with n-2 df
    (R ``cor.test(method="spearman", exact=FALSE)``; R's default exact p for
    small n without ties is not reproduced). Pairs with a missing value are dropped.
    """
    xv, yv = _pair(x, y)
    ok = ~(np.isnan(xv) | np.isnan(yv))
    xv, yv = xv[ok], yv[ok]
    res = stats.spearmanr(xv, yv, alternative=alternative)
    n = len(xv)
    rho = float(res.statistic)
    t = rho * math.sqrt((n - 2) / (1 - rho**2)) if abs(rho) < 1 else math.copysign(math.inf, rho)
    return Estimate(rho, p_value=float(res.pvalue), n=n,
                    method="Spearman rho (scipy); t-approximation p-value",
                    extra={"t": t, "df": n - 2, "alternative": alternative})


def spearman_defined(x: Any, y: Any) -> Optional[float]:
    """Spearman's rho (:func:`spearman_rho`) where it is defined: None for fewer than 3 pairs or when either side
    is constant (no ranking to correlate)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return None
    return float(spearman_rho(a, b).value)


def midranks(x: Any) -> np.ndarray:
    """Ranks 1..n of ``x`` with ties given the mean of the ranks they span (mid-ranks, the ranks Spearman's rho
    correlates; Kendall & Gibbons 1990, ch. 3), through ``scipy.stats.rankdata(method="average")``."""
    return stats.rankdata(x)
