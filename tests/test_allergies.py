"""The unrecorded-allergy check: which allergens a sentence claims, and which of them the notes never record."""
from __future__ import annotations

import pytest

from engine.evidence.support.allergies import claimed_allergens, unrecorded_allergens
from engine.evidence.support.specifics import check_sentence


@pytest.mark.parametrize("sentence, allergens", [
    ("She is allergic to Lortab.", ["lortab"]),
    ("Allergies: penicillin (hives), codeine.", ["penicillin", "codeine"]),
    ("Penicillin allergy (rash).", ["penicillin"]),
    ("He has a known history of allergy to clonidine, which causes fatigue.", ["clonidine"]),
    ("Allergic to penicillin and sulfa.", ["penicillin", "sulfa"]),
    ("Allergic reaction to amoxicillin in 2019.", ["amoxicillin"]),
    ("He does have significant allergies including ragweed.", ["ragweed"]),
    ("Allergies: sulfa, plus a documented iodinated contrast allergy requiring premedication.",
     ["iodinated", "contrast", "sulfa"]),
])
def test_claimed_allergens(sentence, allergens):
    assert claimed_allergens(sentence) == allergens


@pytest.mark.parametrize("sentence", [
    "No known drug allergies.", "ALLERGIES: NO KNOWN DRUG ALLERGIES.", "She denies any allergies.", "NKDA.",
    "Significant for asthma, allergic rhinitis and cervical dysplasia.",  # a diagnosis, not an allergen
    "Patient reports history of seasonal allergies.",  # a kind of allergy, not a substance
    "Aspirin 81 mg daily and lisinopril 10 mg daily.",  # no allergy talk at all
])
def test_sentences_that_claim_no_allergen(sentence):
    assert claimed_allergens(sentence) == []


NOTES = [("1", "Meds: metformin 1000 mg p.o. b.i.d.\nAllergies: sulfa (rash)."),
         ("2", "LHC 9/15: DES x1 to the proximal LAD. Contrast 110 mL. Metformin held x48 hrs post-contrast.")]


def test_an_allergen_named_elsewhere_but_never_as_an_allergy_is_found():
    s = "Allergies: sulfa, plus a documented iodinated contrast allergy requiring premedication."
    assert unrecorded_allergens(s, NOTES) == ["iodinated contrast"]
    assert unrecorded_allergens("Allergic to metformin.", NOTES) == ["metformin"]


def test_a_recorded_allergy_is_not_a_finding():
    assert unrecorded_allergens("Allergies: sulfa (rash).", NOTES) == []
    assert unrecorded_allergens("She reports a sulfa allergy.", NOTES) == []


def test_a_conversation_answer_after_the_question_counts_as_allergy_talk():
    conv = [("c", "[doctor] Any allergies to medications?\n[patient] Yes, penicillin, I break out in hives.\n"
                  "[doctor] Okay. And you take lisinopril every day?\n[patient] Yes.")]
    assert unrecorded_allergens("She is allergic to penicillin.", conv) == []


def test_check_sentence_reports_the_allergy_in_words():
    found = check_sentence("Allergic to metformin.", NOTES)
    assert [f.kind for f in found] == ["unrecorded allergy"]
    assert found[0].describe() == "an allergy to metformin: no note records it as an allergy"
