"""What a committee reads: Koo & Li bands, p-values, verdicts in words, reasons instead of silent gaps, yes/no
items as counts, one judge configuration at a time."""
import math

import pytest

from engine.analysis.agreement import analyse
from engine.analysis.formatting import format_p
from engine.analysis.headlines import headline, koo_li_band
from engine.judge.configs import config_key_of, configurations, results_for
from engine.core.models import Case, Dataset, Note, Rating, Summary
from engine.core.rubric import ITEMS


@pytest.mark.parametrize("v,band", [(0.49, "poor"), (0.5, "moderate"), (0.74, "moderate"), (0.75, "good"),
                                    (0.9, "excellent"), (0.95, "excellent"), (None, ""), (math.nan, "")])
def test_koo_li_bands(v, band):
    assert koo_li_band(v) == band


@pytest.mark.parametrize("p,text", [(0.0, "< 0.001"), (0.0004, "< 0.001"), (0.0042, "0.004"), (0.031, "0.03"),
                                    (0.5, "0.50"), (None, "—")])
def test_p_values_never_read_zero(p, text):
    assert format_p(p) == text


def dataset(n_summaries, scores, raters=("r1", "r2", "r3")):
    """scores(summary index, rater index, item key) -> value or None (not rated)."""
    cases = [Case(f"c{i}", "Cardiology", (Note("1", f"note {i} " * 20),)) for i in range(n_summaries)]
    summaries = [Summary(f"s{i}", f"c{i}", f"summary {i}") for i in range(n_summaries)]
    ratings = []
    for i in range(n_summaries):
        for j, r in enumerate(raters):
            for it in ITEMS:
                v = scores(i, j, it.key)
                if v is not None or (it.allows_na and v is None and False):
                    ratings.append(Rating(f"s{i}", r, it.key, v, "junior"))
    return Dataset("d", cases, summaries, ratings)


def test_two_summaries_say_why_instead_of_a_wild_interval():
    ds = dataset(2, lambda i, j, k: float((i + j) % 2) if k.startswith("stig") or k == "abstraction" else 3.0 + i)
    rep = analyse(ds, n_boot=50)
    rows = {h.item: h for h in headline(rep)}
    assert rows["accurate"].humans is None and "fewer than 3" in rows["accurate"].why_missing
    assert "not computed" in rows["accurate"].verdict
    assert any("Cronbach" in n and "too few" in n for n in rep.notes)  # carried on the report, not swallowed


def test_no_variance_is_named():
    ds = dataset(12, lambda i, j, k: 1.0 if k in ("abstraction", "stigmatizing_notes", "stigmatizing_summary") else 5.0)
    rep = analyse(ds, n_boot=50)
    rows = {h.item: h for h in headline(rep)}
    assert rows["accurate"].humans is None
    assert "no variance" in rows["accurate"].why_missing, rows["accurate"].why_missing


def test_yes_no_items_are_counts_and_shares():
    ds = dataset(12, lambda i, j, k: float(i % 3 == 0) if k in ("abstraction", "stigmatizing_notes",
                                                                 "stigmatizing_summary") else float(1 + (i + j) % 5))
    rows = {h.item: h for h in headline(analyse(ds, n_boot=50))}
    h = rows["stigmatizing_notes"]
    assert h.kind == "yes/no" and h.human_center == "12 of 36 yes (33%)" and h.statistic == "Gwet AC1"
    assert h.label == "Stigmatizing (notes)"  # the instrument's wording, not the snake_case key


def test_small_sample_warning():
    ds = dataset(6, lambda i, j, k: float(i % 2) if k in ("abstraction", "stigmatizing_notes", "stigmatizing_summary")
                 else float(1 + i % 5) + (0.0 if j == 0 else 0.0))
    rows = {h.item: h for h in headline(analyse(ds, n_boot=50))}
    assert "only 6 summaries" in rows["accurate"].warning


class _P:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def fake_result(sid, sha, prompt, n_samples, created, early_stop=True):
    prov = _P(model_sha256=sha, backend="llama.cpp", backend_params={}, model_file=f"{sha}.gguf",
              prompt_version=prompt, params={"n_samples": n_samples, "temperature": 0.7, "early_stop": early_stop})
    return _P(summary_id=sid, provenance=prov, created_at=created, status="scored")


def test_configurations_are_never_pooled():
    rs = [fake_result("s1", "aaa", "v2", 7, "1"), fake_result("s2", "aaa", "v2", 7, "1"),
          fake_result("s1", "aaa", "v2", 1, "2"),  # a 1-sample rerun of s1: another configuration
          fake_result("s3", "aaa", "v2", 7, "3", early_stop=False)]  # early stopping cannot change a median
    configs = configurations(rs)
    assert [c.n_results for c in configs] == [3, 1]
    main = results_for(rs, None)
    assert sorted(r.summary_id for r in main) == ["s1", "s2", "s3"]
    assert all(r.provenance.params["n_samples"] == 7 for r in main)
    rerun = results_for(rs, configs[1].key)
    assert [r.summary_id for r in rerun] == ["s1"] and config_key_of(rerun[0]) == configs[1].key


def test_scores_are_written_with_at_most_two_decimals():
    from engine.analysis.formatting import format_score

    assert [format_score(v) for v in (3.72075, 4.5806, 4.5, 4.0, -0.001, None)] == ["3.72", "4.58", "4.5", "4", "0",
                                                                                     "—"]


def test_an_interval_past_the_coefficients_range_is_marked_and_the_mark_is_said_once():
    """Before: "-1.00 (clipped)" in each verdict, never explained, while the table showed -1.09."""
    from engine.analysis.formatting import CLIPPED, INTERVAL_NOTE, format_estimate
    from engine.statistics import Estimate

    assert format_estimate(Estimate(-0.09, -1.09, 0.53)) == f"-0.09 (95% CI -1.00{CLIPPED} to 0.53)"
    assert INTERVAL_NOTE.startswith(CLIPPED) and "the tables give it as computed" in INTERVAL_NOTE
    assert format_estimate(Estimate(0.5, 0.2, 0.7)) == "0.50 (95% CI 0.20 to 0.70)"


def test_committee_verdict_says_whether_the_judge_may_be_used():
    from engine.analysis.headlines import HeadlineRow, committee_verdict
    from engine.statistics import Estimate

    def row(humans, llm, band):
        return HeadlineRow("accurate", "Accurate", "likert", 30, "ICC(3,k)", humans, "good", "ICC(2,1)", llm, band,
                           "", "", "", "")

    good = Estimate(0.8, 0.7, 0.9)
    assert "may stand in" in committee_verdict(row(good, Estimate(0.8, 0.6, 0.9), "good"))
    assert "only to sort" in committee_verdict(row(good, Estimate(0.3, 0.1, 0.5), "poor"))
    assert "not distinguishable from chance" in committee_verdict(row(good, Estimate(0.2, -0.1, 0.5), "poor"))
    assert "no reference" in committee_verdict(row(Estimate(0.1, -0.2, 0.4), Estimate(0.8, 0.6, 0.9), "good"))
    assert "could not be measured" in committee_verdict(row(good, None, ""))


def test_the_raters_interval_band_is_said_in_the_raters_sentence():
    """Before: "… The LLM judge agrees poorly with them (…). (the raters' interval spans good to excellent)" — a
    remark about the raters printed after the judge's sentence."""
    import random

    rng = random.Random(3)
    truth = [rng.choice([1, 2, 3, 4, 5]) for _ in range(14)]
    ds = dataset(14, lambda i, j, k: float(i % 2) if k in ("abstraction", "stigmatizing_notes", "stigmatizing_summary")
                 else float(min(5, max(1, truth[i] + (rng.random() < 0.25) * rng.choice([-1, 1])))))
    rows = headline(analyse(ds, n_boot=200))
    spanning = [h for h in rows if "interval spans" in h.verdict]
    assert spanning, [h.verdict for h in rows]
    for h in spanning:
        raters = h.verdict.split(" The LLM judge")[0]
        assert "their interval spans" in raters and "interval spans" not in h.warning


def test_length_chart_keeps_its_statistic_in_a_subtitle_and_the_confusion_matrix_labels_every_score():
    """Before: the title cut at "Spearman ρ = -(" in a half-width chart; the matrix labelled only 2 and 4."""
    from components.agreement_view import confusion, length_scatter

    rows = [{"summary_id": f"s{i}", "note_tokens": 100 * i, "accurate:llm": 1 + i % 5,
             "accurate:human_median": 1 + (i + 1) % 5} for i in range(10)]
    fig, _ = length_scatter(rows, "accurate", "llm", -0.1234, 0.04)
    assert "Spearman" not in fig.layout.title.text and "Spearman ρ = -0.123" in fig.layout.title.subtitle.text
    from engine.views.agreement import confusion_counts

    fig, _ = confusion(*confusion_counts(rows, "accurate"), "accurate")
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 3, 4, 5] == list(fig.layout.yaxis.tickvals)


def test_a_judge_reply_is_shown_one_key_per_line():
    """Before: the Judge page's "Sample 0" showed the raw JSON reply on one unwrapped line."""
    from components.judge_view import readable_reply

    raw = '{"citation": 4, "accurate": 5, "thorough": 3}'
    assert readable_reply(raw).splitlines() == ["{", '  "citation": 4,', '  "accurate": 5,', '  "thorough": 3', "}"]
    assert readable_reply("not json {") == "not json {" and readable_reply("") == "(empty reply)"
