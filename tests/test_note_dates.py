"""Note dates: read once into ISO values, so US-format exports order correctly in the judge prompt, in the context
trimming and in the "pending in the latest note" flag; unreadable dates are refused at import, never guessed."""
import csv
import json

import pytest

from engine.core.dates import parse_note_date
from engine.core.models import Case, Note, Summary
from engine.data.loading import load_paths
from engine.data.validation import DatasetInvalid
from engine.evidence.coverage.note_flags import latest_notes, pending_flags
from engine.judge.prompt import build_messages

# File order is the reverse of time order, and the texts compare the wrong way round as strings.
NEW = Note("b", "Follow-up visit. Biopsy result is still pending.", "01/05/2024", "Progress note")
OLD = Note("a", "Admission. Pathology report pending at discharge.", "12/20/2023", "Discharge summary")
CASE = Case("c1", "Oncology", (NEW, OLD))


@pytest.mark.parametrize("text, iso", [
    ("12/20/2023", "2023-12-20"),
    ("01/05/2024", "2024-01-05"),
    ("20/12/2023", "2023-12-20"),  # a first number above 12 can only be a day
    ("2024-01-05", "2024-01-05"),
    ("Jan 5, 2024", "2024-01-05"),
    ("2024-01-05 14:30", "2024-01-05T14:30:00"),
    ("2024-01-05T14:30:00Z", "2024-01-05T14:30:00"),
])
def test_readable_dates(text, iso):
    assert parse_note_date(text).iso == iso


@pytest.mark.parametrize("text, why", [
    ("March 2024", "no day"),
    ("12/20", "no year"),
    ("yesterday", "not a date"),
    ("", "empty"),
])
def test_incomplete_or_unreadable_dates_are_not_guessed(text, why):
    p = parse_note_date(text)
    assert p.iso is None and why in p.problem


def test_notes_in_order_reads_the_parsed_date():
    assert [n.note_id for n in CASE.notes_in_order()] == ["a", "b"]
    # undated notes come last, in file order
    c = Case("c2", "X", (Note("u1", "x"), NEW, Note("u2", "y"), OLD))
    assert [n.note_id for n in c.notes_in_order()] == ["a", "b", "u1", "u2"]


def test_judge_prompt_shows_notes_oldest_first_with_iso_dates():
    msgs = build_messages(CASE, Summary("s1", "c1", "Summary."), explain=False, examples=())
    user = msgs[1]["content"]  # the record message
    assert user.index("Admission. Pathology") < user.index("Follow-up visit.")
    assert "2023-12-20" in user and "2024-01-05" in user


def test_latest_note_and_pending_flag_read_the_parsed_date():
    assert [n.note_id for n in latest_notes(CASE)] == ["b"]
    flags = pending_flags(CASE, "The patient was seen in follow-up.")
    assert flags and {f.note_id for f in flags} == {"b"}


def test_context_trimming_drops_the_oldest_note_first():
    from engine.judge._planning import plan_prompt
    from engine.judge.results import JudgeParams
    from fakes import FakeBackend

    params = JudgeParams(trim=True)
    probe = FakeBackend([])
    full = probe.count_tokens(probe.render(build_messages(CASE, Summary("s1", "c1", "S."), False, ())))
    be = FakeBackend([], n_ctx=full - 5 + params.resolved_max_tokens)
    plan = plan_prompt(be, CASE, Summary("s1", "c1", "S."), params, ())
    assert plan.dropped_notes == ["a"]


def _bundle(tmp_path, date: str):
    b = tmp_path / "b"
    b.mkdir()
    rows = {"cases.csv": [["case_id", "target_specialty"], ["c1", "Oncology"]],
            "notes.csv": [["case_id", "note_id", "date", "text"], ["c1", "1", "12/20/2023", "First note."],
                          ["c1", "2", date, "Second note."]],
            "summaries.csv": [["summary_id", "case_id", "text"], ["s1", "c1", "Summary."]]}
    for name, data in rows.items():
        with (b / name).open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(data)
    return b


def test_import_keeps_the_original_text_and_reads_the_date(tmp_path):
    ds, rep = load_paths([str(_bundle(tmp_path, "01/05/2024"))])
    notes = ds.case("c1").notes
    assert [n.date for n in notes] == ["12/20/2023", "01/05/2024"]
    assert [n.date_iso for n in notes] == ["2023-12-20", "2024-01-05"]


def test_an_unreadable_date_is_an_import_error_naming_file_row_and_field(tmp_path):
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([str(_bundle(tmp_path, "sometime in May"))])
    errs = ei.value.report.errors
    assert any(e.file.endswith("notes.csv") and e.row == 2 and e.field == "date" and "cannot be read" in e.message
               for e in errs)


def test_an_unreadable_date_in_case_json_names_the_field(tmp_path):
    p = tmp_path / "c1.json"
    p.write_text(json.dumps({"target_specialty": "Cardiology",
                             "notes": [{"note_id": "1", "text": "x", "date": "May"}], "summary": "S"}))
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([str(p)])
    assert any(e.field == "notes[0].date" and "no year or day" in e.message for e in ei.value.report.errors)


@pytest.mark.parametrize("hostile", ['2024-01-09 ![x](http://127.0.0.2:9/img.png)',
                                     '=HYPERLINK("http://127.0.0.2:9/","x") <img src=x onerror=alert(1)>', "-1+1"])
def test_hostile_text_in_a_date_field_never_reaches_the_store(tmp_path, hostile):
    """A date field is data like any other: markup, links and spreadsheet formulas there are refused at import
    (the note dates of the payload fixture are therefore plain dates; its other fields keep the payload)."""
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([str(_bundle(tmp_path, hostile))])
    assert [(e.row, e.field) for e in ei.value.report.errors] == [(2, "date")]
