"""MED-OMIT: the scoring on the paper's worked examples and edge cases; the pipeline with a scripted backend."""
import json

import pytest

from engine.backends import Generation
from engine.medomit import (Cluster, Diagnosis, MedOmit, MedOmitResult, compare_ddx, fact_score, link_fact,
                            merge_facts, run_medomit, score_document, uniqueness_values)
from engine.models import Case, Dataset, Note, Summary

# ------------------------------------------------------------------------------ the paper's worked examples


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
    merged = merge_facts([("Started apixaban 5 mg.", "q", "1"), ("started apixaban 5 mg", "q", "2"),
                          ("LVEF 35%", "q", "2")])
    assert [m[0] for m in merged] == ["Started apixaban 5 mg.", "LVEF 35%"]


# ------------------------------------------------------------------------------ pipeline with a scripted backend


CASE = Case("c1", "Cardiology", (
    Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily.", "2024-01-01"),
    Note("2", "Echo: LVEF 35%. Nephrology referral placed for CKD stage 3.", "2024-02-01")))
SUMMARY = Summary("c1-s1", "c1", "Atrial fibrillation on apixaban. <NoteID:1> LVEF 35%. <NoteID:2>")


class ScriptedBackend:
    """Answers each MED-OMIT step from a script keyed by what the prompt asks (logic test only)."""

    name = "scripted"
    n_ctx = 100_000

    def __init__(self, fail_step=None):
        self.fail_step, self.calls = fail_step, []

    def describe(self):
        return {"backend": "scripted", "model_file": "x"}

    def render(self, messages):
        return "\n".join(m["content"] for m in messages)

    def count_tokens(self, text):
        return len(text.split())

    def generate(self, prompt, schema, max_tokens, temperature, seed, want_logprobs):
        props = schema["properties"]
        if "facts" in props and ' id="1"' in prompt:
            step, out = "facts", {"facts": [{"fact": "New atrial fibrillation", "quote": "New atrial fibrillation"},
                                            {"fact": "Apixaban 5 mg twice daily", "quote": "apixaban 5 mg twice daily"}]}
        elif "facts" in props:
            step, out = "facts", {"facts": [{"fact": "LVEF 35%", "quote": "LVEF 35%"},
                                            {"fact": "Nephrology referral for CKD 3", "quote": "Nephrology referral"},
                                            {"fact": "...", "quote": ""}]}
        elif "diagnoses" in props:
            step, out = "ddx", {"diagnoses": [{"name": "Atrial fibrillation", "likelihood": "probable", "reason": "r"},
                                              {"name": "HFrEF", "likelihood": "probable", "reason": "r"}]}
        elif "clusters" in props:
            step, out = "clusters", {"clusters": [
                {"diagnosis": "HFrEF", "polarity": "supporting", "mechanism": "systolic dysfunction", "facts": ["F3"]},
                {"diagnosis": "Atrial fibrillation", "polarity": "supporting", "mechanism": "arrhythmia",
                 "facts": ["F1", "F2"]}]}
        elif all(isinstance(v, dict) and "enum" in v and "critical" in v["enum"] for v in props.values()):
            step, out = "importance", {k: {"F1": "critical", "F2": "critical", "F3": "critical"}.get(k, "important")
                                       for k in props}
        else:
            step, out = "omissions", {k: {"status": "omitted" if k == "F4" else "present", "explanation": "e"}
                                      for k in props}
        self.calls.append(step)
        text = json.dumps(out)
        if step == self.fail_step:
            text = text[: len(text) // 2]  # a cut-off reply
        return Generation(text, 10, 10, 0.0, 0.0, "stop")


def test_pipeline_end_to_end_with_script():
    r = MedOmit(ScriptedBackend(), "m").run(CASE, SUMMARY)
    assert r.status == "complete", r.reason
    assert [f.text for f in r.facts] == ["New atrial fibrillation", "Apixaban 5 mg twice daily", "LVEF 35%",
                                         "Nephrology referral for CKD 3"]  # "..." dropped, ids renumbered
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
    mo = MedOmit(be, "m", cache=store)
    list(run_medomit(mo, ds, ["c1-s1", "c1-s2"], store=store))
    # case-level steps ran once; only the omission step and the summary DDx ran per summary
    assert be.calls.count("facts") == 2 and be.calls.count("clusters") == 1 and be.calls.count("omissions") == 2
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
