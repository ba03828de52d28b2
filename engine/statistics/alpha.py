"""Krippendorff's alpha (nominal, ordinal, interval, ratio) through the krippendorff package, and a unit-resampling
bootstrap of its interval.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from engine.statistics.bootstrap import percentile_interval, resample_counts
from engine.statistics.base import (Estimate, KrippLevel, as_float_matrix, as_object_matrix, category_codes,
                                          category_list)


def _kripp_numeric(data: Any, level: str, categories: Optional[Sequence]) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Units x raters float matrix with NaN for missing.

    Numeric ratings are used as they are. Non-numeric labels (or any ratings
    when ``categories`` is given) are coded 0..q-1 by the given (else sorted)
    category order, which is only meaningful for the nominal and ordinal metrics.
    Returns the matrix and the value domain (``None`` = let the package infer it).
    """
    obj = as_object_matrix(data)
    if categories is None:
        try:
            return as_float_matrix(obj), None
        except (TypeError, ValueError):
            pass
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"{level} alpha needs numeric ratings (and no category labels)")
    cats = category_list(obj, categories)
    codes = category_codes(obj, cats).astype(float)
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
    W = resample_counts(n_units, n_boot, seed)
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
    lo, hi = percentile_interval(boots_arr, ci_level)
    return Estimate(
        value=point.value, ci_low=float(lo), ci_high=float(hi), ci_level=ci_level,
        n=point.n, se=float(boots_arr.std(ddof=1)),
        method=f"{point.method}; percentile bootstrap over units (n_boot={n_boot}, seed={seed})",
        extra={**point.extra, "n_boot_valid": int(boots_arr.size), "n_boot": n_boot, "seed": seed,
               "alpha_from_coincidences": _kripp_from_coincidence(units.sum(axis=0), level, domain)},
    )
