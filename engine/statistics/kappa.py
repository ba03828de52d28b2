"""Chance-corrected agreement on categories: Gwet's AC1/AC2 with missing ratings, Fleiss' kappa, Cohen's kappa
with asymptotic standard errors.
"""
from __future__ import annotations

import math
from typing import Any, Literal, Optional, Sequence

import numpy as np
from scipy import stats

from engine.statistics.base import (Estimate, WeightName, agreement_weights, as_object_matrix, category_codes,
                                          category_list, count_matrix, t_ci, t_p)


def _prepare_categorical(data: Any, categories: Optional[Sequence]) -> tuple[np.ndarray, list, int]:
    obj = as_object_matrix(data)
    rated = np.array([[v is not None for v in row] for row in obj])
    keep = rated.sum(axis=1) > 0  # units without any rating carry no information
    obj = obj[keep]
    cats = category_list(obj, categories)
    codes = category_codes(obj, cats)
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
    counts = count_matrix(codes, q)
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
    lo, hi = t_ci(ac, se, n, ci_level)
    wname = weights if isinstance(weights, str) else "custom"
    label = "AC1" if wname in ("unweighted", "identity") else f"AC2 ({wname} weights by {weights_by})"
    return Estimate(
        value=float(ac), ci_low=lo, ci_high=hi, ci_level=ci_level, p_value=t_p(ac, se, n),
        n=n, se=se,
        method=f"Gwet {label}; {var_name}, t-based CI",
        extra={"pa": pa, "pe": pe, "categories": cats, "n_units_2plus": n2,
               "n_units_without_ratings_dropped": n_empty, "weights": w.tolist()},
    )


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
    counts = count_matrix(codes, q)
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
        lo, hi = t_ci(kappa, se_gwet, n, ci_level)
        return Estimate(float(kappa), lo, hi, ci_level, t_p(kappa, se_gwet, n), n,
                        method + "; Gwet (2014) variance, t-based CI", se_gwet, extra)
    if ci_method == "fleiss_h0":
        if se0 is None:
            raise ValueError("the Fleiss H0 standard error needs complete, unweighted data")
        z = stats.norm.ppf(1 - (1 - ci_level) / 2)
        p = float(2 * stats.norm.sf(abs(kappa) / se0))
        return Estimate(float(kappa), float(kappa - z * se0), float(kappa + z * se0), ci_level, p, n,
                        method + "; Wald CI with Fleiss' SE under H0 (kappa = 0)", se0, extra)
    raise ValueError("ci_method must be 'gwet' or 'fleiss_h0'")


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
    obj = as_object_matrix(data)
    if obj.shape[1] != 2:
        raise ValueError("Cohen's kappa needs exactly two rater columns")
    complete = np.array([row[0] is not None and row[1] is not None for row in obj])
    obj_c = obj[complete]
    cats = category_list(obj_c, categories)
    q = len(cats)
    codes = category_codes(obj_c, cats)
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
        lo, hi = t_ci(kappa, se_gwet, n, ci_level)
        return Estimate(float(kappa), lo, hi, ci_level, t_p(kappa, se_gwet, n), n,
                        f"{label}; Gwet (2014) variance, t-based CI", se_gwet, extra)
    raise ValueError("se_method must be 'asymptotic' or 'gwet'")
