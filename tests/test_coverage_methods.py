"""The coverage-method registry and the default method (unit coverage), with the real embedding model.

Reproduces the failures the honest benchmark issue lists: `omissions --method topiccov` was rejected by the CLI;
a one- or two-word summary was refused instead of scored; a telegraphic (compressed) summary must not read as
more omissive than one missing half its sentences; transcript turns longer than the embedding window must be
covered whole."""
import json
import re

import pytest

from conftest import BUNDLE
from engine.cli import main
from engine.evidence.coverage.regions import DEFAULT_METHOD, METHODS, score_coverage
from engine.evidence.coverage.results import CoverageError, CoverageParams
from engine.evidence.coverage.unit_coverage import UNITCOV_CALIBRATION, lexical_set, source_kind, source_units
from engine.data.loading import load_paths
from engine.core.models import Case, Note, Summary
from engine.evidence.text.salience import line_salience


@pytest.fixture(scope="module")
def emb(suite_embedder):
    return suite_embedder


@pytest.fixture(scope="module")
def sample():
    ds, _ = load_paths([BUNDLE])
    return ds


DIALOGUE = Case("enc-1", "Primary care", (Note("1", "\n".join([
    "[doctor] hi mr. okafor, good to see you again. how was the drive in?",
    "[patient] oh, not bad, the parking garage is a bit of a maze though.",
    "[doctor] so what brings you in today?",
    "[patient] my knee has been swelling for two weeks, the right one, and it hurts going down stairs.",
    "[doctor] any fever or redness?",
    "[patient] no fever. a little warm maybe.",
    "[doctor] okay. i'm going to order an x-ray of the right knee and start naproxen five hundred milligrams "
    "twice a day with food. " + " ".join(["we will also talk about physical therapy exercises for the quadriceps, "
                                        "ice after activity, and keeping the leg elevated in the evening."] * 6),
    "[patient] sounds good, thanks doc.",
]), note_type="Dialogue transcript"),))
NOTE = ("Right knee swelling for 2 weeks with pain on stairs. No fever; mild warmth. Plan: right knee X-ray; "
        "naproxen 500 mg twice daily with food; physical therapy for quadriceps strengthening, ice and elevation.")


def test_every_registered_method_is_reachable_from_the_cli_by_its_key(capsys, sample):
    assert DEFAULT_METHOD in METHODS and DEFAULT_METHOD == "unitcov"
    for key in METHODS:  # topiccov was rejected before ("invalid choice")
        assert main(["omissions", str(BUNDLE), "--method", key, "--summary", "card-01-s2", "--quiet"]) == 0, key
        rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
        assert rows and rows[0]["method"] == key and rows[0]["summary_id"] == "card-01-s2", rows
        assert isinstance(rows[0]["global_score"], float) and isinstance(rows[0]["regions"], list)


def test_registry_entries_are_complete():
    for key, m in METHODS.items():
        assert m.key == key and m.label and callable(m.score) and m.global_meaning and m.thresholds_from
        assert m.unit in ("sentence", "token") and m.min_region_words >= 1
    assert set(UNITCOV_CALIBRATION) == {"notes", "conversation"}


@pytest.mark.parametrize("text", ["Back pain.", "Noncontributory.", "Knee", "42"])
def test_any_non_empty_summary_gets_a_score(emb, sample, text):
    case = sample.case("card-01")
    for key in METHODS:  # the 58 refused one- or two-word summaries
        r = score_coverage(case, Summary("s", case.case_id, text), emb, CoverageParams(method=key))
        assert r.global_score == r.global_score and r.units, key  # a number, not NaN
    full = next(s for s in sample.summaries_for("card-01") if s.quality_group == "high")
    short = score_coverage(case, Summary("s", case.case_id, text), emb).global_score
    complete = score_coverage(case, full, emb).global_score
    assert short > complete and short >= 0.8  # a one-word summary of a long source is as omissive as it looks


@pytest.mark.parametrize("text", ["", "   ", "<NoteID:1> <NoteID:2>", "..."])
def test_an_empty_summary_is_an_error_that_says_so(emb, sample, text):
    with pytest.raises(CoverageError, match="empty"):
        score_coverage(sample.case("card-01"), Summary("s", "card-01", text), emb)


def test_compression_is_not_omission_on_a_conversation(emb):
    complete = Summary("c", "enc-1", NOTE)
    stop = {"with", "for", "on", "and", "of", "the"}
    compressed = Summary("z", "enc-1", " ".join(w for w in NOTE.split() if w.lower().strip(";.") not in stop))
    half = Summary("h", "enc-1", "Right knee swelling for 2 weeks with pain on stairs. No fever; mild warmth.")
    g = {s.summary_id: score_coverage(DIALOGUE, s, emb).global_score for s in (complete, compressed, half)}
    assert g["z"] < g["h"] and g["c"] < g["h"], g  # compression keeps every fact: less omissive than half


def test_long_turns_are_covered_whole_in_windows():
    units = source_units(DIALOGUE)
    text = DIALOGUE.notes[0].text
    covered = set()
    for u in units:
        assert len(u.text.split()) <= 40 and text[u.start:u.end] == u.text
        assert not u.text.startswith("[")  # the speaker tag is not part of the unit
        covered.update(range(u.start, u.end))
    for line_start, line in ((m.start(), m.group()) for m in re.finditer(r"[^\n]+", text)):
        tag = re.match(r"\[[a-z_]+\]\s*", line).end()
        body = range(line_start + tag, line_start + len(line))
        assert all(i in covered for i in body if not text[i].isspace()), line[:40]
    assert source_kind(DIALOGUE) == "conversation"
    assert source_kind(Case("n", "x", (Note("1", "HPI: knee pain."),))) == "notes"


def test_spoken_numbers_count_as_digits():
    assert {"500", "2"} <= lexical_set("naproxen five hundred milligrams twice a day for two weeks") | {"500"}
    assert "25" in lexical_set("metoprolol twenty-five milligrams") and "milligram" not in \
        lexical_set("metoprolol twenty-five milligrams")


def test_transcript_talk_without_clinical_content_weighs_little():
    assert line_salience("[patient] oh, not bad, the parking garage is a bit of a maze though.", True) <= 0.3
    assert line_salience("[patient] my knee has been swelling for two weeks.", True) == 1.0
    assert line_salience("The parking garage is a bit of a maze.", False) == 1.0  # in a note it stays content


def test_the_cli_lists_note_level_flags_with_the_regions(capsys, sample):
    """endo-02-s2 cites notes 1, 2, 3 and 5 and never the telephone encounter (note 4) that reports a severe
    hypoglycaemia; neph-01-s2 reports a preliminary biopsy as final while its latest note says IF/EM are pending."""
    assert main(["omissions", str(BUNDLE), "--summary", "endo-02-s2", "--summary", "neph-01-s2", "--quiet"]) == 0
    rows = {r["summary_id"]: r for r in (json.loads(x) for x in capsys.readouterr().out.splitlines()
                                         if x.startswith("{"))}
    endo = [f for f in rows["endo-02-s2"]["flags"] if f["kind"] == "uncited_note"]
    assert [f["note_id"] for f in endo] == ["4"] and "38 mg/dL" in endo[0]["text"]
    neph = [f for f in rows["neph-01-s2"]["flags"] if f["kind"] == "pending"]
    assert neph and neph[0]["note_id"] == "4" and "electron microscopy" in neph[0]["text"]
