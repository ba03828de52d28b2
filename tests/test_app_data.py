"""Data page: the shared column mapping (ignore/rename) for every table, and bounded validation reports."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT

TIMEOUT = 60


def _issues(at):
    return next(d.value for d in [*at.dataframe, *at.table] if "message" in d.value.columns)


def _data_page():
    at = AppTest.from_file(str(ROOT / "pages/data.py"), default_timeout=TIMEOUT)
    at.run()
    at.radio[0].set_value("Paths on this machine").run()
    return at


def test_dialogue_csv_with_extra_column_imports_once_it_is_ignored(tmp_path):
    f = tmp_path / "conversations.csv"
    f.write_text("encounter_id,dataset,dialogue,note\n"
                 'E1,set-a,"Doctor: what brings you in? Patient: chest pain since yesterday.","Chest pain for 1 day."\n'
                 'E2,set-b,"Doctor: any cough? Patient: yes, for a week.","Cough for one week."\n')
    at = _data_page()
    at.text_area[0].input(str(f)).run()
    at.button[1].click().run()  # Import
    assert not at.exception
    assert any("nothing was imported" in e.value for e in at.error)
    issues = _issues(at)
    assert "dataset" in " ".join(issues["message"]) and "ignore" in " ".join(issues["fix"])
    at.multiselect(key="ignore_other").select("dataset").run()
    at.button[1].click().run()
    assert not at.exception
    assert any("Imported into 'conversations'" in s.value and "2 summaries" in s.value for s in at.success)


def test_thousands_of_errors_show_two_hundred_and_a_count(tmp_path):
    f = tmp_path / "ratings.csv"
    lines = ["summary_id,rater_id,item,value"] + [f"s{i},r1,accurate,9" for i in range(3000)]
    f.write_text("\n".join(lines) + "\n")
    at = _data_page()
    at.text_area[0].input(str(f)).run()
    at.button[0].click().run()  # Validate
    assert not at.exception
    assert len(_issues(at)) == 200
    assert any("2\\,800 more issue\\(s\\)" in c.value for c in at.caption)  # shown through untrusted.md
    assert any(e.value.startswith("3000 error(s): nothing was imported") for e in at.error)


def test_dialogue_csv_missing_note_gets_a_wrapping_error_and_no_ratings_mapping(tmp_path):
    """Read before as a wide ratings export: four errors about ids and items, a 14-row ratings mapping editor, and
    the error table cut its fixes off."""
    f = tmp_path / "visits.csv"
    f.write_text('encounter_id,transcript\nE1,"Doctor: what brings you in? Patient: chest pain."\n')
    at = _data_page()
    at.text_area[0].input(str(f)).run()
    assert not at.exception and not any("Column mapping" in m.value for m in at.markdown)
    at.button[0].click().run()  # Validate
    issues = next(t.value for t in at.table if "message" in t.value.columns)  # a static table: long cells wrap
    assert list(issues["message"]) == ["missing column 'dialogue' (a column 'transcript' is there)",
                                       "missing column 'note'"]
    assert '{"rename": {"transcript": "dialogue"}}' in issues["fix"].iloc[0]
    files = next(d.value for d in at.dataframe if "format" in d.value.columns)
    assert files["format"].iloc[0] == "dialogue CSV (columns encounter_id, transcript; no column for note)"


def test_fhir_bulk_export_imports_from_the_data_page():
    from conftest import FORMATS

    at = _data_page()
    at.text_area[0].input(str(FORMATS / "fhir")).run()
    at.text_input[0].input("fhirsample").run()
    at.button[1].click().run()  # Import (the summaries' type code defaults to the sample's llm-summary)
    assert not at.exception
    assert any("Imported into 'fhirsample'" in s.value and "36 summaries" in s.value for s in at.success), \
        [s.value for s in at.success] + [e.value for e in at.error]


def test_mimic_discharge_note_held_out_from_the_data_page(tmp_path):
    f = tmp_path / "discharge.csv"
    f.write_text("note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text\n"
                 "1-RR-1,1,100,RR,1,2180-05-06 10:00:00,,CT: nodular liver.\n"
                 "1-DS-2,1,100,DS,2,2180-05-07 00:00:00,,Discharge: cirrhosis.\n")
    at = _data_page()
    at.text_area[0].input(str(f)).run()
    next(t for t in at.text_input if t.label.startswith("Note types held out")).input("DS").run()
    at.button[1].click().run()
    assert not at.exception
    assert any("Imported into 'discharge'" in s.value and "1 summaries" in s.value for s in at.success), \
        [s.value for s in at.success] + [e.value for e in at.error]


def test_a_csv_no_format_matches_is_said_so_with_what_each_format_needs(tmp_path):
    """Read before as a wide ratings export and answered with rater-and-item errors."""
    f = tmp_path / "export.csv"
    f.write_text("patient,comment\nP1,fine\n")
    at = _data_page()
    at.text_area[0].input(str(f)).run()
    at.button[0].click().run()  # Validate
    assert not at.exception
    issues = _issues(at)
    assert list(issues["message"]) == ["no SumCheck format matches its columns (patient, comment)"]
    fix = issues["fix"].iloc[0]
    assert "a notes file: case_id, note_id, text" in fix and "a dialogue CSV: encounter_id, dialogue, note" in fix
    assert not any("rater" in m for m in issues["message"])


def test_import_is_off_after_a_failed_validate_until_the_input_changes(tmp_path):
    bad = tmp_path / "export.csv"
    bad.write_text("patient,comment\nP1,fine\n")
    at = _data_page()
    at.text_area[0].input(str(bad)).run()
    assert not at.button[1].disabled
    at.button[0].click().run()  # Validate: fails
    assert not at.exception
    assert at.button[1].disabled  # Import waits for a passing validation
    assert any("nothing was imported" in e.value for e in at.error)  # the report stays on screen
    good = ROOT / "sample_data" / "formats" / "fhir"
    at.text_area[0].input(str(good)).run()
    assert not at.button[1].disabled


def test_fixes_name_the_page_labels_and_the_mapping_keys(tmp_path):
    f = tmp_path / "wide.csv"
    f.write_text("accurate,thorough,useful\n4,3,5\n")
    at = _data_page()
    at.text_area[0].input(str(f)).run()
    at.button[0].click().run()
    fixes = " ".join(_issues(at)["fix"])
    assert 'the "summary id" row of the column table' in fixes and "'summary_col'" in fixes


def test_a_json_error_reads_once():
    from engine.data.strict_json import JsonProblem, loads_strict

    try:
        loads_strict('{"a": "unterminated')
    except JsonProblem as exc:
        assert "starting at line 1" in str(exc) and "at at" not in str(exc)
    else:
        raise AssertionError("accepted a broken JSON text")
