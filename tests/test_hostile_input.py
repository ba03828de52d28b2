"""Hostile and malformed input: every loader answers with a dataset or a report naming file, row and field —
never a crash, a hang, a leak of reserved rater names, or an unbounded report."""
import csv
import json
import os
import threading
import time
from pathlib import Path

import pytest

from conftest import BUNDLE, FORMATS
from engine.data.mapping import LoadOptions, RatingsMapping
from engine.data.loading import load_paths, sniff_wide_ratings
from engine.data.strict_json import loads_strict
from engine.data.files import read_text_file
from engine.data.settings import SettingsError
from engine.data.validation import MAX_ISSUES_SHOWN, DatasetInvalid, Issue, ValidationReport
from fakes import GOOD_REPLY, judge_lines

ITEMS_LIKERT = ("cited", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct")


def _errors(paths, **kw):
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([str(p) for p in paths], **kw)
    return ei.value.report.errors


def _write_csv(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    return path


def _small_bundle(folder: Path, n_cases: int = 2, ratings=None) -> Path:
    """A tiny valid bundle: n cases with one note and one summary each, and the given rating rows."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_csv(folder / "cases.csv", [["case_id", "target_specialty"]] + [[f"c{i}", "Cardiology"]
                                                                         for i in range(n_cases)])
    _write_csv(folder / "notes.csv", [["case_id", "note_id", "text"]] + [[f"c{i}", "1", f"note {i}"]
                                                                       for i in range(n_cases)])
    _write_csv(folder / "summaries.csv", [["summary_id", "case_id", "text"]] + [[f"c{i}-s", f"c{i}", f"summary {i}"]
                                                                              for i in range(n_cases)])
    _write_csv(folder / "ratings.csv", [["summary_id", "rater_id", "rater_group", "item", "value"]]
               + (ratings if ratings is not None else [["c0-s", "R1", "junior", "cited", "4"]]))
    return folder


def _case_json(path: Path, **extra) -> Path:
    obj = {"target_specialty": "Cardiology", "notes": {"1": "a note"}, "summary": "a summary"}
    obj.update(extra)
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _in_thread(fn, timeout=20.0):
    """Run ``fn`` in a daemon thread: a hang fails the test instead of freezing the suite."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"still running after {timeout} s (it hangs)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ----------------------------------------------------------------------------------------- rating values


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "4e0000000000000001"])
def test_non_finite_rating_values_are_issues_in_csv(tmp_path, value):
    b = _small_bundle(tmp_path / "b", ratings=[["c0-s", "R1", "junior", "cited", "4"],
                                               ["c0-s", "R1", "junior", "accurate", value]])
    errs = _errors([b])
    assert len(errs) == 1
    e = errs[0]
    assert e.file.endswith("ratings.csv") and e.row == 2 and e.field == "value"
    assert "Accurate" in e.message and "1-5" in e.message


@pytest.mark.parametrize("value,fragment", [("NaN", "finite"), ("Infinity", "finite"), ("1e400", "finite"),
                                            ("true", "true"), ("false", "false"), ("[4]", "list"),
                                            ('{"v": 4}', "dict"), ("4.5", "yes/no")])
def test_json_rating_values_are_issues_in_jsonl(tmp_path, value, fragment):
    b = _small_bundle(tmp_path / "b")
    (b / "ratings.csv").unlink()
    (b / "ratings.jsonl").write_text(
        '{"summary_id": "c0-s", "rater_id": "R1", "item": "cited", "value": 4}\n'
        f'{{"summary_id": "c0-s", "rater_id": "R1", "item": "abstraction", "value": {value}}}\n', encoding="utf-8")
    errs = _errors([b])
    assert len(errs) == 1
    e = errs[0]
    assert e.file.endswith("ratings.jsonl") and e.row == 2 and e.line == 2 and e.field == "value"
    assert fragment in e.message


def test_json_true_is_refused_even_for_a_yes_no_item(tmp_path):
    b = _small_bundle(tmp_path / "b", ratings=[])
    (b / "ratings.csv").unlink()
    (b / "ratings.jsonl").write_text('{"summary_id": "c0-s", "rater_id": "R1", "item": "stigmatizing_notes", '
                                     '"value": true}\n', encoding="utf-8")
    (e,) = _errors([b])
    assert e.field == "value" and "true" in e.message and "yes" in e.hint


def test_non_finite_values_in_a_wide_ratings_csv(tmp_path):
    src = (FORMATS / "redcap_ratings.csv").read_text().splitlines()
    header = src[0].split(",")
    row = src[1].split(",")
    row[header.index("accurate")] = "nan"
    p = tmp_path / "redcap.csv"
    p.write_text("\n".join([src[0], ",".join(row)] + src[2:]) + "\n")
    errs = _errors([FORMATS / "case_json", p])
    assert [(e.file, e.row, e.field) for e in errs] == [(str(p), 1, "accurate")]


def test_ids_must_be_text_not_true_or_lists(tmp_path):
    b = _small_bundle(tmp_path / "b")
    (b / "cases.csv").unlink()
    (b / "cases.jsonl").write_text('{"case_id": "c0", "target_specialty": "Cardiology"}\n'
                                   '{"case_id": true, "target_specialty": "Cardiology"}\n'
                                   '{"case_id": "c1", "target_specialty": ["x"]}\n', encoding="utf-8")
    errs = _errors([b])
    by_row = {e.row: e for e in errs if e.file.endswith("cases.jsonl")}
    assert by_row[2].field == "case_id" and "true/false" in by_row[2].message
    assert by_row[3].field == "target_specialty" and "a list" in by_row[3].message


# ----------------------------------------------------------------------------------------- JSON structure


@pytest.mark.parametrize("kind", ["case JSON", "JSONL"])
def test_json_nested_100000_deep_is_an_issue_not_a_recursion_error(tmp_path, kind):
    deep = "[" * 100_000 + "]" * 100_000
    if kind == "case JSON":
        p = tmp_path / "c1.json"
        p.write_text('{"target_specialty": "X", "notes": ' + deep + ', "summary": "s"}')
        (e,) = _errors([p])
        assert e.file == str(p)
    else:
        b = _small_bundle(tmp_path / "b")
        (b / "ratings.csv").unlink()
        p = b / "ratings.jsonl"
        p.write_text('{"summary_id": "c0-s", "rater_id": "R1", "item": "cited", "value": 4}\n'
                     '{"summary_id": "c0-s", "rater_id": "R2", "item": "cited", "value": ' + deep + "}\n")
        (e,) = _errors([b])
        assert e.file == str(p) and e.row == 2 and e.line == 2
    assert "nested" in e.message and "deep" in e.message


def test_moderately_deep_json_is_refused_too(tmp_path):
    nested: object = "x"
    for _ in range(40):
        nested = [nested]
    p = _case_json(tmp_path / "c1.json", notes={"1": {"text": nested}})
    (e,) = _errors([p])
    assert "nested more than" in e.message


@pytest.mark.parametrize("text,key", [
    ('{"target_specialty": "A", "target_specialty": "B", "notes": {"1": "n"}, "summary": "s"}', "target_specialty"),
    ('{"target_specialty": "A", "notes": {"1": "first", "1": "second"}, "summary": "s"}', "1"),
])
def test_duplicate_keys_in_case_json_are_errors_naming_the_key(tmp_path, text, key):
    p = tmp_path / "c1.json"
    p.write_text(text)
    (e,) = _errors([p])
    assert e.file == str(p) and f"key {key!r} appears twice" in e.message


def test_duplicate_keys_in_jsonl(tmp_path):
    b = _small_bundle(tmp_path / "b")
    (b / "ratings.csv").unlink()
    (b / "ratings.jsonl").write_text(
        '{"summary_id": "c0-s", "rater_id": "R1", "item": "cited", "value": 4}\n\n'
        '{"summary_id": "c0-s", "rater_id": "R2", "item": "cited", "value": 1, "value": 5}\n', encoding="utf-8")
    (e,) = _errors([b])
    assert e.row == 2 and e.line == 3 and "key 'value' appears twice" in e.message


def test_lone_surrogates_and_giant_numbers_are_refused(tmp_path):
    p = tmp_path / "c1.json"
    p.write_text('{"target_specialty": "A", "notes": {"1": "bad \\ud800 text"}, "summary": "s"}')
    (e,) = _errors([p])
    assert "surrogate" in e.message
    p.write_text('{"target_specialty": "A", "notes": {"1": "ok"}, "summary": "s", "case_id": ' + "9" * 5000 + "}")
    (e,) = _errors([p])
    assert "invalid JSON" in e.message
    # a valid surrogate pair (an emoji written as an escape) is fine
    p.write_text('{"target_specialty": "A", "notes": {"1": "ok \\ud83d\\ude00"}, "summary": "s"}')
    ds, _ = load_paths([p])
    assert ds.cases[0].notes[0].text == "ok \U0001F600"


def test_unicode_line_separators_inside_jsonl_strings_do_not_split_lines(tmp_path):
    b = _small_bundle(tmp_path / "b")
    (b / "notes.csv").unlink()
    (b / "notes.jsonl").write_text(json.dumps({"case_id": "c0", "note_id": "1", "text": "a\u2028b\x85c"},
                                              ensure_ascii=False) + "\n"
                                   + json.dumps({"case_id": "c1", "note_id": "1", "text": "d"}) + "\n",
                                   encoding="utf-8")
    ds, _ = load_paths([b])
    assert ds.case("c0").notes[0].text == "a\u2028b\x85c"


def test_loads_strict_api():
    assert loads_strict('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    for bad in ('{"a": 1, "a": 2}', "[" * 5000 + "]" * 5000, '{"a": ', "1" * 5000, '"\\udc00"'):
        with pytest.raises(ValueError):
            loads_strict(bad)


# ----------------------------------------------------------------------------------------- the mapping file


@pytest.mark.parametrize("content,fragment", [
    ('["summary_col"]', "must hold one JSON object"),
    ('{"items": ["accurate"]}', "key 'items' must be an object"),
    ('{"ignore": "x"}', "key 'ignore' must be a list"),
    ('{"items": {"accurate": 2}}', "key 'items.accurate' must be a column name"),
    ('{"summary_col": 5}', "key 'summary_col' must be a column name"),
    ('{"ignore": ["a", null]}', "key 'ignore[1]' must be a column name"),
    ('{"rater": "x"}', "unknown key(s) 'rater'"),
    ('{"items": {"accuracy": "q2"}}', "unknown PDSQI-9 item(s) 'accuracy'"),
    ('{"items": {"accurate": "q2"}, "items": {}}', "key 'items' appears twice"),
    ('{"items": {"accurate": "q2"}', "invalid JSON"),
    ('{"default_rater_group": "LLM"}', "reserved"),
    ("[" * 100_000 + "]" * 100_000, "nested"),
])
def test_mapping_file_of_the_wrong_shape_is_a_clear_value_error(tmp_path, content, fragment):
    p = tmp_path / "mapping.json"
    p.write_text(content)
    with pytest.raises(ValueError) as ei:
        RatingsMapping.from_json(p)
    assert type(ei.value) in (ValueError,) and str(p) in str(ei.value) and fragment in str(ei.value)


def test_mapping_file_that_is_missing_or_a_fifo(tmp_path):
    with pytest.raises(ValueError, match="no.json.*(No such file|cannot read)"):
        RatingsMapping.from_json(tmp_path / "no.json")
    fifo = tmp_path / "mapping.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="named pipe"):
        _in_thread(lambda: RatingsMapping.from_json(fifo))


def test_good_mapping_file_still_works(tmp_path):
    p = tmp_path / "m.json"
    p.write_text('{"summary_col": "record_id", "rater_col": "rater", "items": {"accurate": "q2"}, '
                 '"ignore": ["notes"], "default_rater_group": "Senior"}')
    m = RatingsMapping.from_json(p)
    assert (m.summary_col, m.rater_col, m.items, m.ignore, m.default_rater_group) == (
        "record_id", "rater", {"accurate": "q2"}, ["notes"], "senior")


# ----------------------------------------------------------------------------------------- what is not a file


def test_a_fifo_named_csv_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "ratings.csv"
    os.mkfifo(fifo)  # no writer: opening it for reading would block forever
    t0 = time.perf_counter()
    with pytest.raises(DatasetInvalid) as ei:
        _in_thread(lambda: load_paths([fifo]))
    assert time.perf_counter() - t0 < 5
    (e,) = ei.value.report.errors
    assert e.file == str(fifo) and "named pipe (FIFO)" in e.message and "regular file" in e.message


def test_a_fifo_inside_a_folder_is_reported_not_read(tmp_path):
    b = _small_bundle(tmp_path / "b")
    os.mkfifo(b / "extra.csv")
    with pytest.raises(DatasetInvalid) as ei:
        _in_thread(lambda: load_paths([b]))
    assert [e.file for e in ei.value.report.errors] == [str(b / "extra.csv")]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_under_a_csv_name_is_refused(tmp_path):
    link = tmp_path / "notes.csv"
    link.symlink_to("/dev/zero")
    for target in (link, Path("/dev/zero")):
        with pytest.raises(DatasetInvalid) as ei:
            _in_thread(lambda: load_paths([target]))
        assert "character device" in ei.value.report.errors[0].message
    assert sniff_wide_ratings(link) is None  # the UI's column sniffer does not read it either


def test_size_cap_from_options_and_environment(tmp_path, monkeypatch):
    b = _small_bundle(tmp_path / "b")
    big = b / "notes.csv"
    _write_csv(big, [["case_id", "note_id", "text"], ["c0", "1", "x" * 3000], ["c1", "1", "y"]])
    errs = _errors([b], options=LoadOptions(max_file_mb=0.002))
    (e,) = [e for e in errs if e.file == str(big)]
    assert "0.0 MB, over the limit of 0.002 MB" in e.message and "SUMCHECK_MAX_FILE_MB" in e.hint
    # nothing else drowns it: the notes that could not be read do not make every case "have no notes"
    assert [x for x in errs if "no notes" in x.message] == []
    monkeypatch.setenv("SUMCHECK_MAX_FILE_MB", "0.002")
    errs = _errors([b])
    assert any(e.file == str(big) and "over the limit" in e.message for e in errs)
    monkeypatch.setenv("SUMCHECK_MAX_FILE_MB", "10")
    assert load_paths([b])[0].cases
    monkeypatch.setenv("SUMCHECK_MAX_FILE_MB", "lots")
    with pytest.raises(SettingsError, match="SUMCHECK_MAX_FILE_MB"):
        load_paths([b])


def test_the_read_is_bounded_even_if_the_file_grows(tmp_path, monkeypatch):
    """stat says small, the file is big (it grew after the check): the bounded read stops at the limit."""
    p = tmp_path / "notes.csv"
    p.write_bytes(b"case_id,note_id,text\n" + b"c,1," + b"x" * 5000 + b"\n")
    import engine.data.loading as loading

    real_fstat = os.fstat

    def small_fstat(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 10,
                               st.st_atime, st.st_mtime, st.st_ctime))

    monkeypatch.setattr(loading.os, "fstat", small_fstat)
    rep = ValidationReport()
    assert read_text_file(p, rep, max_mb=0.001) is None
    assert "grew past the limit" in rep.errors[0].message


# ----------------------------------------------------------------------------------------- formats by content


def test_extensionless_and_txt_files_are_sniffed(tmp_path):
    case = tmp_path / "case7"
    _case_json(case)
    b = _small_bundle(tmp_path / "b")
    (b / "cases.csv").rename(b / "cases.txt")
    (b / "ratings.csv").unlink()
    (b / "ratings").write_text('{"summary_id": "c0-s", "rater_id": "R1", "item": "cited", "value": 4}\n')
    files = [case, b / "cases.txt", b / "notes.csv", b / "summaries.csv", b / "ratings"]
    ds, rep = load_paths(files)
    assert rep.formats[str(case)].startswith("case JSON") and "detected from the content" in rep.formats[str(case)]
    assert rep.formats[str(b / "cases.txt")].startswith("bundle table 'cases'")
    assert rep.formats[str(b / "ratings")].startswith("bundle table 'ratings'")
    assert {c.case_id for c in ds.cases} == {"case7", "c0", "c1"} and len(ds.ratings) == 1


@pytest.mark.parametrize("content", ["just some prose\nwithout structure\n", "[1, 2, 3]", "hello, world\n1,2\n",
                                     ""])
def test_unknown_content_says_to_name_the_file(tmp_path, content):
    p = tmp_path / "data.txt"
    p.write_text(content)
    (e,) = _errors([p])
    assert e.file == str(p) and "cannot tell the format of data.txt" in e.message
    assert ".json" in e.hint and ".csv" in e.hint and ".jsonl" in e.hint


def test_broken_json_without_an_extension_says_where_it_breaks(tmp_path):
    p = tmp_path / "case3"
    p.write_text('{\n  "target_specialty": "Cardiology",\n  "notes": {"1": "x"},\n  "summary": "s"\n  "oops": 1\n}')
    (e,) = _errors([p])
    assert "invalid JSON" in e.message and e.line == 5
    p.write_text('{"target_specialty": "A", "notes": {"1": "x"}, "notes": {}, "summary": "s"}')
    (e,) = _errors([p])
    assert "key 'notes' appears twice" in e.message


def test_binary_junk_is_a_utf8_issue(tmp_path):
    p = tmp_path / "export.xlsx"
    p.write_bytes(b"PK\x03\x04\x14\x00\x06\x00\xff\xfe" + os.urandom(200))
    (e,) = _errors([p])
    assert "UTF-8" in e.message


# ----------------------------------------------------------------------------------------- reserved raters


@pytest.mark.parametrize("rater,group,field", [
    ("R1", "llm", "rater_group"), ("R1", "Adjudicated", "rater_group"),
    ("adjudicated", "senior", "rater_id"), ("llm", "junior", "rater_id"), ("LLM", "junior", "rater_id"),
])
def test_reserved_rater_ids_and_groups_are_refused_in_bundles(tmp_path, rater, group, field):
    b = _small_bundle(tmp_path / "b", ratings=[["c0-s", "R9", "junior", "cited", "4"],
                                               ["c0-s", rater, group, "accurate", "4"]])
    (e,) = _errors([b])
    assert e.file.endswith("ratings.csv") and e.row == 2 and e.field == field and "reserved" in e.message


def test_reserved_names_in_jsonl_wide_csv_and_default_group(tmp_path):
    b = _small_bundle(tmp_path / "b", ratings=[])
    (b / "ratings.csv").unlink()
    (b / "ratings.jsonl").write_text('{"summary_id": "c0-s", "rater_id": "R1", "item": "cited", "value": 4, '
                                     '"rater_group": "llm"}\n')
    (e,) = _errors([b])
    assert e.field == "rater_group" and e.row == 1
    # the default group given on the command line / Data page
    (b / "ratings.jsonl").write_text('{"summary_id": "c0-s", "rater_id": "R1", "item": "cited", "value": 4}\n')
    (e,) = _errors([b], options=LoadOptions(default_rater_group="adjudicated"))
    assert e.field == "rater_group (default)" and "reserved" in e.message
    # a wide ratings export
    src = (FORMATS / "redcap_ratings.csv").read_text().splitlines()
    p = tmp_path / "redcap.csv"
    p.write_text("\n".join([src[0], src[1].replace(",R1,junior,", ",adjudicated,junior,")] + src[2:]) + "\n")
    errs = _errors([FORMATS / "case_json", p])
    assert {(e.row, e.field) for e in errs} == {(1, "rater")}


def test_reserved_names_are_defined_once_and_used_by_reviews():
    from engine.core import models
    from engine.analysis import items
    from engine.data import reviews

    assert reviews.ADJUDICATED_RATER is models.ADJUDICATED_RATER
    assert reviews.ADJUDICATED_GROUP is models.ADJUDICATED_GROUP
    assert items.HUMAN_EXCLUDE == set(models.RESERVED_RATER_GROUPS)
    assert models.reserved_rater_problem("R1", "senior") is None


# ----------------------------------------------------------------------------------------- bounded reports


def test_many_bad_rows_give_a_bounded_report_with_exact_counts(tmp_path):
    n = 20_000
    b = _small_bundle(tmp_path / "b", ratings=[["c0-s", f"R{i}", "junior", "cited", "9"] for i in range(n)])
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([b])
    rep = ei.value.report
    assert rep.error_count == n and not rep.ok
    assert len(rep.issues) <= 2000
    text = rep.format_text()
    lines = text.splitlines()
    assert sum(1 for x in lines if x.startswith("ERROR")) == MAX_ISSUES_SHOWN
    assert f"... and {n - MAX_ISSUES_SHOWN:,} more issue(s) ({n - MAX_ISSUES_SHOWN:,} error(s))" in text
    assert f"INVALID ({n:,} error(s))" in text
    assert "(and 19,999 more)" in str(ei.value)


def test_many_bad_files_give_a_bounded_report(tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    n = 1500
    for i in range(n):
        (folder / f"c{i}.json").write_text('{"notes": {}, "mrn": 1}')  # 3 errors per file
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([folder])
    rep = ei.value.report
    assert rep.error_count == 3 * n
    lines = rep.format_text().splitlines()
    assert len(lines) < 2 * MAX_ISSUES_SHOWN + 10
    assert any(x.startswith(f"... and {n - 200:,} more file(s)") for x in lines)


def test_one_noisy_file_does_not_hide_another_files_errors(tmp_path):
    b = _small_bundle(tmp_path / "b", ratings=[["c0-s", f"R{i}", "junior", "cited", "9"] for i in range(5000)])
    extra = _case_json(tmp_path / "x.json", target_specialty="")
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([b, extra])
    shown = ei.value.report.shown_issues()
    assert any(i.file == str(extra) and "specialty" in i.message for i in shown)
    assert ei.value.report.file_error_count(str(b / "ratings.csv")) == 5000


def test_structural_errors_do_not_bury_row_errors_of_other_files(tmp_path):
    """cases.csv lacks a column: its error is reported, and so is the bad score in ratings.csv — not a flood of
    'unknown case' errors for every note and summary."""
    b = _small_bundle(tmp_path / "b", n_cases=50, ratings=[["c3-s", "R1", "junior", "accurate", "7"]])
    _write_csv(b / "cases.csv", [["case_id"]] + [[f"c{i}"] for i in range(50)])
    with pytest.raises(DatasetInvalid) as ei:
        load_paths([b])
    rep = ei.value.report
    assert [(Path(e.file).name, e.field) for e in rep.errors] == [("cases.csv", "target_specialty"),
                                                                  ("ratings.csv", "value")]
    assert any("not checked" in w.message for w in rep.warnings)


def test_report_counts_survive_construction_with_issues():
    rep = ValidationReport(issues=[Issue("f", "bad"), Issue("f", "meh", severity="warning")])
    assert rep.error_count == 1 and rep.warning_count == 1 and not rep.ok


# ----------------------------------------------------------------------------------------- speed


def test_many_small_cases_import_in_linear_time(tmp_path):
    """The import path is linear: 4x the cases costs about 4x the time (it was quadratic: ~11x here, 14.6 s for
    10,000 cases). bench/import_bench.py has the absolute figures."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from import_bench import generate_small

    for n in (2000, 8000):
        generate_small(tmp_path / f"s{n}", n, as_json=False)

    def timed(n):
        t0 = time.perf_counter()
        ds, _ = load_paths([tmp_path / f"s{n}"])
        ds.content_hash()
        return time.perf_counter() - t0

    small = min(timed(2000) for _ in range(2))
    large = min(timed(8000) for _ in range(2))
    assert large < 7 * small, (small, large)


# ----------------------------------------------------------------------------------------- judge-import


@pytest.fixture
def judged(store):
    """A workspace with the sample bundle as dataset 's', and judge results for three of its summaries."""
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    sids = [s.summary_id for s in ds.summaries[:3]]
    return store, sids, judge_lines(store, "s", sids)


def _import(store, lines, dataset="s"):
    from engine.judge.import_check import import_results

    return import_results(store, dataset, lines, source="results.jsonl")


def _n_results(store, dataset="s"):
    with store.connect() as con:
        return con.execute("SELECT COUNT(*) FROM judge_results").fetchone()[0]


def test_judge_import_accepts_genuine_results_of_every_kind(judged):
    store, sids, lines = judged
    markdown = {**GOOD_REPLY, **{f"{k}_why": "**bold** <script>alert(1)</script> [x](javascript:alert(1))"
                                  for k in GOOD_REPLY}}
    lines += judge_lines(store, "s", [sids[0]], replies=[markdown], explain=True)  # explanations (kept as data)
    lines += judge_lines(store, "s", [sids[1]], replies=["not json"], seed=99)  # unscored
    lines += judge_lines(store, "s", [sids[2]], n_ctx=300)  # refused: the prompt does not fit
    lines += judge_lines(store, "s", [sids[2]], shots=1)  # few-shot: examples re-derived from the dataset
    statuses = [json.loads(x)["status"] for x in lines]
    assert statuses == ["scored"] * 4 + ["unscored", "refused", "scored"]
    res = _import(store, lines)
    assert res.imported == 7 and res.report.ok and _n_results(store) == 7
    stored = [json.loads(x) for x in store.judge_results("s", latest_only=False)]
    expl = {r["items"]["cited"]["explanation"] for r in stored if r["items"]}
    assert "**bold** <script>alert(1)</script> [x](javascript:alert(1))" in expl  # verbatim: escaped on display
    assert _import(store, lines).imported == 7 and _n_results(store) == 7  # re-import replaces, never duplicates


def _set(path, value):
    def patch(d):
        *head, last = path.split(".")
        for k in head:
            d = d[int(k)] if isinstance(d, list) else d[k]
        if isinstance(d, list):
            d[int(last)] = value
        elif value is KeyError:
            del d[last]
        else:
            d[last] = value
    return patch


@pytest.mark.parametrize("patch,field,fragment", [
    (_set("items.cited.median", 99), "items.cited.median", "outside the scale"),
    (_set("items.cited.median", 1.0), "items.cited.median", "is not the median of the samples"),
    (_set("items.cited.median", float("nan")), "items.cited.median", "is not a score"),
    (_set("items.cited.is_na", "no"), "items.cited.is_na", "does not match"),
    (_set("items.cited.explanation", "x" * 5000), "items.cited.explanation", "at most 2,000"),
    (_set("samples.0.values.cited", 1.0), "samples[0].values", "not what its raw reply says"),
    (_set("samples.0.raw", "x" * 200_000), "samples[0].raw", "at most 100,000"),
    (_set("samples.1.seed", 7), "samples[1].seed", "the parameters give"),
    (_set("samples.0.values.cited", 9), "samples[0].values.cited", "outside the scale"),
    (_set("summary_id", "no-such-summary"), "summary_id", "is not in dataset 's'"),
    (_set("case_id", "other"), "case_id", "belongs to case"),
    (_set("status", "great"), "status", "not one of scored, unscored, refused"),
    (_set("status", "refused"), "status", "a refused result has no samples"),
    (_set("cache_key", "0" * 64), "cache_key", "does not belong to summary"),
    (_set("cache_key", "nope"), "cache_key", "64-digit"),
    (_set("provenance.model_sha256", "cd" * 32), "cache_key", "does not belong"),
    (_set("provenance.prompt_version", "pdsqi9-judge-v0+old"), "provenance.prompt_version", "not the current"),
    (_set("provenance.params.n_samples", "3"), "provenance.params.n_samples", "whole number"),
    (_set("provenance.few_shot_examples", ["zzz"]), "provenance.few_shot_examples[0]", "is not a summary"),
    (_set("timing.prompt_tokens", -1), "timing.prompt_tokens", "outside"),
    (_set("evil", 1), None, "unknown key(s) 'evil'"),
    (_set("items", KeyError), None, "lacks key(s) items"),
    (_set("samples", "many"), "samples", "must be a list"),
    (_set("created_at", "yesterday"), "created_at", "ISO 8601"),
])
def test_judge_import_refuses_tampered_results(judged, patch, field, fragment):
    store, sids, lines = judged
    bad = json.loads(lines[1])
    patch(bad)
    with pytest.raises(DatasetInvalid) as ei:
        _import(store, [lines[0], json.dumps(bad), lines[2]])
    errs = ei.value.report.errors
    assert errs and all(e.row == 2 and e.line == 2 and e.file == "results.jsonl" for e in errs)
    assert any(e.field == field and fragment in e.message for e in errs), [e.format() for e in errs]
    assert _n_results(store) == 0  # all or nothing: the two good lines were not written either


def test_judge_import_accepts_an_exact_early_stop_only(judged):
    """A run that stopped once no further sample could change a median (engine.judge.consistency) has fewer samples
    than n_samples; one cut short before that point is refused."""
    from dataclasses import asdict

    from engine.judge.results import SampleReply, aggregate

    store, sids, _ = judged
    (line,) = judge_lines(store, "s", sids[:1], replies=[GOOD_REPLY], n_samples=7)

    def truncated(k):
        d = json.loads(line)
        d["samples"] = d["samples"][:k]
        items = aggregate([SampleReply(**x) for x in d["samples"]])
        d["items"] = {key: {**asdict(v), "expected": d["items"][key]["expected"],
                            "expected_mass": d["items"][key]["expected_mass"]} for key, v in items.items()}
        return json.dumps(d)

    assert _import(store, [truncated(4)]).imported == 1  # 4 identical answers of 7: every median is decided
    with pytest.raises(DatasetInvalid, match="stop early only once"):
        _import(store, [truncated(3)])


def test_judge_import_samples_moved_to_another_summary_are_refused(judged):
    store, sids, lines = judged
    a, b = json.loads(lines[0]), json.loads(lines[1])
    b["summary_id"], b["case_id"] = a["summary_id"], a["case_id"]  # b's scores claimed for a's summary
    with pytest.raises(DatasetInvalid) as ei:
        _import(store, [json.dumps(b)])
    (e,) = ei.value.report.errors
    assert e.field == "cache_key" and "re-run the judge" in e.hint


def test_judge_import_refuses_results_for_changed_content(judged, tmp_path):
    store, sids, lines = judged
    other = tmp_path / "b"
    import shutil

    shutil.copytree(BUNDLE, other)
    text = (other / "summaries.csv").read_text()
    (other / "summaries.csv").write_text(text.replace("<NoteID:1>", "<NoteID:2>", 1))
    ds, _ = load_paths([other], name="changed")
    store.import_dataset(ds)
    changed = next(s.summary_id for s in ds.summaries if "<NoteID:2>" in s.text and s.summary_id in sids)
    line = lines[sids.index(changed)]
    with pytest.raises(DatasetInvalid, match="does not belong"):
        _import(store, [line], dataset="changed")


@pytest.mark.parametrize("line,fragment", [
    ('{"summary_id": "a", "summary_id": "b"}', "key 'summary_id' appears twice"),
    ("[" * 100_000 + "]" * 100_000, "nested"),
    ('{"summary_id": ', "invalid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('"\\ud800"', "surrogate"),
])
def test_judge_import_malformed_lines(judged, line, fragment):
    store, sids, lines = judged
    with pytest.raises(DatasetInvalid) as ei:
        _import(store, [lines[0], line])
    (e,) = ei.value.report.errors
    assert e.row == 2 and fragment in e.message
    assert _n_results(store) == 0


def test_judge_import_duplicate_and_empty(judged):
    store, sids, lines = judged
    with pytest.raises(DatasetInvalid, match="also on line 1"):
        _import(store, [lines[0], lines[0]])
    with pytest.raises(DatasetInvalid, match="holds no judge results"):
        _import(store, ["", "  "])


def test_judge_import_file_must_be_a_regular_file(judged, tmp_path):
    from engine.judge.import_check import import_results_file

    store, sids, lines = judged
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(DatasetInvalid, match="named pipe"):
        _in_thread(lambda: import_results_file(store, "s", fifo))
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetInvalid, match="over the limit"):
        import_results_file(store, "s", p, max_file_mb=0.0001)
    assert import_results_file(store, "s", p).imported == 3
