"""Fuzzing every loader and judge-import with Hypothesis: whatever the file holds, the answer is a dataset (which
then imports cleanly) or a DatasetInvalid report — never another exception — and a refused input leaves the
workspace exactly as it was (PRAGMA integrity_check ok, every row count unchanged).

Derandomized (the same examples on every run) and bounded to stay fast on a 2-core machine."""
import csv
import io
import itertools
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import BUNDLE
from engine.data.mapping import CASE_JSON_KEYS_OPTIONAL, TABLE_COLUMNS, LoadOptions, RatingsMapping
from engine.data.loading import load_paths
from engine.core.rubric import ITEM_KEYS
from engine.data.store import Store
from engine.data.validation import DatasetInvalid

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])
TABLES = ("cases", "notes", "summaries", "ratings")
_names = itertools.count()

# ------------------------------------------------------------------------------------------------ strategies

TOKENS = ["", " ", "NA", "n/a", "nan", "NaN", "inf", "-inf", "1e400", "-1", "0", "1", "1.0", "2", "3.5", "5", "6",
          "yes", "no", "true", "True", "llm", "adjudicated", "LLM", "junior", "senior", "c0", "c1", "c0-s", "c1-s",
          "R1", "R2", "1", "cited", "abstraction", "synthesized", "accurate", "bogus", '"', "'", ",", ";", "\n",
          "\r\n", "\r", "\x00", "\t", "{", "[", "]", "}", "é", "\u2028", "\ufeff", "a,b", 'say "hi"', "<NoteID:1>",
          "x" * 300, "Cardiology"]
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
cell = st.one_of(st.sampled_from(TOKENS), text)
scalar = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30), st.floats(), st.sampled_from(TOKENS),
                   text)
ALL_KEYS = sorted({c for req, opt in TABLE_COLUMNS.values() for c in req + opt} | set(CASE_JSON_KEYS_OPTIONAL)
                  | {"target_specialty", "notes", "text", "date", "note_type", "encounter_id", "dialogue", "note"}
                  | set(ITEM_KEYS))
key = st.one_of(st.sampled_from(ALL_KEYS), text)
json_value = st.recursive(scalar, lambda ch: st.one_of(st.lists(ch, max_size=4),
                                                       st.dictionaries(key, ch, max_size=4)), max_leaves=10)
HOSTILE_JSON = ['{"a": 1, "a": 2}', "[" * 3000 + "]" * 3000, "9" * 5000, '"\\ud800"', "NaN", "-Infinity", "1e400",
                "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", '"\\u0000"', "true"]
value_text = st.one_of(json_value.map(json.dumps), st.sampled_from(HOSTILE_JSON))


@st.composite
def json_object_text(draw, keys=ALL_KEYS, base: dict | None = None):
    """A JSON object as text: plausible keys, hostile values, sometimes a key twice, sometimes cut short."""
    items = [(k, json.dumps(v)) for k, v in (base or {}).items()]
    for _ in range(draw(st.integers(0, 5))):
        k = draw(st.one_of(st.sampled_from(list(keys)), text))
        items.append((k, draw(value_text)))
    if items and draw(st.booleans()):
        i = draw(st.integers(0, len(items) - 1))
        items[i] = (items[i][0], draw(value_text))
    if items and draw(st.integers(0, 9)) == 0:
        items.append(items[0])  # a duplicate key
    out = "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in items) + "}"
    if draw(st.integers(0, 9)) == 0:
        out = out[: draw(st.integers(0, len(out)))]
    return out


@st.composite
def csv_text(draw, columns):
    """A CSV: a header from plausible and random columns, rows of hostile cells, sometimes ragged or cut short."""
    header = draw(st.lists(st.one_of(st.sampled_from(list(columns)), text), min_size=1, max_size=len(columns) + 2))
    if draw(st.booleans()):
        header = list(columns)
    rows = draw(st.lists(st.lists(cell, min_size=max(0, len(header) - 1), max_size=len(header) + 1), max_size=6))
    buf = io.StringIO()
    csv.writer(buf, lineterminator=draw(st.sampled_from(["\n", "\r\n"]))).writerows([header] + rows)
    out = buf.getvalue()
    if draw(st.integers(0, 7)) == 0:
        out = out[: draw(st.integers(0, len(out)))]
    return out


def raw_content(structured):
    """Structured content most of the time, otherwise random text or bytes."""
    return st.one_of(structured, structured, structured, text.map(str), st.binary(max_size=200))


# a small valid bundle: the base the fuzzed tables replace or mutate
MINI = {
    "cases": [["case_id", "target_specialty"], ["c0", "Cardiology"], ["c1", "Nephrology"]],
    "notes": [["case_id", "note_id", "text", "date"], ["c0", "1", "Chest pain.", "2024-01-01"],
              ["c0", "2", "Echo: EF 35%.", ""], ["c1", "1", "CKD stage 3.", "2024-02-01"]],
    "summaries": [["summary_id", "case_id", "text", "quality_group"], ["c0-s", "c0", "Chest pain <NoteID:1>.", "high"],
                  ["c1-s", "c1", "CKD 3 <NoteID:1>.", ""]],
    "ratings": [["summary_id", "rater_id", "rater_group", "item", "value"], ["c0-s", "R1", "junior", "cited", "4"],
                ["c0-s", "R1", "junior", "abstraction", "no"], ["c0-s", "R1", "junior", "synthesized", "NA"],
                ["c1-s", "R2", "senior", "accurate", "5"]],
}
WIDE = [["record_id", "rater", "rater_group", "cited", "accurate", "abstraction", "synthesized", "pdsqi_complete"],
        ["c0-s", "R1", "junior", "4", "5", "0", "", "2"], ["c1-s", "R2", "senior", "3", "2", "1", "4", "2"]]


def _csv(rows, terminator="\n") -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=terminator).writerows(rows)
    return buf.getvalue()


@st.composite
def mutated_csv(draw, rows):
    """A valid table with a few cells (header included) replaced by hostile ones, rows dropped or duplicated."""
    rows = [list(r) for r in rows]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(rows) - 1))
        j = draw(st.integers(0, len(rows[i]) - 1))
        rows[i][j] = draw(cell)
    if draw(st.integers(0, 4)) == 0:
        rows.append(list(rows[draw(st.integers(1, len(rows) - 1))]))
    return _csv(rows, draw(st.sampled_from(["\n", "\r\n"])))


# ------------------------------------------------------------------------------------------------ harness


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("fuzz") / "ws.sqlite")
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    return store


def _snapshot(store):
    with store.connect() as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("datasets", "cases", "notes", "summaries", "ratings", "imports", "judge_results")}


def _write(folder: Path, name: str, content) -> Path:
    p = folder / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8", newline="")
    return p


def _load_and_import(store, paths, options=None):
    """What the CLI and the Data page do. Only DatasetInvalid may come out of it; a refusal writes nothing."""
    before = _snapshot(store)
    try:
        ds, report = load_paths([str(p) for p in paths], options)
    except DatasetInvalid as exc:
        assert not exc.report.ok and exc.report.errors and exc.report.error_count >= len(exc.report.errors)
        assert "INVALID" in exc.report.format_text()
        assert _snapshot(store) == before
        event("refused")
        return None
    event("imported")
    assert report.ok
    name = f"fuzz{next(_names)}"
    res = store.import_dataset(ds, name=name)
    assert res.created
    assert store.load_dataset(name).content_hash() == ds.content_hash()
    _snapshot(store)
    return ds


def _bundle_with(folder: Path, table: str, content, suffix: str) -> list[Path]:
    """The small valid bundle with one table replaced by fuzzed content."""
    return [_write(folder, f"{t}{suffix}", content) if t == table else _write(folder, f"{t}.csv", _csv(MINI[t]))
            for t in TABLES]


# ------------------------------------------------------------------------------------------------ the loaders


@FUZZ
@given(content=raw_content(st.one_of(
    json_object_text(),
    json_object_text(base={"target_specialty": "Cardiology", "notes": {"1": "n"}, "summary": "s"}),
    json_object_text(base={"target_specialty": "Cardiology", "notes": [{"note_id": "1", "text": "n"}],
                           "summaries": [{"summary_id": "a", "text": "t"}]}),
)), name=st.sampled_from(["c1.json", "case", "case.txt"]))
def test_fuzz_case_json(ws, content, name):
    with tempfile.TemporaryDirectory() as tmp:
        _load_and_import(ws, [_write(Path(tmp), name, content)])


@st.composite
def jsonl_text(draw):
    table = draw(st.sampled_from(TABLES))
    req, opt = TABLE_COLUMNS[table]
    lines = draw(st.lists(st.one_of(json_object_text(keys=req + opt), json_object_text(
        keys=req + opt, base={k: draw(st.sampled_from(TOKENS)) for k in req}), text), max_size=5))
    return table, "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@FUZZ
@given(data=st.one_of(
    st.tuples(st.sampled_from(TABLES), raw_content(st.sampled_from(TABLES).flatmap(
        lambda t: csv_text(TABLE_COLUMNS[t][0] + TABLE_COLUMNS[t][1]))), st.just(".csv")),
    st.sampled_from(TABLES).flatmap(lambda t: st.tuples(st.just(t), mutated_csv(MINI[t]), st.just(".csv"))),
    st.sampled_from(TABLES).flatmap(lambda t: st.tuples(st.just(t), mutated_csv(MINI[t]), st.just(".csv"))),
    jsonl_text().map(lambda tc: (tc[0], tc[1], ".jsonl")),
))
def test_fuzz_tidy_bundle(ws, data):
    table, content, suffix = data
    with tempfile.TemporaryDirectory() as tmp:
        _load_and_import(ws, _bundle_with(Path(tmp), table, content, suffix))


WIDE_COLUMNS = ("record_id", "rater", "rater_group", "redcap_event_name", "pdsqi_complete") + ITEM_KEYS


@FUZZ
@given(content=st.one_of(raw_content(csv_text(WIDE_COLUMNS)), mutated_csv(WIDE), mutated_csv(WIDE)), mapping=st.one_of(st.none(), json_value, st.fixed_dictionaries(
    {}, optional={"summary_col": st.one_of(st.sampled_from(WIDE_COLUMNS), scalar),
                  "rater_col": st.one_of(st.sampled_from(WIDE_COLUMNS), scalar),
                  "items": st.one_of(st.dictionaries(st.sampled_from(ITEM_KEYS), st.sampled_from(WIDE_COLUMNS)),
                                     json_value),
                  "ignore": st.one_of(st.lists(st.sampled_from(WIDE_COLUMNS)), json_value),
                  "default_rater_group": st.one_of(st.sampled_from(TOKENS), scalar)})))
def test_fuzz_wide_ratings_csv(ws, content, mapping):
    try:
        m = None if mapping is None else RatingsMapping.from_dict(mapping, "mapping.json")
    except ValueError as exc:  # the only way a mapping may be refused, naming the file
        assert "mapping.json" in str(exc)
        m = None
    with tempfile.TemporaryDirectory() as tmp:
        files = [_write(Path(tmp), f"{t}.csv", _csv(MINI[t])) for t in ("cases", "notes", "summaries")]
        _load_and_import(ws, files + [_write(Path(tmp), "export.csv", content)], LoadOptions(mapping=m))


@FUZZ
@given(content=st.one_of(raw_content(csv_text(("encounter_id", "dialogue", "note"))), mutated_csv(
    [["encounter_id", "dialogue", "note"], ["e1", "[doctor] hi\n[patient] chest pain", "Chest pain."],
     ["e2", "[doctor] hello", "Follow-up."]])),
       specialty=st.sampled_from(["Primary Care", ""]))
def test_fuzz_dialogue_csv(ws, content, specialty):
    with tempfile.TemporaryDirectory() as tmp:
        _load_and_import(ws, [_write(Path(tmp), "dialogue.csv", content)],
                         LoadOptions(default_specialty=specialty or "Unspecified"))


# ------------------------------------------------------------------------------------------------ judge-import


@pytest.fixture(scope="module")
def genuine_lines(ws):
    from fakes import judge_lines

    sids = [s.summary_id for s in ws.load_dataset("s").summaries[:2]]
    return judge_lines(ws, "s", sids) + judge_lines(ws, "s", sids[:1], replies=["{cut off"], seed=5)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated_line(draw, lines):
    line = draw(st.sampled_from(lines))
    how = draw(st.integers(0, 9))
    if how == 0:
        return draw(text)
    if how == 1:
        return line[: draw(st.integers(0, len(line)))]
    obj = json.loads(line)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(obj) if p]
        if not paths:  # everything was deleted (a small resource)
            break
        path = draw(st.sampled_from(paths))
        parent = obj
        for k in path[:-1]:
            parent = parent[k]
        action = draw(st.integers(0, 3))
        if action == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == 1 and isinstance(parent, dict):
            parent[draw(key)] = draw(json_value)
        else:
            parent[path[-1]] = draw(json_value)
    out = json.dumps(obj)
    if draw(st.integers(0, 5)) == 0:  # a hostile value spliced into the text
        out = out.replace('"status": ', '"status": ' + draw(st.sampled_from(HOSTILE_JSON)) + ', "x": ', 1)
    return out


@FUZZ
@given(data=st.data())
def test_fuzz_judge_import(ws, genuine_lines, data):
    from engine.judge.import_check import import_results

    lines = data.draw(st.lists(st.one_of(st.sampled_from(genuine_lines), mutated_line(genuine_lines)),
                               min_size=1, max_size=4))
    before = _snapshot(ws)
    try:
        res = import_results(ws, "s", lines, source="fuzz.jsonl")
    except DatasetInvalid as exc:
        assert exc.report.errors
        assert all(e.row is not None or "holds no judge results" in e.message for e in exc.report.errors)
        assert _snapshot(ws) == before
        event("refused")
    else:
        event("imported")
        assert res.imported == len([x for x in lines if x.strip()])
        _snapshot(ws)


def test_fuzz_genuine_lines_import(ws, genuine_lines):
    """The unmutated lines import (so the fuzzing above explores the edge of the valid set, not only junk)."""
    from engine.judge.import_check import import_results

    assert import_results(ws, "s", genuine_lines).imported == len(genuine_lines)


# ------------------------------------------------------------------------------------------------ FHIR and MIMIC

def _b64(s: str) -> str:
    import base64

    return base64.b64encode(s.encode()).decode()


FHIR_MINI = {
    "Patient": [{"resourceType": "Patient", "id": "p1"}],
    "Binary": [{"resourceType": "Binary", "id": "b1", "contentType": "text/html", "data": _b64("<p>Echo: EF 35%.</p>")}],
    "PractitionerRole": [{"resourceType": "PractitionerRole", "id": "r1", "specialty": [{"text": "Cardiology"}]}],
    "DocumentReference": [
        {"resourceType": "DocumentReference", "id": "n1", "status": "current", "subject": {"reference": "Patient/p1"},
         "date": "2024-01-01T10:00:00Z", "type": {"text": "Progress note"}, "author": [{"reference": "PractitionerRole/r1"}],
         "content": [{"attachment": {"contentType": "text/plain", "data": _b64("Chest pain.")}}]},
        {"resourceType": "DocumentReference", "id": "n2", "status": "current", "subject": {"reference": "Patient/p1"},
         "context": {"period": {"start": "2024-01-02"}},
         "content": [{"attachment": {"contentType": "text/html", "url": "Binary/b1"}}]},
        {"resourceType": "DocumentReference", "id": "s1", "status": "current", "subject": {"reference": "Patient/p1"},
         "type": {"coding": [{"system": "urn:sumcheck:document-type", "code": "llm-summary"}]},
         "content": [{"attachment": {"contentType": "text/plain", "data": _b64("Chest pain <NoteID:n1>.")}}]}],
    "QuestionnaireResponse": [
        {"resourceType": "QuestionnaireResponse", "questionnaire": "urn:sumcheck:questionnaire:pdsqi-9",
         "status": "completed", "subject": {"reference": "DocumentReference/s1"},
         "author": {"identifier": {"system": "urn:sumcheck:rater", "value": "R1"}},
         "item": [{"linkId": "accurate", "answer": [{"valueCoding": {"code": "4"}}]},
                  {"linkId": "synthesized", "answer": [{"valueCoding": {"code": "NA"}}]}]}],
}


@FUZZ
@given(data=st.data())
def test_fuzz_fhir_ndjson(ws, data):
    kind = data.draw(st.sampled_from(sorted(FHIR_MINI)))
    lines = [json.dumps(r) for r in FHIR_MINI[kind]]
    fuzzed = [data.draw(mutated_line(lines)) for _ in range(data.draw(st.integers(1, 3)))]
    with tempfile.TemporaryDirectory() as tmp:
        for t, rs in FHIR_MINI.items():
            body = "\n".join(fuzzed) if t == kind else "\n".join(json.dumps(r) for r in rs)
            _write(Path(tmp), f"{t}.ndjson", body + "\n")
        _load_and_import(ws, [tmp], LoadOptions(summary_types=("llm-summary",)))


@FUZZ
@given(data=st.data())
def test_fuzz_fhir_bundle(ws, data):
    entries = [{"fullUrl": f"urn:uuid:{i}", "resource": r}
               for i, r in enumerate(r for rs in FHIR_MINI.values() for r in rs)]
    line = json.dumps({"resourceType": "Bundle", "type": "collection", "entry": entries})
    content = data.draw(raw_content(mutated_line([line])))
    with tempfile.TemporaryDirectory() as tmp:
        _load_and_import(ws, [_write(Path(tmp), "bundle.json", content)], LoadOptions(summary_types=("llm-summary",)))


MIMIC_MINI = [["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"],
              ["1-DS-1", "1", "100", "DS", "1", "2180-05-07 00:00:00", "2180-05-08 10:00:00", "Discharge: cirrhosis."],
              ["1-RR-2", "1", "100", "RR", "2", "2180-05-06 10:00:00", "", "CT: nodular liver."],
              ["2-RR-1", "2", "", "RR", "1", "2180-01-01 00:00:00", "", "Outpatient film."]]


@FUZZ
@given(content=st.one_of(raw_content(csv_text(MIMIC_MINI[0])), mutated_csv(MIMIC_MINI), mutated_csv(MIMIC_MINI)),
       hold=st.sampled_from([(), ("DS",)]))
def test_fuzz_mimic_csv(ws, content, hold):
    with tempfile.TemporaryDirectory() as tmp:
        _load_and_import(ws, [_write(Path(tmp), "discharge.csv", content)], LoadOptions(hold_out_types=hold))
