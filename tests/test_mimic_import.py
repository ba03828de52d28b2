"""MIMIC-IV-Note input: one case per admission in chart-time order, the discharge note held out as the reference
summary, summaries keyed by admission or note, gzipped files, and malformed variants reported."""
from __future__ import annotations

import csv
import gzip
import io

import pytest

from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions
from engine.data.validation import DatasetInvalid

HEADER = ["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"]


def mimic_csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(HEADER)
    w.writerows(rows)
    return out.getvalue()


DISCHARGE = [
    ["10000032-DS-22", "10000032", "22841357", "DS", "22", "2180-06-27 00:00:00", "2180-07-01 10:15:00",
     "Discharge summary, second admission: ascites, paracentesis 5 L."],
    ["10000032-DS-21", "10000032", "22595853", "DS", "21", "2180-05-07 00:00:00", "2180-05-09 15:26:00",
     "Discharge summary, first admission: HCV cirrhosis, worsening ascites."],
    ["10000084-DS-17", "10000084", "23052089", "DS", "17", "2160-11-25 00:00:00", "2160-11-25 15:09:00",
     "Discharge summary: Parkinson disease, fall at home."],
]
RADIOLOGY = [
    ["10000032-RR-33", "10000032", "22595853", "RR", "33", "2180-05-06 22:25:00", "2180-05-06 23:32:00",
     "CXR: no acute process."],
    ["10000032-RR-34", "10000032", "22595853", "RR", "34", "2180-05-06 22:25:00", "2180-05-07 09:10:00",
     "Liver ultrasound: cirrhotic liver, moderate ascites."],
    ["10000032-RR-14", "10000032", "22595853", "RR", "14", "2180-05-05 08:00:00", "2180-05-05 09:00:00",
     "Abdominal CT: nodular liver."],
    ["10000032-RR-40", "10000032", "", "RR", "40", "2180-08-01 10:00:00", "2180-08-01 11:00:00",
     "Outpatient ultrasound."],
    ["10000032-RR-41", "10000032", "22841357.0", "RR", "41", "2180-06-26 12:00:00", "2180-06-26 13:00:00",
     "Paracentesis guidance."],
    ["10000084-RR-5", "10000084", "23052089", "RR", "5", "2160-11-21 10:00:00", "2160-11-21 11:00:00",
     "Head CT: no hemorrhage."],
]


@pytest.fixture()
def files(tmp_path):
    d = tmp_path / "mimic"
    d.mkdir()
    (d / "discharge.csv").write_text(mimic_csv(DISCHARGE), encoding="utf-8")
    (d / "radiology.csv.gz").write_bytes(gzip.compress(mimic_csv(RADIOLOGY).encode()))
    return d


def test_one_case_per_admission_in_chart_time_order(files):
    ds, report = load_paths([files], LoadOptions(default_specialty="Hepatology"))
    cases = {c.case_id: [n.note_id for n in c.notes_in_order()] for c in ds.cases}
    assert cases == {
        "22595853": ["10000032-RR-14", "10000032-RR-33", "10000032-RR-34", "10000032-DS-21"],
        "22841357": ["10000032-RR-41", "10000032-DS-22"],
        "23052089": ["10000084-RR-5", "10000084-DS-17"],
    }
    c = ds.case("22595853")
    assert [n.note_id for n in c.notes] == cases["22595853"]  # stored in that order too
    assert c.note("10000032-DS-21").note_type == "DS" and c.note("10000032-DS-21").date == "2180-05-07 00:00:00"
    assert c.note("10000032-DS-21").date_iso == "2180-05-07T00:00:00"
    assert c.target_specialty == "Hepatology"
    text = " ".join(report.formats.values())
    assert "MIMIC-IV-Note" in text and "1 skipped (no admission, hadm_id empty)" in text


def test_discharge_note_held_out_as_reference_summary(files):
    ds, report = load_paths([files], LoadOptions(hold_out_types=("DS",)))
    assert all(n.note_type == "RR" for c in ds.cases for n in c.notes)
    refs = {s.case_id: s for s in ds.summaries}
    assert set(refs) == {"22595853", "22841357", "23052089"}
    s = refs["22595853"]
    assert s.summary_id == "22595853-10000032-DS-21" and s.text.startswith("Discharge summary, first admission")
    assert (s.generator_model, s.quality_group) == ("clinician", "reference")
    assert "3 held out as reference summaries" in " ".join(report.formats.values())


def test_summaries_keyed_by_admission_or_note(files, tmp_path):
    by_hadm = tmp_path / "llm.csv"
    by_hadm.write_text("hadm_id,summary_id,text\n22595853,llm-1,Cirrhosis with ascites.\n", encoding="utf-8")
    ds, _ = load_paths([files], LoadOptions(summaries_file=str(by_hadm)))
    assert [(s.summary_id, s.case_id) for s in ds.summaries] == [("llm-1", "22595853")]
    ds, report = load_paths([files, by_hadm])  # recognised by its columns when given as one of the paths
    assert [(s.summary_id, s.case_id) for s in ds.summaries] == [("llm-1", "22595853")]
    assert report.formats[str(by_hadm)] == "summaries keyed by hadm_id"
    by_note = tmp_path / "by_note.jsonl"
    by_note.write_text('{"note_id": "10000084-RR-5", "text": "Parkinson, fall."}\n', encoding="utf-8")
    ds, _ = load_paths([files], LoadOptions(summaries_file=str(by_note)))
    assert [(s.summary_id, s.case_id) for s in ds.summaries] == [("23052089-summary-1", "23052089")]


def test_a_summary_keyed_by_a_missing_admission_is_named_as_missing(files, tmp_path):
    by_hadm = tmp_path / "llm.csv"
    by_hadm.write_text("hadm_id,summary_id,text\nnan,llm-1,Cirrhosis with ascites.\n", encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([files], LoadOptions(summaries_file=str(by_hadm)))
    errs = [i for i in exc.value.report.issues if i.severity == "error"]
    assert [(i.file, i.row, i.field) for i in errs] == [(str(by_hadm), 1, "hadm_id")]
    assert "missing" in errs[0].message and "unknown case" not in errs[0].message


@pytest.mark.parametrize("row, field, words", [
    (["n1", "1", "h1", "DS", "1", "next Tuesday", "", "Text."], "charttime", "cannot be read"),
    (["n1", "1", "h1", "DS", "x", "2180-01-01 00:00:00", "", "Text."], "note_seq", "whole number"),
    (["n1", "1", "h1", "DS", "1", "2180-01-01 00:00:00", "", "  "], "text", "empty"),
    (["n 1", "1", "h1", "DS", "1", "2180-01-01 00:00:00", "", "Text."], "note_id", ""),
])
def test_malformed_rows_are_reported(tmp_path, row, field, words):
    p = tmp_path / "discharge.csv"
    p.write_text(mimic_csv([DISCHARGE[0], row]), encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([p])
    errs = [i for i in exc.value.report.issues if i.severity == "error"]
    assert any(i.field == field and i.row == 2 and words in i.message for i in errs), errs


def test_truncated_gzip_is_reported(tmp_path):
    p = tmp_path / "radiology.csv.gz"
    p.write_bytes(gzip.compress(mimic_csv(RADIOLOGY).encode())[:-20])
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([p])
    assert any("gzip" in i.message for i in exc.value.report.issues)


def test_a_cases_table_alongside_names_each_admissions_specialty(files, tmp_path):
    cases = tmp_path / "cases.csv"
    cases.write_text("case_id,target_specialty\n22595853,Hepatology\n22841357,Hepatology\n23052089,Neurology\n",
                     encoding="utf-8")
    ds, _ = load_paths([files, cases], LoadOptions(default_specialty="Unspecified"))
    assert {c.case_id: c.target_specialty for c in ds.cases} == {"22595853": "Hepatology", "22841357": "Hepatology",
                                                                 "23052089": "Neurology"}
    cases.write_text("case_id,target_specialty\n99999999,Cardiology\n", encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:  # a case the export does not hold is named
        load_paths([files, cases])
    assert any("'99999999' has no notes" in i.message for i in exc.value.report.issues)


# ------------------------------------------------------------------ missing admission ids and one patient per case

def _subjects_by_case(ds) -> dict[str, set[str]]:
    """The patients (the subject id MIMIC puts first in a note id) whose notes each case holds."""
    return {c.case_id: {n.note_id.split("-")[0] for n in c.notes} for c in ds.cases}


@pytest.mark.parametrize("missing", ["nan", "NaN", "NULL", "null", "None", "NA", "N/A", "<NA>", "", "   "])
def test_missing_admission_ids_are_skipped_however_spelled(tmp_path, missing):
    rows = [["111-RR-1", "111", missing, "RR", "1", "2180-01-01 10:00:00", "", "Outpatient chest film, patient 111."],
            ["222-RR-1", "222", missing, "RR", "1", "2180-01-02 10:00:00", "", "Outpatient knee film, patient 222."],
            ["111-RR-2", "111", "5001", "RR", "2", "2180-01-03 10:00:00", "", "Inpatient CT, patient 111."]]
    p = tmp_path / "radiology.csv"
    p.write_text(mimic_csv(rows), encoding="utf-8")
    ds, report = load_paths([p])
    assert _subjects_by_case(ds) == {"5001": {"111"}}
    assert all(len(subjects) == 1 for subjects in _subjects_by_case(ds).values())
    text = " ".join(report.formats.values())
    assert "2 skipped (no admission, hadm_id" in text and "1 notes" in text


def test_a_missing_note_or_subject_id_is_an_error_naming_row_and_field(tmp_path):
    rows = [["nan", "111", "5001", "RR", "1", "2180-01-01 10:00:00", "", "CT."],
            ["111-RR-2", "NaN", "5001", "RR", "2", "2180-01-02 10:00:00", "", "MRI."]]
    p = tmp_path / "radiology.csv"
    p.write_text(mimic_csv(rows), encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([p])
    errs = {(i.file, i.row, i.field) for i in exc.value.report.issues if i.severity == "error"}
    assert {(str(p), 1, "note_id"), (str(p), 2, "subject_id")} <= errs


def test_an_admission_holding_two_patients_is_refused(tmp_path):
    rows = [["111-RR-1", "111", "0", "RR", "1", "2180-01-01 10:00:00", "", "Patient 111's film."],
            ["222-RR-1", "222", "0", "RR", "1", "2180-01-02 10:00:00", "", "Patient 222's film."]]
    p = tmp_path / "radiology.csv"
    p.write_text(mimic_csv(rows), encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([p])
    errs = [i for i in exc.value.report.issues if i.severity == "error"]
    assert any(i.file == str(p) and i.row == 2 and i.field == "hadm_id" and "two patients" in i.message
               and "'222'" in i.message and "'111'" in i.message for i in errs), errs


def test_an_admission_holding_two_patients_across_files_is_refused(tmp_path):
    d = tmp_path / "mimic"
    d.mkdir()
    (d / "discharge.csv").write_text(mimic_csv([DISCHARGE[1]]), encoding="utf-8")  # admission 22595853, 10000032
    other = ["99999999-RR-1", "99999999", "22595853", "RR", "1", "2180-05-05 08:00:00", "", "Another patient."]
    (d / "radiology.csv").write_text(mimic_csv([other]), encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([d])
    errs = [i for i in exc.value.report.issues if i.severity == "error"]
    assert any(i.file == str(d / "radiology.csv") and i.row == 1 and i.field == "hadm_id"
               and "discharge.csv row 1" in i.message for i in errs), errs
