"""Boilerplate / small-talk down-weighting of uncovered source regions (engine.evidence.text.salience)."""
import json

import pytest

from engine.evidence.coverage.regions import COVERAGE_VERSION, merge_regions, result_from_dict, select_regions
from engine.evidence.coverage.results import CoverageResult, Region, Unit
from engine.core.models import Case, Note
from engine.evidence.text.salience import classify, line_salience, segment_weights, unit_salience
from engine.evidence.text.sentences import split_sentences


@pytest.mark.parametrize("line", [
    "ED Provider Note", "HPI:", "Assessment and Plan", "A/P:", "Plan:", "Discharge meds:",
    "Telephone Encounter - Cardiology RN", "Hepatology clinic (Dr. Varga).",
    "Cardiology Clinic - Post-hospital Follow-up (Dr. Okafor)",
])
def test_headers_and_titles_weigh_zero(line):
    assert line_salience(line) == 0.0
    assert classify(line).kind == "header"


@pytest.mark.parametrize("line", [
    "Electronically signed by Anna Smith, MD on 05/03/2024 at 10:32 AM",
    "Dictated but not read.",
    "Pt verbalized understanding of plan.",
    "Discussed with patient, all questions answered.",
    "Return precautions given.",
    "I have personally seen and examined the patient and agree with the resident's findings and plan.",
    "Follow up with your PCP as needed. Take your medications as prescribed.",
    "Total time spent 35 minutes, more than 50% spent in counseling and coordination of care.",
    "Patient repeated back instructions.",
])
def test_sign_offs_attestations_and_discharge_boilerplate_weigh_zero(line):
    assert line_salience(line) == 0.0
    assert classify(line).kind == "boilerplate"


@pytest.mark.parametrize("line", [
    "[doctor] hello ms. taylor, how are you doing this morning?",
    "[patient] i'm doing well, thank you.",
    "[doctor] so what brings you in today?",
    "[patient] mm-hmm.", "[doctor] okay.", "[patient] sounds good.", "[patient] yeah.", "[patient] um, no.",
    "[doctor] alright, thank you so much, take care, bye.",
    "[doctor] how's the weather out there?",
])
def test_greetings_fillers_and_small_talk_in_dialogue_are_low(line):
    assert line_salience(line) <= 0.1


@pytest.mark.parametrize("line", [
    "Pt verbalized understanding; start apixaban 5 mg bid",
    "Return precautions reviewed, incl. ED for dyspnea at rest or chest pain.",
    "I have personally seen and examined the patient; agree with the above, start heparin drip.",
    "Discussed with patient: will start metoprolol.",
    "Wife verbalized understanding; follow-up call in 1 week.",
    "Allergies: NKDA.", "No tremor.", "Continue atorvastatin.", "Disposition: MICU.",
    "Admission 6/18/2023 - Discharge 6/21/2023",
    "[patient] i've been having chest pain for about three days.",
    "[doctor] okay, so your blood pressure today is 150 over 90.",
    "[doctor] thank you, and we'll start you on lisinopril 10 mg daily.",
    "[patient] hi, my knee has been swollen since saturday.",
])
def test_clinical_content_is_never_down_weighted(line):
    assert line_salience(line) == 1.0, classify(line)


def test_small_talk_counts_only_in_dialogue():
    # in a note (no speaker tags) a short status line is content, in a transcript it is small talk
    assert line_salience("Doing well.", dialogue=False) == 1.0
    assert line_salience("Doing well.", dialogue=True) <= 0.1


@pytest.mark.parametrize("line,kind,weight", [
    ("", "empty", 0.0), ("   ", "empty", 0.0), ("...", "empty", 0.0),  # nothing to read
    ("Will do.", "no-content", 0.3),  # words, but no clinical content
    ("Plan per Dr. Varga:", "header", 0.0),  # a heading introduces, it states nothing
    ("Results follow-up (chart review and telephone call).", "header", 0.0),
    ("[patient] no, nothing like that.", "small-talk", 0.1),  # a transcript turn without content
])
def test_each_kind_of_line_gets_its_documented_weight(line, kind, weight):
    assert classify(line).kind == kind
    assert line_salience(line) == weight


def test_copy_forward_repeats_are_down_weighted_after_their_first_occurrence():
    template = "Patient was counseled on the importance of regular exercise and a balanced diet."
    case = Case("c", "x", (Note("1", f"{template}\nBP 130/80."), Note("2", f"BP 128/78.\n{template}")))
    w = segment_weights(case)
    first = [x for a, b, x in w["1"] if case.notes[0].text[a:b] == template]
    again = [x for a, b, x in w["2"] if case.notes[1].text[a:b] == template]
    assert first == [1.0] and again and again[0] <= 0.2
    assert all(x == 1.0 for a, b, x in w["2"] if case.notes[1].text[a:b].startswith("BP"))


def _case_and_units(text: str, scores: list[float]):
    case = Case("c", "x", (Note("1", text),))
    sents = split_sentences(text)
    assert len(sents) == len(scores)
    return case, [Unit("1", s.start, s.end, sc) for s, sc in zip(sents, scores)]


def test_boilerplate_region_ranks_below_a_clinical_one_with_a_lower_raw_score(monkeypatch):
    import engine.evidence.coverage.regions

    monkeypatch.setattr(engine.evidence.coverage.regions, "RANK_ACTIONS", False)  # salience alone: no "started" tier
    text = ("Apixaban 5 mg p.o. b.i.d. started for stroke prevention.\n\nVitals stable today.\n\n"
            "Pt verbalized understanding of plan, all questions answered.")
    case, units = _case_and_units(text, [0.80, 0.10, 0.82])
    raw = merge_regions(case, units, 0.5, top=5, salience=[1.0] * len(units))
    assert raw[0].text.startswith("Pt verbalized")  # by raw score the sign-off would lead
    ranked = merge_regions(case, units, 0.5, top=5)  # the page's call: salience by the rule
    assert [r.text[:8] for r in ranked] == ["Apixaban", "Pt verba"]
    assert ranked[0].salience == 1.0 and ranked[1].salience == 0.0
    assert ranked[1].score == 0.82  # Region.score stays the raw omission score
    stored = select_regions(case, units, "topiccov", 0.5, 8)  # what score_coverage stores
    assert [r.text[:8] for r in stored][:2] == ["Apixaban", "Pt verba"]


def test_a_header_merged_into_content_ranks_by_the_content():
    text = ("A/P:\nMild nonproliferative diabetic retinopathy OU.\n\nBP at goal.\n\n"
            "Lisinopril 10 mg daily continued.")
    case, units = _case_and_units(text, [0.92, 0.63, 0.10, 0.70])
    ranked = merge_regions(case, units, 0.5, top=5)
    # the header's 0.92 no longer lifts the retinopathy sentence above the lisinopril sentence (0.70)
    assert ranked[0].text.startswith("Lisinopril")
    assert ranked[1].score == 0.92 and abs(ranked[1].score * ranked[1].salience - 0.63) < 1e-3


def test_token_units_take_the_weight_of_their_segment():
    text = "ED Provider Note\n\nStarted metoprolol 25 mg daily.\n\nPt verbalized understanding."
    case = Case("c", "x", (Note("1", text),))
    toks = [Unit("1", i, i + len(w), 1.0) for w in ("Provider", "metoprolol", "understanding")
            for i in [text.index(w)]]
    assert unit_salience(case, toks) == [0.0, 1.0, 0.0]
    assert unit_salience(case, [Unit("other-note", 0, 3, 1.0)]) == [1.0]


def test_old_stored_results_without_salience_still_load():
    res = CoverageResult("s1", "topiccov", 0.5, 0.6, [Unit("1", 0, 5, 0.7)], [Region("1", 0, 5, "hello", 0.7, 0.0)],
                         [], {}, 0.1, 0.63)
    d = json.loads(json.dumps(res.to_dict()))
    for r in d["regions"]:
        del r["salience"]  # a result stored by coverage-v2
    old = result_from_dict(d)
    assert old.regions[0].salience == 1.0 and old.regions[0].score == 0.7
    assert result_from_dict(res.to_dict()).regions[0].salience == 0.0
    assert COVERAGE_VERSION >= "coverage-v3"  # v3 added the salience ranking
