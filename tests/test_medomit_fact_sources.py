"""MED-OMIT's fact sources (engine.evidence.medomit.facts): the model's fact lists, or the notes' statements."""
import pytest

from engine.core.models import Case, Note, Summary
from engine.evidence.medomit.facts import DEFAULT_FACT_SOURCE, FACT_SOURCES
from engine.evidence.medomit.gaps import PASSAGE_LINK
from engine.evidence.medomit.pipeline import MedOmit, result_key
from engine.evidence.medomit.result import MedOmitResult
from fakes import ScriptedBackend


def two_notes(case_id: str) -> Case:
    """The scripted backend's two notes with one more sentence."""
    return Case(case_id, "Cardiology", (
        Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily.", "2024-01-01"),
        Note("2", "Echo: LVEF 35%. Nephrology referral placed for CKD stage 3. "
                  "Spironolactone 25 mg daily started for hyperkalemia prevention trial.", "2024-02-01")))


def test_statements_are_the_notes_own_words_with_no_fact_list_and_no_clusters():
    case = two_notes("c5")
    summary = Summary("c5-s1", "c5", "Atrial fibrillation on apixaban 5 mg twice daily. LVEF 35%.")
    be = ScriptedBackend()
    r = MedOmit(be, "m", facts="statements").run(case, summary)
    assert r.status == "complete", r.reason
    assert "facts" not in be.calls and "clusters" not in be.calls  # nothing generated for the facts
    assert be.calls.count("ddx") == 2 and "importance" in be.calls  # the differential and weights as before
    notes = {n.note_id: n.text for n in case.notes}
    assert r.facts and all(f.link == PASSAGE_LINK and notes[f.note_id][f.start:f.end] == f.text for f in r.facts)
    assert r.clusters == [] and r.provenance["facts"] == "statements"
    by_text = {r.fact(s.fact_id).text: s for s in r.scores}
    # the summary states the anticoagulant; the nephrology referral is left out (the script answers "no" for it)
    assert not by_text["Started apixaban 5 mg twice daily."].omitted
    assert [t for t, s in by_text.items() if s.omitted] == ["Nephrology referral placed for CKD stage 3."]
    # with no clusters a fact's score is its importance weight
    assert all(s.score == {"critical": 1.0, "important": 0.5, "other": 0.1}[s.importance] for s in r.scores)
    assert MedOmitResult.from_json(r.to_json()).provenance["facts"] == "statements"


def test_the_source_keys_the_result_and_the_default_keeps_its_old_key():
    case = two_notes("c6")
    summary = Summary("c6-s1", "c6", "Atrial fibrillation.")
    assert DEFAULT_FACT_SOURCE == "model" and FACT_SOURCES["model"].uses_model
    assert not FACT_SOURCES["statements"].uses_model
    assert result_key("m", case, summary) == result_key("m", case, summary, facts="model")
    assert result_key("m", case, summary, facts="statements") != result_key("m", case, summary)
    with pytest.raises(ValueError, match="unknown fact source 'sentences'; known: auto, model, statements, claims"):
        MedOmit(ScriptedBackend(), "m", facts="sentences")


def test_the_thorough_combination_reads_the_default_sources_weight_only():
    from engine.judge.features import _medomit_share

    case = two_notes("c7")
    summary = Summary("c7-s1", "c7", "Atrial fibrillation on apixaban.")
    model = MedOmit(ScriptedBackend(), "m").run(case, summary)
    stmts = MedOmit(ScriptedBackend(), "m", facts="statements").run(case, summary)
    import json
    assert _medomit_share(json.loads(model.to_json())) is not None
    assert _medomit_share(json.loads(stmts.to_json())) is None


def test_the_evidence_table_says_where_each_summarys_facts_came_from():
    from types import SimpleNamespace

    from engine.evidence.medomit.rows import dataset_rows

    case = two_notes("c8")
    s1 = Summary("c8-s1", "c8", "Atrial fibrillation on apixaban.")
    s2 = Summary("c8-s2", "c8", "LVEF 35%.")
    results = {"c8-s1": MedOmit(ScriptedBackend(), "m").run(case, s1),
               "c8-s2": MedOmit(ScriptedBackend(), "m", facts="statements").run(case, s2)}
    ds = SimpleNamespace(summaries=[s1, s2, Summary("c8-s3", "c8", "Nothing.")])
    rows = {r.summary_id: r.display() for r in dataset_rows(ds, results)}
    assert [rows[k]["facts from"] for k in ("c8-s1", "c8-s2", "c8-s3")] == [
        "extracted by the model", "the notes' statements", ""]
    # results of different sources are never compared with each other
    assert rows["c8-s1"]["left out, all other summaries state"] is None


def test_a_result_decided_again_keeps_the_source_its_facts_came_from():
    case = two_notes("c9")
    summary = Summary("c9-s1", "c9", "Atrial fibrillation on apixaban.")
    model = MedOmit(ScriptedBackend(), "m").run(case, summary)
    again = MedOmit(ScriptedBackend(), "m", facts="statements").decide_again(model, case, summary)
    assert again.fact_source == "model" and [f.text for f in again.facts] == [f.text for f in model.facts]


def test_the_cli_names_the_source_and_refuses_an_unknown_one(tmp_path, capsys):
    from engine.cli import main
    from engine.cli.evidence_commands import _medomit_line

    case = two_notes("c10")
    summary = Summary("c10-s1", "c10", "Atrial fibrillation on apixaban.")
    r = MedOmit(ScriptedBackend(), "m", facts="statements").run(case, summary)
    assert _medomit_line(r, case, None)["facts_from"] == "statements"
    with pytest.raises(SystemExit) as exit_:
        main(["--workspace", str(tmp_path / "w.sqlite"), "omissions", "sample", "--method", "medomit",
              "--facts", "sentences"])
    assert exit_.value.code == 2 and "invalid choice: 'sentences'" in capsys.readouterr().err


def test_an_unknown_source_in_a_hand_edited_settings_file_is_named_and_the_default_used():
    from streamlit.testing.v1 import AppTest

    from engine.data.settings import AppSettings, save_settings

    save_settings(AppSettings(medomit_facts="sentences"))

    def page():
        import streamlit as st

        from components import state

        st.write(f"source: {state.medomit_facts()}")

    at = AppTest.from_function(page, default_timeout=60)
    at.run()
    assert not at.exception
    assert any("source: auto" in m.value for m in at.markdown)
    assert any("fact source sentences in the settings is unknown" in e.value for e in at.error)
