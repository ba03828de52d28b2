"""The other summaries of a case as a guide to which omissions matter (engine.evidence.medomit.peers), on the
sample's MED-OMIT rows of the 1.5B: the model-fact pipeline's (tests/data, whose generated labels weigh nearly every
fact alike) for the logic, the shipped one-step rows where the pages and the store read them."""
import json
import sys
from dataclasses import replace

import pytest

from conftest import ROOT, TIMEOUT
from engine.evidence.medomit.peers import comparable, consensus
from engine.evidence.medomit.result import MedOmitResult
from engine.evidence.medomit.rows import SAME_WEIGHT_MIN_FACTS, omitted_fact_rows, same_weight_note
from engine.sample import SAMPLE_MEDOMIT

sys.path.insert(0, str(ROOT / "bench"))


def _shipped() -> list[MedOmitResult]:
    """The model-fact pipeline's rows of the sample (conftest.model_fact_rows)."""
    from conftest import model_fact_rows

    return [MedOmitResult.from_json(json.loads(x)["result"]) for x in model_fact_rows()]


def _one_step_rows() -> list[MedOmitResult]:
    """The rows shipped with the sample (and stored with it)."""
    return [MedOmitResult.from_json(json.loads(x)["result"])
            for x in SAMPLE_MEDOMIT.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture(scope="module")
def case_results():
    rows = [r for r in _shipped() if r.case_id == "neuro-01"]
    assert len(rows) == 3 and all(r.status == "complete" for r in rows)
    return rows


def test_counts_the_other_summaries_that_state_each_fact(case_results):
    me, *others = case_results
    cons = consensus(me, case_results)
    assert cons is not None and set(cons.others) == {o.summary_id for o in others}
    for s in me.scores:
        want = sum(1 for o in others if not next(x for x in o.scores if x.fact_id == s.fact_id).omitted)
        c = cons.of(s.fact_id)
        assert (c.stated_by, c.others) == (want, 2)
    assert any(cons.of(s.fact_id).stated_by == 2 for s in me.omitted)  # something the others keep
    assert cons.of(me.omitted[0].fact_id).text().startswith("stated by ")


def test_only_results_decided_on_the_same_facts_by_the_same_model_and_decision_are_compared(case_results):
    me, a, b = case_results
    assert comparable(me, a)
    other_model = replace(a, provenance={**a.provenance, "model": "another-model-sha"})
    other_decision = replace(a, provenance={**a.provenance, "decision": {"decision": "omit-decision-v1"}})
    other_facts = replace(a, facts=a.facts[:-1])
    incomplete = replace(a, status="incomplete")
    other_case = replace(a, case_id="card-01")
    for bad in (other_model, other_decision, other_facts, incomplete, other_case):
        assert not comparable(me, bad)
        assert consensus(me, [me, bad]) is None
    assert consensus(me, [me]) is None  # one summary of the case: nothing to compare
    assert set(consensus(me, [me, other_model, b]).others) == {b.summary_id}


def test_rows_put_what_the_others_state_first_then_the_heaviest_then_the_least_covered(case_results):
    me = case_results[0]
    cons = consensus(me, case_results)
    rows = omitted_fact_rows(me, cons)
    assert {r["fact_id"] for r in rows} == {s.fact_id for s in me.omitted}
    by_id = {s.fact_id: s for s in me.omitted}
    keys = [(-cons.of(r["fact_id"]).share, -by_id[r["fact_id"]].score, by_id[r["fact_id"]].coverage)
            for r in rows]
    assert keys == sorted(keys)
    assert rows[0]["stated by others"] == (2, 2) and rows[0]["others"] == "stated by 2 of the 2 other summaries"
    plain = omitted_fact_rows(me)  # no comparison: heaviest first, no count
    assert all(r["stated by others"] is None and r["others"] == "" for r in plain)
    assert [by_id[r["fact_id"]].score for r in plain] == sorted((s.score for s in me.omitted), reverse=True)


def test_the_sample_dropped_facts_come_early_with_the_other_summaries():
    """Of the sample's documented dropped facts MED-OMIT reports, most lie in the first 10 of 50-77 omitted facts
    when the facts the other summaries state come first; in MED-OMIT's weight order (tied labels) few do."""
    from medomit_ranking import SHIPPED, dropped_ranks, shipped_order_matches

    from engine.data.loading import load_paths
    from engine.sample import SAMPLE_BUNDLE, load_manifest

    results = _shipped()
    ranks = dropped_ranks(results, load_paths([SAMPLE_BUNDLE])[0], load_manifest())
    shipped = ranks[SHIPPED]["dev"] + ranks[SHIPPED]["test"]
    weight = ranks["weight"]["dev"] + ranks["weight"]["test"]
    assert len(shipped) == len(weight) == 15
    assert sum(1 for r in shipped if r <= 10) >= 10 > 2 >= sum(1 for r in weight if r <= 10)
    assert shipped_order_matches(results)


def test_case_page_lists_what_the_other_summaries_state_first():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
    at.query_params["dataset"], at.query_params["case"], at.query_params["summary"] = "sample", "neuro-01", \
        "neuro-01-s2"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    radio = next(r for r in at.radio if r.label.startswith("Omitted facts, those the other summaries state first"))
    assert " · others 2/2 · " in radio.options[0]
    assert any("Compared with the 2 other summaries of this case" in c.value
               and "neuro-01-s1" in c.value.replace("\\", "")
               for c in at.caption)
    # the shipped one-step rows read importance as probabilities: the weights rank, so no warning that they do not
    assert not any("weigh the same" in c.value for c in at.caption)


def test_cli_line_lists_the_omissions_in_the_case_page_order_with_the_count(case_results):
    from engine.cli.evidence_commands import _medomit_line
    from engine.data.loading import load_paths
    from engine.sample import SAMPLE_BUNDLE

    ds = load_paths([SAMPLE_BUNDLE])[0]
    me = case_results[0]
    cons = consensus(me, case_results)
    line = _medomit_line(me, ds.case(me.case_id), cons)
    assert [o["fact_id"] for o in line["omitted"]] == [r["fact_id"] for r in omitted_fact_rows(me, cons)]
    assert line["omitted"][0]["stated_by_others"] == 2 and sorted(line["compared_with"]) == sorted(cons.others)
    alone = _medomit_line(me, ds.case(me.case_id), None)
    assert alone["compared_with"] == [] and all(o["stated_by_others"] is None for o in alone["omitted"])
    assert line["same_weight"] == same_weight_note(me, compared=True) != alone["same_weight"] != ""


def test_dataset_rows_count_what_every_other_summary_states():
    from engine.data.loading import load_paths
    from engine.evidence.medomit.rows import dataset_rows, group_means
    from engine.sample import SAMPLE_BUNDLE

    ds = load_paths([SAMPLE_BUNDLE])[0]
    results = {r.summary_id: r for r in _shipped()}
    rows = {r.summary_id: r for r in dataset_rows(ds, results)}
    for sid, r in results.items():
        others = [o for o in results.values() if o.case_id == r.case_id and o.summary_id != sid]
        gone = [{x.fact_id for x in o.omitted} for o in others]
        want = sum(1 for s in r.omitted if all(s.fact_id not in g for g in gone))
        assert rows[sid].others_keep == want
        assert rows[sid].display()["left out, all other summaries state"] == want
    alone = dataset_rows(ds, {"card-01-s1": results["card-01-s1"]})  # its case's others not run
    assert next(r for r in alone if r.summary_id == "card-01-s1").others_keep is None
    means = {g["quality group"]: g for g in group_means(list(rows.values()), "quality group")}
    assert means["high"]["mean left out, all others state"] < means["low"]["mean left out, all others state"]


def test_evidence_page_view_counts_them_per_summary_and_group(store):
    from engine.sample import ensure_sample
    from engine.views.evidence import evidence_page_view

    ensure_sample(store)
    ds = store.load_dataset("sample")
    view = evidence_page_view(store, "sample", ds)
    shown = {r["summary"]: r["left out, all other summaries state"] for r in view.medomit_rows}
    assert shown and all(isinstance(v, int) for v in shown.values())
    assert shown["card-01-s3"] > shown["card-01-s1"]  # s3 left out a documented pertinent fact, s1 none
    assert all(g["mean left out, all others state"] is not None for g in view.medomit_by_group["quality group"])


def test_cli_compares_a_summary_run_alone_with_the_stored_others_of_its_case(store):
    from engine.cli.evidence_commands import _emit_case
    from engine.sample import ensure_sample

    ensure_sample(store)
    ds = store.load_dataset("sample")
    me = next(r for r in _one_step_rows() if r.summary_id == "neuro-01-s2")
    lines = []
    _emit_case(lines.append, ds, [me], store, "sample")
    assert [x["summary_id"] for x in lines] == ["neuro-01-s2"]
    assert sorted(lines[0]["compared_with"]) == ["neuro-01-s1", "neuro-01-s3"]  # as the Case page compares it


def test_the_list_says_when_the_weights_do_not_rank_the_facts(case_results):
    r = case_results[0]
    scores = [round(x.score, 3) for x in r.scores]
    same = max(scores.count(v) for v in set(scores))
    assert same >= 0.8 * len(scores)  # the shipped 1.5B rows: nearly every fact "important"
    note = same_weight_note(r, compared=True)
    assert f"{same} of {len(scores)} facts weigh the same" in note or f"All {same} facts" in note
    assert "what the other summaries state" in note
    assert "what the other summaries state" not in same_weight_note(r)

    spread = [replace(x, score=w) for x, w in zip(r.scores, [1.0, 0.5, 0.1] * len(r.scores))]
    assert same_weight_note(replace(r, scores=spread)) == ""  # weights that do separate the facts: nothing said
    alike = [replace(x, score=0.5, importance="important") for x in r.scores]
    assert same_weight_note(replace(r, scores=alike)).startswith(f"All {len(alike)} facts weigh the same (0.5, "
                                                                 "rated \u201cimportant\u201d): the model's weights "
                                                                 "do not separate")
    few = alike[:SAME_WEIGHT_MIN_FACTS - 1]
    assert same_weight_note(replace(r, scores=few)) == ""  # too few facts to speak of a ranking
