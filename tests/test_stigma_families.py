"""Stigmatizing-language entries match their word family with the context rules still applied, and the lexicon
covers doubts of the patient's credibility such as 'exaggerates symptoms'."""
import pytest

from engine.evidence.stigma._terms import word_family
from engine.evidence.stigma.detector import detect


@pytest.mark.parametrize("text,hit", [
    ("Known drug seeker, asking for hydromorphone.", "drug seeker"),
    ("Drug-seekers are not a concern here.", "Drug-seekers"),
    ("He is an opioid seeker per prior notes.", "opioid seeker"),
    ("Drug-seeking behavior documented.", "Drug-seeking"),
    ("She exaggerates her symptoms at each visit.", "exaggerates her symptoms"),
    ("He exaggerated pain during the exam.", "exaggerated pain"),
    ("Patient was manipulatively asking for more.", "manipulatively"),
    ("Argumentative with staff.", "Argumentative"),
])
def test_family_members_fire(text, hit):
    got = [h.text for h in detect(text).hits]
    assert hit in got, got


@pytest.mark.parametrize("text", [
    "Deep tendon reflexes are exaggerated at both knees.",
    "Exaggerated startle response.",
    "She is seeking a second opinion.",
    "Help-seeking behaviour improved.",
    "Denies drug seeking; no opioids requested.",  # negation still clears the family member
])
def test_near_misses_and_context_rules_still_clear(text):
    assert not detect(text).hits, [h.text for h in detect(text).hits]


def test_word_family_forms():
    assert word_family("(drug|opioid)-seeking") == "(drug|opioid)-seek(ing|er|ers|s)"
    assert word_family("poor historian") == "poor historian(|s)"
    assert word_family("combative") == "combative(|ly)"
    assert word_family("claim(|s|ed|ing)") == "claim(|s|ed|ing)"  # a term that lists its forms is left alone
