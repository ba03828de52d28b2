"""Stigmatizing-language detector (engine/evidence/stigma/detector.py): lexicon, context rules, carried vs introduced,
run-time extra entries, the CLI, and the labelled sets in sample_data/stigma/labelled.json."""
import json

import pytest
from conftest import BUNDLE, SAMPLE

from engine.core.models import Case, Note, Summary
from engine.core.rubric import ITEM_KEYS, Scale, get_item
from engine.evidence.stigma.detector import (CARRIED, INTRODUCED, NOTES_ITEM, SUMMARY_ITEM, LexiconError, assess,
                                    assess_dataset, detect, lexicon_version, load_lexicon)

LABELLED = json.loads((SAMPLE / "stigma" / "labelled.json").read_text(encoding="utf-8"))
MANIFEST = json.loads((SAMPLE / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sample():
    from engine.data.loading import load_paths

    ds, _ = load_paths([str(BUNDLE)])
    return ds


def _fired(text, needle, **kw):
    """The hits of ``text`` that overlap the first occurrence of ``needle``."""
    i = text.index(needle)
    return [h for h in detect(text, **kw).hits if h.start < i + len(needle) and i < h.end]


def _cleared(text, needle):
    i = text.index(needle)
    return [h for h in detect(text).cleared if h.start < i + len(needle) and i < h.end]


# ----------------------------------------------------------------------------------------------- lexicon


def test_item_keys_are_the_rubric_s():
    for key in (NOTES_ITEM, SUMMARY_ITEM):
        assert key in ITEM_KEYS and get_item(key).scale is Scale.BINARY


def test_lexicon_entries_are_complete():
    lex = load_lexicon()
    assert len({e.id for e in lex.entries}) == len(lex.entries) >= 30
    assert set(lex.categories) == {"credibility", "disapproval", "stereotyping", "social_descriptor"}
    for e in lex.entries:
        assert e.term and e.category in lex.categories and e.source, e
        for ref in e.source.split("; "):
            assert ref in lex.references, (e.id, ref)
    assert {e.category for e in lex.entries} == set(lex.categories)


def test_hit_has_span_category_term_and_entry():
    text = "Pt is non-compliant with insulin."
    (h,) = detect(text).hits
    assert text[h.start:h.end] == h.text == "non-compliant"
    assert (h.category, h.entry_id, h.term) == ("disapproval", "noncompliant", "non-complian(t|ce)")
    assert h.suggest and h.cleared_by is None and h.fires


@pytest.mark.parametrize("text,needle", [
    ("He is noncompliant.", "noncompliant"), ("He is non compliant.", "non compliant"),
    ("History of noncompliance.", "noncompliance"), ("She claimed a 10/10 pain.", "claimed"),
    ("IV drug abuser.", "IV drug abuser"), ("Diabetics on insulin.", "Diabetics"),
    ("Frequent fliers are common.", "Frequent fliers"), ("Pleasant 45 y/o Hispanic woman.", "Pleasant 45 y/o Hispanic"),
])
def test_inflections_and_phrases(text, needle):
    hits = _fired(text, needle)
    assert hits, text
    if needle == "IV drug abuser":
        assert [h.text for h in hits] == ["drug abuser"]  # the longest entry wins over "abuser"


# --------------------------------------------------------------------------------------------- the rules


@pytest.mark.parametrize("text,needle", [
    ("Not drug-seeking; pain controlled.", "drug-seeking"),
    ("No evidence of drug-seeking behavior.", "drug-seeking"),
    ("Calm, not combative or belligerent.", "belligerent"),
    ("Drug-seeking behavior was not observed.", "Drug-seeking"),
    ("Patient denies being homeless.", "homeless"),
    ("He isn't combative today.", "combative"),
])
def test_negation_clears(text, needle):
    assert not _fired(text, needle)
    assert [h.cleared_by for h in _cleared(text, needle)] == ["negated"]


@pytest.mark.parametrize("text,needle", [
    ("Pt is not taking insulin and is noncompliant with visits.", "noncompliant"),  # "and" ends the scope
    ("Patient denies chest pain, is combative with staff.", "combative"),  # a comma + verb ends it too
])
def test_negation_scope_ends(text, needle):
    assert _fired(text, needle)


def test_patient_quote_clears_but_other_quotes_do_not():
    text = 'patient states "I\'m an alcoholic"'
    assert not _fired(text, "alcoholic")
    (c,) = _cleared(text, "alcoholic")
    assert (c.cleared_by, c.quoted) == ("patient_quote", True)
    assert not _fired('"I used to be a junkie," he said.', "junkie")
    # attributed to someone else, or scare quotes: still stigmatizing, marked quoted
    (h,) = _fired('Nurse reports patient was "combative" overnight.', "combative")
    assert h.quoted
    (h,) = _fired('Per EMS the "frequent flyer" is back.', "frequent flyer")
    assert h.quoted
    assert _fired('Claims he has had only "a couple of beers" this week.', "Claims")


@pytest.mark.parametrize("text,needle,rule", [
    ("Annual diabetic foot exam normal.", "diabetic", "clinical_adjective"),
    ("Mild diabetic retinopathy OU.", "diabetic", "clinical_adjective"),
    ("Counselled on a diabetic diet.", "diabetic", "clinical_adjective"),
    ("Alcoholic cirrhosis, Child-Pugh B.", "Alcoholic", "clinical_adjective"),
    ("Epileptic seizure on EEG.", "Epileptic", "clinical_adjective"),
    ("Attends Alcoholics Anonymous weekly.", "Alcoholics", "clinical_use"),
    ("Insurance claims were resubmitted.", "claims", "billing_context"),
    ("The claim was denied by Medicaid.", "claim", "billing_context"),
    ("Osteopathic manipulative treatment given.", "manipulative", "clinical_use"),
    ("Works a physically demanding job.", "demanding", "not_about_patient"),
    ("Prior authorization was refused by the insurer.", "refused", "not_the_patient"),
    ("The pharmacy refused the early refill.", "refused", "not_the_patient"),
    ("Lives in a homeless shelter.", "homeless", "clinical_use"),
])
def test_clinical_uses_are_cleared_with_their_rule(text, needle, rule):
    assert not _fired(text, needle)
    assert [h.cleared_by for h in _cleared(text, needle)] == [rule]


@pytest.mark.parametrize("text", [
    "Patient denies chest pain.", "Alcohol use disorder, severe.", "Substance use disorder counselling.",
    "Opioid use disorder on buprenorphine.", "Medication adherence counselling provided.",
    "Adherence to therapy discussed.", "Patient declined the flu vaccine.", "Addiction medicine consulted.",
    "Reported penicillin allergy.", "Non-diabetic control subject.",
])
def test_clinical_wording_is_not_a_candidate(text):
    assert not detect(text).candidates


@pytest.mark.parametrize("text,needle", [
    ("This diabetic patient has DKA.", "diabetic"), ("A known alcoholic and smoker.", "alcoholic"),
    ("Type 2 diabetic on metformin.", "diabetic"), ("54-year-old alcoholic man.", "alcoholic"),
    ("Patient refuses PICC line.", "refuses"), ("Patient at home refused insulin.", "refused"),
    ("Pt claims he ran out.", "claims"), ("Homeless man found down.", "Homeless"),
])
def test_labels_and_patient_refusal_fire(text, needle):
    assert _fired(text, needle)


# ----------------------------------------------------------------------------------------- labelled sets


def test_labelled_set_shape():
    snippets = LABELLED["snippets"]
    dev = [s for s in snippets if s["split"] == "dev"]
    assert len(snippets) >= 24 and len(dev) >= 24
    assert sum(len(s["spans"]) for s in dev) >= 14 and sum(len(s["near_misses"]) for s in dev) >= 14
    cats = set(load_lexicon().categories)
    for s in snippets:
        for x in s["spans"] + s["near_misses"]:
            assert x["text"] in s["text"], (s["id"], x)
        assert all(x["category"] in cats for x in s["spans"])
    assert len({s["specialty"] for s in dev}) >= 5


def test_manifest_spans_are_copied_faithfully():
    want = sorted((c, v["notes_stigmatizing_span"]) for c, v in MANIFEST["cases"].items()
                  if v.get("notes_stigmatizing_span"))
    want += sorted((sid, d["summary_span"]) for sid, s in MANIFEST["summaries"].items() for d in s["defects"]
                   if d["type"] == "stigmatizing_language")
    got = [(x.get("summary_id") or x["case_id"], x["text"]) for x in LABELLED["sample_manifest_spans"]]
    assert sorted(got) == sorted(want) and len(want) == 10


def test_every_documented_sample_span_is_detected(sample):
    for cid, c in MANIFEST["cases"].items():
        span = c.get("notes_stigmatizing_span")
        if span:
            note = next(n for n in sample.case(cid).notes if span in n.text)
            assert _fired(note.text, span), (cid, span)
    n = 0
    for sid, s in MANIFEST["summaries"].items():
        for d in s["defects"]:
            if d["type"] == "stigmatizing_language":
                text = sample.summary(sid).text
                hits = _fired(text, d["summary_span"])
                assert any(d["phrase"].lower() in h.text.lower() for h in hits), (sid, d["phrase"], hits)
                n += 1
    assert n == 6
    for x in LABELLED["sample_added_spans"]:
        assert _fired(sample.case(x["case_id"]).note(x["note_id"]).text, x["text"]), x


def test_no_sample_near_miss_fires_and_no_undocumented_summary_hit(sample):
    for x in LABELLED["sample_near_misses"]:
        text = sample.summary(x["summary_id"]).text if x["where"] == "summary" else \
            sample.case(x["case_id"]).note(x["note_id"]).text
        assert not _fired(text, x["text"]), x
    documented = {sid for sid, s in MANIFEST["summaries"].items()
                  if any(d["type"] == "stigmatizing_language" for d in s["defects"])}
    assert {s.summary_id for s in sample.summaries if detect(s.text).hits} == documented


def test_dev_snippets_spans_found_and_near_misses_silent():
    for s in LABELLED["snippets"]:
        if s["split"] != "dev":
            continue
        for x in s["near_misses"]:
            assert not _fired(s["text"], x["text"]), (s["id"], x)
        for x in s["spans"]:
            assert _fired(s["text"], x["text"]), (s["id"], x)


# -------------------------------------------------------------------------------------- carried/introduced


def _case():
    notes = (Note("1", "ED note: 40 y/o M, noncompliant with lisinopril. Not drug-seeking."),
             Note("2", "Admitted. Drug abuse history remote. Patient refused the CT."))
    return Case("c1", "Internal Medicine", notes)


def test_carried_and_introduced():
    case = _case()
    text = ("He was non-compliant with lisinopril, is drug-seeking, a drug abuser, refuses the CT, "
            "and claims his pain is 10/10.")
    r = assess(case, Summary("c1-s1", "c1", text))
    by = {h.hit.text: h for h in r.summary_hits}
    nc = by["non-compliant"]
    assert nc.status == CARRIED and nc.source.note_id == "1"
    assert case.note("1").text[nc.source.start:nc.source.end] == "noncompliant"
    assert by["drug abuser"].status == CARRIED and by["drug abuser"].source.text == "Drug abuse"  # same stem
    assert by["refuses"].status == CARRIED and by["refuses"].source.note_id == "2"
    # the note only says "Not drug-seeking" (cleared): the summary introduced it
    assert by["drug-seeking"].status == INTRODUCED and by["drug-seeking"].source is None
    assert by["claims"].status == INTRODUCED
    assert len(r.carried) == 3 and len(r.introduced) == 2 and len(r.hits) == 5
    assert r.notes_have_stigma and r.summary_has_stigma
    assert r.item_answers == {NOTES_ITEM: 1.0, SUMMARY_ITEM: 1.0}
    assert [n.hit.text for n in r.note_cleared] == ["drug-seeking"]
    clean = assess(case, Summary("c1-s2", "c1", "He declined the CT; blood pressure improved."))
    assert clean.item_answers == {NOTES_ITEM: 1.0, SUMMARY_ITEM: 0.0} and not clean.hits
    js = r.to_json()
    assert js["n_carried"] == 3 and js["hits"][0]["status"] in (CARRIED, INTRODUCED)
    json.dumps(js)


def test_sample_item_answers_match_manifest(sample):
    for r in assess_dataset(sample):
        assert r.notes_have_stigma == MANIFEST["cases"][r.case_id]["notes_stigmatizing"], r.summary_id
        assert all(h.status == CARRIED for h in r.summary_hits), r.summary_id  # the sample copies from the notes


# -------------------------------------------------------------------------------------------- extra entries


def test_extra_entries_fire_and_change_the_version():
    base = lexicon_version()
    text = "Patient is a sickler with a pain crisis."
    assert not detect(text).hits
    extra = [{"term": "sickler(|s)", "category": "stereotyping", "suggest": "person with sickle cell disease"}]
    (h,) = detect(text, extra_entries=extra).hits
    assert (h.text, h.category, h.origin, h.entry_id) == ("sickler", "stereotyping", "extra", "extra:sickler_s")
    assert h.source == "added by a clinician"
    v1 = lexicon_version(extra)
    assert v1 != base and v1 == lexicon_version(list(extra))  # stable for the same entries
    assert lexicon_version([{**extra[0], "suggest": "other"}]) not in (base, v1)
    assert lexicon_version() == base
    assert detect(text, extra_entries=extra).lexicon_version == v1


def test_extra_entries_are_validated():
    with pytest.raises(LexiconError, match="category"):
        detect("x", extra_entries=[{"term": "lazy", "category": "rude"}])
    with pytest.raises(LexiconError, match="term"):
        detect("x", extra_entries=[{"term": " ", "category": "disapproval"}])
    with pytest.raises(LexiconError, match="unbalanced"):
        detect("x", extra_entries=[{"term": "lazy(", "category": "disapproval"}])
    with pytest.raises(LexiconError, match="unknown field"):
        detect("x", extra_entries=[{"term": "lazy", "category": "disapproval", "colour": "red"}])
    with pytest.raises(LexiconError, match="empty"):
        detect("x", extra_entries=[{"term": "(|)", "category": "disapproval"}])


def test_extra_entry_with_a_built_in_id_keeps_both():
    extra = [{"id": "claims", "term": "lazy", "category": "disapproval"}]
    hits = detect("Lazy and claims pain.", extra_entries=extra).hits
    assert {h.entry_id for h in hits} == {"extra:claims", "claims"}


# ---------------------------------------------------------------------------------------------------- CLI


def test_cli_stigma_on_the_sample(capsys, tmp_path):
    from engine.cli import main

    out = tmp_path / "stigma.jsonl"
    assert main(["stigma", str(BUNDLE), "--summary", "gi-01-s2", "--summary", "card-01-s1", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x["summary_id"] for x in lines] == ["gi-01-s2", "card-01-s1"]
    gi, card = lines
    assert gi["items"] == {NOTES_ITEM: 1.0, SUMMARY_ITEM: 1.0} and card["items"] == {NOTES_ITEM: 0.0,
                                                                                    SUMMARY_ITEM: 0.0}
    (hit,) = gi["hits"]
    assert (hit["text"], hit["category"], hit["status"]) == ("alcoholic", "stereotyping", CARRIED)
    assert hit["source_hit"]["note_id"] == "1" and hit["end"] - hit["start"] == len("alcoholic")
    assert gi["human_median"] == {NOTES_ITEM: 1.0, SUMMARY_ITEM: 1.0}
    assert gi["lexicon_version"] == lexicon_version()
    assert [json.loads(x)["summary_id"] for x in out.read_text().splitlines()] == ["gi-01-s2", "card-01-s1"]


def test_cli_stigma_extra_lexicon_and_errors(capsys, tmp_path):
    from engine.cli import main

    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps([{"term": "smells", "category": "disapproval"}]))
    assert main(["stigma", str(BUNDLE), "--summary", "pulm-01-s2", "--extra-lexicon", str(extra)]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert {h["text"] for h in line["hits"]} == {"claims", "smells"}
    assert line["lexicon_version"] != lexicon_version()
    smells = next(h for h in line["hits"] if h["text"] == "smells")
    assert smells["status"] == CARRIED and smells["origin"] == "extra"  # the ED note says "smells strongly"
    extra.write_text(json.dumps([{"term": "x", "category": "nope"}]))
    assert main(["stigma", str(BUNDLE), "--summary", "pulm-01-s2", "--extra-lexicon", str(extra)]) == 1
    assert main(["stigma", str(BUNDLE), "--summary", "no-such-summary"]) == 1


def test_judge_view_remembers_the_detector_per_lexicon_case_and_summary():
    from engine.core.models import Case, Note, Summary
    from engine.evidence.stigma import detector
    from engine.views.judge import assessed_once

    case = Case("c", "Primary Care", (Note("1", "Pt is non-compliant with insulin."),))
    s = Summary("s", "c", "Patient is non-compliant.")
    lex = detector.load_lexicon()
    first = assessed_once(case, s, lex)
    assert assessed_once(case, s, lex) is first  # scanned once
    assert first == detector.assess(case, s, lexicon=lex)
    other = detector.load_lexicon([{"id": "x1", "term": "insulin", "category": "disapproval", "source": "local"}])
    assert other.version != lex.version
    assert assessed_once(case, s, other) is not first
