"""Inter-rater reliability, agreement and paired/two-sample statistics.

One adapter function per statistic, each returning a frozen dataclass
(:class:`Estimate` for coefficients, :class:`TestResult` for hypothesis tests).
Well-kept libraries are used where they exist:

* ICC (Shrout & Fleiss forms, F-based CIs) and Cronbach's alpha: ``pingouin``
* Krippendorff's alpha: ``krippendorff``
* classic Fleiss kappa (complete data): ``statsmodels``
* Wilcoxon signed-rank, Mann-Whitney U, Pearson r (Fisher z CI), Spearman rho:
  ``scipy.stats``

Small own implementations are written only where no maintained Python library
exists: Gwet's AC1/AC2 with Gwet's subject-sampling variance (missing ratings
allowed), Gwet's generalised Fleiss kappa (missing data) and its variance, the
Fleiss (1971) null-hypothesis SE, Cohen's kappa with the Fleiss-Cohen-Everitt
(1969) asymptotic SE and Gwet's variance, the Feldt CI from summary statistics,
and a unit-resampling bootstrap for Krippendorff's alpha.

Input convention: a 2-D array-like, rows = units/subjects, columns =
raters/items; ``None``/``NaN`` = missing. Two-sample functions take ``x`` and
``y`` (or one 2-column array for paired data).

This module is UI-free: it never imports streamlit.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "Estimate",
    "TestResult",
    "icc",
    "icc_all",
    "cronbach_alpha",
    "cronbach_alpha_ci",
    "krippendorff_alpha",
    "krippendorff_alpha_bootstrap",
    "gwet_ac",
    "fleiss_kappa",
    "cohen_kappa",
    "wilcoxon_signed_rank",
    "mann_whitney_u",
    "pearson_r",
    "spearman_rho",
    "agreement_weights",
]


# --------------------------------------------------------------------------- #
# Result types
# --------------------------------------------------------------------------- #
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


# --------------------------------------------------------------------------- #
# Input helpers
# --------------------------------------------------------------------------- #
def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _as_object_matrix(data: Any) -> np.ndarray:
    """2-D object array, rows = units, columns = raters; missing -> None."""
    if isinstance(data, pd.DataFrame):
        arr = data.to_numpy(dtype=object)
    else:
        arr = np.array(data, dtype=object)
    if arr.ndim != 2:
        raise ValueError("ratings must be 2-D: rows = units/subjects, columns = raters")
    out = np.empty(arr.shape, dtype=object)
    for idx, v in np.ndenumerate(arr):
        out[idx] = None if _is_missing(v) else v
    return out


def _as_float_matrix(data: Any) -> np.ndarray:
    """2-D float array with NaN for missing (raises for non-numeric ratings)."""
    obj = _as_object_matrix(data)
    out = np.full(obj.shape, np.nan)
    for idx, v in np.ndenumerate(obj):
        if v is not None:
            out[idx] = float(v)
    return out


def _categories(obj: np.ndarray, categories: Optional[Sequence] = None) -> list:
    """Sorted observed categories (or the given ones, in the given order)."""
    if categories is not None:
        return list(categories)
    vals = {v for v in obj.ravel() if v is not None}
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=str)


def _codes(obj: np.ndarray, cats: list) -> np.ndarray:
    """Integer category codes 0..q-1, -1 for missing."""
    index = {c: i for i, c in enumerate(cats)}
    codes = np.full(obj.shape, -1, dtype=int)
    for idx, v in np.ndenumerate(obj):
        if v is not None:
            if v not in index:
                raise ValueError(f"rating {v!r} is not among the categories {cats!r}")
            codes[idx] = index[v]
    return codes


def _count_matrix(codes: np.ndarray, q: int) -> np.ndarray:
    """n x q matrix r_ik = number of raters who put unit i in category k."""
    counts = np.zeros((codes.shape[0], q))
    for k in range(q):
        counts[:, k] = (codes == k).sum(axis=1)
    return counts


def _t_ci(value: float, se: float, n: int, level: float) -> tuple[float, float]:
    """Gwet's interval: coef +/- t(1-(1-level)/2, n-1) * se, truncated to [-1, 1]."""
    t = stats.t.ppf(1 - (1 - level) / 2, n - 1)
    return max(-1.0, value - t * se), min(1.0, value + t * se)


def _t_p(value: float, se: float, n: int) -> Optional[float]:
    """Gwet's p-value 2*(1 - pt(coef/se, n-1)) (as in R irrCAC)."""
    if not se or not np.isfinite(se) or se <= 0:
        return None
    return float(2 * (1 - stats.t.cdf(abs(value) / se, n - 1)))


# --------------------------------------------------------------------------- #
# Agreement weights
# --------------------------------------------------------------------------- #
WeightName = Literal["unweighted", "identity", "linear", "quadratic", "ordinal"]


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


# --------------------------------------------------------------------------- #
# ICC (pingouin)
# --------------------------------------------------------------------------- #
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


def _icc_ci(x: np.ndarray, level: float) -> dict[str, tuple[float, float]]:
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
    level, from the identical formulas in :func:`_icc_ci` (pingouin rounds its
    CI95 column to two decimals, and its options are never changed here).
    Units with any missing rating are dropped (listwise).

    References: Shrout, P.E. & Fleiss, J.L. (1979) Psychol Bull 86:420-428;
    McGraw, K.O. & Wong, S.P. (1996) Psychol Methods 1:30-46.
    """
    import pingouin

    x = _as_float_matrix(data)
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
    own_ci = _icc_ci(x, ci_level)
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


# --------------------------------------------------------------------------- #
# Cronbach's alpha (pingouin) + Feldt CI
# --------------------------------------------------------------------------- #
Df2Rule = Literal["(n-1)(k-1)", "n(k-1)"]


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

    df = pd.DataFrame(_as_float_matrix(data))
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


# --------------------------------------------------------------------------- #
# Krippendorff's alpha (krippendorff package)
# --------------------------------------------------------------------------- #
KrippLevel = Literal["nominal", "ordinal", "interval", "ratio"]


def _kripp_numeric(data: Any, level: str, categories: Optional[Sequence]) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Units x raters float matrix with NaN for missing.

    Numeric ratings are used as they are. Non-numeric labels (or any ratings
    when ``categories`` is given) are coded 0..q-1 by the given (else sorted)
    category order, which is only meaningful for the nominal and ordinal metrics.
    Returns the matrix and the value domain (``None`` = let the package infer it).
    """
    obj = _as_object_matrix(data)
    if categories is None:
        try:
            return _as_float_matrix(obj), None
        except (TypeError, ValueError):
            pass
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"{level} alpha needs numeric ratings (and no category labels)")
    cats = _categories(obj, categories)
    codes = _codes(obj, cats).astype(float)
    codes[codes < 0] = np.nan
    return codes, np.arange(len(cats), dtype=float)


def krippendorff_alpha(
    data: Any, level: KrippLevel = "nominal", categories: Optional[Sequence] = None,
) -> Estimate:
    """Krippendorff's alpha, alpha = 1 - D_o / D_e, via the ``krippendorff`` package.

    D_o / D_e are the observed / expected disagreements over all pairable values
    (units with < 2 ratings are ignored) under the ``level`` metric: nominal,
    ordinal (Krippendorff's frequency-based rank metric), interval
    (squared difference) or ratio ((a-b)/(a+b))^2. Missing ratings are allowed.
    No CI (see :func:`krippendorff_alpha_bootstrap`).

    Reference: Krippendorff, K. (2018) Content Analysis, 4th ed., ch. 12;
    Hayes & Krippendorff (2007) Commun Methods Meas 1:77.
    """
    import krippendorff

    x, domain = _kripp_numeric(data, level, categories)
    kw = {} if domain is None else {"value_domain": domain}
    value = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level, **kw)
    n_pairable = int((np.sum(~np.isnan(x), axis=1) >= 2).sum())
    return Estimate(
        value=float(value), n=n_pairable,
        method=f"Krippendorff alpha, {level} metric (krippendorff package)",
        extra={"n_units": x.shape[0], "n_raters": x.shape[1], "level": level},
    )


def _kripp_unit_coincidences(x: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices o_u[c, k] = (n_uc n_uk - [c = k] n_uc) / (m_u - 1) over the value
    domain, for units with at least two values (Krippendorff 2011, "Computing Krippendorff's alpha")."""
    idx = {v: i for i, v in enumerate(domain.tolist())}
    V = len(domain)
    out = []
    for row in x:
        vals = row[~np.isnan(row)]
        m = len(vals)
        if m < 2:
            continue
        cnt = np.zeros(V)
        for v in vals:
            cnt[idx[float(v)]] += 1
        out.append((np.outer(cnt, cnt) - np.diag(cnt)) / (m - 1))
    return np.array(out) if out else np.zeros((0, V, V))


def _kripp_delta(level: str, domain: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    """Squared difference function delta^2(c, k) for the level of measurement (ordinal uses the marginals)."""
    c = domain[:, None].astype(float)
    k = domain[None, :].astype(float)
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            d = ((c - k) / (c + k)) ** 2
        return np.nan_to_num(d)
    # ordinal: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    i = np.arange(len(domain))
    lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
    between = cum[hi + 1] - cum[lo]
    return (between - (n_c[:, None] + n_c[None, :]) / 2) ** 2


def _kripp_from_coincidence(o: np.ndarray, level: str, domain: np.ndarray) -> float:
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d = _kripp_delta(level, domain, n_c)
    de = (np.outer(n_c, n_c) * d).sum()
    if n <= 1 or de == 0:
        return float("nan")
    return float(1 - (n - 1) * (o * d).sum() / de)


def krippendorff_alpha_bootstrap(
    data: Any, level: KrippLevel = "nominal", n_boot: int = 1000, seed: int = 0,
    ci_level: float = 0.95, categories: Optional[Sequence] = None,
) -> Estimate:
    """Krippendorff's alpha with a percentile bootstrap CI resampling units.

    Units (rows) are drawn with replacement ``n_boot`` times (``numpy`` ``default_rng(seed)``). Because the
    coincidence matrix is a sum over units, each resample's alpha is computed from the per-unit coincidence
    matrices weighted by how often each unit was drawn (the same alpha as recomputing it on the resampled
    data, without re-tabulating); resamples where alpha is undefined are skipped. The point estimate is the
    ``krippendorff`` package's. The CI is the (a/2, 1-a/2) percentile interval and ``se`` the bootstrap
    standard deviation. (A plain unit bootstrap, not Hayes & Krippendorff's coincidence-cell bootstrap.)
    """
    x, domain = _kripp_numeric(data, level, categories)
    if domain is None:
        domain = np.unique(x[~np.isnan(x)])
    domain = np.asarray(domain, dtype=float)
    point = krippendorff_alpha(data, level, categories)
    units = _kripp_unit_coincidences(x, domain)
    n_units = len(units)
    flat = units.reshape(n_units, -1)
    rng = np.random.default_rng(seed)
    W = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(float)
    V = len(domain)
    O = (W @ flat).reshape(n_boot, V, V)  # every resample's coincidence matrix at once
    n_c = O.sum(axis=2)
    n = n_c.sum(axis=1)
    if level == "ordinal":  # the ordinal metric depends on each resample's marginals
        cum = np.concatenate([np.zeros((n_boot, 1)), np.cumsum(n_c, axis=1)], axis=1)
        i = np.arange(V)
        lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
        d = (cum[:, hi + 1] - cum[:, lo] - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2  # (B, V, V)
    else:
        d = np.broadcast_to(_kripp_delta(level, domain, np.zeros(V)), (n_boot, V, V))
    de = np.einsum("bi,bj,bij->b", n_c, n_c, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        boots_arr = 1 - (n - 1) * np.einsum("bij,bij->b", O, d) / de
    boots_arr = boots_arr[np.isfinite(boots_arr)]
    a = 1 - ci_level
    lo, hi = np.quantile(boots_arr, [a / 2, 1 - a / 2])
    return Estimate(
        value=point.value, ci_low=float(lo), ci_high=float(hi), ci_level=ci_level,
        n=point.n, se=float(boots_arr.std(ddof=1)),
        method=f"{point.method}; percentile bootstrap over units (n_boot={n_boot}, seed={seed})",
        extra={**point.extra, "n_boot_valid": int(boots_arr.size), "n_boot": n_boot, "seed": seed,
               "alpha_from_coincidences": _kripp_from_coincidence(units.sum(axis=0), level, domain)},
    )


# --------------------------------------------------------------------------- #
# Gwet AC1 / AC2 (own implementation, Gwet 2014)
# --------------------------------------------------------------------------- #
def _prepare_categorical(data: Any, categories: Optional[Sequence]) -> tuple[np.ndarray, list, int]:
    obj = _as_object_matrix(data)
    rated = np.array([[v is not None for v in row] for row in obj])
    keep = rated.sum(axis=1) > 0  # units without any rating carry no information
    obj = obj[keep]
    cats = _categories(obj, categories)
    codes = _codes(obj, cats)
    return codes, cats, int((~keep).sum())


def _generalised_pa(counts: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, int]:
    """Gwet's weighted percent agreement with missing ratings.

    pa_i = sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)), r*_ik = sum_l w_kl r_il,
    pa = mean of pa_i over the n'' units with r_i >= 2.
    Returns pa, pa_i (0 where r_i < 2), r_i, n''.
    """
    r_i = counts.sum(axis=1)
    r_star = counts @ w.T
    sum_q = (counts * (r_star - 1)).sum(axis=1)
    den = r_i * (r_i - 1)
    two = r_i >= 2
    pa_i = np.where(two, sum_q / np.where(two, den, 1), 0.0)
    n2 = int(two.sum())
    return float(pa_i[two].sum() / n2), pa_i, r_i, n2


def gwet_ac(
    data: Any, weights: WeightName | np.ndarray = "unweighted",
    weights_by: Literal["value", "rank"] = "value",
    categories: Optional[Sequence] = None, ci_level: float = 0.95, population_size: float = math.inf,
    variance: Literal["subjects", "table"] = "subjects",
) -> Estimate:
    """Gwet's AC1 (unweighted) / AC2 (weighted) for any number of raters, missing allowed.

    With r_ik raters classifying unit i into category k, r_i = sum_k r_ik,
    n units with >= 1 rating, n'' units with >= 2 ratings, q categories,
    weights w_kl and T_w = sum_kl w_kl (Gwet 2014, Handbook of Inter-Rater
    Reliability, 4th ed., ch. 2-5; R package irrCAC ``gwet.ac1.raw``)::

        pa  = (1/n'') sum_{i: r_i>=2} sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))
        pi_k = (1/n) sum_i r_ik / r_i
        pe  = T_w / (q (q-1)) * sum_k pi_k (1 - pi_k)
        AC  = (pa - pe) / (1 - pe)

    Variance (subject-sampling linearisation, finite-population factor
    f = n/N)::

        AC*_i = (n/n'') (pa_i - pe [r_i>=2]) / (1 - pe)
                - 2 (1 - AC) (pe_i - pe) / (1 - pe),
        pe_i  = T_w / (q (q-1)) * sum_k r_ik (1 - pi_k) / r_i,
        var   = (1 - f) / (n (n-1)) * sum_i (AC*_i - AC)^2

    CI = AC +/- t(1-a/2, n-1) * se, truncated to [-1, 1]; p = 2 (1 - T_{n-1}(|AC|/se)).

    ``variance="table"`` (two raters, complete data only) uses instead the
    contingency-table variance of R irrCAC ``gwet.ac1.table`` (Gwet 2008,
    Br J Math Stat Psychol 61:29), with p_kl the joint proportions,
    pi_k = (p_k. + p_.k)/2 and e_kl = T_w (1 - (pi_k + pi_l)/2) / (q (q-1))::

        var = (1-f) / (n (1-pe)^2) * [sum_kl p_kl (w_kl - 2 (1-AC) e_kl)^2
                                      - (pa - 2 (1-AC) pe)^2]

    It differs slightly from the subject-level variance on the same data.

    ``weights``: see :func:`agreement_weights`; ``weights_by="value"``
    (irrCAC default: distances between the numeric category values) or
    ``"rank"``. Categories are the sorted observed values unless given.
    """
    codes, cats, n_empty = _prepare_categorical(data, categories)
    q = len(cats)
    w = agreement_weights(cats, weights, weights_by)
    counts = _count_matrix(codes, q)
    n = counts.shape[0]
    pa, pa_i, r_i, n2 = _generalised_pa(counts, w)
    pi = (counts / r_i[:, None]).mean(axis=0)
    tw = w.sum()
    pe = tw * float((pi * (1 - pi)).sum()) / (q * (q - 1)) if q >= 2 else 1e-15
    ac = (pa - pe) / (1 - pe)
    ac_i = (n / n2) * (pa_i - pe * (r_i >= 2)) / (1 - pe)
    pe_i = (tw / (q * (q - 1))) * (counts @ (1 - pi)) / r_i
    ac_i_x = ac_i - 2 * (1 - ac) * (pe_i - pe) / (1 - pe)
    f = n / population_size
    var = (1 - f) / (n * (n - 1)) * float(((ac_i_x - ac) ** 2).sum())
    var_name = "Gwet (2014) subject-sampling variance"
    if variance == "table":
        if codes.shape[1] != 2 or (codes < 0).any():
            raise ValueError("variance='table' needs two raters and complete data")
        table = np.zeros((q, q))
        np.add.at(table, (codes[:, 0], codes[:, 1]), 1)
        p = table / n
        pik = (p.sum(axis=1) + p.sum(axis=0)) / 2
        e = tw * (1 - (pik[:, None] + pik[None, :]) / 2) / (q * (q - 1))
        sum1 = float((p * (w - 2 * (1 - ac) * e) ** 2).sum())
        var = (1 - f) / (n * (1 - pe) ** 2) * (sum1 - (pa - 2 * (1 - ac) * pe) ** 2)
        var_name = "Gwet (2008) contingency-table variance"
    elif variance != "subjects":
        raise ValueError("variance must be 'subjects' or 'table'")
    se = math.sqrt(max(var, 0.0))
    lo, hi = _t_ci(ac, se, n, ci_level)
    wname = weights if isinstance(weights, str) else "custom"
    label = "AC1" if wname in ("unweighted", "identity") else f"AC2 ({wname} weights by {weights_by})"
    return Estimate(
        value=float(ac), ci_low=lo, ci_high=hi, ci_level=ci_level, p_value=_t_p(ac, se, n),
        n=n, se=se,
        method=f"Gwet {label}; {var_name}, t-based CI",
        extra={"pa": pa, "pe": pe, "categories": cats, "n_units_2plus": n2,
               "n_units_without_ratings_dropped": n_empty, "weights": w.tolist()},
    )


# --------------------------------------------------------------------------- #
# Fleiss kappa (statsmodels for classic; own Gwet generalisation + variances)
# --------------------------------------------------------------------------- #
def fleiss_kappa(
    data: Any, ci_method: Literal["gwet", "fleiss_h0"] = "gwet",
    weights: WeightName | np.ndarray = "unweighted", weights_by: Literal["value", "rank"] = "value",
    categories: Optional[Sequence] = None, ci_level: float = 0.95, population_size: float = math.inf,
) -> Estimate:
    """Fleiss' kappa for m raters (rows = units, columns = raters).

    Classic (complete data, m ratings per unit; Fleiss 1971 Psychol Bull 76:378)::

        P_i = (sum_k r_ik^2 - m) / (m (m-1)),  pa = mean_i P_i,
        p_k = sum_i r_ik / (n m),  pe = sum_k p_k^2,  kappa = (pa - pe) / (1 - pe)

    (computed by ``statsmodels.stats.inter_rater.fleiss_kappa`` when the data are
    complete and unweighted). With missing ratings (or weights) Gwet's (2014)
    generalisation is used (R irrCAC ``fleiss.kappa.raw``): pa as in
    :func:`gwet_ac` over units with >= 2 ratings, pi_k = mean_i r_ik / r_i,
    pe = sum_kl w_kl pi_k pi_l. It equals the classic value on complete data.

    ``ci_method``:

    * ``"gwet"``: Gwet's subject-sampling variance
      kappa*_i = (n/n'') (pa_i - pe [r_i>=2]) / (1 - pe) - 2 (1 - kappa) (pe_i - pe) / (1 - pe),
      pe_i = sum_k r_ik pibar_k / r_i with pibar = (W pi + W' pi)/2,
      var = (1-f)/(n(n-1)) sum (kappa*_i - kappa)^2; CI = kappa +/- t(n-1) se, in [-1, 1].
    * ``"fleiss_h0"``: Wald interval kappa +/- z * SE0 with Fleiss' SE under
      H0: kappa = 0 (Fleiss, Nee & Landis 1979; R irr ``kappam.fleiss``,
      DescTools ``KappaM``)::

        SE0 = sqrt(2) / (sum_k p_k q_k sqrt(n m (m-1)))
              * sqrt((sum_k p_k q_k)^2 - sum_k p_k q_k (q_k - p_k))

      p-value = two-sided z test kappa / SE0. Complete data only.
    """
    codes, cats, n_empty = _prepare_categorical(data, categories)
    q = len(cats)
    w = agreement_weights(cats, weights, weights_by)
    counts = _count_matrix(codes, q)
    n = counts.shape[0]
    complete = bool((codes >= 0).all())
    pa, pa_i, r_i, n2 = _generalised_pa(counts, w)
    pi = (counts / r_i[:, None]).mean(axis=0)
    pe = float(pi @ w @ pi)
    kappa = (pa - pe) / (1 - pe)
    method = "Fleiss kappa (Gwet 2014 generalisation)"
    if complete and np.allclose(w, np.eye(q)):
        from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

        kappa_sm = float(sm_fleiss(counts, method="fleiss"))
        assert math.isclose(kappa_sm, kappa, rel_tol=1e-9, abs_tol=1e-12)
        kappa = kappa_sm
        method = "Fleiss kappa (statsmodels)"
    extra: dict[str, Any] = {"pa": pa, "pe": pe, "categories": cats, "n_units_2plus": n2,
                             "n_units_without_ratings_dropped": n_empty}

    # Gwet's variance
    kappa_i = (n / n2) * (pa_i - pe * (r_i >= 2)) / (1 - pe)
    pibar = (w @ pi + w.T @ pi) / 2
    pe_i = (counts @ pibar) / r_i
    kappa_i_x = kappa_i - 2 * (1 - kappa) * (pe_i - pe) / (1 - pe)
    f = n / population_size
    se_gwet = math.sqrt((1 - f) / (n * (n - 1)) * float(((kappa_i_x - kappa) ** 2).sum()))
    extra["se_gwet"] = se_gwet

    se0 = None
    if complete and np.allclose(w, np.eye(q)):
        m = codes.shape[1]
        p = counts.sum(axis=0) / (n * m)
        pq = p * (1 - p)
        se0 = math.sqrt(2) / (pq.sum() * math.sqrt(n * m * (m - 1))) * math.sqrt(
            pq.sum() ** 2 - (pq * ((1 - p) - p)).sum())
        extra["se0_fleiss"] = se0
        extra["z"] = kappa / se0

    if ci_method == "gwet":
        lo, hi = _t_ci(kappa, se_gwet, n, ci_level)
        return Estimate(float(kappa), lo, hi, ci_level, _t_p(kappa, se_gwet, n), n,
                        method + "; Gwet (2014) variance, t-based CI", se_gwet, extra)
    if ci_method == "fleiss_h0":
        if se0 is None:
            raise ValueError("the Fleiss H0 standard error needs complete, unweighted data")
        z = stats.norm.ppf(1 - (1 - ci_level) / 2)
        p = float(2 * stats.norm.sf(abs(kappa) / se0))
        return Estimate(float(kappa), float(kappa - z * se0), float(kappa + z * se0), ci_level, p, n,
                        method + "; Wald CI with Fleiss' SE under H0 (kappa = 0)", se0, extra)
    raise ValueError("ci_method must be 'gwet' or 'fleiss_h0'")


# --------------------------------------------------------------------------- #
# Cohen kappa (own; asymptotic SE and Gwet's variance)
# --------------------------------------------------------------------------- #
def cohen_kappa(
    data: Any, weights: WeightName | np.ndarray = "unweighted",
    weights_by: Literal["rank", "value"] = "rank",
    se_method: Literal["asymptotic", "gwet"] = "asymptotic",
    categories: Optional[Sequence] = None, ci_level: float = 0.95, population_size: float = math.inf,
) -> Estimate:
    """Cohen's kappa (unweighted) or weighted kappa for two raters (2 columns).

    With joint proportions p_kl (q x q table of rater 1 x rater 2, units
    with a missing rating dropped), margins p_k., p_.l and agreement weights
    w_kl (:func:`agreement_weights`)::

        pa = sum_kl w_kl p_kl,  pe = sum_kl w_kl p_k. p_.l,  kappa = (pa - pe) / (1 - pe)

    Default ``weights_by="rank"``: weights equally spaced over the *observed*
    category order (R irr ``kappa2``, scikit-learn ``cohen_kappa_score``, SAS,
    DescTools); ``"value"`` uses numeric distances between category values.

    ``se_method="asymptotic"`` (Fleiss, Cohen & Everitt 1969 Psychol Bull 72:323;
    as SAS/DescTools/statsmodels), with wbar_k. = sum_l p_.l w_kl,
    wbar_.l = sum_k p_k. w_kl::

        var = [sum_kl p_kl (w_kl - (wbar_k. + wbar_.l)(1 - kappa))^2
               - (kappa - pe (1 - kappa))^2] / (n (1 - pe)^2)

    CI = kappa +/- z se; p-value from the z test with the SE under H0
    (var0 = [sum_kl p_k. p_.l (w_kl - (wbar_k. + wbar_.l))^2 - pe^2] / (n (1-pe)^2)).

    ``se_method="gwet"`` (Gwet 2014; R irrCAC ``kappa2.table``)::

        var = (1-f) / (n (1-pe)^2) * [sum_kl p_kl (w_kl - (1-kappa)(wbar_k. + wbar_.l))^2
              - (pa - 2 (1-kappa) pe)^2]

    with CI = kappa +/- t(n-1) se truncated to [-1, 1].
    """
    obj = _as_object_matrix(data)
    if obj.shape[1] != 2:
        raise ValueError("Cohen's kappa needs exactly two rater columns")
    complete = np.array([row[0] is not None and row[1] is not None for row in obj])
    obj_c = obj[complete]
    cats = _categories(obj_c, categories)
    q = len(cats)
    codes = _codes(obj_c, cats)
    n = codes.shape[0]
    table = np.zeros((q, q))
    np.add.at(table, (codes[:, 0], codes[:, 1]), 1)
    w = agreement_weights(cats, weights, weights_by)
    p = table / n
    p_row, p_col = p.sum(axis=1), p.sum(axis=0)
    pa = float((w * p).sum())
    pe = float((w * np.outer(p_row, p_col)).sum())
    kappa = (pa - pe) / (1 - pe)
    wbar_row = w @ p_col          # wbar_k. = sum_l w_kl p_.l
    wbar_col = w.T @ p_row        # wbar_.l = sum_k w_kl p_k.
    s = wbar_row[:, None] + wbar_col[None, :]
    var_asym = (float((p * (w - s * (1 - kappa)) ** 2).sum()) - (kappa - pe * (1 - kappa)) ** 2) / (
        n * (1 - pe) ** 2)
    var0 = (float((np.outer(p_row, p_col) * (w - s) ** 2).sum()) - pe**2) / (n * (1 - pe) ** 2)
    se_asym, se0 = math.sqrt(max(var_asym, 0.0)), math.sqrt(max(var0, 0.0))
    # Gwet (irrCAC kappa2.table): pb.k = W p_.l (row side), pbl. = W' p_k. (column side)
    f = n / population_size
    sum1 = float((p * (w - (1 - kappa) * s) ** 2).sum())
    var_gwet = (1 - f) / (n * (1 - pe) ** 2) * (sum1 - (pa - 2 * (1 - kappa) * pe) ** 2)
    se_gwet = math.sqrt(max(var_gwet, 0.0))
    wname = weights if isinstance(weights, str) else "custom"
    extra = {"pa": pa, "pe": pe, "categories": cats, "table": table.tolist(),
             "se_asymptotic": se_asym, "se0": se0, "se_gwet": se_gwet,
             "n_incomplete_dropped": int((~complete).sum()), "weights": w.tolist()}
    label = "Cohen kappa" if wname in ("unweighted", "identity") else \
        f"weighted kappa ({wname}, by {weights_by})"
    if se_method == "asymptotic":
        z = stats.norm.ppf(1 - (1 - ci_level) / 2)
        pval = float(2 * stats.norm.sf(abs(kappa) / se0)) if se0 > 0 else None
        return Estimate(float(kappa), float(kappa - z * se_asym), float(kappa + z * se_asym), ci_level,
                        pval, n, f"{label}; asymptotic SE (Fleiss, Cohen & Everitt 1969), z CI",
                        se_asym, extra)
    if se_method == "gwet":
        lo, hi = _t_ci(kappa, se_gwet, n, ci_level)
        return Estimate(float(kappa), lo, hi, ci_level, _t_p(kappa, se_gwet, n), n,
                        f"{label}; Gwet (2014) variance, t-based CI", se_gwet, extra)
    raise ValueError("se_method must be 'asymptotic' or 'gwet'")


# --------------------------------------------------------------------------- #
# Two-sample / paired tests and correlations (scipy.stats)
# --------------------------------------------------------------------------- #
def _pair(x: Any, y: Any = None) -> tuple[np.ndarray, np.ndarray]:
    if y is None:
        m = _as_float_matrix(x)
        if m.shape[1] != 2:
            raise ValueError("pass x and y, or one array with two columns")
        return m[:, 0], m[:, 1]
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


Alternative = Literal["two-sided", "greater", "less"]


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
