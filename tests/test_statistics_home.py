"""The statistics the engine and the benches compute, each from engine.statistics, against published worked examples
(the source beside each) or, where none is at hand, a value derived by hand from the definition."""
import math

import numpy as np
import pandas as pd
import pytest

from engine import statistics as st

# Hanley & McNeil (1982), Radiology 143:29, Table 1: 109 CT images rated 1 (definitely normal) to 5 (definitely
# abnormal); 58 normal and 51 abnormal patients. The paper's area under the ROC curve: 0.893.
HM_NORMAL = (33, 6, 6, 11, 2)
HM_ABNORMAL = (3, 2, 2, 11, 33)


def _hanley_mcneil():
    scores = [r for r, c in enumerate(HM_NORMAL, 1) for _ in range(c)]
    scores += [r for r, c in enumerate(HM_ABNORMAL, 1) for _ in range(c)]
    return [0] * sum(HM_NORMAL) + [1] * sum(HM_ABNORMAL), scores


def test_auroc_reproduces_hanley_and_mcneil():
    labels, scores = _hanley_mcneil()
    a = st.auroc(labels, scores)
    assert a == pytest.approx(0.893, abs=5e-4)
    # by hand: abnormal above normal, ties half (2487 + 310 / 2) / (51 x 58)
    assert a == pytest.approx((2487 + 310 / 2) / (51 * 58), abs=1e-12)


def test_auroc_orientation_missing_scores_and_one_class():
    labels, scores = _hanley_mcneil()
    assert st.auroc(labels, [-s for s in scores], higher_is_positive=False) == pytest.approx(st.auroc(labels, scores))
    assert st.auroc(labels, [-s for s in scores]) == pytest.approx(1 - st.auroc(labels, scores))
    assert st.auroc([1, 0, 1, 0], [0.9, None, 0.8, 0.1]) == 1.0  # the pair without a score is left out
    assert math.isnan(st.auroc([1, 1, 0], [0.3, 0.2, None]))  # one class left
    assert st.auroc([True, False, True], [2.0, 1.0, 1.0]) == pytest.approx(0.75)


# Spearman's rho: the IQ and television-hours example of Wikipedia's "Spearman's rank correlation coefficient"
# (10 people): Σd² = 194, rho = 1 − 6·194 / (10·99) = −29/165, p = 0.627188 from the t distribution.
IQ = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]
TV = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]


def test_spearman_reproduces_the_textbook_example():
    e = st.spearman_rho(IQ, TV)
    assert e.value == pytest.approx(-29 / 165, abs=1e-12)
    assert e.p_value == pytest.approx(0.627188, abs=1e-6)
    assert st.spearman_defined(IQ, TV) == pytest.approx(-29 / 165, abs=1e-12)
    assert st.spearman_defined([1, 2], [2, 1]) is None  # fewer than 3 pairs
    assert st.spearman_defined([3, 3, 3], [1, 2, 3]) is None  # a constant side
    assert list(st.midranks([10, 20, 20, 30])) == [1.0, 2.5, 2.5, 4.0]


def test_spearman_and_mae_with_a_case_bootstrap_interval():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    y = x + rng.normal(0, 0.7, 60)
    groups = np.repeat(np.arange(20), 3)
    e = st.spearman_clustered(x, y, groups, n_boot=300, seed=2)
    assert e.value == pytest.approx(st.spearman_rho(x, y).value) and e.n == 60 and e.groups == 20
    # the interval is the percentile interval of rho over resampled whole groups
    assert e.ci == pytest.approx(st.cluster_bootstrap(lambda i: st.spearman_defined(x[i], y[i]), groups, 300, 2))
    assert e.ci[0] < e.value < e.ci[1]
    m = st.mean_absolute_error_clustered(x, y, groups, n_boot=300, seed=2)
    assert m.value == pytest.approx(float(np.mean(np.abs(x - y)))) and m.ci[0] < m.value < m.ci[1]
    assert st.spearman_clustered(x[:6], y[:6], groups[:6], n_boot=50).ci is None  # two groups: no interval
    assert st.mean_absolute_error_clustered([], [], [], n_boot=50).value is None


def test_cluster_bootstrap_values_resample_whole_groups():
    groups = ["b", "a", "b", "c", "a", "c"]
    sizes = st.cluster_bootstrap_values(lambda i: float(len(i)), groups, 40, seed=1)
    assert len(sizes) == 40 and set(sizes) == {6.0}  # every group has two rows, three groups drawn
    firsts = st.cluster_bootstrap_values(lambda i: float(i[0]), groups, 40, seed=1)
    assert set(firsts) <= {1.0, 0.0, 3.0}  # a drawn group enters with all its rows, in row order
    assert st.cluster_bootstrap_values(lambda i: None, groups, 10, seed=1) == []
    assert st.cluster_bootstrap_values(lambda i: 1.0, [], 10, seed=1) == []


# Anscombe (1973), The American Statistician 27:17, data set I: the fitted line y = 3.00 + 0.500 x, r = 0.816.
ANSCOMBE_X = [10, 8, 13, 9, 11, 14, 6, 4, 12, 7, 5]
ANSCOMBE_Y = [8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68]


def test_least_squares_line_reproduces_anscombe():
    line = st.least_squares_line(ANSCOMBE_X, ANSCOMBE_Y)
    assert line.slope == pytest.approx(0.500, abs=5e-4) and line.intercept == pytest.approx(3.00, abs=5e-3)
    assert line.r == pytest.approx(0.816, abs=5e-4) and line.n == 11
    with pytest.raises(ValueError):
        st.least_squares_line([2, 2, 2], [1, 2, 3])


# Bland & Altman (1986), Lancet i:307, Table 1: peak expiratory flow rate (l/min) of 17 subjects, the first
# reading with the Wright and with the mini Wright meter. The paper: mean difference −2.1, SD 38.8, limits of
# agreement −2.1 ∓ 2 × 38.8 = −79.7 to 75.5. From the unrounded data with 1.96 SD: −78.1 to 73.9.
WRIGHT = [494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427]
MINI = [512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451]


def test_bland_altman_reproduces_the_pefr_example():
    ba = st.bland_altman(WRIGHT, MINI)
    assert ba.n == 17 and ba.bias == pytest.approx(-36 / 17, abs=1e-12)  # the differences sum to −36
    assert round(ba.bias, 1) == -2.1 and round(ba.sd, 1) == 38.8
    assert (ba.lower, ba.upper) == pytest.approx((ba.bias - 1.96 * ba.sd, ba.bias + 1.96 * ba.sd))
    assert (round(ba.lower, 1), round(ba.upper, 1)) == (-78.1, 73.9)
    paper = st.bland_altman(WRIGHT, MINI, z=2.0)
    assert (round(-2.1 - 2 * 38.8, 1), round(-2.1 + 2 * 38.8, 1)) == (-79.7, 75.5)
    assert (paper.lower, paper.upper) == pytest.approx((-79.7, 75.5), abs=0.1)
    d = [w - m for w, m in zip(WRIGHT, MINI)]
    assert st.bland_altman(d) == ba  # the differences alone give the same
    with pytest.raises(ValueError):
        st.bland_altman([1.0])


def test_kmo_of_an_equicorrelation_matrix():
    """With k variables all correlated r, every partial correlation given the other k − 2 is r / (1 + (k − 2) r)
    (the inverse of an equicorrelation matrix is a I + b J), so KMO = r² / (r² + (r / (1 + (k − 2) r))²)."""
    for k, r in ((4, 0.5), (4, 0.3), (6, 0.2)):
        corr = np.full((k, k), r)
        np.fill_diagonal(corr, 1.0)
        p = r / (1 + (k - 2) * r)
        assert st.kmo(corr) == pytest.approx(r ** 2 / (r ** 2 + p ** 2), abs=1e-12)
    assert st.kmo(np.full((4, 4), 0.5) + 0.5 * np.eye(4)) == pytest.approx(0.8, abs=1e-12)
    assert math.isnan(st.kmo(np.eye(3)))  # no correlation at all


def test_correlation_matrix_and_its_scree():
    """The matrix holds the pairwise statistics (the textbook rho and Anscombe's r above); an equicorrelation
    matrix has eigenvalues 1 + (k − 1) r once and 1 − r (k − 1) times."""
    sp = st.correlation_matrix(pd.DataFrame({"iq": IQ, "tv": TV}), method="spearman")
    assert sp[0, 1] == pytest.approx(-29 / 165, abs=1e-12) and sp[0, 0] == 1.0
    pe = st.correlation_matrix(np.column_stack([ANSCOMBE_X, ANSCOMBE_Y]))
    assert pe[0, 1] == pytest.approx(0.816, abs=5e-4)
    gappy = pd.DataFrame({"a": [1.0, 2.0, None, 4.0], "b": [2.0, 4.0, 5.0, 8.0]})
    assert st.correlation_matrix(gappy)[0, 1] == pytest.approx(1.0)  # pairwise: the row with a gap is left out
    corr = np.full((5, 5), 0.3)
    np.fill_diagonal(corr, 1.0)
    assert st.scree_eigenvalues(corr) == pytest.approx([1 + 4 * 0.3] + [0.7] * 4)
    assert st.scree_eigenvalues([[1.0, float("nan")], [float("nan"), 1.0]]) == [1.0, 1.0]


# Pinheiro & Bates (2000), Mixed-Effects Models in S and S-PLUS, section 1.1: the Rail data (travel time of an
# ultrasonic wave, 3 measurements on each of 6 rails), lme REML fit: intercept 66.5 (SE 10.171), between-rail SD
# 24.805, residual SD 4.0208.
RAIL = {1: (55, 53, 54), 2: (26, 37, 32), 3: (78, 91, 85), 4: (92, 100, 96), 5: (49, 51, 50), 6: (80, 85, 83)}


def test_mixed_model_reproduces_the_rail_example():
    df = pd.DataFrame([{"rail": k, "travel": v} for k, vs in RAIL.items() for v in vs])
    fit = st.mixed_model("travel ~ 1", df, groups=df["rail"])
    assert fit.params["Intercept"] == pytest.approx(66.5, abs=1e-6)
    assert math.sqrt(fit.group_variance) == pytest.approx(24.805, rel=1e-3)
    assert math.sqrt(fit.residual_variance) == pytest.approx(4.0208, rel=1e-3)
    lo, hi = fit.conf_int["Intercept"]
    assert (hi - lo) / (2 * 1.959964) == pytest.approx(10.171, rel=1e-3)
    assert list(fit.params)[-1] == "Group Var" and fit.n == 18 and fit.groups == 6 and fit.converged


# The "hours studied vs passing" example of Wikipedia's "Logistic regression" (20 students): the maximum-likelihood
# fit is logit P(pass) = −4.0777 + 1.5046 · hours.
HOURS = [0.50, 0.75, 1.00, 1.25, 1.50, 1.75, 1.75, 2.00, 2.25, 2.50, 2.75, 3.00, 3.25, 3.50, 4.00, 4.25, 4.50, 4.75,
         5.00, 5.50]
PASSED = [0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1]


def test_bounded_logistic_is_maximum_likelihood_when_no_bound_binds():
    fit = st.bounded_logistic([[h] for h in HOURS], PASSED, l2=0.0)
    assert fit.intercept == pytest.approx(-4.0777, abs=1e-3) and fit.weights[0] == pytest.approx(1.5046, abs=1e-3)


def test_bounded_logistic_keeps_a_weight_at_its_bound():
    # hours count against passing in the second column: unbounded it would take a negative weight
    X = [[h, -h] for h in HOURS]
    fit = st.bounded_logistic(X, PASSED, l2=0.0)
    assert fit.weights[1] == pytest.approx(0.0, abs=1e-8) and fit.weights[0] == pytest.approx(1.5046, abs=1e-3)
    free = st.bounded_logistic([[-h] for h in HOURS], PASSED, lower=None, l2=0.0)
    assert free.weights[0] == pytest.approx(-1.5046, abs=1e-3)


def test_logistic_curve_recovers_the_curve_it_was_drawn_from():
    x = np.linspace(0, 0.8, 30)
    rate = 1 / (1 + np.exp(-(-3.0 + 8.0 * x)))
    c = st.logistic_curve(x, rate, p0=(0.0, 1.0))
    assert (c.a, c.b) == pytest.approx((-3.0, 8.0), abs=1e-6)


def test_ridge_is_the_closed_form_on_standardised_columns():
    """Hoerl & Kennard (1970): b = (ZᵀZ + αI)⁻¹ Zᵀ(y − ȳ) on the standardised columns Z, intercept ȳ."""
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(30, 3)) * [1.0, 5.0, 0.2] + [0.0, 2.0, -1.0]
    y = rows @ [1.0, -0.3, 2.0] + rng.normal(0, 0.5, 30)
    fit = st.ridge_standardised(rows, y, alpha=5.0)
    z = (rows - rows.mean(axis=0)) / rows.std(axis=0)
    b = np.linalg.solve(z.T @ z + 5.0 * np.eye(3), z.T @ (y - y.mean()))
    assert fit.coef == pytest.approx(tuple(b), abs=1e-10) and fit.intercept == pytest.approx(y.mean())
    assert fit.means == pytest.approx(tuple(rows.mean(axis=0))) and fit.scales == pytest.approx(tuple(rows.std(axis=0)))
    # a missing value takes its column's mean; a constant column keeps scale 1
    gappy = rows.copy()
    gappy[0, 0] = np.nan
    gappy[:, 2] = 4.0
    g = st.ridge_standardised(gappy, y, alpha=5.0)
    assert g.means[0] == pytest.approx(np.nanmean(gappy[:, 0])) and g.scales[2] == 1.0
    assert g.coef[2] == pytest.approx(0.0, abs=1e-12)


def test_isotonic_steps_pool_adjacent_violators():
    """Pool adjacent violators by hand: 1, 3, 2, 4, 3, 5 -> 1, 2.5, 2.5, 3.5, 3.5, 5."""
    xk, yk = st.isotonic_steps(np.arange(1, 7, dtype=float), np.array([1, 3, 2, 4, 3, 5.0]))
    assert np.interp(np.arange(1, 7), xk, yk) == pytest.approx([1, 2.5, 2.5, 3.5, 3.5, 5])
    mk, my = st.monotone_knots(np.arange(1, 7, dtype=float), np.array([1, 3, 2, 4, 3, 5.0]))
    assert mk == pytest.approx([1.0, 2.5, 4.5, 6.0])  # one knot per isotonic block, at its mean predictor
    assert np.all(np.diff(my) > 0) and 1 < my[0] and my[-1] < 5
