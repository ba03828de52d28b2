"""A committee's figures: spot checks never erase the panel's agreement, and headlines cannot contradict the
table under them (a constant judge reads as chance)."""
import math

import numpy as np
import pytest

from conftest import BUNDLE
from engine.analysis.agreement import analyse
from engine.analysis.headlines import at_chance, headline
from engine.analysis.spot_checks import spot_check_rows
from engine.data.loading import load_paths
from engine.core.models import Case, Dataset, Note, Rating, Summary
from engine.statistics import Estimate
from engine.data.reviews import SPOT_CHECK, dataset_with_reviews, save_review
from engine.core.rubric import ITEMS

SPOT_VALUES = {"cited": 4, "accurate": 4, "thorough": 3, "useful": 4, "organized": 4, "comprehensible": 5,
               "succinct": 3, "abstraction": 1, "synthesized": 4, "stigmatizing_notes": 0, "stigmatizing_summary": 0}


@pytest.fixture(scope="module")
def sample():
    ds, _ = load_paths([BUNDLE], name="sample")
    return ds


def test_one_spot_check_leaves_every_panel_figure_in_place(store, sample):
    """Reproduces the failure: 11 items of gi-01-s1 spot-checked by one clinician made every ICC 'not computed'
    and moved the human reference."""
    store.import_dataset(sample)
    before = analyse(dataset_with_reviews(store, "sample"), n_boot=50)
    save_review(store, "sample", "gi-01-s1", "Dr Spot", SPOT_CHECK, SPOT_VALUES)
    after = analyse(dataset_with_reviews(store, "sample"), n_boot=50)
    hb, ha = headline(before), headline(after)
    assert [h.humans for h in hb] == [h.humans for h in ha]
    assert all(h.humans is not None for h in ha), [h.verdict for h in ha if h.humans is None]
    assert [a.n_complete for a in before.items] == [a.n_complete for a in after.items]
    assert before.raters == after.raters and "Dr Spot" not in after.raters
    row_b = next(r for r in before.per_summary if r["summary_id"] == "gi-01-s1")
    row_a = next(r for r in after.per_summary if r["summary_id"] == "gi-01-s1")
    assert all(row_b[f"{i.key}:human_median"] == row_a[f"{i.key}:human_median"] for i in ITEMS)
    vs, pairs = spot_check_rows(after.spot_checks)
    assert [v["clinician"] for v in vs] == ["Dr Spot"] and vs[0]["summaries"] == 1 and pairs == []


def test_spot_checks_enter_the_reference_only_when_asked(store, sample):
    store.import_dataset(sample)
    save_review(store, "sample", "gi-01-s1", "Dr Spot", SPOT_CHECK, {"accurate": 1})
    ds = dataset_with_reviews(store, "sample")
    plain = analyse(ds, n_boot=20)
    mixed = analyse(ds, n_boot=20, spot_checks_in_reference=True)
    assert not plain.spot_checks_in_reference and mixed.spot_checks_in_reference
    panel = [r.value for r in ds.ratings if r.summary_id == "gi-01-s1" and r.item == "accurate"
             and r.rater_group not in ("spot-check", "adjudicated", "llm")]
    row_p = next(r for r in plain.per_summary if r["summary_id"] == "gi-01-s1")
    row_m = next(r for r in mixed.per_summary if r["summary_id"] == "gi-01-s1")
    assert row_p["accurate:human_median"] == float(np.median(panel))
    assert row_m["accurate:human_median"] == float(np.median(panel + [1.0]))
    # the panel's own statistics do not move either way
    assert plain.items[1].icc == mixed.items[1].icc


def test_two_clinicians_on_the_same_summary_are_compared_with_each_other(store, sample):
    store.import_dataset(sample)
    save_review(store, "sample", "gi-01-s1", "Dr A", SPOT_CHECK, {"accurate": 4, "cited": 3})
    save_review(store, "sample", "gi-01-s1", "Dr B", SPOT_CHECK, {"accurate": 4, "cited": 5})
    rep = analyse(dataset_with_reviews(store, "sample"), n_boot=20)
    (pair,) = rep.spot_checks.pairs
    assert (pair.reviewer_a, pair.reviewer_b, pair.n_items, pair.exact) == ("Dr A", "Dr B", 2, 1)
    assert pair.mean_abs_difference == 1.0


def _ds(n, value, raters=("r1", "r2", "r3"), missing=lambda i, j: False):
    cases = [Case(f"c{i}", "Cardiology", (Note("1", f"note {i} " * 20),)) for i in range(n)]
    summaries = [Summary(f"s{i}", f"c{i}", f"summary {i}") for i in range(n)]
    ratings = [Rating(f"s{i}", r, it.key, value(i, j, it.key), "junior")
               for i in range(n) for j, r in enumerate(raters) for it in ITEMS if not missing(i, j)]
    return Dataset("d", cases, summaries, ratings)


def _yes_no_or_likert(i, j, key):
    if key in ("abstraction", "stigmatizing_notes", "stigmatizing_summary"):
        return float(i % 5 == 0)  # a yes for every fifth summary, all raters agree
    return float(1 + (i + (j == 2 and i % 4 == 0)) % 5)


def test_a_constant_judge_reads_chance_not_agreement():
    """Reproduces the failure: a judge answering 'no' for every summary got 'agrees well (AC1 0.80)'."""
    ds = _ds(30, _yes_no_or_likert)
    llm = {s.summary_id: {it.key: (0.0 if it.key.startswith(("stig", "abstr")) else 3.0) for it in ITEMS}
           for s in ds.summaries}
    rows = {h.item: h for h in headline(analyse(ds, llm, n_boot=50))}
    h = rows["stigmatizing_summary"]
    assert h.llm_statistic.startswith("Cohen's κ")
    assert "κ is not defined" in h.verdict and "agrees" not in h.verdict and h.llm is None
    assert "answered no for every summary" in h.verdict and "matches the raters' majority on 24 of 30" in h.verdict
    assert "judge said 0 of 30 yes (0%); the raters 18 of 90 yes (20%)" in h.verdict  # the yes-rates side by side
    assert h.secondary.startswith("AC1")  # the AC1 is still shown, as the secondary figure
    assert "not distinguishable from chance" in rows["accurate"].verdict  # a constant 1-5 judge too


def test_an_informative_judge_still_reads_as_agreement():
    ds = _ds(30, _yes_no_or_likert)
    llm = {s.summary_id: {it.key: _yes_no_or_likert(int(s.summary_id[1:]), 0, it.key) for it in ITEMS}
           for s in ds.summaries}
    rows = {h.item: h for h in headline(analyse(ds, llm, n_boot=50))}
    assert "The LLM judge agrees" in rows["stigmatizing_summary"].verdict
    assert rows["stigmatizing_summary"].llm.value == pytest.approx(1.0)
    assert "The LLM judge agrees" in rows["accurate"].verdict


@pytest.mark.parametrize("e,chance", [(Estimate(-0.09, -1.09, 0.53), True), (Estimate(0.3, -0.01, 0.6), True),
                                      (Estimate(0.0, None, None), True), (Estimate(0.4, 0.05, 0.7), False),
                                      (Estimate(math.nan, None, None), False), (None, False)])
def test_a_ci_reaching_zero_is_chance(e, chance):
    assert at_chance(e) is chance


def test_negative_icc_is_not_a_plain_figure():
    """Raters who disagree systematically (ICC below zero): the verdict says chance, not 'agree poorly'."""
    rng = np.random.default_rng(3)
    noise = rng.integers(1, 6, size=(12, 3)).astype(float)
    ds = _ds(12, lambda i, j, k: noise[i, j] if k not in ("abstraction", "stigmatizing_notes",
                                                          "stigmatizing_summary") else float(i % 2))
    rows = {h.item: h for h in headline(analyse(ds, n_boot=50))}
    h = rows["comprehensible"]
    assert h.humans is not None
    if at_chance(h.humans):
        assert "not distinguishable from chance" in h.verdict and "agree poorly" not in h.verdict
    else:  # the draw happened to agree: the verdict names the band instead
        assert "Raters agree" in h.verdict
    assert any(at_chance(r.humans) for r in rows.values() if r.kind == "likert")  # the noise is chance somewhere


def test_unbalanced_panel_uses_alpha_and_says_so():
    """No summary scored by every rater (each rater scored two thirds): α instead of a refused ICC."""
    ds = _ds(18, lambda i, j, k: float(1 + (i + (j == 1)) % 5) if k not in ("abstraction", "stigmatizing_notes",
                                                                           "stigmatizing_summary") else float(i % 2),
             missing=lambda i, j: i % 3 == j)
    rows = {h.item: h for h in headline(analyse(ds, n_boot=50))}
    h = rows["accurate"]
    assert h.statistic == "Krippendorff α (interval)" and h.humans is not None
    assert "only 0 were scored by every rater" in h.block and "not computed" not in h.verdict


def _page_text(at):
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_agreement_page_keeps_the_panel_after_a_spot_check_and_shows_the_clinician_apart():
    """The walkthrough's step on the Agreement page: after one spot check every headline still has its ICC, the
    spot check shows in its own table, and the toggle says which reference the LLM is compared with."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    save_review(store, "sample", "gi-01-s1", "Dr Spot", SPOT_CHECK, SPOT_VALUES)
    at = AppTest.from_file(str(ROOT / "pages/agreement.py"), default_timeout=180).run()
    assert not at.exception, [e.value for e in at.exception]
    text = _page_text(at)
    assert "Rater agreement not computed" not in text
    assert "Raters agree" in text or "not distinguishable from chance" in text
    panel = next(d.value for d in at.dataframe if "within one level" in d.value.columns)
    assert list(panel["clinician"]) == ["Dr Spot"]
    assert "Human reference: panel median only." in text
    full = next(d.value for d in at.dataframe if "complete" in d.value.columns)
    assert full["complete"].max() > 0  # the panel's complete block is intact
    next(t for t in at.toggle if t.key == "agreement_spot_ref").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Human reference: panel median **with** the spot checks." in _page_text(at) or \
        "panel median with the spot checks" in _page_text(at)


def test_report_keeps_the_panel_and_states_the_reference(store, sample):
    from engine.analysis.report import build, render_html

    store.import_dataset(sample)
    save_review(store, "sample", "gi-01-s1", "Dr Spot", SPOT_CHECK, SPOT_VALUES)
    data = build(store, "sample", n_boot=50, count_tokens=lambda t: len(t.split()))
    assert [r for r, _, _ in data.raters] == [f"R{i}" for i in range(1, 8)]  # 7 panel raters, not 8
    assert all(h.humans is not None for h in data.headline)
    html = render_html(data)
    assert "Clinicians&#x27; spot checks" in html or "Clinicians' spot checks" in html
    assert "Dr Spot" in html and "spot checks reported apart" in html
    mixed = build(store, "sample", n_boot=50, count_tokens=lambda t: len(t.split()), spot_checks_in_reference=True)
    assert "with the clinicians" in render_html(mixed)


def test_a_constant_yes_no_side_gets_no_kappa_of_zero_with_a_zero_interval():
    """Before: 'κ 0.00 (95% CI −0.00 to 0.00)' beside 'AC1 −0.93' for a judge that said yes to every summary."""
    from engine.analysis.items import item_agreement, item_matrix

    ds = _ds(30, _yes_no_or_likert)
    m = item_matrix(ds, "abstraction")
    ia = item_agreement(m, np.ones(len(m.summary_ids)), False, 20, 0)
    assert ia.llm_agreement is None and ia.llm_matches == (6, 30) and ia.llm_constant == 1.0
    assert any(n.startswith("κ LLM vs human majority: not defined: the LLM gave every summary the same answer")
               for n in ia.notes)
