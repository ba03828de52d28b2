"""The weak-support rule: a sentence swapped in from another patient — a foreign drug, a foreign number —
is weak, a paraphrased genuine sentence is not, with one threshold for a note source and a transcript source.
All data here is ours (the bundled synthetic sample and conversations)."""
import json

import pytest

from conftest import BUNDLE, SAMPLE
from engine.evidence.support import alignment as A
from engine.evidence.text import lexical as L
from engine.data.loading import load_paths
from engine.core.models import Case, Note, Summary


@pytest.fixture(scope="module")
def emb(suite_embedder):
    return suite_embedder


@pytest.fixture(scope="module")
def profiles(emb):
    """A note source (card-01's notes) and a transcript source (enc-card-01's conversation)."""
    ds = load_paths([BUNDLE])[0]
    e = json.loads((SAMPLE / "conversations" / "enc-card-01.json").read_text(encoding="utf-8"))
    talk = Case("enc-card-01", "Cardiology", (Note("1", e["dialogue"]),))
    return {"note": A.source_profile(ds.case("card-01"), emb), "transcript": A.source_profile(talk, emb)}


GENUINE = {  # paraphrases of what each source says
    "note": "Apixaban 5 mg twice daily was started for stroke prevention.",
    "transcript": "She was told to start apixaban 5 mg twice daily and to stop her aspirin.",
}
SWAPPED_DRUG = "Started sertraline every morning for depression."  # another patient's drug, no number
SWAPPED_NUMBER = "Continue metformin 1000 mg twice daily."  # another patient's drug and dose


def verdict(text, profile, emb):
    ev = A.sentence_support(text, profile, emb)
    return ev, A.weak_verdict(ev, text)


@pytest.mark.parametrize("kind", ["note", "transcript"])
def test_swapped_in_sentence_is_weak_paraphrase_is_not(profiles, emb, kind):
    ev, (weak, why) = verdict(GENUINE[kind], profiles[kind], emb)
    assert not weak and not ev.foreign and why == ""
    ev, (weak, why) = verdict(SWAPPED_NUMBER, profiles[kind], emb)
    assert weak and ev.foreign == ["1000"] and "1000" in why  # a dose the source never states
    ev, (weak, why) = verdict(SWAPPED_DRUG, profiles[kind], emb)
    assert weak and not ev.foreign and why.startswith("support score")  # low support alone


def test_one_threshold_serves_both_source_kinds(profiles, emb):
    # the score is comparable: each genuine paraphrase sits well above the threshold and the foreign sentence
    # well below it, whether the source is a note or a transcript
    for kind, prof in profiles.items():
        genuine = A.sentence_support(GENUINE[kind], prof, emb).score
        foreign = A.sentence_support(SWAPPED_DRUG, prof, emb).score
        assert genuine > A.WEAK_SUPPORT + 0.2 > foreign + 0.2, (kind, genuine, foreign)
    # the same foreign sentence scores alike against both kinds of source
    a, b = (A.sentence_support(SWAPPED_DRUG, p, emb).score for p in profiles.values())
    assert abs(a - b) < 0.1


def test_spoken_numbers_in_a_transcript_count_as_stated(profiles, emb):
    # the transcript says "one thirty-eight" and "twenty-five milligrams"
    for text in ("Her heart rate in the emergency department was 138.",
                 "She was discharged on metoprolol succinate 25 mg daily."):
        ev, (weak, _) = verdict(text, profiles["transcript"], emb)
        assert ev.foreign == [] and not weak, (text, ev)


def test_numbers_reader():
    assert L.numbers("BP 152/94, NT-proBNP 2,140 pg/mL, CHA2DS2-VASc 3") == {"152", "94", "2140", "3"}
    assert L.numbers("twenty-five milligrams, two hundred and twelve pounds") >= {"25", "212"}
    assert L.numbers("ninety-eight point six; twelve and a half") >= {"98.6", "12.5"}
    assert "138" in L.numbers("the records say one thirty-eight", generous=True)
    assert "138" not in L.numbers("the records say one thirty-eight")  # a summary is read literally
    assert L.numbers("metformin, a thousand, twice a day") == {"1000"}
    assert "24" in L.numbers("seen 1/10/2024", generous=True)


def test_foreign_specifics_rules(emb):
    talk = Case("t", "x", (Note("1", "[doctor] how is the knee?\n[patient] um, it hurts when i climb stairs.\n"
                                      "[doctor] take ibuprofen, four hundred milligrams, twice a day.\n"),))
    prof = A.source_profile(talk, emb)
    assert [u for _, _, u in prof.units][:2] == ["how is the knee?", "it hurts when i climb stairs."]
    assert A.foreign_specifics("2. Ibuprofen 400 mg twice daily.", prof) == []  # a list marker is not a number
    # the transcript states no age, so a summary's age cannot be checked against it; another number can
    assert A.foreign_specifics("Mr. Castellanos is a 38-year-old man with knee pain.", prof) == ["Mr. Castellanos"]
    assert A.foreign_specifics("Pain is 7/10 on stairs.", prof) == ["7", "10"]
    aged = A.source_profile(Case("n", "x", (Note("1", "38 y/o M with knee pain after soccer."),)), emb)
    assert A.foreign_specifics("A 40-year-old man with knee pain.", aged) == ["40"]


def test_lexical_support_weights_rare_words_and_has_a_fallback():
    stems = ["daili", "apixaban"]
    bg = (10, {"daili": 10})  # "daily" is in every background source, "apixaban" in none
    assert L.lexical_support(stems, {"daili"}, bg) < 0.15  # only the common word found
    assert L.lexical_support(stems, {"apixaban"}, bg) > 0.85
    assert L.lexical_support(stems, {"apixaban"}, (0, {})) == 0.5  # no background: the plain share
    assert L.lexical_support([], set(), bg) == 1.0
    n, df = L.support_background()
    assert n >= 10 and df  # the shipped background (bench/support_benchmark.py --write-background)


def test_align_summary_applies_the_rule(emb):
    dialogue = ("[doctor] good morning. what brings you in?\n"
                "[patient] um, my right knee. i twisted it playing soccer two weeks ago and it's been swollen.\n"
                "[doctor] any locking or giving way?\n"
                "[patient] it catches sometimes when i go down stairs.\n"
                "[doctor] there's tenderness along the inner joint line. i think you tore the meniscus. "
                "we'll get an mri and start physical therapy, and you can take ibuprofen, four hundred milligrams, "
                "twice a day with food.\n")
    note = ("ASSESSMENT AND PLAN\nRight knee injury while playing soccer 2 weeks ago with swelling and catching on "
            "stairs. Suspected medial meniscus tear; order MRI and start physical therapy. Ibuprofen 400 mg twice "
            "daily with food. Start apixaban 5 mg twice daily for atrial fibrillation.")
    case = Case("k", "Orthopedics", (Note("1", dialogue),))
    res = A.align_summary(case, Summary("k-s", "k", note), emb)
    by = {a.text.split()[0]: a for a in res.sentences}
    assert not by["ASSESSMENT"].weak  # a heading is never weak
    assert not by["Right"].weak and not by["Suspected"].weak and not by["Ibuprofen"].weak
    swapped = by["Start"]
    assert swapped.weak and swapped.foreign == ["5"] and swapped.weak_reason.startswith("not in the source")
    for a in res.sentences:
        assert a.support_score == pytest.approx(0.5 * (a.lexical + a.semantic), abs=1e-3)
        for ref in a.embed_topk:  # references keep the transcript's own text and offsets
            assert dialogue[ref.start:ref.end] == ref.text


def test_results_stored_before_the_rule_still_load(emb):
    case = Case("n", "x", (Note("1", "Started apixaban 5 mg BID for AF. LVEF 45% on TTE."),))
    d = A.align_summary(case, Summary("s", "n", "Apixaban 5 mg BID was started. <NoteID:1>"), emb).to_dict()
    for a in d["sentences"]:
        for k in ("support_score", "lexical", "semantic", "foreign", "weak_reason", "cited_support", "also_supported"):
            del a[k]
    old = A.result_from_dict(d)
    assert old.sentences[0].support_score is None and old.sentences[0].foreign == []
    assert A.ALIGNMENT_VERSION not in ("alignment-v2", "alignment-v3")  # the key moved on: old rows recompute
    assert old.sentences[0].specifics == []  # a field added later defaults too
