"""Reference-case tests for engine.statistics.

Every case in tests/data/reliability_cases.json (a byte-for-byte copy of the
project's shared reference file) is run: the statistic named by
``statistic``/``variant`` is computed with the convention the case's ``notes``
and ``source`` describe, then compared with ``expected`` (within
``tolerance``), ``ci_expected`` (within ``ci_tolerance``, else ``tolerance``)
and, where given, ``extra_expected``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from engine import statistics as rel

DATA = Path(__file__).resolve().parent / "data" / "reliability_cases.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))
BY_ID = {c["id"]: c for c in CASES}

# Per-case conventions that are not implied by statistic/variant alone (all
# taken from the case's notes/source):
CASE_OPTIONS: dict[str, dict] = {
    # Fleiss: DescToolsX KappaM CI = kappa +/- 1.96 * SE0 (Fleiss' SE under H0).
    "fleiss_desctoolsx_statement_40x5": {"ci_method": "fleiss_h0"},
    # irrCAC kappa2.table: CI from Gwet's variance with t(n-1) quantile.
    "cohen_abstractors_unweighted": {"se_method": "gwet"},
    "cohen_abstractors_quadratic": {"se_method": "gwet"},
    # irrCAC gwet.ac1.table: contingency-table variance (se 0.04321747 / 0.01792019),
    # not the subject-level one (its CI lower bound 0.7631 misses the published 0.764).
    "gwet_ac1_cont3x3abstractors": {"variance": "table"},
    "gwet_ac2_quadratic_cont3x3abstractors": {"variance": "table"},
}


# --------------------------------------------------------------------------- #
# Dispatch: case -> (main quantity, (ci_low, ci_high) or None, result object)
# --------------------------------------------------------------------------- #
def _columns(case):
    d = np.array(case["data"], dtype=float)
    return d[:, 0], d[:, 1]


def _wilcoxon_kwargs(variant: str) -> dict:
    alt = "greater" if variant.startswith("greater") else "less" if variant.startswith("less") else "two-sided"
    if "exact" in variant:
        return {"alternative": alt, "method": "exact"}
    return {"alternative": alt, "method": "normal", "continuity": "no_continuity" not in variant}


def _mwu_kwargs(variant: str) -> dict:
    alt = "greater" if variant.startswith("greater") else "less" if variant.startswith("less") else "two-sided"
    if "exact" in variant:
        return {"alternative": alt, "method": "exact"}
    return {"alternative": alt, "method": "normal", "continuity": "no_continuity" not in variant}


def compute(case):
    stat, variant, opts = case["statistic"], case["variant"], CASE_OPTIONS.get(case["id"], {})
    data = case["data"]
    if stat == "ICC":
        r = rel.icc(data, form=variant, ci_level=case.get("ci_level") or 0.95)
        return r.value, r.ci, r
    if stat == "krippendorff_alpha":
        r = rel.krippendorff_alpha(data, level=variant.split("_", 1)[1])
        return r.value, r.ci, r
    if stat == "gwet_ac":
        kind, weights = variant.split("_", 1)
        assert (kind == "AC1") == (weights == "unweighted")
        r = rel.gwet_ac(data, weights=weights, ci_level=case.get("ci_level") or 0.95, **opts)
        return r.value, r.ci, r
    if stat == "fleiss_kappa":
        r = rel.fleiss_kappa(data, ci_level=case.get("ci_level") or 0.95, **opts)
        return r.value, r.ci, r
    if stat == "cohen_kappa":
        weights = {"unweighted": "unweighted", "weighted_linear": "linear",
                   "weighted_quadratic": "quadratic"}[variant]
        r = rel.cohen_kappa(data, weights=weights, ci_level=case.get("ci_level") or 0.95, **opts)
        return r.value, r.ci, r
    if stat == "cronbach_alpha":
        if variant.startswith("feldt_ci_from_summary"):
            inp = case["inputs"]
            df2 = "n(k-1)" if variant.endswith("df2_n(k-1)") else "(n-1)(k-1)"
            r = rel.cronbach_alpha_ci(inp["alpha"], inp["n_subjects"], inp["k_items"],
                                      ci_level=inp["conf_level"], df2=df2)
        else:
            policy = "listwise" if variant == "alpha_listwise_missing" else "pairwise"
            r = rel.cronbach_alpha(data, nan_policy=policy, ci_level=case.get("ci_level") or 0.95)
        main = r.ci_low if case.get("expected_quantity") == "ci_lower" else r.value
        return main, r.ci, r
    if stat == "wilcoxon_signed_rank":
        x, y = _columns(case)
        r = rel.wilcoxon_signed_rank(x, y, **_wilcoxon_kwargs(variant))
        assert case["expected_quantity"] == "p_value"
        return r.p_value, None, r
    if stat == "mann_whitney_u":
        r = rel.mann_whitney_u(data["x"], data["y"], **_mwu_kwargs(variant))
        assert case["expected_quantity"] == "p_value"
        return r.p_value, None, r
    if stat == "pearson_r":
        r = rel.pearson_r(data["x"], data["y"], ci_level=case.get("ci_level") or 0.95)
        return r.value, r.ci, r
    if stat == "spearman_rho":
        r = rel.spearman_rho(data["x"], data["y"])
        return r.value, None, r
    raise AssertionError(f"no dispatcher for {stat}/{variant}")


def extra_quantity(case, key: str, result):
    """Compute an ``extra_expected`` quantity of a case."""
    x = y = None
    if case["statistic"] == "wilcoxon_signed_rank":
        x, y = _columns(case)
    if key == "scipy_T_min(W+,W-)":
        return result.extra["T_min"]
    if key == "scipy_W":  # scipy's statistic for a one-sided test is W+
        return result.statistic
    if key == "R_V":
        return result.extra["W_plus"]
    if key.startswith("p_") and case["statistic"] == "wilcoxon_signed_rank":
        alt = "greater" if "greater" in key else "less"
        if key.endswith("exact"):
            return rel.wilcoxon_signed_rank(x, y, alternative=alt, method="exact").p_value
        return rel.wilcoxon_signed_rank(x, y, alternative=alt, method="normal",
                                        continuity=not key.endswith("nocorrect")).p_value
    if key == "U_x":
        return result.extra["U_x"]
    if case["statistic"] == "pearson_r":
        d = case["data"]
        if key == "p_two_sided":
            return rel.pearson_r(d["x"], d["y"]).p_value
        if key == "p_greater":
            return rel.pearson_r(d["x"], d["y"], alternative="greater").p_value
        if key in ("t", "df"):
            return result.extra[key]
    if case["statistic"] == "spearman_rho":
        d = case["data"]
        if key == "p_two_sided_t_approx":
            return rel.spearman_rho(d["x"], d["y"]).p_value
        if key == "p_one_sided_greater_t_approx":  # README trap: the Wikipedia p is one-sided
            return rel.spearman_rho(d["x"], d["y"], alternative="greater").p_value
    raise AssertionError(f"unknown extra quantity {key!r}")


def _printed_tolerance(value, case_tol: float) -> float:
    """Half a unit in the last printed digit of a published number (ints: exact)."""
    if isinstance(value, int):
        return 1e-9
    text = repr(value)
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 12
    return max(case_tol, 0.5 * 10 ** (-decimals) * 1.0001)


# --------------------------------------------------------------------------- #
# Tests
# --------------------------------------------------------------------------- #
def test_reference_file_has_all_cases():
    assert len(CASES) == 78
    assert len(BY_ID) == 78


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reference_case(case):
    value, ci, result = compute(case)
    tol = case["tolerance"]
    assert value == pytest.approx(case["expected"], abs=tol), (value, case["expected"])
    if case.get("ci_expected") is not None:
        assert ci is not None, "the case publishes a CI but none was computed"
        ci_tol = case.get("ci_tolerance") or tol
        lo, hi = case["ci_expected"]
        assert ci[0] == pytest.approx(lo, abs=ci_tol), (ci, case["ci_expected"])
        assert ci[1] == pytest.approx(hi, abs=ci_tol), (ci, case["ci_expected"])
    for key, expected in (case.get("extra_expected") or {}).items():
        got = extra_quantity(case, key, result)
        assert got == pytest.approx(expected, abs=_printed_tolerance(expected, tol)), (key, got, expected)


# ----- data integrity: expanded raw data match the published tables ---------
@pytest.mark.parametrize("case", [c for c in CASES if c.get("data_table")],
                         ids=[c["id"] for c in CASES if c.get("data_table")])
def test_data_matches_contingency_table(case):
    table = np.array(case["data_table"])
    cats = sorted({v for row in case["data"] for v in row})
    if len(cats) < table.shape[0]:  # SAS table 10: one category unused by rater 2 only
        cats = list(range(1, table.shape[0] + 1))
    if all(isinstance(c, str) for c in cats):  # Bortz: categories V, N, P in table order
        cats = ["V", "N", "P"]
    idx = {c: i for i, c in enumerate(cats)}
    got = np.zeros_like(table)
    for a, b in case["data"]:
        got[idx[a], idx[b]] += 1
    np.testing.assert_array_equal(got, table)


@pytest.mark.parametrize("case", [c for c in CASES if c.get("data_counts")],
                         ids=[c["id"] for c in CASES if c.get("data_counts")])
def test_data_matches_count_table(case):
    counts = np.array(case["data_counts"])
    got = np.array([[Counter(row)[k] for k in range(1, counts.shape[1] + 1)] for row in case["data"]])
    np.testing.assert_array_equal(got, counts)


# ----- conventions documented in the README "known traps" ------------------
def test_feldt_df2_variants_differ():
    """statpsych's df2 = n(k-1) differs from the usual (n-1)(k-1) by ~6e-5."""
    usual = rel.cronbach_alpha_ci(0.85, 89, 7, df2="(n-1)(k-1)")
    statpsych = rel.cronbach_alpha_ci(0.85, 89, 7, df2="n(k-1)")
    assert statpsych.ci_low == pytest.approx(0.7971254, abs=1e-6)
    assert usual.ci_low == pytest.approx(0.7970649, abs=1e-6)
    assert abs(usual.ci_low - statpsych.ci_low) > 3e-5


def test_cohen_weights_by_rank_vs_value():
    """R irr / scikit-learn space weights by observed level order (1,2,3,4,6)."""
    data = BY_ID["cohen_irr_anxiety_r2r3_weighted_linear"]["data"]
    by_rank = rel.cohen_kappa(data, weights="linear", weights_by="rank").value
    by_value = rel.cohen_kappa(data, weights="linear", weights_by="value").value
    assert by_rank == pytest.approx(0.1459075, abs=1e-7)
    assert abs(by_value - by_rank) > 0.01
    from sklearn.metrics import cohen_kappa_score

    a, b = zip(*data)
    assert by_rank == pytest.approx(cohen_kappa_score(a, b, weights="linear"), abs=1e-12)
    q_rank = rel.cohen_kappa(data, weights="quadratic").value
    assert q_rank == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"), abs=1e-12)


def test_gwet_ordinal_is_not_krippendorff_ordinal():
    data = BY_ID["gwet_ac2_ordinal_raw4raters"]["data"]
    w = rel.agreement_weights([1, 2, 3, 4, 5], "ordinal")
    assert w[0, 1] == pytest.approx(1 - 1 / 10) and w[0, 4] == 0
    assert rel.krippendorff_alpha(data, "ordinal").value == pytest.approx(0.815, abs=1e-3)
    assert rel.gwet_ac(data, "ordinal").value == pytest.approx(0.899, abs=5e-4)


def test_cohen_gwet_and_asymptotic_ci_differ():
    data = BY_ID["cohen_abstractors_unweighted"]["data"]
    g = rel.cohen_kappa(data, se_method="gwet")
    a = rel.cohen_kappa(data, se_method="asymptotic")
    assert g.value == a.value
    assert g.se == pytest.approx(0.05891072, abs=1e-7)  # irrCAC README stderr
    assert g.ci != a.ci


def test_fleiss_gwet_standard_error_matches_irrcac():
    # irrCAC README: fleiss.kappa.dist(distrib.6raters) stderr 0.08119291, pa 0.5511111, pe 0.2340741
    r = rel.fleiss_kappa(BY_ID["fleiss_distrib6raters_15x6"]["data"], ci_method="gwet")
    assert r.se == pytest.approx(0.08119291, abs=1e-7)
    assert r.extra["pa"] == pytest.approx(0.5511111, abs=1e-7)
    assert r.extra["pe"] == pytest.approx(0.2340741, abs=1e-7)
    # irrCAC README: fleiss.kappa.raw(cac.raw4raters): pa 0.8181818, pe 0.2387153, se 0.15302
    m = rel.fleiss_kappa(BY_ID["fleiss_raw4raters_missing"]["data"])
    assert m.extra["pa"] == pytest.approx(0.8181818, abs=1e-7)
    assert m.extra["pe"] == pytest.approx(0.2387153, abs=1e-7)
    assert m.se == pytest.approx(0.15302, abs=1e-5)
    with pytest.raises(ValueError):
        rel.fleiss_kappa(BY_ID["fleiss_raw4raters_missing"]["data"], ci_method="fleiss_h0")


def test_gwet_ac1_raw5observers_components():
    # afergadis/irrCAC test: pa 0.616, pe 0.236, se 0.122
    r = rel.gwet_ac(BY_ID["gwet_ac1_raw5observers"]["data"])
    assert r.extra["pa"] == pytest.approx(0.616, abs=5e-4)
    assert r.extra["pe"] == pytest.approx(0.236, abs=5e-4)
    assert r.se == pytest.approx(0.122, abs=5e-4)


def test_icc_ci_at_other_levels_uses_same_formulas():
    data = BY_ID["icc_shrout_fleiss_ICC1"]["data"]
    x = np.array(data, dtype=float)
    from engine.statistics.icc import icc_ci

    own = icc_ci(x, 0.95)
    for short, est in rel.icc_all(data).items():
        form = est.extra["form"]
        assert own[form][0] == pytest.approx(est.ci_low, abs=1e-12)
        assert own[form][1] == pytest.approx(est.ci_high, abs=1e-12)
    narrow = rel.icc(data, "ICC2", ci_level=0.90)
    wide = rel.icc(data, "ICC2", ci_level=0.95)
    assert wide.ci_low < narrow.ci_low < narrow.value < narrow.ci_high < wide.ci_high


def test_krippendorff_bootstrap_brackets_estimate():
    data = BY_ID["kripp_hayes2007_nominal"]["data"]
    r = rel.krippendorff_alpha_bootstrap(data, "nominal", n_boot=300, seed=1)
    assert r.ci_low < r.value < r.ci_high
    assert r.value == pytest.approx(0.4765, abs=1e-3)
    again = rel.krippendorff_alpha_bootstrap(data, "nominal", n_boot=300, seed=1)
    assert again.ci == r.ci  # seeded


def test_results_are_frozen_and_missing_values_accepted():
    r = rel.gwet_ac([[1, 1], [2, None], [float("nan"), 3], [2, 2], [1, 2]])
    assert isinstance(r, rel.Estimate)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.value = 0.0  # type: ignore[misc]
    assert r.n == 5 and r.extra["n_units_2plus"] == 3
    assert -1 <= r.ci_low <= r.value <= r.ci_high <= 1
    assert math.isfinite(r.se)


def test_module_does_not_import_streamlit():
    src = Path(rel.__file__).read_text(encoding="utf-8")
    assert "streamlit" not in src.replace("never imports streamlit", "")


def test_gwet_table_variance_matches_irrcac():
    # irrCAC gwet.ac1.table(cont3x3abstractors): se 0.04321747; quadratic: se 0.01792019
    data = BY_ID["gwet_ac1_cont3x3abstractors"]["data"]
    t1 = rel.gwet_ac(data, variance="table")
    t2 = rel.gwet_ac(data, "quadratic", variance="table")
    assert t1.se == pytest.approx(0.04321747, abs=1e-8)
    assert t2.se == pytest.approx(0.01792019, abs=1e-8)
    subj = rel.gwet_ac(data)  # subject-level variance: same coefficient, other se
    assert subj.value == t1.value and subj.se != pytest.approx(t1.se, abs=1e-6)
    with pytest.raises(ValueError):
        rel.gwet_ac(BY_ID["gwet_ac1_raw4raters"]["data"], variance="table")


def test_bootstrap_coincidence_alpha_equals_package_alpha():
    """The fast bootstrap recomputes alpha from per-unit coincidence matrices; on the full data that must equal
    the krippendorff package's alpha, for every level of measurement (canonical 4 x 12 example)."""
    case = next(c for c in CASES if c["id"] == "kripp_canonical_4x12_nominal")
    for level in ("nominal", "ordinal", "interval", "ratio"):
        est = rel.krippendorff_alpha_bootstrap(case["data"], level, n_boot=50, seed=1)
        assert est.extra["alpha_from_coincidences"] == pytest.approx(est.value, abs=1e-9)
        assert est.ci_low <= est.value <= est.ci_high


def test_icc_leaves_pingouins_options_alone_and_its_ci_matches_pingouins():
    import pingouin

    x = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
    before = dict(pingouin.options)
    est = rel.icc_all(x)
    assert pingouin.options == before  # no global option is set, even for a moment
    import pandas as pd

    long = pd.DataFrame({"t": np.repeat(np.arange(6), 4), "r": np.tile(np.arange(4), 6), "y": x.ravel()})
    import warnings

    with warnings.catch_warnings():  # pingouin 0.7 calls a pandas method deprecated in pandas 3.1
        warnings.simplefilter("ignore")
        tab = pingouin.intraclass_corr(long, targets="t", raters="r", ratings="y").set_index("Type")
    lo, hi = tab.loc["ICC(C,k)", "CI95"]
    assert (round(est["ICC3k"].ci_low, 2), round(est["ICC3k"].ci_high, 2)) == (lo, hi)
    assert est["ICC3k"].ci_low != round(est["ICC3k"].ci_low, 2)  # ours is not rounded
