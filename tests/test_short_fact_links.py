"""Two defects of the shipped sample read by a reviewer (issue "Real exports read right").

A. MED-OMIT listed "HTN", "HLD" and "T2DM" as *not found in the notes* for neuro-02's three summaries and "HTN"
   for onc-01's, though the notes say "72 y/o M with HTN, HLD, T2DM": a probe shorter than five characters was
   never looked for word for word (too short for the white-space-free search, which would find it inside any longer
   word), and a three-letter fact never reaches the similar-sentence ratio. A short fact is now found where a note
   writes it as a token of its own; a stored result is placed again where it is read.
B. ``omissions --method unitcov`` printed its regions with scores 0.73, 0.70, 0.85, 0.84, 0.80 …: they are in rank
   order (marks, then omission score x salience), which the output neither showed nor said.
"""
import json

import pytest

from conftest import BUNDLE
from engine.evidence.medomit._linking import find_verbatim, link_fact

PMH = "HPI: 72 y/o M with HTN, HLD, T2DM, and right V2 trigeminal neuralgia presents after a fall."


# ------------------------------------------------------------------------------------------------ A: the matcher

@pytest.mark.parametrize("fact", ["HTN", "HLD", "T2DM", "HTN,", "T2DM."])
def test_a_short_fact_is_linked_where_the_note_writes_it_as_a_token(fact):
    nid, s, e, kind, score = link_fact(fact, fact, {"1": "CC: fall.", "2": PMH}, None)
    assert (nid, kind, score) == ("2", "exact", 1.0)
    assert PMH[s:e].rstrip(",") == fact.rstrip(".,")  # the token ("HTN," where the fact keeps its comma)


def test_a_short_fact_is_found_only_as_a_token_of_its_own():
    assert find_verbatim("Known pHTN and HTNs.", "HTN") is None  # inside a longer word: not this fact
    at = find_verbatim("Known pHTN; (HTN) since 2010.", "HTN")
    assert at is not None and "Known pHTN; (HTN) since 2010."[at[0]:at[1]] == "HTN"
    assert find_verbatim("PMH: T2DM\n", "T2DM") == (5, 9)  # bounded by the line's end
    assert find_verbatim("Labs: Cr 1.1 mg/dL", "Cr 1") is None  # a number is not the start of a longer one
    assert find_verbatim("Labs: Cr 1 mg/dL", "Cr 1") == (6, 10)


def test_an_abbreviation_keeps_its_case_and_other_short_words_do_not():
    assert find_verbatim("pmh: htn, hld.", "HTN") is None  # all capitals: an abbreviation, matched in its case
    at = find_verbatim("Hx of AFib on apixaban.", "afib")  # not all capitals: any case
    assert at is not None and "Hx of AFib on apixaban."[at[0]:at[1]] == "AFib"
    assert find_verbatim("72 y/o M with HTN.", "M") is None  # one character is never placed


def test_an_abbreviation_the_notes_only_spell_out_stays_not_found():
    """No abbreviation is expanded: "HTN" against a note that writes only "hypertension" is not found word for
    word, and the similar-sentence fallback stays under its ratio, so the fact stays not found in the notes."""
    notes = {"1": "History of hypertension, on lisinopril 20 mg daily.", "2": "Hyperlipidemia on atorvastatin."}
    nid, s, e, kind, score = link_fact("HTN", "HTN", notes, None)
    assert (nid, s, e, kind) == (None, None, None, "unlinked") and score < 0.55


# --------------------------------------------------------------------------- A: the shipped sample as it is shown

SHORT = {"HTN", "HLD", "T2DM"}


def test_the_model_fact_rows_list_no_short_fact_of_their_notes_as_not_found(store):
    from engine.evidence.kinds import stored_results
    from engine.evidence.medomit.rows import dataset_rows
    from engine.sample import SAMPLE_NAME, ensure_sample
    from engine.views.case import case_view

    from conftest import model_fact_rows

    ensure_sample(store)
    ds = store.load_dataset(SAMPLE_NAME)
    sids = [f"{c}-s{k}" for c in ("neuro-02", "onc-01") for k in (1, 2, 3)]
    # the model-fact pipeline's rows of these summaries (the 1.5B wrote "HTN", "HLD", "T2DM" as facts), stored after
    # the shipped one-step rows, so they are the ones the pages read
    for line in model_fact_rows():
        row = json.loads(line)
        if row["summary_id"] in sids:
            store.put_evidence(SAMPLE_NAME, "medomit", row["cache_key"], row["summary_id"], row["status"],
                               row["result"])
    for sid in sids:
        case_id = ds.summary(sid).case_id
        view = case_view(store, SAMPLE_NAME, ds, case_id, sid)
        assert view.medomit is not None, sid
        assert not SHORT & {r["text"] for r in view.not_found_rows}, (sid, view.not_found_rows)
        assert not SHORT & {f.text for f in view.medomit.not_found}, sid
        notes = {n.note_id: n.text for n in view.case.notes}
        placed = [f for f in view.medomit.facts if f.text in SHORT]
        assert placed and all(f.link == "exact" and notes[f.note_id][f.start:f.end] == f.text for f in placed), sid
        assert sorted(view.medomit.provenance["placed_when_read"]) == sorted(f.fact_id for f in placed)
        assert all(f.fact_id not in {s.fact_id for s in view.medomit.scores} for f in placed)  # placed, not weighed
    # the misspelt "atoxastatin increased to 80 mg q.d." stays not found: the notes never write it
    assert [r["text"] for r in case_view(store, SAMPLE_NAME, ds, "neuro-02", "neuro-02-s1").not_found_rows] == [
        "atoxastatin increased to 80 mg q.d."]
    rows = {r.summary_id: r for r in dataset_rows(ds, stored_results(store, SAMPLE_NAME, "medomit"))}
    assert [rows[s].not_found for s in sids] == [1, 1, 1, 0, 0, 0]  # the Evidence page's count says the same


# ------------------------------------------------------------------------------------ B: regions in a stated order

TIER = {"★➜": 0, "★": 1, "➜": 2, "": 3}


def test_the_cli_lists_regions_in_the_order_of_the_figures_it_prints(capsys):
    from engine.cli import main

    assert main(["omissions", str(BUNDLE), "--method", "unitcov", "--summary", "card-01-s1"]) == 0
    out = capsys.readouterr()
    (row,) = [json.loads(x) for x in out.out.splitlines() if x.startswith("{")]
    assert "regions are listed in rank order" in out.err and row["regions_order"].startswith("rank order")
    regions = row["regions"]
    assert len(regions) >= 5
    for g in regions:  # the printed figures are the ones the order comes from
        assert g["rank_score"] == pytest.approx(g["score"] * g["salience"], abs=1e-4)
        assert g["below_threshold"] == (g["score"] < row["threshold"]) and g["marks"] in TIER
        assert ("★" in g["marks"]) == bool(g["missing"])
    keys = [(g["below_threshold"], g["salience"] <= 0, TIER[g["marks"]], -g["rank_score"]) for g in regions]
    assert keys == sorted(keys), keys
    scores = [g["score"] for g in regions]
    assert scores != sorted(scores, reverse=True)  # the raw score alone is not the order: why it must be said


def test_the_case_page_lists_regions_in_the_order_of_its_marks_and_rank_numbers(store, suite_embedder):
    """The Case page's region list (engine.views.case.coverage_view) shows each region's marks and its number
    (omission score x salience) under a header naming that order; the list follows them."""
    from engine.sample import SAMPLE_NAME, ensure_sample
    from engine.views.case import coverage_view

    ensure_sample(store)
    ds = store.load_dataset(SAMPLE_NAME)
    cv = coverage_view(store, SAMPLE_NAME, ds, "card-01-s1", suite_embedder, "unitcov")
    assert not cv.error and len(cv.regions) >= 5
    assert len(cv.marks) == len(cv.rank_scores) == len(cv.regions)
    keys = [(r.salience <= 0, TIER[m], -rank) for r, m, rank in zip(cv.regions, cv.marks, cv.rank_scores)]
    assert keys == sorted(keys), keys
