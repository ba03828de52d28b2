"""Uncovered regions in a clinician's words: abbreviations count by their words, a term the notes only name negated
is not missing content, and the "likely omission" flag is calibrated per source kind so that no high-quality
summary of the sample carries it."""
from __future__ import annotations

import json

from conftest import ROOT
from engine.evidence.coverage.regions import METHODS, result_from_dict
from engine.evidence.text.terms import missing_key_terms, negated_only


def test_an_abbreviation_is_written_when_the_summary_writes_its_words():
    source = "DCCV 3/12/2024: successful, restored sinus rhythm. Admitted with AF with RVR."
    summary = "He underwent electrical cardioversion in March for AF with rapid ventricular response."
    assert missing_key_terms(source, summary) == []
    assert missing_key_terms(source, "He was admitted for AF.") == ["DCCV", "RVR"]


def test_a_term_the_notes_only_name_negated_is_not_missing():
    assert missing_key_terms("ECG: sinus tachycardia, no STEMI criteria.", "Sinus tachycardia.") == []
    assert negated_only("PE", "CTA chest: no PE.") and negated_only("PE", "PE was ruled out.")
    assert not negated_only("STEMI", "no STEMI criteria at first; repeat ECG showed STEMI.")
    assert missing_key_terms("Inferior STEMI, taken for PCI.", "Chest pain.") == ["STEMI", "PCI"]


def _shipped_coverage() -> dict:
    rows = [json.loads(x) for x in (ROOT / "sample_data" / "evidence_results.jsonl").read_text().splitlines()]
    return {r["summary_id"]: result_from_dict(json.loads(r["result"])) for r in rows if r["method"] == "coverage:unitcov"}


def test_no_high_quality_sample_summary_carries_the_likely_omission_flag():
    cov = _shipped_coverage()
    assert len(cov) == 36
    flagged = {q: sorted(s for s, r in cov.items() if s.endswith(q) and r.flagged) for q in ("-s1", "-s2", "-s3")}
    assert flagged["-s1"] == []
    assert len(flagged["-s2"]) == 6 and len(flagged["-s3"]) == 7  # the flag still says something
    assert all(r.flag_threshold == METHODS["unitcov"].flag_for({"source_kind": "notes"}) for r in cov.values())


def test_a_conversation_is_flagged_by_its_own_threshold():
    m = METHODS["unitcov"]
    assert m.flag_for({"source_kind": "conversation"}) > m.flag_for({"source_kind": "notes"})
    assert m.flag_for({}) == m.flag_threshold


def test_the_case_page_does_not_call_a_high_quality_summary_a_likely_omission():
    from streamlit.testing.v1 import AppTest

    from conftest import TIMEOUT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(dataset="sample", case="card-02", summary="card-02-s1")
    at.run()
    at.switch_page("pages/case.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="case_summary").value == "card-02-s1"
    texts = " ".join(c.value for c in at.caption)
    assert "Global omission score" in texts and "flagged: likely omission" not in texts
