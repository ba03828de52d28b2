"""Intraclass correlation (Shrout & Fleiss 1979; McGraw & Wong 1996) through pingouin, with exact F-based
intervals at any level, and Cronbach's alpha with the Feldt interval.
"""
from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from engine.statistics.base import Df2Rule, Estimate, as_float_matrix


_ICC_FORMS = {
    "ICC1": "ICC(1,1)", "ICC(1,1)": "ICC(1,1)",
    "ICC2": "ICC(A,1)", "ICC(2,1)": "ICC(A,1)", "ICC(A,1)": "ICC(A,1)",
    "ICC3": "ICC(C,1)", "ICC(3,1)": "ICC(C,1)", "ICC(C,1)": "ICC(C,1)",
    "ICC1k": "ICC(1,k)", "ICC(1,k)": "ICC(1,k)",
    "ICC2k": "ICC(A,k)", "ICC(2,k)": "ICC(A,k)", "ICC(A,k)": "ICC(A,k)",
    "ICC3k": "ICC(C,k)", "ICC(3,k)": "ICC(C,k)", "ICC(C,k)": "ICC(C,k)",
}


_ICC_DESC = {
    "ICC(1,1)": "one-way random effects, single rater",
    "ICC(A,1)": "two-way random effects, absolute agreement, single rater",
    "ICC(C,1)": "two-way mixed effects, consistency, single rater",
    "ICC(1,k)": "one-way random effects, mean of k raters",
    "ICC(A,k)": "two-way random effects, absolute agreement, mean of k raters",
    "ICC(C,k)": "two-way mixed effects, consistency, mean of k raters",
}


def _icc_mean_squares(x: np.ndarray) -> tuple[float, float, float, float]:
    """MSR (between targets), MSW (within targets), MSC (raters), MSE (residual)."""
    n, k = x.shape
    grand = x.mean()
    ss_r = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_c = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_t = ((x - grand) ** 2).sum()
    ss_e = ss_t - ss_r - ss_c
    msr = ss_r / (n - 1)
    msw = (ss_c + ss_e) / (n * (k - 1))
    msc = ss_c / (k - 1)
    mse = ss_e / ((n - 1) * (k - 1))
    return msr, msw, msc, mse


def icc_ci(x: np.ndarray, level: float) -> dict[str, tuple[float, float]]:
    """F-based CIs of Shrout & Fleiss (1979) / McGraw & Wong (1996) at any level.

    Same formulas as pingouin.intraclass_corr (which is fixed at 95 %), incl.
    the Satterthwaite-type df approximation for ICC(A,1)/ICC(A,k).
    """
    n, k = x.shape
    msr, msw, msc, mse = _icc_mean_squares(x)
    a = 1 - level
    df1, df1kd, df2kd = n - 1, n * (k - 1), (n - 1) * (k - 1)
    f1 = msr / msw
    f3 = msr / mse
    f1l = f1 / stats.f.ppf(1 - a / 2, df1, df1kd)
    f1u = f1 * stats.f.ppf(1 - a / 2, df1kd, df1)
    f3l = f3 / stats.f.ppf(1 - a / 2, df1, df2kd)
    f3u = f3 * stats.f.ppf(1 - a / 2, df2kd, df1)
    icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    fj = msc / mse
    vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    v = vn / vd
    f2u = stats.f.ppf(1 - a / 2, n - 1, v)
    f2l = stats.f.ppf(1 - a / 2, v, n - 1)
    l2 = n * (msr - f2u * mse) / (f2u * (k * msc + (k * n - k - n) * mse) + n * msr)
    u2 = n * (f2l * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f2l * msr)
    return {
        "ICC(1,1)": ((f1l - 1) / (f1l + k - 1), (f1u - 1) / (f1u + k - 1)),
        "ICC(A,1)": (l2, u2),
        "ICC(C,1)": ((f3l - 1) / (f3l + k - 1), (f3u - 1) / (f3u + k - 1)),
        "ICC(1,k)": (1 - 1 / f1l, 1 - 1 / f1u),
        "ICC(A,k)": (l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1))),
        "ICC(C,k)": (1 - 1 / f3l, 1 - 1 / f3u),
    }


def icc_all(data: Any, ci_level: float = 0.95) -> dict[str, Estimate]:
    """All six Shrout-Fleiss / McGraw-Wong ICC forms, keyed ``ICC1`` .. ``ICC3k``.

    From the two-way ANOVA mean squares (MSR targets, MSW within, MSC raters,
    MSE residual; n targets, k raters)::

        ICC(1,1) = (MSR - MSW) / (MSR + (k-1) MSW)
        ICC(A,1) = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n)
        ICC(C,1) = (MSR - MSE) / (MSR + (k-1) MSE)
        ICC(1,k) = (MSR - MSW) / MSR
        ICC(A,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n)
        ICC(C,k) = (MSR - MSE) / MSR

    F test: F = MSR/MSW with (n-1, n(k-1)) df for the one-way forms and
    F = MSR/MSE with (n-1, (n-1)(k-1)) df otherwise. CIs are the exact
    F-based intervals of Shrout & Fleiss (1979) (with McGraw & Wong's 1996
    approximate df for the absolute-agreement forms).

    Values, F, df and p come from ``pingouin.intraclass_corr``; the CIs, at any
    level, from the identical formulas in :func:`icc_ci` (pingouin rounds its
    CI95 column to two decimals, and its options are never changed here).
    Units with any missing rating are dropped (listwise).

    References: Shrout, P.E. & Fleiss, J.L. (1979) Psychol Bull 86:420-428;
    McGraw, K.O. & Wong, S.P. (1996) Psychol Methods 1:30-46.
    """
    import pingouin

    x = as_float_matrix(data)
    n_all = x.shape[0]
    x = x[~np.isnan(x).any(axis=1)]
    n, k = x.shape
    long = pd.DataFrame(
        {
            "target": np.repeat(np.arange(n), k),
            "rater": np.tile(np.arange(k), n),
            "rating": x.ravel(),
        }
    )
    with warnings.catch_warnings():
        # pingouin 0.7 calls DataFrame.dropna(inplace=True), deprecated in pandas 3.1
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        tab = pingouin.intraclass_corr(long, targets="target", raters="rater", ratings="rating")
    tab = tab.set_index("Type")
    # pingouin rounds its CI95 column to 2 decimals (a global option we leave alone): the CIs come from the same
    # F-based formulas computed here, at any level
    own_ci = icc_ci(x, ci_level)
    out: dict[str, Estimate] = {}
    for short in ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"):
        form = _ICC_FORMS[short]
        row = tab.loc[form]
        lo, hi = own_ci[form]
        out[short] = Estimate(
            value=float(row["ICC"]),
            ci_low=float(lo), ci_high=float(hi), ci_level=ci_level,
            p_value=float(row["pval"]), n=n,
            method=f"{form} {_ICC_DESC[form]} (pingouin); exact F-based CI (Shrout & Fleiss 1979)",
            extra={"F": float(row["F"]), "df1": float(row["df1"]), "df2": float(row["df2"]),
                   "k": k, "n_dropped_incomplete": n_all - n, "form": form},
        )
    return out


def icc(data: Any, form: str = "ICC2", ci_level: float = 0.95) -> Estimate:
    """One ICC form (``ICC1``, ``ICC2``, ``ICC3``, ``ICC1k``, ``ICC2k``, ``ICC3k``;
    aliases ``ICC(A,1)``, ``ICC(C,k)``, ``ICC(2,1)``, ...). See :func:`icc_all`."""
    if form not in _ICC_FORMS:
        raise ValueError(f"unknown ICC form {form!r}")
    canon = _ICC_FORMS[form]
    short = {v: s for s, v in _ICC_FORMS.items() if s.startswith("ICC") and "(" not in s}[canon]
    return icc_all(data, ci_level=ci_level)[short]


def cronbach_alpha_ci(
    alpha: float, n: int, k: int, ci_level: float = 0.95, df2: Df2Rule = "(n-1)(k-1)",
) -> Estimate:
    """Feldt (1965) CI for Cronbach's alpha from summary statistics.

    (1 - alpha) * F follows an F distribution, so::

        lower = 1 - (1 - alpha) * F_{1-a/2}(df1, df2)
        upper = 1 - (1 - alpha) * F_{a/2}(df1, df2)

    with df1 = n - 1 and ``df2="(n-1)(k-1)"`` (Feldt, Woodruff & Salih 1987;
    pingouin, DescTools, cocron) or ``df2="n(k-1)"`` (R statpsych
    ``ci.cronbach``). n = subjects, k = items.
    """
    a = 1 - ci_level
    df1 = n - 1
    if df2 == "(n-1)(k-1)":
        d2 = (n - 1) * (k - 1)
    elif df2 == "n(k-1)":
        d2 = n * (k - 1)
    else:
        raise ValueError("df2 must be '(n-1)(k-1)' or 'n(k-1)'")
    lower = 1 - (1 - alpha) * stats.f.isf(a / 2, df1, d2)
    upper = 1 - (1 - alpha) * stats.f.isf(1 - a / 2, df1, d2)
    return Estimate(
        value=float(alpha), ci_low=float(lower), ci_high=float(upper), ci_level=ci_level,
        n=int(n), method=f"Feldt CI, df1 = n-1, df2 = {df2}",
        extra={"k": int(k), "df1": df1, "df2": d2},
    )


def cronbach_alpha(
    data: Any, nan_policy: Literal["pairwise", "listwise"] = "pairwise",
    ci_level: float = 0.95, df2: Df2Rule = "(n-1)(k-1)",
) -> Estimate:
    """Cronbach's alpha (rows = subjects, columns = items) with Feldt CI.

    alpha = k/(k-1) * (1 - sum_j var(X_j) / var(sum_j X_j))
          = k/(k-1) * (1 - trace(C) / sum(C)),  C = item covariance matrix.

    Computed by ``pingouin.cronbach_alpha``. ``nan_policy="pairwise"`` builds C
    from pairwise-complete covariances (R ``psych::alpha(use="pairwise")``), and
    the CI uses all n rows; ``"listwise"`` drops incomplete rows first and the CI
    uses the n remaining rows (as ``psych::alpha`` on complete cases; pingouin's
    own CI would keep the original n). The CI is recomputed unrounded via
    :func:`cronbach_alpha_ci` (pingouin rounds it to 3 dp).

    Reference: Cronbach (1951) Psychometrika 16:297; Feldt (1965)
    Psychometrika 30:357.
    """
    import pingouin

    df = pd.DataFrame(as_float_matrix(data))
    df.columns = [f"item{j}" for j in range(df.shape[1])]
    n_rows, k = df.shape
    alpha, _ = pingouin.cronbach_alpha(data=df, nan_policy=nan_policy, ci=ci_level)
    n_used = int(df.dropna(how="any").shape[0]) if nan_policy == "listwise" else n_rows
    ci = cronbach_alpha_ci(alpha, n_used, k, ci_level=ci_level, df2=df2)
    return Estimate(
        value=float(alpha), ci_low=ci.ci_low, ci_high=ci.ci_high, ci_level=ci_level,
        n=n_used, method=f"Cronbach alpha (pingouin, {nan_policy}); {ci.method}",
        extra={"k": k, "n_rows": n_rows, "nan_policy": nan_policy, **ci.extra},
    )
