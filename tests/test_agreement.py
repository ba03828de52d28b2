"""Agreement analytics over a dataset: data arrangement, the LLM-effect bootstrap, reports (reference values of
each statistic are tested in test_reliability.py)."""
import json
import math

import numpy as np
import pytest

from conftest import BUNDLE
from engine import statistics as rel
from engine.core.rubric import ITEMS
from engine.analysis.agreement import analyse, disagreements, reliability_rows
from engine.analysis.items import item_matrix, llm_effect
from engine.data.loading import load_paths


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE], name="sample")[0]


@pytest.fixture(scope="module")
def report(ds):
    # the LLM "judge" here is a deterministic function of the first rater's scores, shifted by one point
    llm = {}
    for r in ds.ratings:
        if r.rater_id == "R1" and r.value is not None:
            llm.setdefault(r.summary_id, {})[r.item] = min(5.0, r.value + 1) if r.item not in (
                "abstraction", "stigmatizing_notes", "stigmatizing_summary") else r.value
    return analyse(ds, llm, n_boot=200)


def _icc3k(m):
    """ICC(3,k) from the two-way ANOVA mean squares (McGraw & Wong 1996, case 3, average measures), written out
    here with numpy: an independent check of the adapter and of the LLM-effect code that uses it."""
    m = np.asarray(m, dtype=float)
    n, k = m.shape
    grand = m.mean()
    ms_rows = k * ((m.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    resid = m - m.mean(axis=1, keepdims=True) - m.mean(axis=0, keepdims=True) + grand
    ms_error = (resid ** 2).sum() / ((n - 1) * (k - 1))
    return (ms_rows - ms_error) / ms_rows


def test_the_adapters_icc3k_is_the_anova_formula(ds):
    m = item_matrix(ds, "accurate")
    x = m.values[~np.isnan(m.values).any(axis=1)]
    assert rel.icc_all(x)["ICC3k"].value == pytest.approx(_icc3k(x), abs=1e-9)


def test_llm_effect_matches_direct_computation(ds):
    m = item_matrix(ds, "accurate")
    x = m.values[~np.isnan(m.values).any(axis=1)]
    llm = np.clip(x[:, 0] + np.array([1, -1, 0] * 10)[: len(x)], 1, 5)
    eff = llm_effect(x, llm, m.rater_ids, n_boot=100, seed=3)
    assert eff.icc_humans == pytest.approx(_icc3k(x))
    assert eff.icc_with_llm == pytest.approx(_icc3k(np.column_stack([x, llm])))
    for j, rid in enumerate(m.rater_ids):
        y = x.copy()
        y[:, j] = llm
        assert eff.icc_substituted[rid] == pytest.approx(_icc3k(y))
    lo, hi = eff.delta_extra_ci
    assert lo <= eff.delta_extra <= hi and 0 <= eff.p_extra <= 1 and eff.n_boot == 100


def test_llm_identical_to_a_rater_changes_nothing_when_it_replaces_that_rater(ds):
    m = item_matrix(ds, "thorough")
    x = m.values[~np.isnan(m.values).any(axis=1)]
    eff = llm_effect(x, x[:, 2].copy(), m.rater_ids, n_boot=50)
    assert eff.icc_substituted[m.rater_ids[2]] == pytest.approx(eff.icc_humans)


def test_an_llm_that_follows_the_raters_raises_the_icc_and_noise_lowers_it(ds):
    m = item_matrix(ds, "thorough")
    x = m.values[~np.isnan(m.values).any(axis=1)]
    follows = llm_effect(x, np.round(x.mean(axis=1)), m.rater_ids, n_boot=200, seed=1)
    noise = llm_effect(x, np.random.default_rng(7).integers(1, 6, len(x)).astype(float), m.rater_ids, n_boot=200,
                       seed=1)
    assert follows.delta_extra > 0 and follows.delta_extra_ci[0] > 0
    assert noise.delta_extra < 0 and noise.delta_substitute_mean < follows.delta_substitute_mean


def test_item_icc_is_the_adapters_icc_on_complete_rows(ds, report):
    m = item_matrix(ds, "cited")
    complete = m.values[~np.isnan(m.values).any(axis=1)]
    a = next(i for i in report.items if i.item == "cited")
    assert a.n_complete == len(complete) and a.n_raters == 7
    assert a.icc["ICC3k"].value == pytest.approx(_icc3k(complete))
    assert a.kripp_ordinal.ci_low <= a.kripp_ordinal.value <= a.kripp_ordinal.ci_high
    assert a.llm_effect is not None and a.llm_vs_human is not None


def test_binary_items_use_ac1_and_nominal_alpha(report):
    a = next(i for i in report.items if i.item == "stigmatizing_summary")
    assert a.gwet_ac1 is not None and a.kripp_nominal is not None and not a.icc


def test_sample_design_is_visible_in_the_statistics(report):
    # summaries with injected defects are rated lower: high vs low quality differs on Accurate
    acc = next(g for g in report.quality_groups if g.item == "accurate")
    assert acc.test.p_value < 0.01 and acc.median_a > acc.median_b
    # the "LLM" (R1 + 1 point) is systematically higher than the human median
    assert next(i for i in report.items if i.item == "succinct").llm_vs_human.p_value < 0.05
    assert report.cronbach is not None and 0 < report.cronbach.value < 1
    assert {c.y for c in report.length} >= {"human_mean", "human_sd", "llm", "abs_diff"}


def test_report_is_json_and_tables_are_plain(report):
    d = json.loads(json.dumps(report.to_dict()))
    assert d["overall"]["icc"]["ICC3k"]["value"] > 0.5
    rows = reliability_rows(report)
    assert rows[-1]["item"] == "overall" and rows[0]["ICC(3,k)"] and rows[0]["item"] == ITEMS[0].label
    assert "eigenvalues" in report.factor_analysis and len(report.item_correlation["matrix"]) == 8


def test_disagreements_are_ranked(report):
    rows = disagreements(report)
    diffs = [r["|LLM − human|"] for r in rows if r["|LLM − human|"] is not None]
    assert diffs == sorted(diffs, reverse=True)
    assert disagreements(report, "accurate")[0]["|LLM − human|"] >= disagreements(report, "accurate")[-1]["|LLM − human|"]


def test_cli_stats_writes_report(tmp_path):
    from engine.cli import main
    out = tmp_path / "r.json"
    assert main(["stats", str(BUNDLE), "--out", str(out), "--boot", "50", "--words"]) == 0
    d = json.loads(out.read_text())
    assert d["n_summaries"] == 36 and not d["has_llm"] and math.isfinite(d["overall"]["icc"]["ICC3k"]["value"])


def test_adjudicated_score_and_spot_check_flow_into_the_statistics(store):
    """Adjudicating the top disagreement changes its human reference; a spot check is compared with the panel and
    does not join it."""
    from engine.data.reviews import ADJUDICATION, SPOT_CHECK, dataset_with_reviews, save_review

    ds, _ = load_paths([BUNDLE], name="sample")
    store.import_dataset(ds)
    llm = {s.summary_id: {"accurate": 1.0} for s in ds.summaries}
    before = analyse(ds, llm, n_boot=20)
    top = disagreements(before, "accurate")[0]["summary_id"]
    row = next(r for r in before.per_summary if r["summary_id"] == top)
    assert row["accurate:human_median"] != 1.0
    save_review(store, "sample", top, "Dr A", ADJUDICATION, {"accurate": 1})
    save_review(store, "sample", top, "Dr B", SPOT_CHECK, {"accurate": 2})
    after = analyse(dataset_with_reviews(store, "sample"), llm, n_boot=20)
    row = next(r for r in after.per_summary if r["summary_id"] == top)
    assert row["accurate:human_median"] == 1.0 and row["accurate:adjudicated"]
    assert row["accurate:abs_diff"] == 0.0
    assert "Dr B" not in after.raters and "adjudicated" not in after.raters
    assert [v.reviewer for v in after.spot_checks.vs_panel] == ["Dr B"]
    assert disagreements(after, "accurate")[0]["summary_id"] != top
