"""Synthetic conversation benchmark (sample_data/conversations): shape, exact spans, omission rates, CSV, import."""
import re
import sys

import pytest

from conftest import SAMPLE
from engine.data.loading import load_paths

CONV = SAMPLE / "conversations"
sys.path.insert(0, str(CONV))
import build  # noqa: E402

WEIGHT = {"high": 3, "medium": 2, "low": 1}
TURN = re.compile(r"^\[(doctor|patient|patient_guest)\] \S")
GREETING = re.compile(r"\b(hi|hello|hey|good (morning|afternoon|evening)|how are you|nice to meet)\b")
SMALL_TALK = re.compile(r"\b(weather|snow|rain|pouring|hot|cold|weekend|trip|family|daughter|son|grandson|grandkids|"
                        r"wedding|job|store|shirt|parking|nursery|book|graduat\w*|fishing|soccer|league)\b")


def _note_sentences(note):
    out = []
    for line in note.splitlines():
        line = re.sub(r"^\d+\.\s+", "", line.strip())
        if not line or line.isupper():  # blank lines and section headers
            continue
        out += [p for p in re.split(r"(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bDr\.)(?<=[.?!])\s+(?=[A-Z0-9])", line)
                if p.strip()]
    return out


@pytest.fixture(scope="module")
def encounters():
    return build.load_encounters()


def test_counts(encounters):
    assert len(encounters) >= 14
    assert len({e["specialty"] for e in encounters}) >= 7
    assert len({e["encounter_id"] for e in encounters}) == len(encounters)
    for path, e in zip(build.encounter_files(), encounters):
        assert path.stem == e["encounter_id"]
        assert set(e) == {"encounter_id", "specialty", "patient_label", "dialogue", "note", "facts", "summaries"}
        assert e["patient_label"].startswith("synthetic patient, ")


def test_dialogue_shape(encounters):
    long_turns = 0
    for e in encounters:
        turns = e["dialogue"].split("\n")
        assert all(TURN.match(t) for t in turns), e["encounter_id"]
        assert 500 <= len(e["dialogue"].split()) <= 1300, e["encounter_id"]
        assert GREETING.search(" ".join(turns[:3]).lower()), e["encounter_id"]  # greeting in the first 3 turns
        assert SMALL_TALK.search(" ".join(turns[:6]).lower()), e["encounter_id"]  # small talk right after it
        if max(len(t.split(" ", 1)[1].split()) for t in turns) > 300:
            long_turns += 1
    assert long_turns >= 4


def test_note_and_facts(encounters):
    for e in encounters:
        eid, note, dialogue, facts = e["encounter_id"], e["note"], e["dialogue"], e["facts"]
        assert 150 <= len(note.split()) <= 450, eid
        assert 10 <= len(facts) <= 25, eid
        ids = [f["fact_id"] for f in facts]
        assert len(ids) == len(set(ids)), eid
        for f in facts:
            assert f["importance"] in WEIGHT, (eid, f["fact_id"])
            assert f["text"].strip(), (eid, f["fact_id"])
            assert f["note_sentence"] in note, (eid, f["fact_id"])
            assert f["dialogue_span"] in dialogue, (eid, f["fact_id"])
        for sentence in _note_sentences(note):  # every fact stated in the note has an entry
            assert any(f["note_sentence"] in sentence or sentence in f["note_sentence"] for f in facts), (eid, sentence)


def test_summaries(encounters):
    fabricated = short = 0
    for e in encounters:
        eid = e["encounter_id"]
        ids = {f["fact_id"] for f in e["facts"]}
        total = sum(WEIGHT[f["importance"]] for f in e["facts"])
        weight = {f["fact_id"]: WEIGHT[f["importance"]] for f in e["facts"]}
        assert 4 <= len(e["summaries"]) <= 5, eid
        sids = [s["summary_id"] for s in e["summaries"]]
        assert len(sids) == len(set(sids)) and all(s.startswith(eid + "-s") for s in sids), eid
        rates = []
        for s in e["summaries"]:
            inc = s["facts_included"]
            assert len(inc) == len(set(inc)) and set(inc) <= ids, s["summary_id"]
            for span in s["fabricated"]:
                assert span and span in s["text"], s["summary_id"]
            fabricated += bool(s["fabricated"])
            assert s["omission_rate"] == round(1 - len(inc) / len(ids), 4), s["summary_id"]
            assert s["weighted_omission_rate"] == round(1 - sum(weight[i] for i in inc) / total, 4), s["summary_id"]
            rates.append(s["omission_rate"])
            short += len(s["text"].split()) <= 3
        assert 0.0 in rates and max(rates) >= 0.5, eid  # one complete summary and one that drops at least half
    assert 3 <= fabricated <= 6
    assert short >= 2


def test_csv_matches_json():
    assert build.CSV_PATH.read_text(encoding="utf-8") == build.render()


def test_csv_imports_cleanly(encounters):
    ds, report = load_paths([build.CSV_PATH])
    assert report.ok and report.error_count == 0
    assert report.formats[str(build.CSV_PATH)].startswith("dialogue CSV")
    assert {c.case_id for c in ds.cases} == {e["encounter_id"] for e in encounters}
    by_id = {e["encounter_id"]: e for e in encounters}
    for c in ds.cases:
        assert c.notes[0].text == by_id[c.case_id]["dialogue"]
        assert ds.summary(c.case_id).text == by_id[c.case_id]["note"]
