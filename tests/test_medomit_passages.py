"""MED-OMIT: passages of the notes that no extracted fact covers become facts (engine.evidence.medomit.gaps)."""
from dataclasses import replace

from engine.core.models import Case, Note, Summary
from engine.evidence.medomit.gaps import GapParams, PASSAGE_LINK, gap_units, passage_facts
from engine.evidence.medomit.pipeline import MedOmit, result_key
from engine.evidence.medomit.result import Fact, MedOmitResult
from fakes import ScriptedBackend

PLAN = ("Plan:\n"
        "Increase sacubitril/valsartan to 49/51 mg p.o. b.i.d. Start dapagliflozin 10 mg p.o. q.d.\n"
        "Continue metoprolol succinate 100 mg q.d. and furosemide 40 mg daily.\n"
        "Cardiac rehabilitation referral placed today for exercise training.")
CASE = Case("p1", "Cardiology", (Note("1", PLAN),))


def two_notes(case_id: str) -> Case:
    """The scripted backend's two notes with one more sentence, on which the scripted facts lie nowhere."""
    return Case(case_id, "Cardiology", (
        Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily.", "2024-01-01"),
        Note("2", "Echo: LVEF 35%. Nephrology referral placed for CKD stage 3. "
                  "Spironolactone 25 mg daily started for hyperkalemia prevention trial.", "2024-02-01")))


def _fact(fid, text, quote=None):
    quote = quote or text
    s = PLAN.index(quote)
    return Fact(fid, text, "1", s, s + len(quote), "exact", 1.0)


def test_a_sentence_no_fact_lies_on_becomes_a_passage_fact():
    facts = [_fact("F1", "Sacubitril/valsartan increased to 49/51 mg b.i.d.", "Increase sacubitril/valsartan to 49/51 mg"),
             _fact("F2", "Continue metoprolol succinate 100 mg and furosemide 40 mg daily",
                   "Continue metoprolol succinate 100 mg q.d. and furosemide 40 mg daily")]
    got = passage_facts(CASE, facts)
    texts = [p.text for p in got]
    # the dapagliflozin line and the rehabilitation referral: no fact lies on them
    assert texts == ["Start dapagliflozin 10 mg p.o. q.d.",
                     "Cardiac rehabilitation referral placed today for exercise training."]
    for p in got:
        assert p.link == PASSAGE_LINK and PLAN[p.start:p.end] == p.text and p.fact_id.startswith("P")
    # "Plan:" is a heading (fewer than three content words): never a fact
    assert all("Plan" not in t for t in texts)


def test_a_fact_on_the_sentence_that_leaves_out_its_drug_does_not_cover_it():
    # the model's fact lies on the dapagliflozin line but names no drug: the key term is missing -> a passage
    vague = _fact("F1", "Start a new medicine 10 mg daily", "Start dapagliflozin 10 mg p.o. q.d.")
    assert "dapagliflozin" in " ".join(u.text for u in gap_units(CASE, [vague]))
    named = _fact("F1", "Dapagliflozin 10 mg daily started", "Start dapagliflozin 10 mg p.o. q.d.")
    assert "dapagliflozin" not in " ".join(u.text for u in gap_units(CASE, [named]))
    # without the key-term rule the vague fact carries enough of the line's words
    assert "dapagliflozin" not in " ".join(u.text for u in gap_units(CASE, [vague], GapParams(key_terms=False,
                                                                                                min_carried=0.3)))


def test_a_fact_elsewhere_does_not_cover_a_sentence_and_unlinked_facts_count_for_nothing():
    far = _fact("F1", "Cardiac rehabilitation referral placed for exercise training",
                "Cardiac rehabilitation referral placed today for exercise training.")
    moved = replace(far, start=0, end=5)  # the same words, linked to the heading
    assert any("rehabilitation" in u.text for u in gap_units(CASE, [moved]))
    unlinked = replace(far, note_id=None, start=None, end=None, link="unlinked")
    assert any("rehabilitation" in u.text for u in gap_units(CASE, [unlinked]))
    assert passage_facts(CASE, [], GapParams(enabled=False)) == []


def test_the_pipeline_weighs_and_decides_passages_but_does_not_cluster_them():
    case = two_notes("c2")
    summary = Summary("c2-s1", "c2", "Atrial fibrillation on apixaban. <NoteID:1> LVEF 35%. <NoteID:2>")
    be = ScriptedBackend()
    r = MedOmit(be, "m").run(case, summary)
    assert r.status == "complete", r.reason
    (p,) = [f for f in r.facts if f.link == PASSAGE_LINK]
    assert p.text.startswith("Spironolactone 25 mg daily started") and p.fact_id == "P1"
    assert any(s.step == "passages" for s in r.steps)
    imp = [ids for step, ids in be.schemas if step == "importance"]
    assert any("P1" in ids for ids in imp)  # weighed for importance
    assert not any("P1" in ids for step, ids in be.schemas if step == "clusters")  # not clustered
    score = next(s for s in r.scores if s.fact_id == "P1")
    # decided like every fact: the model asked (the script says "stated") beside its low coverage
    assert score.importance == "important" and score.p_stated is not None and score.coverage < 0.5
    back = MedOmitResult.from_json(r.to_json())
    assert back.fact("P1").link == PASSAGE_LINK and back.omission_count == r.omission_count
    # the passage rule is part of the result's key: another rule is another result
    assert result_key("m", case, summary) != result_key("m", case, summary, gaps=GapParams(min_carried=0.7))
    assert r.provenance["passages"] == GapParams().key()


def test_relink_adds_passages_to_a_stored_result_without_extracting_again():
    from engine.evidence.medomit.relink import relink_case

    case = two_notes("c3")
    summary = Summary("c3-s1", "c3", "Atrial fibrillation on apixaban. LVEF 35%. Spironolactone 25 mg daily started.")
    full = MedOmit(ScriptedBackend(), "m").run(case, summary)
    old = MedOmitResult.from_json(full.to_json())  # as an older method stored it: no passages
    old.facts = [f for f in old.facts if f.link != PASSAGE_LINK]
    old.scores = [s for s in old.scores if not s.fact_id.startswith("P")]
    be = ScriptedBackend()
    (new,) = relink_case(MedOmit(be, "m"), case, [(summary, old)])
    assert [f.fact_id for f in new.facts if f.link == PASSAGE_LINK] == ["P1"]
    assert new.provenance["passage_facts"] == ["P1"]
    assert not any(c == "facts" for c in be.calls)  # nothing extracted again
    assert be.calls.count("importance") == 1 and "clusters" not in be.calls
    p1 = next(s for s in new.scores if s.fact_id == "P1")
    assert not p1.omitted  # the summary states it
    # a result that already holds passages gets none added
    (again,) = relink_case(MedOmit(ScriptedBackend(), "m"), case, [(summary, new)])
    assert [f.fact_id for f in again.facts if f.link == PASSAGE_LINK] == ["P1"]
