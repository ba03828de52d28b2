"""Claim-level verification: claims by rules, P(yes) from the answer token, the record kept evaluated, stated
reasons instead of guessed probabilities, storage, the CLI, the evidence registry and the features it feeds.

The model tests run the real smoke-test model (Gemma 3 270M) in process; the fakes only drive the logic of
reading answers and citation verdicts."""
import json
import math

import pytest

from fakes import AnswerBackend
from engine.core.models import Case, Dataset, Note, Summary
from engine.evidence.support.verification.ask import read_yes
from engine.evidence.support.verification.claims import split_claims
from engine.evidence.support.verification.result import VerificationResult
from engine.evidence.support.verification.run import (DEFAULT_PARAMS, VerifyParams, compute_verification, fact_findings,
                                              verify_summary)
from engine.views.verification import summary_view
from engine.evidence.text.lexical import claimed_numbers, numbers
from engine.llm.backends import NextToken

CASE = Case("c1", "Cardiology", (
    Note("1", "67 y/o man with new atrial fibrillation, HR 112. Started metoprolol 25 mg daily and apixaban 5 mg "
              "twice daily. Echo ordered.", "2024-01-09", "Progress note"),
    Note("2", "Echo: LVEF 35%, moderate mitral regurgitation. Start sacubitril/valsartan. Follow-up in 4 weeks.",
         "2024-01-20", "Imaging follow-up")))
SUMMARY = Summary("c1-s1", "c1", "New atrial fibrillation on metoprolol and apixaban. <NoteID:1> Echo showed LVEF "
                                 "35% with moderate MR; sacubitril/valsartan started. <NoteID:2>")


# ----------------------------------------------------------------------------------------------- claims
def test_a_demographic_head_a_relative_clause_and_a_presentation_are_three_claims():
    got = [c.text for c in split_claims("A 74-year-old Filipino male who moved here in 1984 presents to the "
                                        "emergency department with chest pain.")]
    assert got == ["A 74-year-old Filipino male", "who moved here in 1984",
                   "presents to the emergency department with chest pain."]


def test_clauses_split_but_lists_stay_whole_and_offsets_point_into_the_sentence():
    s = "The patient denies fever and reports a cough; she has a history of hypertension, diabetes and asthma."
    claims = split_claims(s)
    assert [c.text for c in claims] == ["The patient denies fever", "and reports a cough",
                                        "she has a history of hypertension, diabetes and asthma."]
    assert all(s[c.start:c.end] == c.text for c in claims)
    assert [c.text for c in split_claims("Lisinopril 10 mg daily.")] == ["Lisinopril 10 mg daily."]


# ----------------------------------------------------------------------------------------------- answers
def test_p_yes_is_the_yes_mass_over_yes_and_no():
    a = read_yes(NextToken({"Yes": math.log(0.6), "yes": math.log(0.1), "No": math.log(0.2), "The": math.log(0.1)},
                           5, 5, 0.1))
    assert a.p_yes == pytest.approx(0.7 / 0.9)


def test_no_logprobs_or_neither_answer_is_unscored_with_the_reason():
    none = read_yes(NextToken({}, 5, 5, 0.0))
    assert none.p_yes is None and "no log-probabilities" in none.reason
    odd = read_yes(NextToken({"The": -0.1, "I": -2.0}, 5, 5, 0.0))
    assert odd.p_yes is None and "neither yes nor no" in odd.reason and "'The'" in odd.reason


def test_a_model_that_answers_neither_leaves_claims_unscored_and_the_run_goes_on():
    be = AnswerBackend(lambda m: {"Maybe": -0.05})
    r = verify_summary(CASE, SUMMARY, be)
    assert r.sentences and all(s.verdict == "unscored" and s.p_supported is None for s in r.sentences)
    assert all("neither yes nor no" in c.reason for s in r.sentences for c in s.claims)


def test_a_summary_with_no_sentence_is_unscored_as_a_whole():
    r = verify_summary(CASE, Summary("e", "c1", "   \n"), AnswerBackend(lambda m: {"Yes": 0.0}))
    assert r.reason == "the summary has no sentence to verify" and r.sentences == () and r.lowest_p is None


def test_a_finding_caps_the_probability_and_says_what_the_notes_say():
    s = Summary("x", "c1", "Started metoprolol 50 mg daily. <NoteID:1>")
    r = verify_summary(CASE, s, AnswerBackend(lambda m: {"Yes": math.log(0.95), "No": math.log(0.05)}))
    c = r.sentences[0].claims[0]
    assert c.p_model == pytest.approx(0.95) and c.p_supported < r.threshold
    assert c.verdict == "unsupported" and any("25" in x for x in c.notes_say)
    # the model said yes: the number and the fact check drove it, and the mark says so
    assert c.drivers == ("a number the record never states: 50",
                         "a fact check: metoprolol 50: the notes give metoprolol 25 (note 1)")
    v1 = verify_summary(CASE, s, AnswerBackend(lambda m: {"Yes": math.log(0.95), "No": math.log(0.05)}),
                        params=VerifyParams(combine=False))
    assert v1.sentences[0].claims[0].p_supported == DEFAULT_PARAMS.finding_cap


def test_an_age_the_record_never_gives_and_a_foreign_number_are_findings():
    talk = Case("t", "", (Note("1", "[doctor] how is your mother?\n[patient] she is fine, she is 53 now."),))
    found = fact_findings("A 74-year-old man whose mother is 63.", talk, frozenset({"53"}))
    assert "the record never states 63" in found
    bare = Case("b", "", (Note("1", "[doctor] any pain?\n[patient] no."),))
    assert "the record gives no age" in fact_findings("A 74-year-old man.", bare, frozenset())


def test_list_numbers_dates_and_units_are_never_claimed_numbers():
    # A numbered assessment and plan: "2." is the list, not a value the record should state.
    record = Case("r", "", (Note("1", "Plan: Nexium 40 mg once daily. DCCV March 12, 2024, restored sinus "
                                      "rhythm. eGFR 48 mL/min/1.73 m2. Hypertension: continue lisinopril."),))
    nums = frozenset(numbers(record.source_text, generous=True))
    for claim in ("2. Nexium 40 mg once daily.", "3) Nexium 40 mg once daily.", "#4 Hypertension: continue "
                  "lisinopril.", "Problem 5: hypertension, continue lisinopril.",
                  "Assessment: 1. Hypertension, continue lisinopril.", "Cardioversion on 3/12/2024.",
                  "Cardioversion on 2024-03-12.", "eGFR 48 mL/min/1.73m2."):
        assert not [f for f in fact_findings(claim, record, nums) if "never states" in f], claim
    # a value the record never states is still found, list number or not
    assert "the record never states 20" in fact_findings("2. Nexium 20 mg once daily.", record, nums)
    assert claimed_numbers("2. Nexium 20 mg; 3/12/2024; eGFR 48 mL/min/1.73 m2") == {"20", "48"}


def test_a_summary_written_as_a_numbered_plan_is_not_marked_for_its_list_numbers():
    case = Case("p", "Gastroenterology", (Note("1", "Plan: Nexium 40 mg once daily. Continue lisinopril for HTN. "
                                                    "Recheck labs in March 2025."),))
    plan = Summary("p-s1", "p", "1. Nexium 40 mg once daily.\n2. Continue lisinopril for hypertension.\n"
                                "3. Recheck labs in March 2025.")
    r = verify_summary(case, plan, AnswerBackend(lambda m: {"yes": math.log(0.9), "no": math.log(0.1)}))
    assert len(r.sentences) == 3 and all(s.verdict == "supported" for s in r.sentences), r.sentences
    assert not any(c.notes_say or c.drivers for s in r.sentences for c in s.claims)


def test_a_citation_is_wrong_when_the_cited_note_alone_does_not_support_the_claim():
    def answer(messages):  # supported by the record; "note 1 alone" says no for the echo sentence
        q = messages[-1]["content"]
        if "Consider only" in q and "Echo" in q:
            return {"No": math.log(0.9), "Yes": math.log(0.1)}
        return {"Yes": math.log(0.9), "No": math.log(0.1)}

    s = Summary("w", "c1", "Echo showed moderate mitral regurgitation. <NoteID:1>")
    r = verify_summary(CASE, s, AnswerBackend(answer))
    sent = r.sentences[0]
    assert sent.verdict == "supported" and sent.citation_verdict == "wrong"
    assert "note 1 alone does not support" in sent.citation_detail and "note 2" in sent.citation_detail
    view = summary_view(r, s.text)
    verdict, detail, by = view.citation_for(sent.start, ("ok", ""))
    assert verdict == "ok" and sent.citation_detail in detail and "judge model" in by  # a second opinion only
    assert view.citation_for(999, ("missing", "no citation")) == ("missing", "no citation", "word rule")


def test_a_record_longer_than_the_context_is_read_as_the_matching_lines():
    filler = " ".join(f"Line {i} says the weather was mild." for i in range(400))
    case = Case("long", "", (Note("1", filler + " Apixaban 5 mg twice daily was started."),))
    be = AnswerBackend(lambda m: {"Yes": 0.0})
    be.n_ctx = 600
    r = verify_summary(case, Summary("l", "long", "Apixaban was started."), be)
    assert r.record_tokens == 0 and r.sentences[0].verdict == "supported"
    assert "Apixaban 5 mg" in r.sentences[0].claims[0].passage[-1].text


def test_results_round_trip_and_the_view_marks_unsupported_claims():
    be = AnswerBackend(lambda m: {"No": math.log(0.8), "Yes": math.log(0.2)}
                       if "sacubitril" in m[-1]["content"] else {"Yes": math.log(0.9), "No": math.log(0.1)})
    r = verify_summary(CASE, SUMMARY, be)
    back = VerificationResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r
    v = summary_view(back, SUMMARY.text)
    assert v.marks and all("sacubitril" in SUMMARY.text[a:b] or "Echo" in SUMMARY.text[a:b] for a, b, _, _ in v.marks)
    assert v.rows[0].verdict == "unsupported" and "claims unsupported" in v.headline


def test_an_answer_near_the_line_is_uncertain_in_its_own_colour_and_never_counted_unsupported():
    from engine.evidence.support.verification.combination import shipped_combination
    from engine.views.verification import UNCERTAIN_COLOUR, UNSUPPORTED_COLOUR

    comb = shipped_combination()
    # find the model's P(yes) that lands a plain, fully stated sentence inside the uncertain band
    s = Summary("u", "c1", "Echo ordered.")
    p_yes = next(p / 100 for p in range(1, 100)
                 if comb.verdict(verify_summary(CASE, s, AnswerBackend(
                     lambda m, q=p / 100: {"Yes": math.log(q), "No": math.log(1 - q)})).sentences[0].p_supported)
                 == "uncertain")
    r = verify_summary(CASE, s, AnswerBackend(lambda m: {"Yes": math.log(p_yes), "No": math.log(1 - p_yes)}))
    c = r.sentences[0].claims[0]
    assert c.verdict == "uncertain" and r.sentences[0].verdict == "uncertain" and not r.unsupported
    assert c.drivers == (f"the model's answer (P(yes) {p_yes:.2f})",)  # every word is the record's: the model drove it
    v = summary_view(r, s.text)
    assert [m[2] for m in v.marks] == [UNCERTAIN_COLOUR] and UNSUPPORTED_COLOUR not in [m[2] for m in v.marks]
    assert "Uncertain" in v.marks[0][3] and "Why: the model's answer" in v.marks[0][3]
    assert "0 of 1 claims unsupported" in v.headline and "1 uncertain" in v.headline and v.rows[0].why


# ----------------------------------------------------------------------------------------------- real model
@pytest.fixture(scope="module")
def smoke():
    from engine.llm.llama import LlamaCppBackend
    from engine.llm.modelfiles import SMOKE_EMBEDDED, embedded_model_path

    return LlamaCppBackend(embedded_model_path(SMOKE_EMBEDDED), n_ctx=2048, n_threads=2)


def test_the_record_is_evaluated_once_and_answers_do_not_depend_on_the_question_before(smoke):
    from engine.evidence.support.verification.ask import KEEP, messages, question_message, record_message

    rec = record_message(CASE)
    first = smoke.next_token(messages(rec, question_message("Metoprolol was started.")), KEEP)
    other = smoke.next_token(messages(rec, question_message("The echo showed an LVEF of 35%.")), KEEP)
    again = smoke.next_token(messages(rec, question_message("Metoprolol was started.")), KEEP)
    assert first.new_tokens > 100  # the record was read
    assert other.new_tokens < first.new_tokens / 3 and again.new_tokens < first.new_tokens / 3  # the question only
    assert again.logprobs == first.logprobs  # bit-identical whatever was asked in between


def test_the_smoke_test_model_verifies_a_summary_with_probabilities_and_provenance(smoke):
    r = verify_summary(CASE, SUMMARY, smoke)
    assert r.smoke_test and r.model.startswith("gemma-3-270m") and r.questions >= 2
    scored = [c for s in r.sentences for c in s.claims if c.p_supported is not None]
    unscored = [c for s in r.sentences for c in s.claims if c.p_supported is None]
    assert all(0.0 <= c.p_supported <= 1.0 for c in scored)
    assert all(c.reason for c in unscored)  # never a guessed probability
    assert all(c.passage for s in r.sentences for c in s.claims)


def test_a_server_without_logprobs_gives_unscored_claims_with_the_reason():
    from fakes import make_server
    from engine.llm.http_backend import OpenAIHTTPBackend

    srv, _seen = make_server({})
    try:
        be = OpenAIHTTPBackend(f"http://127.0.0.1:{srv.server_port}/v1", model="m", n_ctx=8192, probe=False)
        r = verify_summary(CASE, SUMMARY, be)
    finally:
        srv.shutdown()
    claims = [c for s in r.sentences for c in s.claims]
    assert claims and all(c.verdict == "unscored" and "no log-probabilities" in c.reason for c in claims)


# ----------------------------------------------------------------------------------------------- stored, CLI
def _counted_workspace(tmp_path):
    """A workspace holding CASE and SUMMARY, and a backend factory that counts how often it is opened."""
    from engine.data.store import Store

    store = Store(tmp_path / "ws.sqlite")
    ds = Dataset(name="d", cases=[CASE], summaries=[SUMMARY])
    store.import_dataset(ds, name="d")
    calls = []

    def backend():
        calls.append(1)
        return AnswerBackend(lambda m: {"Yes": math.log(0.9), "No": math.log(0.1)})

    return store, ds, calls, backend


def test_verification_is_stored_by_content_and_read_back_through_the_registry(tmp_path):
    from engine.evidence.kinds import stored_results

    store, ds, calls, backend = _counted_workspace(tmp_path)
    first = compute_verification(store, "d", ds, ["c1-s1"], backend, "sha-x")
    again = compute_verification(store, "d", ds, ["c1-s1"], backend, "sha-x")
    assert first.computed == 1 and again.computed == 0 and len(calls) == 1
    got = stored_results(store, "d", "verification")["c1-s1"]
    assert isinstance(got, VerificationResult) and got == first.results["c1-s1"]
    other = compute_verification(store, "d", ds, ["c1-s1"], backend, "sha-x", VerifyParams(threshold=0.95))
    assert other.computed == 1  # other parameters: another key, computed again


def test_a_result_stored_before_the_allergy_check_is_decided_again_without_asking(tmp_path):
    from engine.data.store import Store
    from engine.evidence.support.verification.run import METHOD_KEY, earlier_keys, verification_key

    case = Case("c9", "Cardiology", (Note("1", "Meds: metformin 1000 mg.\nAllergies: sulfa (rash)."),
                                     Note("2", "LHC: DES to the LAD. Contrast 110 mL.")))
    summary = Summary("c9-s1", "c9", "Allergies: sulfa, plus an iodinated contrast allergy.")
    store = Store(tmp_path / "ws.sqlite")
    ds = Dataset(name="d", cases=[case], summaries=[summary])
    store.import_dataset(ds, name="d")
    yes = AnswerBackend(lambda m: {"Yes": math.log(0.9), "No": math.log(0.1)})
    before = verify_summary(case, summary, yes, "sha-x")
    # what verify-v2 stored before the fact checks carried a version: the same answers, no allergy finding
    stale = before.to_dict()
    for s in stale["sentences"]:
        for c in s["claims"]:
            c.update(p_supported=0.9, verdict="supported", reason="", notes_say=[], drivers=[])
        s.update(p_supported=0.9, verdict="supported")
    old_key = earlier_keys(case, summary, "sha-x")[0]
    assert old_key != verification_key(case, summary, "sha-x")
    store.put_evidence("d", METHOD_KEY, old_key, "c9-s1", "complete", json.dumps(stale))

    def never():
        raise AssertionError("no question is asked again")

    got = compute_verification(store, "d", ds, ["c9-s1"], never, "sha-x")
    res = got.results["c9-s1"]
    assert got.computed == 0 and res.sentences[0].verdict == "unsupported"
    assert "an allergy to iodinated contrast: no note records it as an allergy" in res.sentences[0].claims[0].notes_say
    assert store.get_evidence("d", METHOD_KEY, verification_key(case, summary, "sha-x"), "c9-s1") is not None


def test_cli_verify_writes_one_line_per_summary_with_the_smoke_test_model(tmp_path, capsys):
    from engine.cli import main
    from engine.llm.modelfiles import SMOKE_EMBEDDED, embedded_model_path

    out = tmp_path / "v.jsonl"
    assert main(["sample"]) == 0
    rc = main(["verify", "sample", "--summary", "card-01-s1",
               "--model", str(embedded_model_path(SMOKE_EMBEDDED)), "--ctx", "4096", "--threads", "2",
               "--out", str(out), "--quiet"])
    assert rc == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [d["summary_id"] for d in lines] == ["card-01-s1"]
    d = lines[0]
    assert d["smoke_test"] is True and d["sentences"]
    for s in d["sentences"]:
        assert set(s) >= {"text", "p_supported", "verdict", "claims"}
        assert s["verdict"] in ("supported", "unsupported", "unscored")
        assert (s["p_supported"] is None) == (s["verdict"] == "unscored")


# ----------------------------------------------------------------------------------------------- features, triage
def test_triage_and_calibration_read_the_unsupported_share_but_never_a_smoke_test_verification(tmp_path):
    from dataclasses import replace as dc_replace

    from engine.data.store import Store
    from engine.evidence.support.verification.run import METHOD_KEY, verification_key
    from engine.judge.features import evidence_for
    from engine.judge.triage import queue

    store = Store(tmp_path / "ws.sqlite")
    other = Summary("c1-s2", "c1", "Started warfarin for a mechanical valve. <NoteID:1>")
    ds = Dataset(name="d", cases=[CASE], summaries=[SUMMARY, other])
    store.import_dataset(ds, name="d")
    be = AnswerBackend(lambda m: {"No": math.log(0.9), "Yes": math.log(0.1)} if "warfarin" in m[-1]["content"]
                       else {"Yes": math.log(0.9), "No": math.log(0.1)})
    compute_verification(store, "d", ds, ["c1-s1", "c1-s2"], lambda: be, "sha-x")
    ev = evidence_for(store, "d", ds)
    assert ev["c1-s2"].features.unsupported == 1.0 and ev["c1-s2"].features.lowest_supported < 0.65
    assert ev["c1-s1"].features.unsupported == 0.0
    q = queue(ds.summaries, {}, "expected", ev)
    assert q[0].summary_id == "c1-s2"
    assert any("state something the record does not" in r for r in q[0].reasons)
    smoke = dc_replace(verify_summary(CASE, other, be), smoke_test=True)
    store.put_evidence("d", METHOD_KEY, verification_key(CASE, other, "sha-smoke"), "c1-s2", "complete",
                       json.dumps(smoke.to_dict()))  # the newest result is a smoke-test one: not evidence
    assert evidence_for(store, "d", ds)["c1-s2"].features.unsupported is None


def test_run_it_again_asks_again_and_replaces_the_stored_result(tmp_path):
    """Before: "Verify this summary's claims" only ever returned the stored result."""
    from engine.evidence.support.verification.run import verification_job

    store, ds, calls, backend = _counted_workspace(tmp_path)
    compute_verification(store, "d", ds, ["c1-s1"], backend, "sha-x")
    assert compute_verification(store, "d", ds, ["c1-s1"], backend, "sha-x").computed == 0
    again = verification_job(store, "d", ds, ["c1-s1"], backend, "sha-x", rerun=True).start()
    assert again.wait(30) and again.status().state == "done"
    assert len(calls) == 2 and again.status().counts.get("from the workspace", 0) == 0


def test_the_case_page_offers_to_run_each_model_evidence_again():
    from conftest import _run

    at = _run("pages/case.py")
    labels = {r.label: r.options for r in at.radio}
    for kind in ("A stored verification of this summary", "A stored MED-OMIT result of this summary"):
        assert "Run it again (replaces the stored result)" in labels[kind]
