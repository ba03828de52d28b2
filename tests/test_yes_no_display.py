"""One display rule for yes/no items (``engine.core.rubric.format_value`` / ``format_aggregate``) and the adjudicated
score as the human reference (``engine.data.ratings.medians``, ``display_table``, ``engine.analysis.agreement``)."""
import csv
import io
import math

import numpy as np
import pytest

from engine.judge.results import ItemScore
from engine.core.models import Rating
from engine.data.ratings import display_table, judge_cell, medians, reference_cell
from engine.core.rubric import format_aggregate, format_share, format_value, get_item

ABS, STIG, CITED, SYN = (get_item(k) for k in ("abstraction", "stigmatizing_summary", "cited", "synthesized"))


def test_one_rating_is_yes_no_na_or_the_level():
    assert format_value(ABS, 1.0) == "yes" and format_value(ABS, 0.0) == "no"
    assert format_value(CITED, 4.0) == "4" and format_value(SYN, None) == "NA"


@pytest.mark.parametrize("values, shown", [
    ([1.0, 1.0, 0.0], "2 of 3 yes (67%)"),
    ([1.0, 0.0], "1 of 2 yes (50%)"),  # a tie: never "0.5"
    ([1.0], "1 of 1 yes (100%)"),  # never "1" or "1.0"
    ([0.0, 0.0, 0.0, 0.0], "0 of 4 yes (0%)"),
    ([], ""),
])
def test_aggregate_of_yes_no_is_the_share_of_yes(values, shown):
    assert format_aggregate(ABS, values) == shown


def test_aggregate_of_likert_is_the_median_and_na_aware():
    assert format_aggregate(CITED, [4.0, 5.0, 2.0]) == "4"
    assert format_aggregate(CITED, [4.0, 5.0]) == "4.5"
    assert format_aggregate(SYN, [None, 3.0, None]) == "3"
    assert format_aggregate(SYN, [None, None]) == "NA"
    assert format_aggregate(CITED, []) == ""


def test_share_wording_is_the_agreement_pages():
    from engine.analysis.headlines import share_of

    assert format_share(12, 40) == "12 of 40 yes (30%)" == share_of((12, 40))
    assert format_share(0, 0) == ""


def test_display_table_yes_no_per_rater_and_share_in_the_median_row():
    rows = display_table([Rating("s", "R1", "abstraction", 1.0, "junior"),
                          Rating("s", "R2", "abstraction", 0.0, "junior"),
                          Rating("s", "R1", "cited", 4.0, "junior"),
                          Rating("s", "R2", "cited", 5.0, "senior")])
    assert [r["Abstraction needed"] for r in rows] == ["yes", "no", "1 of 2 yes (50%)"]
    assert [r["Cited"] for r in rows] == ["4", "5", "4.5"]
    assert rows[-1]["rater"] == "median" and rows[-1]["Stigmatizing (summary)"] == ""  # nobody rated it
    for row in rows:
        assert not any(v in ("0.5", "1", "0", "1.0", "0.0", "+0.5") for k, v in row.items()
                       if k in ("Abstraction needed", "Stigmatizing (notes)", "Stigmatizing (summary)"))


def test_judge_cell_share_over_the_samples_for_yes_no_median_for_likert():
    assert judge_cell(ABS, ItemScore("abstraction", 1.0, False, [1.0, 1.0, 0.0], 1.0)) == "2 of 3 yes (67%)"
    assert judge_cell(ABS, ItemScore("abstraction", 0.5, False, [1.0, 0.0], 1.0)) == "1 of 2 yes (50%)"
    assert judge_cell(CITED, ItemScore("cited", 3.0, False, [3.0, 3.0, 4.0], 1.0)) == "3"
    assert judge_cell(SYN, ItemScore("synthesized", None, True, [None, None], None)) == "NA"
    assert judge_cell(CITED, ItemScore("cited", None, False, [], None)) == ""
    assert judge_cell(CITED, None) == ""


# --------------------------------------------------------------------------- the adjudicated score is the reference
RATERS = [Rating("s", "R1", "cited", 2.0, "junior"), Rating("s", "R2", "cited", 2.0, "junior"),
          Rating("s", "R3", "cited", 3.0, "senior"), Rating("s", "R1", "accurate", 4.0, "junior"),
          Rating("s", "R2", "accurate", 5.0, "junior"), Rating("s", "R1", "abstraction", 0.0, "junior"),
          Rating("s", "R2", "abstraction", 0.0, "junior"), Rating("s", "Dr A", "cited", 3.0, "clinician")]
ADJ = [Rating("s", "adjudicated", "cited", 5.0, "adjudicated"),
       Rating("s", "adjudicated", "abstraction", 1.0, "adjudicated")]


def test_medians_adjudicated_score_replaces_the_human_median_never_averaged_in():
    assert medians(RATERS) == {"cited": 2.5, "accurate": 4.5, "abstraction": 0.0}  # clinicians are raters
    got = medians(RATERS + ADJ)
    # as one more rater it would be median(2, 2, 3, 3, 5) = 3 and abstraction 0 of 3; as the reference it is 5 / 1
    assert got == {"cited": 5.0, "accurate": 4.5, "abstraction": 1.0}
    assert medians(ADJ) == {"cited": 5.0, "abstraction": 1.0}  # adjudicated without any rater
    assert medians([Rating("s", "J", "cited", 1.0, "llm")] + RATERS)["cited"] == 2.5  # the LLM is no rater
    na = medians(RATERS + [Rating("s", "adjudicated", "synthesized", None, "adjudicated")])
    assert "synthesized" in na and na["synthesized"] is None  # adjudicated NA is the reference too


def test_display_table_median_row_shows_the_adjudicated_reference():
    rows = display_table(RATERS + ADJ)
    med = rows[-1]
    assert med["rater"] == "median" and med["group"] == "reference"
    assert med["Cited"] == "5 (adjudicated)" and med["Abstraction needed"] == "yes (adjudicated)"
    assert med["Accurate"] == "4.5"  # not adjudicated: the raters' median
    adj = next(r for r in rows if r["rater"] == "adjudicated")
    assert adj["Cited"] == "5" and adj["Abstraction needed"] == "yes"
    assert reference_cell(CITED, RATERS) == "2.5"


def test_agreement_uses_the_adjudicated_score_as_the_reference_everywhere():
    from engine.analysis.items import adjudicated_vector, item_agreement, item_matrix
    from engine.core.models import Case, Dataset, Note, Summary

    sids = [f"s{i}" for i in range(6)]
    ds = Dataset("d", [Case("c", "Cardiology", (Note("n1", "text"),))], [Summary(s, "c", "text") for s in sids], [])
    for i, s in enumerate(sids):
        ds.ratings += [Rating(s, "R1", "cited", float(1 + i % 5), "junior"),
                       Rating(s, "R2", "cited", float(1 + (i + 1) % 5), "junior")]
    ds.ratings.append(Rating("s0", "adjudicated", "cited", 5.0, "adjudicated"))
    m = item_matrix(ds, "cited")
    assert m.rater_ids == ["R1", "R2"]  # the adjudicated score is not a rater column
    mask, values = adjudicated_vector(ds, "cited", m.summary_ids)
    assert list(mask) == [True] + [False] * 5 and values[0] == 5.0 and math.isnan(values[1])
    # per-summary rater medians 1.5 2.5 3.5 4.5 3 1.5; s0 adjudicated 5: the LLM agrees exactly with the reference
    llm = np.array([5.0, 2.5, 3.5, 4.5, 3.0, 1.5])
    plain = item_agreement(m, llm, True, 10, 0)
    ref = item_agreement(m, llm, True, 10, 0, (mask, values))
    assert plain.human_median == 2.75 and ref.human_median == 3.25
    assert plain.llm_vs_human is not None and ref.llm_vs_human is None  # no difference left to test
    assert ref.llm_agreement.value == pytest.approx(1.0)
    assert ref.icc == plain.icc  # the raters' own agreement does not change


def test_reviews_csv_writes_yes_no_text(store):
    from conftest import BUNDLE
    from engine.data.loading import load_paths
    from engine.data.reviews import ADJUDICATION, SPOT_CHECK, export_reviews_csv, save_review

    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    sid = ds.summaries[0].summary_id
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"abstraction": "yes", "synthesized": 4,
                                                      "stigmatizing_notes": 0})
    save_review(store, "s", sid, "Dr Z", ADJUDICATION, {"abstraction": "no", "synthesized": "NA"})
    rows = {(r["reviewer"], r["item"]): r for r in csv.DictReader(io.StringIO(export_reviews_csv(store, "s")))}
    assert rows[("Dr A", "abstraction")]["value"] == "yes" and rows[("Dr A", "stigmatizing_notes")]["value"] == "no"
    assert rows[("Dr A", "synthesized")]["value"] == "4" and rows[("Dr Z", "synthesized")]["value"] == "NA"
    assert rows[("Dr Z", "abstraction")]["value"] == "no" == rows[("Dr Z", "abstraction")]["value_label"]
