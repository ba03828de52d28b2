"""MED-OMIT's omission decision (engine.evidence.medomit.decision) and the real-text omission set it was chosen on
(bench/omission_realdev.py), on real MTS-Dialog rows copied into tests/data (CC BY 4.0)."""
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT
from engine.evidence.medomit.decision import (DEFAULT_DECISION, DecisionParams, combine, decide, messages,
                                              model_decides)
from fakes import AnswerBackend

sys.path.insert(0, str(ROOT / "bench"))
from omission_realdev import removed_from  # noqa: E402

ROWS = json.loads((Path(__file__).parent / "data" / "mts_dialog_excerpt.json").read_text())["rows"]


def test_the_removed_set_labels_a_fact_omitted_exactly_when_its_sentence_was_taken_out():
    items = removed_from(ROWS, 5)
    assert {i.summary_key.split("|")[1] for i in items} == {"complete", "quarter", "half"}
    for it in items:
        if it.summary_key.endswith("complete"):
            assert it.omitted == 0 and it.share_removed == 0.0
        assert it.omitted == (it.fact not in it.summary)  # the kept sentences stay word for word
    assert any(i.omitted for i in items) and any(not i.omitted for i in items)


def test_the_model_is_asked_only_where_its_answer_can_change_the_decision():
    every = replace(DEFAULT_DECISION, model_clears_only=False)
    w, t = every.model_weight, every.threshold
    lo, hi = 1 - t / (1 - w), 1 - (t - w) / (1 - w)  # coverage below lo: omitted anyway; above hi: present anyway
    assert not model_decides(lo - 0.01, every) and model_decides((lo + hi) / 2, every)
    if hi < 1:
        assert not model_decides(hi + 0.01, every)
    else:  # the model's weight exceeds the threshold: a clear "not stated" reports even a fully covered fact
        assert model_decides(1.0, every) and combine("f", 1.0, 0.0).omitted and not combine("f", 1.0, 1.0).omitted
    for c in (x for x in (0.0, lo - 0.01, hi + 0.01, 1.0) if 0 <= x <= 1 and (x < lo or x > hi)):
        # outside the band, any answer gives the same decision
        assert combine("f", c, 0.0).omitted == combine("f", c, 1.0).omitted == combine("f", c, None, decisive=True).omitted
    assert combine("f", (lo + hi) / 2, 0.0).omitted and not combine("f", (lo + hi) / 2, 1.0).omitted


def test_by_default_the_model_only_clears_facts_that_coverage_would_report():
    w, t = DEFAULT_DECISION.model_weight, DEFAULT_DECISION.threshold
    lo = 1 - t / (1 - w)  # below: omitted whatever the model says
    clear = 1 - (t - w / 2) / (1 - w)  # above: coverage with an undecided model (P(stated) = 1/2) calls it stated
    assert lo < clear < 1
    assert not model_decides(lo - 0.01) and model_decides((lo + clear) / 2) and model_decides(clear - 0.001)
    assert not model_decides(clear + 0.01) and not model_decides(1.0)
    # not asked above the bound: the fact is present, with P(stated) counted as one half (never guessed)
    d = combine("f", clear + 0.01, None, decisive=True)
    assert not d.omitted and d.p_stated is None and d.basis == "coverage decides"
    # in the band a "no" still reports the fact and a "yes" clears it
    assert combine("f", (lo + clear) / 2, 0.0).omitted and not combine("f", (lo + clear) / 2, 1.0).omitted
    assert DEFAULT_DECISION.key()["model_clears_only"] is True  # part of the result key


@pytest.fixture(scope="module")
def emb():
    from engine.evidence.embeddings import default_embedder

    return default_embedder()


def test_decide_reads_the_summary_once_and_asks_one_short_question_per_undecided_fact(emb):
    summary = "Known atrial fibrillation, on apixaban 5 mg twice daily. Echo: LVEF 35%."
    facts = {"F1": "Apixaban 5 mg twice daily", "F2": "LVEF 35 percent on echocardiogram",
             "F3": "Referred to nephrology for CKD stage 3", "F4": "Lives alone and walks with a cane"}
    stated = ("LVEF", "Apixaban")  # the model answers yes for the two facts the summary states, no for the others
    be = AnswerBackend(lambda m: {"yes": -0.1, "no": -2.5} if any(k in m[-1]["content"] for k in stated)
                       else {"no": -0.1, "yes": -3})
    out = decide(list(facts), list(facts.values()), summary, emb, be)
    by = {d.fact_id: d for d in out}
    assert not by["F1"].omitted and by["F3"].omitted and by["F4"].omitted
    asked = [q for q in be.questions]
    assert len(asked) == sum(d.p_stated is not None for d in out)
    assert all(d.basis in ("model+coverage", "coverage decides") for d in out)
    # the questions differ only in their last message; the summary sits in the kept prefix
    m1, m2 = messages(summary, "a"), messages(summary, "b")
    assert m1[:3] == m2[:3] and m1[3] != m2[3] and summary in m1[1]["content"]


def test_without_a_model_answer_the_coverage_decides_and_says_so(emb):
    out = decide(["F1"], ["Referred to nephrology for CKD stage 3"], "Atrial fibrillation on apixaban.", emb, None)
    assert out[0].omitted and out[0].p_stated is None and out[0].basis == "coverage"
    nothing = AnswerBackend(lambda m: {"maybe": -0.1})
    only_model = DecisionParams(model_weight=1.0, threshold=0.5)  # every fact is asked
    got = decide(["F1"], ["Apixaban 5 mg twice daily"], "On apixaban 5 mg daily.", emb, nothing, only_model)[0]
    assert got.p_stated is None and got.basis == "coverage" and "neither yes nor no" in got.note
    assert got.p_omitted == 0.5 and got.omitted  # P(stated) counted as one half, never guessed
