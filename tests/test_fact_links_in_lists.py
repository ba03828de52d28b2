"""MED-OMIT facts of a note's lists are placed in the note (a reviewer found "Discharge meds: Apixaban 5 mg …"
listed as *not found in the notes* on the sample's FHIR export, though note 3 writes it).

A model's fact often joins a list's heading to its items ("Discharge meds: Apixaban 5 mg p.o. b.i.d., metoprolol
succinate 100 mg p.o. q.d., …"). The note writes the same words on several lines, with bullets and "(NEW)" between
them, so no single character match finds it, and the old similar-sentence search cut the note at every "p.o." and
compared the fact with fragments ("- Apixaban 5 mg p.o."), all below the 0.55 ratio: the fact read unlinked
(ratio 0.536). Linking now finds the fact's words in order (punctuation ignored) and compares it with runs of whole
sentences and list lines.
"""
import pytest

from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions
from engine.evidence.medomit._linking import find_words, link_fact

from conftest import SAMPLE

FHIR = SAMPLE / "formats" / "fhir"


@pytest.fixture(scope="module")
def card01_notes() -> dict[str, str]:
    ds, _ = load_paths([FHIR], LoadOptions(summary_types=("llm-summary",)))
    return {n.note_id: n.text for n in ds.case("card-01").notes}


def test_a_heading_joined_to_its_list_item_is_linked_word_for_word(card01_notes):
    fact = "Discharge meds: Apixaban 5 mg p.o. b.i.d. (NEW)"
    nid, s, e, kind, score = link_fact(fact, fact, card01_notes, None)
    assert (nid, kind, score) == ("3", "exact", 1.0)
    assert card01_notes["3"][s:e] == "Discharge meds:\n- Apixaban 5 mg p.o. b.i.d. (NEW)"


def test_a_fact_gathering_several_list_lines_is_linked_to_that_list(card01_notes):
    fact = ("Discharge meds: Apixaban 5 mg p.o. b.i.d., metoprolol succinate 100 mg p.o. q.d., "
            "sacubitril/valsartan 24/26 mg p.o. b.i.d., spironolactone 12.5 mg p.o. q.d.")
    nid, s, e, kind, score = link_fact(fact, fact, card01_notes, None)
    assert (nid, kind) == ("3", "fuzzy") and score >= 0.8
    placed = card01_notes["3"][s:e]
    assert placed.startswith("Discharge meds:") and "Spironolactone 12.5 mg" in placed and "Furosemide" not in placed


def test_words_in_order_ignore_punctuation_but_not_numbers_or_order():
    note = "Discharge meds:\n- Apixaban 5 mg p.o. b.i.d. (NEW)\nLabs: Cr 1.2 mg/dL"
    assert find_words(note, "discharge meds - apixaban 5 mg") == (0, 31)
    assert find_words(note, "Cr 1, 2 mg") is None  # "1.2" is one number
    assert find_words(note, "Apixaban meds discharge") is None  # the words must come in the note's order
    assert find_words(note, "Apixaban 5") is None  # two words place nothing by their words alone
