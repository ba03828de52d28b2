"""The one bootstrap (engine.statistics.bootstrap) against scipy's and its own definitions."""
import numpy as np
import pytest
from scipy import stats

from engine.statistics.bootstrap import cluster_bootstrap, percentile_interval, resample_counts, two_sided_p


def test_resample_counts_draw_every_unit_n_times_per_resample():
    w = resample_counts(7, 50, seed=3, with_observed=True)
    assert w.shape == (51, 7) and np.all(w[0] == 1) and np.all(w.sum(axis=1) == 7)
    assert np.array_equal(resample_counts(7, 50, seed=3), w[1:])  # the same resamples with or without the observed


def test_percentile_interval_of_a_mean_matches_scipy_bootstrap():
    x = np.random.default_rng(0).normal(3.0, 1.0, 60)
    w = resample_counts(len(x), 20000, seed=1)
    ours = percentile_interval(w @ x / len(x))
    ref = stats.bootstrap((x,), np.mean, n_resamples=20000, method="percentile", random_state=2).confidence_interval
    assert ours == pytest.approx((ref.low, ref.high), abs=0.03)
    assert np.isnan(percentile_interval([])).all()


def test_two_sided_p_counts_both_sides():
    assert two_sided_p([1.0, 2.0, 3.0, -1.0]) == pytest.approx(0.5)
    assert two_sided_p([0.5] * 10) == 0.0 and two_sided_p([-1.0, 1.0]) == 1.0


def test_cluster_bootstrap_keeps_groups_whole():
    groups = np.repeat(np.arange(10), 3)
    values = np.repeat(np.arange(10, dtype=float), 3)  # constant within a group
    seen = []

    def fn(idx):
        seen.append(idx)
        return float(values[idx].mean())

    lo, hi = cluster_bootstrap(fn, groups, 200, seed=0)
    assert lo < 4.5 < hi
    assert all(len(i) == 30 and all(np.sum(groups[i] == g) % 3 == 0 for g in range(10)) for i in seen)
    assert cluster_bootstrap(fn, groups[:6], 200, seed=0) is None  # two groups: too few
