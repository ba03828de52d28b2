"""MED-OMIT: the scoring on the paper's worked examples and edge cases; the pipeline with a scripted backend."""
import json

import pytest

from engine.evidence.medomit.decision import DecisionParams

from engine.evidence.medomit._linking import link_fact
from engine.evidence.medomit.result import Cluster, Diagnosis, MedOmitResult, compare_ddx, fact_score, merge_facts, score_document, uniqueness_values
from engine.evidence.medomit.pipeline import MedOmit, run_medomit
from engine.evidence.medomit._checks import check_ddx
from engine.core.models import Case, Dataset, Note, Summary
from fakes import ScriptedBackend

# ------------------------------------------------------------------------------ the paper's worked examples

# The mechanics of the closed question (one per fact, shared prefix, caching) under a decision that asks about
# every fact; the shipped decision skips facts whose coverage alone decides (tests/test_omission_decision.py).
EVERY_FACT_ASKED = DecisionParams(model_weight=1.0, threshold=0.5)


def test_figure_1_weights():
    # Figure 1 (Stephanie): omitted facts scored 0.5 (reduced heart function: important), 0.1 (Vermont trip),
    # 0.1 (cheeseburgers), 0.1 (no shortness of breath) and 1 (low hemoglobin: critical), no cluster reaching higher.
    importance = {"F1": "important", "F2": "other", "F3": "other", "F4": "other", "F5": "critical"}
    omitted = {k: True for k in importance}
    scores, weight, count = score_document(list(importance), omitted, importance, [])
    assert [s.score for s in scores] == [0.5, 0.1, 0.1, 0.1, 1.0]
    assert weight == pytest.approx(1.8) and count == 5


# Figures 13-14 (Martha): the supporting and refuting sub-clusters as printed in the paper.
MARTHA_CLUSTERS = [
    Cluster("Uncontrolled Hypertension", "supporting", "Work-related stress", ["F15"]),
    Cluster("Uncontrolled Hypertension", "supporting", "Stress-induced hypertension", ["F15"]),
    Cluster("Uncontrolled Hypertension", "supporting", "Medication non-adherence", ["F14"]),
    Cluster("Well-managed Congestive Heart Failure", "supporting", "Past medical history", ["F1"]),
    Cluster("Well-managed Congestive Heart Failure", "supporting", "No symptoms", ["F10"]),
    Cluster("Well-managed Congestive Heart Failure", "supporting", "Medication adherence", ["F9"]),
    Cluster("Uncontrolled Hypertension", "refuting", "Antihypertensive medication adherence", ["F14", "F9"]),
    Cluster("Well-managed Congestive Heart Failure", "refuting", "Cardiac insufficiency", ["F10"]),
]
MARTHA_IMPORTANCE = {"F1": "critical", "F14": "critical", "F15": "critical", "F12": "important",
                     "F16": "important", "F17": "important", "F0": "other", "F2": "other", "F3": "other",
                     # not printed in the truncated figure; implied by the scores it shows for these omissions
                     "F18": "important", "F4": "other", "F6": "other", "F8": "important", "F9": "other",
                     "F10": "other"}


def test_figures_13_14_uniqueness():
    # F14 sits alone in a supporting sub-cluster (1/1) and with F9 in a refuting one (1/2)
    assert uniqueness_values("F14", MARTHA_CLUSTERS) == [1.0, 0.5]
    assert uniqueness_values("F9", MARTHA_CLUSTERS) == [1.0, 0.5]
    assert uniqueness_values("F15", MARTHA_CLUSTERS) == [1.0, 1.0]  # a fact in several clusters
    assert uniqueness_values("F17", MARTHA_CLUSTERS) == []
    # F9 is only "other" (0.1) but uniquely supports well-managed CHF: max(0.1, 1, 0.5) = 1
    assert fact_score("other", uniqueness_values("F9", MARTHA_CLUSTERS)) == 1.0


def test_figure_14_document_weight():
    # Figure 14's omitted facts: F17 (0.5), F18 (0.5), F4 (0.1), F6 (0.1), F8 (0.5) -> weight 1.7, count 5
    ids = list(MARTHA_IMPORTANCE)
    omitted = {k: k in {"F17", "F18", "F4", "F6", "F8"} for k in ids}
    scores, weight, count = score_document(ids, omitted, MARTHA_IMPORTANCE, MARTHA_CLUSTERS)
    assert count == 5 and weight == pytest.approx(1.7)
    by = {s.fact_id: s for s in scores}
    assert by["F17"].score == 0.5 and by["F4"].score == 0.1 and not by["F9"].omitted
    # had F9 been omitted too, its uniqueness would add a full point
    omitted["F9"] = True
    assert score_document(ids, omitted, MARTHA_IMPORTANCE, MARTHA_CLUSTERS)[1] == pytest.approx(2.7)


def test_edge_cases():
    # no omissions
    assert score_document(["F1"], {"F1": False}, {"F1": "critical"}, [])[1:] == (0.0, 0)
    # a diagnosis with no facts contributes nothing; an uncategorised fact counts only via uniqueness
    clusters = [Cluster("Dx A", "supporting", "m", []), Cluster("Dx B", "refuting", "m", ["F2", "F3"])]
    scores, w, n = score_document(["F1", "F2"], {"F1": True, "F2": True}, {}, clusters)
    assert [s.score for s in scores] == [0.0, 0.5] and w == 0.5 and n == 2


def test_compare_ddx():
    src = [Diagnosis(1, "Heart failure with reduced ejection fraction", "probable", ""),
           Diagnosis(2, "Atrial fibrillation", "probable", ""), Diagnosis(3, "Hypothyroidism", "unlikely", "")]
    summ = [Diagnosis(1, "Atrial fibrillation", "probable", ""), Diagnosis(2, "Pneumonia", "possible", "")]
    c = compare_ddx(src, summ)
    assert c.missing_from_summary == ["Heart failure with reduced ejection fraction", "Hypothyroidism"]
    assert c.added_in_summary == ["Pneumonia"]
    assert c.difference == pytest.approx((1.0 + 0.1) / (1.0 + 1.0 + 0.1), abs=1e-4)


def test_link_and_merge():
    notes = {"1": "Patient reports chest pain.\nStarted apixaban 5 mg b.i.d. for AF.", "2": "Echo: LVEF 35%."}
    nid, s, e, kind, _ = link_fact("On apixaban", "apixaban 5 mg b.i.d.", notes, "1")
    assert (nid, kind) == ("1", "exact") and notes["1"][s:e] == "apixaban 5 mg b.i.d."
    nid, s, e, kind, score = link_fact("LVEF is 35 percent", "Echo shows LVEF of 35%", notes, "1")
    assert nid == "2" and kind == "fuzzy" and notes["2"][s:e] == "Echo: LVEF 35%."
    assert link_fact("Patient owns a boat", "likes sailing on weekends", notes, None)[3] == "unlinked"
    # a fact the notes state word for word is always linked, whatever its quote (before: "Wt 85.7 kg", "K 4.8 mEq/L"
    # and "eGFR 63" of card-01 were listed as "not found in the notes")
    labs = {"1": "Vitals: BP 128/76, Wt  85.7kg.\nLabs: Na 138 mEq/L, K 4.8 mEq/L, eGFR 63."}
    for fact in ("Wt 85.7 kg", "K 4.8 mEq/L", "eGFR 63", "na 138 meq/l"):
        nid, s, e, kind, _ = link_fact(fact, "a quote the model invented", labs, None)
        assert (nid, kind) == ("1", "exact") and "".join(labs["1"][s:e].lower().split()) == "".join(
            fact.lower().split()), fact
    merged = merge_facts([("Started apixaban 5 mg.", "q", "1"), ("started apixaban 5 mg", "q", "2"),
                          ("LVEF 35%", "q", "2")])
    assert [m[0] for m in merged] == ["Started apixaban 5 mg.", "LVEF 35%"]


# ------------------------------------------------------------------------------ pipeline with a scripted backend


CASE = Case("c1", "Cardiology", (
    Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily.", "2024-01-01"),
    Note("2", "Echo: LVEF 35%. Nephrology referral placed for CKD stage 3.", "2024-02-01")))
SUMMARY = Summary("c1-s1", "c1", "Atrial fibrillation on apixaban. <NoteID:1> LVEF 35%. <NoteID:2>")


def test_pipeline_end_to_end_with_script():
    r = MedOmit(ScriptedBackend(), "m").run(CASE, SUMMARY)
    assert r.status == "complete", r.reason
    assert [f.text for f in r.facts] == ["New atrial fibrillation", "Apixaban 5 mg twice daily", "LVEF 35%",
                                         "Nephrology referral for CKD 3"]
    assert r.not_found == [] and not r.smoke_test
    f4 = r.fact("F4")
    assert f4.note_id == "2" and CASE.note("2").text[f4.start:f4.end] == "Nephrology referral"
    assert r.omission_count == 1 and r.omitted[0].fact_id == "F4"
    assert r.document_weight == r.omitted[0].score == 0.5  # important, in no cluster
    assert r.ddx_comparison is not None
    back = MedOmitResult.from_json(r.to_json())
    assert back.document_weight == 0.5 and back.facts == r.facts


def test_failed_step_leaves_result_incomplete():
    r = MedOmit(ScriptedBackend(fail_step="clusters"), "m").run(CASE, SUMMARY)
    assert r.status == "incomplete" and r.failed_step == "clusters" and "invalid reply" in r.reason
    assert r.document_weight is None and r.scores == []
    assert r.facts and r.ddx  # what was found before the failure is kept and shown as such
    assert r.steps[-1].raw  # the raw reply of the failed step is kept


def test_steps_are_cached_and_shared_between_summaries(store):
    ds = Dataset("d", [CASE], [SUMMARY, Summary("c1-s2", "c1", "AF. <NoteID:1>")], [])
    store.import_dataset(ds)
    be = ScriptedBackend()
    mo = MedOmit(be, "m", cache=store, decision=EVERY_FACT_ASKED)
    list(run_medomit(mo, ds, ["c1-s1", "c1-s2"], store=store))
    # case-level steps ran once; only the omission step and the summary DDx ran per summary
    assert be.calls.count("facts") == 2 and be.calls.count("clusters") == 1
    assert be.calls.count("omission-question") == 8  # one closed question per fact (4) and summary
    n = len(be.calls)
    again = list(run_medomit(mo, ds, ["c1-s1", "c1-s2"], store=store))
    assert len(be.calls) == n and all(r.status == "complete" for r in again)


def test_long_note_is_split_without_loss():
    long_text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(12))
    be = ScriptedBackend()
    be.n_ctx = 2300  # budget for a part = 2300 - 1500 - 300 = 500 "tokens"
    parts = MedOmit(be, "m")._note_parts(Case("c", "X", (Note("1", long_text),)))
    assert len(parts) > 1 and all(be.count_tokens(p) <= 500 for _, p in parts)
    assert " ".join(" ".join(p.split()) for _, p in parts) == " ".join(long_text.split())


# ------------------------------------------------------------------------------ keeping to the source


def test_unlinked_fact_is_never_scored():
    # F5 is omitted and alone in a cluster: had it counted it would add max(critical 1, 1/1) = 1
    clusters = [Cluster("Dx", "supporting", "m", ["F1", "F5"])]
    scores, w, n = score_document(["F1", "F5"], {"F1": True, "F5": True}, {"F1": "other", "F5": "critical"},
                                  clusters, unlinked=["F5"])
    assert [s.fact_id for s in scores] == ["F1"] and w == 1.0 and n == 1  # F1's uniqueness is 1/1, not 1/2


def test_invented_fact_is_shown_apart_and_not_counted():
    # the model copies the prompt's worked example: "Blood pressure 152/94" appears in no note
    be = ScriptedBackend(extra_facts=[{"fact": "Blood pressure 152/94", "quote": "BP 152/94"}])
    r = MedOmit(be, "m", decision=EVERY_FACT_ASKED).run(CASE, SUMMARY)
    assert r.status == "complete", r.reason
    assert [f.text for f in r.not_found] == ["Blood pressure 152/94"] and r.fact("F5").link == "unlinked"
    assert r.omission_count == 1 and r.document_weight == 0.5  # only F4; the scripted "omitted" F5 is not counted
    assert [s.fact_id for s in r.omitted] == ["F4"] and "F5" not in {s.fact_id for s in r.scores}
    # the invented fact never reaches the importance, cluster or omission steps
    assert all("F5" not in ids for step, ids in be.schemas if step == "importance")
    assert be.calls.count("omission-question") == 4  # F1-F4 only
    back = MedOmitResult.from_json(r.to_json())
    assert [f.fact_id for f in back.not_found] == ["F5"] and back.omission_count == 1


def test_ddx_of_echoed_instructions_is_incomplete():
    echoed = [{"name": "at most 10 conditions", "likelihood": "probable", "reason": "most likely first"},
              {"name": "probable, possible or unlikely", "likelihood": "possible", "reason": "..."}]
    r = MedOmit(ScriptedBackend(ddx=echoed), "m").run(CASE, SUMMARY)
    assert r.status == "incomplete" and r.failed_step == "ddx[source]"
    assert "echoed instruction" in r.reason and r.document_weight is None and r.omission_count is None
    assert r.facts and not r.ddx  # the facts found are kept; no DDx is invented


@pytest.mark.parametrize("ddx,why", [
    ([{"name": "condition", "likelihood": "probable", "reason": "r"}], "placeholder"),
    ([{"name": "N/A", "likelihood": "probable", "reason": "r"}], "placeholder"),
    ([{"name": "Probable", "likelihood": "probable", "reason": "r"},
      {"name": "possible", "likelihood": "possible", "reason": "r"}], "likelihood words"),
])
def test_empty_ddx_variants_fail_the_step(ddx, why):
    r = MedOmit(ScriptedBackend(ddx=ddx), "m").run(CASE, SUMMARY)
    assert r.status == "incomplete" and r.failed_step == "ddx[source]" and why in r.reason


def test_a_ddx_that_repeats_a_name_keeps_each_name_once_and_says_so():
    looped = ([{"name": "Atrial fibrillation", "likelihood": "probable", "reason": "irregular rhythm"}]
              + [{"name": "atrial  fibrillation.", "likelihood": "possible", "reason": "r"}] * 4
              + [{"name": "HFrEF", "likelihood": "possible", "reason": "LVEF 35%"}])
    r = MedOmit(ScriptedBackend(ddx=looped), "m").run(CASE, SUMMARY)
    assert r.status == "complete", r.reason
    assert [(d.rank, d.name, d.reason) for d in r.ddx] == [(1, "Atrial fibrillation", "irregular rhythm"),
                                                          (2, "HFrEF", "LVEF 35%")]
    step = next(s for s in r.steps if s.step == "ddx[source]")
    assert step.ok and step.error == "4 of the 6 diagnoses repeated an earlier name and were dropped"


@pytest.mark.parametrize("fact", [{"fact": "...", "quote": ""}, {"fact": "fact", "quote": "x"},
                                  {"fact": "Anemia", "quote": "exact words from the note"}])
def test_placeholder_or_echoed_fact_fails_the_facts_step(fact):
    r = MedOmit(ScriptedBackend(extra_facts=[fact]), "m").run(CASE, SUMMARY)
    assert r.status == "incomplete" and r.failed_step.startswith("facts[2")
    assert "empty of content" in r.reason and r.document_weight is None


def test_cached_empty_reply_is_checked_too(store):
    # a DDx cached before the check existed is not trusted: the check runs on the cached value as well
    from engine.evidence.medomit.pipeline import DDX_SCHEMA
    from engine.llm.steps import run_step
    msgs, schema = [{"role": "user", "content": "x"}], {"type": "object", "properties": {"diagnoses": {"type": "array"}}}
    bad = [{"name": "diagnosis", "likelihood": "probable", "reason": "r"}]
    assert run_step(ScriptedBackend(ddx=bad), "m", "s", msgs, schema, 50, store).ok  # cached without a check
    r = MedOmit(ScriptedBackend(), "m", cache=store)._step("s", msgs, schema, 50, check=check_ddx)
    assert not r.ok and r.cached and "placeholder" in r.error


def test_smoke_test_model_is_recognised():
    from engine.llm.modelfiles import is_smoke_test_model
    from engine.llm.modelfiles import embedded_sha256
    r = MedOmit(ScriptedBackend(model_file="gemma-3-270m-it-Q4_K_M.gguf"), "m").run(CASE, SUMMARY)
    assert r.smoke_test and MedOmitResult.from_json(r.to_json()).smoke_test
    assert is_smoke_test_model("/models/gemma-3-270m-q4_k_m.gguf") and not is_smoke_test_model("llama3.1:8b", None)
    if embedded_sha256():
        assert MedOmit(ScriptedBackend(), embedded_sha256()).run(CASE, SUMMARY).smoke_test


def test_result_of_an_older_method_is_rescored_on_load():
    be = ScriptedBackend(extra_facts=[{"fact": "Blood pressure 152/94", "quote": "BP 152/94"}])
    r = MedOmit(be, "m").run(CASE, SUMMARY)
    d = json.loads(r.to_json())
    # as medomit-v2 stored it: the invented fact F5 scored, omitted and counted
    d["provenance"]["method"] = "medomit-v2"
    d["scores"].append({"fact_id": "F5", "omitted": True, "importance": "critical", "importance_weight": 1.0,
                        "uniqueness": [], "score": 1.0, "clusters": [], "explanation": "e"})
    d["document_weight"], d["omission_count"] = 1.5, 2
    back = MedOmitResult.from_json(json.dumps(d))
    assert back.document_weight == 0.5 and back.omission_count == 1 and [s.fact_id for s in back.omitted] == ["F4"]
    assert back.provenance["rescored_from"] == "medomit-v2"


def test_the_clusters_reply_gets_a_budget_that_grows_with_the_facts():
    """A case with many facts needs a longer clusters reply than one fact list: a reply cut off at the fixed budget
    left the whole result incomplete (seen with the 1.5B on a 74-fact case)."""
    from engine.evidence.medomit.pipeline import MedOmitOptions

    opt = MedOmitOptions()
    assert opt.cluster_tokens(10) == opt.max_tokens_facts and opt.cluster_tokens(74) == 74 * 40
    plain = ScriptedBackend()
    MedOmit(plain, "m").run(CASE, SUMMARY)
    assert dict(plain.budgets)["clusters"] == opt.max_tokens_facts  # 4 facts: the usual budget
    wide = ScriptedBackend()
    r = MedOmit(wide, "m", options=MedOmitOptions(cluster_tokens_per_fact=1000)).run(CASE, SUMMARY)
    assert r.status == "complete" and dict(wide.budgets)["clusters"] == 1000 * len(r.facts) == 4000


def test_a_cut_off_fact_list_is_asked_again_in_halves():
    """A dense note's fact list can outgrow the reply budget (seen with the 1.5B on two sample cases): the part is
    split in two at a sentence or paragraph boundary and each half asked again, instead of leaving the result
    incomplete; nothing of the note is left out."""
    be = ScriptedBackend(facts_cut_words=7)
    r = MedOmit(be, "m").run(CASE, SUMMARY)
    assert r.status == "complete", r.reason
    steps = [s.step for s in r.steps if s.step.startswith("facts")]
    assert steps == ["facts[1#0]", "facts[1#0.1]", "facts[1#0.2]", "facts[2#1]", "facts[2#1.1]", "facts[2#1.2]"]
    split = [s for s in r.steps if not s.ok]
    assert [s.step for s in split] == ["facts[1#0]", "facts[2#1]"] and all("split in two" in s.error for s in split)
    assert be.parts[1:3] == ["New atrial fibrillation.", "Started apixaban 5 mg twice daily."]
    assert {f.note_id for f in r.facts} == {"1", "2"} and not r.not_found


def test_a_fact_list_cut_off_on_one_sentence_leaves_the_result_incomplete():
    r = MedOmit(ScriptedBackend(facts_cut_words=2), "m").run(CASE, SUMMARY)
    assert r.status == "incomplete" and "cut off" in r.reason and r.failed_step == "facts[1#0.1]"


def test_a_cut_off_clusters_reply_is_asked_again_with_twice_the_budget():
    be = ScriptedBackend(clusters_need=2000)
    r = MedOmit(be, "m").run(CASE, SUMMARY)
    assert r.status == "complete", r.reason
    assert [b for s, b in be.budgets if s == "clusters"] == [1500, 3000]
    assert [s.step for s in r.steps if s.step.startswith("clusters")] == ["clusters", "clusters[wider]"]
    never = MedOmit(ScriptedBackend(clusters_need=10 ** 6), "m").run(CASE, SUMMARY)
    assert never.status == "incomplete" and never.failed_step == "clusters[wider]" and "cut off" in never.reason


def test_relink_weighs_a_stored_fact_that_todays_linking_places():
    """A stored result whose older linking left "Nephrology referral for CKD 3" unplaced (so never weighed) gets it
    linked, its importance and clusters asked for that fact alone, and the summary decided again — ending where a
    full run ends, with no fact extracted again."""
    from dataclasses import replace

    from engine.evidence.medomit.relink import newly_linked, relink_case

    full = MedOmit(ScriptedBackend(), "m").run(CASE, SUMMARY)
    old = MedOmitResult.from_json(full.to_json())
    old.facts = [replace(f, note_id=None, start=None, end=None, link="unlinked", link_score=0.3)
                 if f.fact_id == "F4" else f for f in old.facts]
    old.clusters = [replace(c, fact_ids=[x for x in c.fact_ids if x != "F4"]) for c in old.clusters]
    old.scores = [s for s in old.scores if s.fact_id != "F4"]
    assert [f.fact_id for f in old.not_found] == ["F4"]
    assert [f.fact_id for f in newly_linked(old, CASE)] == ["F4"]
    be = ScriptedBackend()
    (new,) = relink_case(MedOmit(be, "m"), CASE, [(SUMMARY, old)])
    f4 = new.fact("F4")
    assert new.not_found == [] and f4.link != "unlinked" and CASE.note(f4.note_id).text[f4.start:f4.end]
    assert new.omission_count == 1 and new.omitted[0].fact_id == "F4" and new.document_weight == full.document_weight
    assert new.provenance["relinked_facts"] == ["F4"]
    assert not any(c.startswith("facts[") for c in be.calls if isinstance(c, str))  # no fact extracted again


class _TimedScript(ScriptedBackend):
    """The scripted backend reporting a fixed time per generated reply (0.01 s prompt, 0.01 s decoding), as a real
    backend reports what it measured."""

    def generate(self, *args, **kwargs):
        from dataclasses import replace

        return replace(super().generate(*args, **kwargs), prompt_seconds=0.01, decode_seconds=0.01)


def test_each_step_keeps_its_seconds_even_when_served_from_the_cache(store):
    ds = Dataset("d", [CASE], [SUMMARY, Summary("c1-s2", "c1", "AF. <NoteID:1>")], [])
    store.import_dataset(ds)
    first, second = list(run_medomit(MedOmit(_TimedScript(), "m", cache=store), ds, ["c1-s1", "c1-s2"],
                                     store=store))
    t1, t2 = first.seconds_by_step(), second.seconds_by_step()
    for step in ("facts", "source DDx", "importance", "clusters", "summary DDx", "omissions"):
        assert t1[step] > 0, step
    assert t1["facts"] >= 2 * 0.02  # two notes, one reply each
    # the second summary's case-level steps came from the cache and count the time they took when they ran
    assert all(r.cached for r in second.steps if r.step.startswith(("facts", "importance", "clusters")))
    assert t2["facts"] == t1["facts"] and t2["clusters"] == t1["clusters"]
    back = MedOmitResult.from_json(second.to_json())
    assert back.seconds_by_step() == t2


def test_a_step_cached_before_steps_were_timed_counts_zero(store):
    from engine.evidence.medomit.pipeline import DDX_SCHEMA
    from engine.llm.steps import run_step

    class Cache:
        def __init__(self):
            self.rows = {}

        def get_llm_step(self, key):
            return self.rows.get(key)

        def put_llm_step(self, key, step, model_id, value):
            self.rows[key] = json.dumps({k: v for k, v in json.loads(value).items() if k in ("value", "raw")})

    cache = Cache()
    msgs = [{"role": "user", "content": "Give the differential diagnosis"}]
    schema = DDX_SCHEMA
    ran = run_step(_TimedScript(), "m", "ddx[source]", msgs, schema, 100, cache)
    assert ran.ok and not ran.cached and ran.seconds >= 0.02
    again = run_step(_TimedScript(), "m", "ddx[source]", msgs, schema, 100, cache)
    assert again.cached and again.seconds == 0.0


def test_the_case_page_line_gives_the_model_time_by_step_and_nothing_for_untimed_rows():
    from engine.views.case import cost_line

    assert cost_line({}) == "" and cost_line({"facts": 0.0, "omissions": 0.0}) == ""
    line = cost_line({"facts": 120.0, "importance": 60.0, "passages": 0.0, "omissions": 30.0})
    assert line.startswith("Model time for this result from scratch: 3.5 min (facts 2.0, importance 1.0, "
                           "omissions 0.5)")
    # a row decided again over steps run before they were timed: those steps are named, not counted as free
    old = cost_line({"facts": 0.0, "importance": 0.0, "omissions": 90.0})
    assert old == ("Model time of the timed steps: 1.5 min (omissions 1.5); not timed (run before steps were "
                   "timed): facts, importance.")
