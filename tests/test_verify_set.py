"""The fact-controlled verification set's construction (bench/verify_set.py), on three real MTS-Dialog rows copied
into tests/data (CC BY 4.0): the split is fixed by the conversation id, a removal takes out the turns that state
a sentence's facts, every edit changes one fact, and a sentence with a number the conversation never gives is
labelled as such rather than as supported."""
import json
import random
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from verify_set import (EDIT_KINDS, conversation_items, coverage, edit, foreign, note_sentences,  # noqa: E402
                        remove_turns, split_of)
from engine.evidence.text.lexical import content_stems  # noqa: E402

ROWS = json.loads((Path(__file__).parent / "data" / "mts_dialog_excerpt.json").read_text())["rows"]


# sha256 of the id, even -> development: fixed for good, in every process (a salted or changed hash moves them)
KNOWN_SPLITS = {"mts:0": "dev", "mts:1": "test", "mts:2": "test", "mts:3": "dev", "mts:4": "test", "mts:5": "test",
                "mts:6": "test", "mts:7": "test", "mts:8": "dev", "mts:9": "dev", "mts:10": "test", "mts:11": "dev",
                "aci:virtassist-D2N001": "test"}


def test_the_split_depends_on_the_conversation_id_only():
    assert {c: split_of(c) for c in KNOWN_SPLITS} == KNOWN_SPLITS
    assert {split_of(f"mts:{i}") for i in range(40)} == {"dev", "test"}
    # every item of a conversation (supported, removal, edit, natural) lies in its conversation's split, whatever
    # the generator's state and whichever sentences were drawn
    r = ROWS[2]
    sents = note_sentences(r["section_text"])
    for conv_id in ("mts:3", "mts:1"):  # one development and one test conversation
        for seed in (1, 2):
            items = conversation_items(conv_id, "mts", r["dialogue"], sents, random.Random(seed), 2, 1, 2)
            assert len(items) >= 4 and {i.split for i in items} == {KNOWN_SPLITS[conv_id]}, (conv_id, seed)


def test_a_removal_leaves_at_most_half_of_the_sentences_content_words():
    r = ROWS[0]
    lines = [ln for ln in r["dialogue"].splitlines() if ln.strip()]
    done = 0
    for s in note_sentences(r["section_text"]):
        cut = remove_turns(s, lines)
        if cut is None:
            continue
        rest, removed = cut
        assert removed and len(rest) == len(lines) - len(removed)
        assert coverage(content_stems(s), rest) <= 0.5 < coverage(content_stems(s), lines)
        done += 1
    assert done >= 1


def test_every_edit_changes_one_fact_or_does_not_apply():
    rng = random.Random(0)
    conv = ROWS[2]["dialogue"]
    s = "Prescribed medications were Salmeterol inhaler, 2 puffs daily; she denies any side effects on the left."
    made = {k: edit(s, conv, k, rng) for k in EDIT_KINDS}
    assert made["number"] != s and "2 puffs" not in made["number"]
    assert "right" in made["side"] and "reports any side effects" in made["negation"]
    assert made["setting"].endswith("in the emergency department.")
    assert made["drug"] is None or "Salmeterol" not in made["drug"]


def test_items_keep_reference_sentences_with_foreign_numbers_out_of_the_supported_class():
    r = ROWS[2]  # a medications conversation that never gives an age or a dose
    sents = note_sentences(r["section_text"]) + ["The patient is a 45-year-old man taking Salmeterol twice a day."]
    items = conversation_items("mts:3", "mts", r["dialogue"], sents, random.Random(1), 1, 1, 1)
    ref = [i for i in items if i.category == "reference-unsupported"]
    assert [i.sentence for i in ref] == [sents[-1]] and ref[0].label == 1
    for i in items:
        assert (i.label == 0) == (i.category == "supported")
        assert not (i.category == "supported" and foreign(i.sentence, i.record))


def test_natural_items_add_what_the_conversation_never_gives_and_leave_the_other_items_as_they_were():
    from verify_set import NATURAL_KINDS, natural_items, natural

    r = ROWS[2]
    conv = r["dialogue"]
    rng = random.Random(3)
    s = "She uses Salmeterol for her asthma, and her mother is 53 and her father 58."
    assert "history of" in natural(s, conv, "history", rng) and natural(s, conv, "history", rng).startswith(s[:-1])
    assert natural(s, conv, "negative", rng).startswith(s[:-1] + ", and the patient denies")
    changed = natural(s, conv, "second-value", rng)
    assert changed is not None and "53" not in changed and "58" in changed  # the relative's value, not the next one
    assert natural("No numbers here at all.", conv, "second-value", rng) is None
    sents = note_sentences(r["section_text"])
    base = conversation_items("mts:3", "mts", conv, sents, random.Random(1), 1, 1, 1, n_natural=0)
    more = conversation_items("mts:3", "mts", conv, sents, random.Random(1), 1, 1, 1)
    assert more[:len(base)] == base  # drawn with their own generator: the other items are unchanged
    extra = more[len(base):]
    assert extra and all(i.label == 1 and i.category.split(":")[1] in NATURAL_KINDS for i in extra)
    assert all(i.record == conv and i.sentence not in sents for i in extra)
