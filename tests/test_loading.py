"""Loaders: every format on valid input, and every kind of bad input named by file, row and field."""
import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest import BUNDLE, FORMATS
from engine.data.mapping import LoadOptions, RatingsMapping
from engine.data.loading import load_paths, sniff_wide_ratings
from engine.data.validation import DatasetInvalid


def _errors(paths, **kw):
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([str(p) for p in paths], **kw)
    return ei.value.report.errors


def _copy_bundle(tmp_path) -> Path:
    dst = tmp_path / "bundle"
    shutil.copytree(BUNDLE, dst)
    return dst


def _rewrite_csv(path: Path, fn) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    rows = fn(rows)
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


# ----------------------------------------------------------------------------------------- valid input


def test_bundle_csv_loads_everything():
    ds, rep = load_paths([BUNDLE])
    assert rep.ok
    assert len(ds.cases) >= 12 and len(ds.summaries) == 3 * len(ds.cases)
    assert {r.rater_id for r in ds.ratings} == {f"R{i}" for i in range(1, 8)}
    assert all(3 <= len(c.notes) <= 5 for c in ds.cases)
    # notes keep their order and metadata
    c = ds.cases[0]
    assert [n.note_id for n in c.notes] == sorted((n.note_id for n in c.notes), key=int)
    assert all(n.date for n in c.notes)


def test_bundle_jsonl_equals_csv(tmp_path):
    ds_csv, _ = load_paths([BUNDLE])
    out = tmp_path / "jsonl"
    out.mkdir()
    for f in BUNDLE.glob("*.csv"):
        with f.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        with (out / f"{f.stem}.jsonl").open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    ds_jsonl, rep = load_paths([out])
    assert rep.ok
    assert ds_jsonl.content_hash() == ds_csv.content_hash()


def test_case_json_single_file_and_folder():
    files = sorted((FORMATS / "case_json").glob("*.json"))
    ds, _ = load_paths([files[0]])
    assert len(ds.cases) == 1 and ds.cases[0].case_id == files[0].stem
    assert ds.summaries[0].summary_id == files[0].stem  # one summary per file, id = file stem
    ds2, rep = load_paths([FORMATS / "case_json"])
    assert len(ds2.cases) == len(files) and rep.formats[str(files[0])] == "case JSON"
    obj = json.loads(files[0].read_text())
    assert [n.note_id for n in ds.cases[0].notes] == list(obj["notes"])


def test_case_json_with_redcap_ratings():
    ds, rep = load_paths([FORMATS / "case_json", FORMATS / "redcap_ratings.csv"])
    assert rep.formats[str(FORMATS / "redcap_ratings.csv")].startswith("wide ratings CSV (")
    assert ds.ratings
    # blank Synthesized where Abstraction = no becomes NA, not "unrated"
    abst_no = {(r.summary_id, r.rater_id) for r in ds.ratings if r.item == "abstraction" and r.value == 0.0}
    syn = {(r.summary_id, r.rater_id): r.value for r in ds.ratings if r.item == "synthesized"}
    for key in abst_no:
        assert key in syn and syn[key] is None
    assert {r.rater_group for r in ds.ratings} <= {"junior", "senior"}


def test_redcap_mapping_is_editable(tmp_path):
    src = FORMATS / "redcap_ratings.csv"
    renamed = tmp_path / "export.csv"
    text = src.read_text().replace("accurate", "q2_accuracy_score", 1)
    renamed.write_text(text)
    header, guess = sniff_wide_ratings(renamed)
    assert "accurate" not in guess.items  # not recognised automatically...
    errs = _errors([FORMATS / "case_json", renamed])
    assert any(e.field == "q2_accuracy_score" and "unknown column" in e.message for e in errs)
    # ...until the user maps it
    mapping = RatingsMapping(items={"accurate": "q2_accuracy_score"})
    ds, _ = load_paths([FORMATS / "case_json", renamed], LoadOptions(mapping=mapping))
    assert any(r.item == "accurate" for r in ds.ratings)


def test_dialogue_csv():
    ds, rep = load_paths([FORMATS / "dialogue.csv"], LoadOptions(default_specialty="Primary Care"))
    assert rep.formats[str(FORMATS / "dialogue.csv")] == "dialogue CSV (columns encounter_id, dialogue, note)"
    assert len(ds.cases) == 3
    c = ds.cases[0]
    assert c.target_specialty == "Primary Care"
    assert c.notes[0].text.startswith("[doctor]")
    assert ds.summary(c.case_id).text.startswith("Chief complaint")


def test_crlf_and_bom_are_fine(tmp_path):
    src = (FORMATS / "dialogue.csv").read_text(encoding="utf-8")
    p = tmp_path / "d.csv"
    p.write_bytes(b"\xef\xbb\xbf" + src.replace("\n", "\r\n").encode("utf-8"))
    ds, _ = load_paths([p])
    assert len(ds.cases) == 3


# ----------------------------------------------------------------------------------------- bad input


def test_missing_column(tmp_path):
    b = _copy_bundle(tmp_path)
    _rewrite_csv(b / "summaries.csv", lambda rows: [r[:2] + r[3:] for r in rows])  # drop 'text'
    errs = _errors([b])
    e = next(e for e in errs if "missing column" in e.message)
    assert e.file.endswith("summaries.csv") and e.field == "text" and e.line == 1


def test_unknown_column(tmp_path):
    b = _copy_bundle(tmp_path)
    _rewrite_csv(b / "cases.csv", lambda rows: [r + (["mrn"] if i == 0 else ["123"]) for i, r in enumerate(rows)])
    errs = _errors([b])
    assert any(e.file.endswith("cases.csv") and e.field == "mrn" and "unknown column" in e.message for e in errs)


def test_rating_for_unknown_summary(tmp_path):
    b = _copy_bundle(tmp_path)
    _rewrite_csv(b / "ratings.csv", lambda rows: rows + [["no-such-summary", "R1", "junior", "cited", "4"]])
    errs = _errors([b])
    e = next(e for e in errs if "unknown summary" in e.message)
    n_rows = sum(1 for _ in (b / "ratings.csv").open()) - 1
    assert e.file.endswith("ratings.csv") and e.row == n_rows and e.field == "summary_id"


@pytest.mark.parametrize("item,value,fragment", [
    ("accurate", "7", "outside the scale"),
    ("thorough", "3.5", "outside the scale"),
    ("cited", "NA", "NA is not allowed"),
    ("abstraction", "maybe", "not a yes/no value"),
    ("useful", "good", "not a number"),
])
def test_score_outside_scale(tmp_path, item, value, fragment):
    b = _copy_bundle(tmp_path)

    def patch(rows):
        h = rows[0]
        for r in rows[1:]:
            if r[h.index("item")] == item:
                r[h.index("value")] = value
                break
        return rows

    _rewrite_csv(b / "ratings.csv", patch)
    errs = _errors([b])
    assert len(errs) == 1
    assert errs[0].field == "value" and fragment in errs[0].message and errs[0].row is not None


def test_duplicate_ids(tmp_path):
    b = _copy_bundle(tmp_path)
    _rewrite_csv(b / "summaries.csv", lambda rows: rows + [rows[1]])
    _rewrite_csv(b / "cases.csv", lambda rows: rows + [rows[1]])
    errs = _errors([b])
    assert any(e.file.endswith("summaries.csv") and e.field == "summary_id" and "duplicate" in e.message for e in errs)
    assert any(e.file.endswith("cases.csv") and e.field == "case_id" and "duplicate" in e.message for e in errs)


def test_empty_note(tmp_path):
    b = _copy_bundle(tmp_path)

    def blank(rows):
        rows[3][rows[0].index("text")] = "   "
        return rows

    _rewrite_csv(b / "notes.csv", blank)
    errs = _errors([b])
    assert any(e.file.endswith("notes.csv") and e.row == 3 and e.field == "text" and "empty" in e.message
               for e in errs)


def test_empty_note_in_case_json(tmp_path):
    p = tmp_path / "c1.json"
    p.write_text(json.dumps({"target_specialty": "Cardiology", "notes": {"1": "text", "2": ""}, "summary": "S"}))
    errs = _errors([p])
    assert errs[0].field == "notes.2" and "empty" in errs[0].message


def test_non_utf8(tmp_path):
    p = tmp_path / "dialogue.csv"
    data = (FORMATS / "dialogue.csv").read_bytes()
    second_line_start = data.index(b"\n") + 1
    p.write_bytes(data[:second_line_start] + "café".encode("cp1252") + data[second_line_start:])
    errs = _errors([p])
    assert "UTF-8" in errs[0].message and errs[0].line == 2 and "iconv" in errs[0].hint


def test_truncated_csv(tmp_path):
    b = _copy_bundle(tmp_path)
    data = (b / "notes.csv").read_text(encoding="utf-8")
    (b / "notes.csv").write_text(data[: len(data) // 2], encoding="utf-8")  # cut inside a quoted note text
    errs = _errors([b])
    assert any(e.file.endswith("notes.csv") and e.row is not None and "truncated" in e.hint for e in errs)


def test_truncated_json(tmp_path):
    src = sorted((FORMATS / "case_json").glob("*.json"))[0]
    p = tmp_path / src.name
    p.write_text(src.read_text()[:200])
    errs = _errors([p])
    assert "invalid JSON" in errs[0].message and errs[0].line is not None


def test_truncated_jsonl(tmp_path):
    p = tmp_path / "ratings.jsonl"
    p.write_text('{"summary_id": "a", "rater_id": "R1", "item": "cited", "value": 4}\n{"summary_id": "a", "rat')
    errs = _errors([p])
    assert any(e.row == 2 and "invalid JSON" in e.message for e in errs)


def test_case_json_unknown_and_missing_keys(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"notes": {"1": "x"}, "summary": "y", "patient_name": "Z"}))
    errs = _errors([p])
    assert {e.field for e in errs} == {"target_specialty", "patient_name"}


def test_dialogue_wrong_columns(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("encounter_id,dialogue,note,extra\n1,hi,there,x\n")
    errs = _errors([p])
    assert errs[0].field == "extra"


def test_missing_path():
    errs = _errors(["/no/such/file.csv"])
    assert "no such file" in errs[0].message


def test_errors_are_collected_not_just_the_first(tmp_path):
    b = _copy_bundle(tmp_path)
    _rewrite_csv(b / "ratings.csv", lambda rows: rows + [["nope", "R1", "junior", "cited", "9"],
                                                         ["nope2", "R1", "junior", "bogus_item", "1"]])
    errs = _errors([b])
    assert len(errs) >= 2
    assert all(e.format().startswith("ERROR: ") and "ratings.csv, row" in e.format() for e in errs)


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_semicolon_and_tab_separated_exports_load_like_commas(tmp_path, delimiter):
    """Spreadsheets where the comma is the decimal mark write semicolons; csv.Sniffer reads the header's delimiter."""
    b = _copy_bundle(tmp_path)
    for p in b.glob("*.csv"):
        with p.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        with p.open("w", encoding="utf-8", newline="") as fh:
            csv.writer(fh, delimiter=delimiter, lineterminator="\n").writerows(rows)
    ds, rep = load_paths([b])
    ref, _ = load_paths([BUNDLE])
    assert rep.ok and ds.content_hash() == ref.content_hash()


def _dialogue_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_dialogue_csv_missing_its_note_column_says_so_and_is_no_ratings_export(tmp_path):
    """Read before as a wide ratings export: four errors about summary ids, rater ids and items, nothing about the
    missing column."""
    p = _dialogue_csv(tmp_path / "visits.csv", ["encounter_id", "dialogue"],
                      [["e1", "Doctor: how are you? Patient: short of breath."]])
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([p])
    rep = exc.value.report
    assert rep.formats[str(p)] == "dialogue CSV (columns encounter_id, dialogue; no column for note)"
    msgs = [e.message for e in rep.errors]
    assert msgs == ["missing column 'note'"], msgs
    assert sniff_wide_ratings(p) is None  # the Data page offers no ratings mapping editor for it


def test_dialogue_column_under_another_name_gets_the_rename_that_fixes_it(tmp_path):
    p = _dialogue_csv(tmp_path / "visits.csv", ["encounter_id", "transcript", "note"],
                      [["e1", "Doctor: how are you? Patient: short of breath.", "Dyspnoea."]])
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([p])
    (err,) = exc.value.report.errors
    assert err.message == "missing column 'dialogue' (a column 'transcript' is there)" and err.field == "transcript"
    assert '{"rename": {"transcript": "dialogue"}}' in err.hint
    ds, rep = load_paths([p], LoadOptions(mapping=RatingsMapping(rename={"transcript": "dialogue"})))
    assert [s.text for s in ds.summaries] == ["Dyspnoea."] and ds.cases[0].notes[0].text.startswith("Doctor:")


def test_bundle_tables_and_ratings_exports_are_not_taken_for_dialogues(tmp_path):
    notes = _dialogue_csv(tmp_path / "n.csv", ["case_id", "note_id", "text"], [["c1", "1", "Note."]])
    from engine.data._fields import detect_table

    assert detect_table(notes, ["case_id", "note_id", "text"]) == "notes"
    assert detect_table(notes, ["summary_id", "rater", "summary", "accurate", "thorough"]) is None
