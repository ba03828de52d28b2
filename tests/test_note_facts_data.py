"""Labelled omission set over the sample's notes (sample_data/note_facts): spans, fact coverage, rates, styles."""
import csv
import json
import re

import pytest

from conftest import BUNDLE, SAMPLE

FACTS_DIR = SAMPLE / "note_facts"
CASES_DIR = SAMPLE / "authoring" / "cases"
WEIGHT = {"high": 3, "medium": 2, "low": 1}
STYLES = {"telegraphic", "partial", "half", "short"}
FACT_ID = re.compile(r"^f[1-9]\d*$")


def _case_ids():
    return sorted(p.stem for p in CASES_DIR.glob("*.json"))


def _authoring_notes():
    out = {}
    for cid in _case_ids():
        case = json.loads((CASES_DIR / f"{cid}.json").read_text(encoding="utf-8"))
        out[cid] = {n["note_id"]: n["text"] for n in case["notes"]}
    return out


def _bundle_notes():
    out = {}
    with (BUNDLE / "notes.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["case_id"], {})[row["note_id"]] = row["text"]
    return out


@pytest.fixture(scope="module")
def notes():
    return _authoring_notes()


@pytest.fixture(scope="module")
def labelled():
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(FACTS_DIR.glob("*.json"))}


def test_one_file_per_sample_case(labelled):
    ids = _case_ids()
    assert len(ids) == 12
    assert sorted(labelled) == ids
    with (BUNDLE / "cases.csv").open(encoding="utf-8", newline="") as fh:
        specialty = {r["case_id"]: r["target_specialty"] for r in csv.DictReader(fh)}
    assert sorted(specialty) == ids
    for cid, doc in labelled.items():
        assert set(doc) == {"case_id", "target_specialty", "facts", "reference", "summaries"}, cid
        assert doc["case_id"] == cid
        assert doc["target_specialty"] == specialty[cid]


def test_authoring_notes_match_the_bundle(notes):
    assert _bundle_notes() == notes


def test_facts_and_exact_spans(labelled, notes):
    for cid, doc in labelled.items():
        facts = doc["facts"]
        assert 15 <= len(facts) <= 25, cid
        ids = [f["fact_id"] for f in facts]
        assert len(ids) == len(set(ids)), cid
        assert {f["importance"] for f in facts} >= {"high", "medium"}, cid
        for f in facts:
            assert set(f) == {"fact_id", "text", "importance", "note_id", "source_span"}, (cid, f)
            assert FACT_ID.match(f["fact_id"]), (cid, f["fact_id"])
            assert f["importance"] in WEIGHT, (cid, f["fact_id"])
            assert f["text"].strip(), (cid, f["fact_id"])
            assert f["note_id"] in notes[cid], (cid, f["fact_id"])
            assert f["source_span"].strip() and f["source_span"] in notes[cid][f["note_id"]], (cid, f["fact_id"])


def test_reference_covers_every_fact(labelled):
    for cid, doc in labelled.items():
        ids = {f["fact_id"] for f in doc["facts"]}
        ref = doc["reference"]
        assert ref and all(set(s) == {"text", "facts"} for s in ref), cid
        covered = set()
        for s in ref:
            assert s["text"].strip() and "<NoteID" not in s["text"], cid
            assert s["facts"] and set(s["facts"]) <= ids, (cid, s["text"])
            covered |= set(s["facts"])
        assert covered == ids, (cid, sorted(ids - covered))
        assert 120 <= sum(len(s["text"].split()) for s in ref) <= 250, cid


def test_summaries_and_rates(labelled):
    for cid, doc in labelled.items():
        weight = {f["fact_id"]: WEIGHT[f["importance"]] for f in doc["facts"]}
        ids, total = set(weight), sum(weight.values())
        summaries = doc["summaries"]
        assert len(summaries) == 4 and {s["style"] for s in summaries} == STYLES, cid
        sids = [s["summary_id"] for s in summaries]
        assert len(set(sids)) == 4 and all(re.fullmatch(re.escape(cid) + r"-L\d+", i) for i in sids), cid
        by_style = {}
        for s in summaries:
            assert set(s) == {"summary_id", "text", "facts_included", "style", "omission_rate",
                              "weighted_omission_rate"}, s["summary_id"]
            assert s["text"].strip() and "<NoteID" not in s["text"], s["summary_id"]
            inc = s["facts_included"]
            assert len(inc) == len(set(inc)) and set(inc) <= ids, s["summary_id"]
            assert s["omission_rate"] == round(1 - len(inc) / len(ids), 4), s["summary_id"]
            assert s["weighted_omission_rate"] == round(1 - sum(weight[i] for i in inc) / total, 4), s["summary_id"]
            by_style[s["style"]] = s
        assert set(by_style["telegraphic"]["facts_included"]) == ids, cid
        dropped = ids - set(by_style["partial"]["facts_included"])
        assert 2 <= len(dropped) <= 4 and any(weight[i] == 3 for i in dropped), cid
        assert 0.35 <= 1 - by_style["half"]["omission_rate"] <= 0.65, cid
        assert len(by_style["short"]["text"].split()) <= 20, cid
        rates = [by_style[k]["omission_rate"] for k in ("telegraphic", "partial", "half", "short")]
        assert rates == sorted(rates), cid  # coverage falls from telegraphic to short
