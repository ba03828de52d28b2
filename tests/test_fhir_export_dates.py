"""FHIR export of datasets whose note dates are not FHIR dateTimes (MIMIC's "2180-05-06 21:19:00", US "01/05/2024"):
the export is valid FHIR, re-imports as the same dataset, and a resource FHIR refuses is named in one line."""
from __future__ import annotations

import csv
import io
import json

import pytest

from engine.cli import main
from engine.core.models import Case, Dataset, Note, Summary
import engine.data.fhir as fhir
import engine.data.fhir.export as export
from engine.data.fhir.export import dataset_resources, validate_resources, write_bulk
from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions
from engine.data.store import Store

HEADER = ["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"]
ROWS = [
    ["10000032-DS-21", "10000032", "22595853", "DS", "21", "2180-05-07 00:00:00", "", "Discharge: HCV cirrhosis."],
    ["10000032-RR-14", "10000032", "22595853", "RR", "14", "2180-05-05 08:00:00", "", "Abdominal CT: nodular liver."],
    ["10000032-RR-33", "10000032", "22595853", "RR", "33", "2180-05-06 21:19:00", "", "CXR: no acute process."],
    ["10000084-RR-5", "10000084", "23052089", "RR", "5", "2160-11-21 10:00:00", "", "Head CT: no hemorrhage."],
    ["10000084-DS-17", "10000084", "23052089", "DS", "17", "2160-11-25 00:00:00", "", "Discharge: Parkinson, fall."],
]
READ_BACK = LoadOptions(summary_types=("llm-summary",))


def _csv(rows) -> str:
    out = io.StringIO()
    csv.writer(out).writerows([HEADER, *rows])
    return out.getvalue()


def _shape(ds: Dataset):
    """Everything a dataset says: cases with their notes in order (id, text, date as stored, type, author) and
    summaries with their metadata."""
    cases = {c.case_id: (c.target_specialty, [(n.note_id, n.text, n.date, n.note_type, n.author_specialty)
                                              for n in c.notes]) for c in ds.cases}
    summaries = {(s.summary_id, s.case_id, s.text, s.generator_model, s.quality_group, s.prompt_variant)
                 for s in ds.summaries}
    return cases, summaries


def _documents(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "DocumentReference.ndjson").read_text().splitlines()]


@pytest.fixture()
def mimic_export(tmp_path):
    """A MIMIC dataset imported and exported with the command line: (stored dataset, export folder)."""
    (tmp_path / "discharge.csv").write_text(_csv(ROWS), encoding="utf-8")
    ws, out = tmp_path / "ws.db", tmp_path / "fhir"
    assert main(["--workspace", str(ws), "import", str(tmp_path / "discharge.csv"), "--name", "mimic",
                 "--hold-out-type", "DS", "--specialty", "Hepatology"]) == 0
    assert main(["--workspace", str(ws), "fhir-export", "mimic", "--out", str(out)]) == 0
    return Store(ws).load_dataset("mimic"), out


def test_mimic_dataset_exports_as_valid_fhir_datetimes(mimic_export):
    stored, out = mimic_export
    notes = [d for d in _documents(out) if "period" in d.get("context", {})]
    assert len(notes) == 3
    for doc in notes:
        period = doc["context"]["period"]
        assert export.FHIR_DATETIME.fullmatch(period["start"]), period
        (ext,) = period["_start"]["extension"]
        assert ext["url"] == "urn:sumcheck:fhir:original-text"
        assert period["start"] == ext["valueString"].replace(" ", "T") + "Z"
    assert {d["context"]["period"]["_start"]["extension"][0]["valueString"] for d in notes} == \
        {"2180-05-05 08:00:00", "2180-05-06 21:19:00", "2160-11-21 10:00:00"}


def test_mimic_export_reads_back_as_the_same_cases_notes_texts_and_dates(mimic_export):
    stored, out = mimic_export
    back, _ = load_paths([out], READ_BACK)
    cases, summaries = _shape(back)
    want_cases, want_summaries = _shape(stored)
    assert summaries == want_summaries and len(summaries) == 2
    assert {cid: (spec, [n[:2] + n[3:] for n in notes]) for cid, (spec, notes) in cases.items()} == \
        {cid: (spec, [n[:2] + n[3:] for n in notes]) for cid, (spec, notes) in want_cases.items()}
    # the dates mean the same instant of the wall clock, and sort the notes the same way
    assert [n.date_iso for c in back.cases for n in c.notes] == [n.date_iso for c in stored.cases for n in c.notes]


def test_mimic_export_reads_back_with_the_date_text_as_stored(mimic_export):
    stored, out = mimic_export
    back, _ = load_paths([out], READ_BACK)
    assert _shape(back) == _shape(stored)


@pytest.mark.parametrize("date, start, original", [
    ("01/05/2024", "2024-01-05", "01/05/2024"),
    ("January 5, 2024 2:30 PM", "2024-01-05T14:30:00Z", "January 5, 2024 2:30 PM"),
    ("2024-01-05", "2024-01-05", None),                        # already a FHIR dateTime: as it is
    ("2024-01-05T14:30:00+05:00", "2024-01-05T14:30:00+05:00", None),
])
def test_each_date_text_becomes_a_fhir_datetime(tmp_path, date, start, original):
    ds = Dataset("d", [Case("c1", "Cardiology", (Note("1", "BP 120/80.", date, "Progress note"),))],
                 [Summary("s1", "c1", "Stable.")])
    res = dataset_resources(ds)
    period = res["DocumentReference"][0]["context"]["period"]
    assert period["start"] == start
    assert (period["_start"]["extension"][0]["valueString"] if "_start" in period else None) == original
    out = write_bulk(res, tmp_path / "fhir")  # validated: no ValueError
    back, _ = load_paths([out.folder], READ_BACK)
    assert back.cases[0].notes[0].date_iso == ds.cases[0].notes[0].date_iso


def test_a_refused_resource_is_named_in_one_line():
    bad = {"DocumentReference": [{"resourceType": "DocumentReference", "id": "c1-note-1", "status": "current",
                                  "content": [{"attachment": {"data": "QQ=="}}],
                                  "context": {"period": {"start": "2180-05-06 21:19:00"}}}]}
    with pytest.raises(ValueError) as exc:
        validate_resources(bad)
    msg = str(exc.value)
    assert "\n" not in msg and "\\n" not in msg and "For further information" not in msg
    assert msg.startswith("DocumentReference/c1-note-1: field context.period.start: value '2180-05-06 21:19:00'"), msg


def test_cli_reports_a_refused_resource_in_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    ws, out = tmp_path / "ws.db", tmp_path / "fhir"
    (tmp_path / "discharge.csv").write_text(_csv(ROWS[:1]), encoding="utf-8")
    assert main(["--workspace", str(ws), "import", str(tmp_path / "discharge.csv"), "--name", "m"]) == 0
    capsys.readouterr()
    real = fhir.dataset_resources  # the command reads it from the package

    def broken(*a, **kw):
        res = real(*a, **kw)
        res["DocumentReference"][0]["context"]["period"]["start"] = "next\nTuesday"
        return res

    monkeypatch.setattr(fhir, "dataset_resources", broken)
    assert main(["--workspace", str(ws), "fhir-export", "m", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "\\n" not in err, err
    assert "DocumentReference/" in err and "context.period.start" in err
    assert not out.exists() or not any(out.iterdir())


def test_cli_reports_a_folder_it_cannot_write_in_one_line(tmp_path, capsys):
    ws = tmp_path / "ws.db"
    (tmp_path / "discharge.csv").write_text(_csv(ROWS[:1]), encoding="utf-8")
    assert main(["--workspace", str(ws), "import", str(tmp_path / "discharge.csv"), "--name", "m"]) == 0
    capsys.readouterr()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["--workspace", str(ws), "fhir-export", "m", "--out", str(blocker / "fhir")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot write the FHIR export" in err and str(blocker) in err, err
