"""Judge-result import, the shape of a line (engine.judge._import_shape): the pydantic models mirror the result
dataclasses, and a malformed line is refused with an issue naming the file, the row, the line and the field, while
nothing of the file is written."""
import json
from dataclasses import fields

import pytest

from conftest import BUNDLE
from engine.data.loading import load_paths
from engine.data.store import Store
from engine.data.validation import DatasetInvalid
from engine.judge import _import_shape as shape
from engine.judge.results import ItemScore, JudgeParams, JudgeResult, Provenance, SampleReply, Timing
from fakes import judge_lines


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("shape") / "ws.sqlite")
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    sids = [s.summary_id for s in ds.summaries[:2]]
    return store, judge_lines(store, "s", sids)


def _n_results(store):
    with store.connect() as con:
        return con.execute("SELECT COUNT(*) FROM judge_results").fetchone()[0]


@pytest.mark.parametrize("model,dataclass", [
    (shape.JudgeResultShape, JudgeResult), (shape.SampleShape, SampleReply), (shape.ProvenanceShape, Provenance),
    (shape.TimingShape, Timing), (shape.ParamsShape, JudgeParams),
    (shape.ItemScoresShape.model_fields["cited"].annotation, ItemScore),
])
def test_the_shapes_have_the_dataclasses_fields(model, dataclass):
    assert list(model.model_fields) == [f.name for f in fields(dataclass) if f.name != "from_cache"]


def _set(path, value):
    def patch(d):
        *head, last = path.split(".")
        for k in head:
            d = d[int(k)] if isinstance(d, list) else d[k]
        key = int(last) if isinstance(d, list) else last
        if value is KeyError:
            del d[key]
        else:
            d[key] = value
    return patch


@pytest.mark.parametrize("patch,field,message", [
    # a wrong type
    (_set("provenance.n_ctx", "8192"), "provenance.n_ctx", "must be a whole number, not text"),
    (_set("samples.0.temperature", True), "samples[0].temperature", "must be a number, not true/false"),
    (_set("reason", 3), "reason", "must be text, not a number"),
    (_set("provenance.params.explain", 0), "provenance.params.explain", "must be true or false, not a number"),
    (_set("samples.1", []), "samples[1]", "sample 1 must be a JSON object, not a list"),
    (_set("samples.0.values", [3]), "samples[0].values", "must be an object {item: value}, not a list"),
    # a missing field
    (_set("samples.0.raw", KeyError), "samples[0]", "sample 0 lacks key(s) raw"),
    (_set("provenance.n_ctx", KeyError), "provenance", "provenance lacks key(s) n_ctx"),
    (_set("provenance.params.seed", KeyError), "provenance.params", "lacks seed"),
    (_set("items.cited.median", KeyError), "items.cited", "item cited lacks key(s) median"),
    # out of range
    (_set("samples.0.values.cited", 7), "samples[0].values.cited", "Cited: 7 is outside the scale (1-5)"),
    (_set("items.cited.median", 4.25), "items.cited.median",
     "Cited: 4.25 is outside the scale (1-5, in steps of 0.5 for a median)"),
    (_set("samples.0.values.abstraction", 2), "samples[0].values.abstraction",
     "Abstraction needed: 2 is outside the scale (0/1)"),
    (_set("samples.0.values.cited", None), "samples[0].values.cited", "Cited: NA (null) is not allowed here"),
    (_set("provenance.params.temperature", 3), "provenance.params.temperature", "3 is outside 0..2"),
    (_set("timing.total_seconds", float("inf")), "timing.total_seconds", "inf is not a finite number"),
    (_set("provenance.n_ctx", 10 ** 20), "provenance.n_ctx", "the number is outside 1..100000000"),
    (_set("timing.total_seconds", 10 ** 400), "timing.total_seconds", "the number is outside 0..1e+09"),
    (_set("provenance.params.shots", 2), "provenance.params", "shots must be 0, 1, 3 or 5"),
    (_set("reason", "x" * 4001), "reason", "is 4,001 characters long; at most 4,000 are accepted"),
    (_set("provenance.few_shot_examples", ["a"] * 6), "provenance.few_shot_examples",
     "has 6 entries; at most 5 are accepted"),
    (_set("provenance.model_sha256", "AB" * 32), "provenance.model_sha256",
     "the model hash is not a 64-digit lowercase hex sha256"),
    # an unknown field
    (_set("surplus", 1), None, "a judge result has unknown key(s) 'surplus'"),
    (_set("timing.gpu_seconds", 1.0), "timing", "timing has unknown key(s) 'gpu_seconds'"),
    (_set("provenance.params.top_k", 40), "provenance.params", "has unknown key(s) 'top_k'"),
    (_set("samples.0.values.overall", 3), "samples[0].values", "unknown PDSQI-9 item 'overall'"),
    (_set("items.overall", {}), "items", "items must hold exactly the PDSQI-9 items"),
])
def test_a_malformed_line_names_file_row_line_and_field(judged, patch, field, message):
    store, lines = judged
    bad = json.loads(lines[1])
    patch(bad)
    with pytest.raises(DatasetInvalid) as ei:  # a blank line first: row 2 of the results is line 3 of the file
        shape_import(store, [lines[0], "", json.dumps(bad)])
    errs = ei.value.report.errors
    assert [(e.file, e.row, e.line) for e in errs] == [("results.jsonl", 2, 3)] * len(errs)
    assert any(e.field == field and message in e.message for e in errs), [e.format() for e in errs]
    located = next(e for e in errs if e.field == field)
    assert located.location() == "results.jsonl, row 2 (line 3)" + (f", field '{field}'" if field else "")
    assert _n_results(store) == 0  # all or nothing


def test_a_record_with_key_problems_is_one_issue(judged):
    """A record that lacks a key or has an unknown one is reported once; nothing inside it besides."""
    store, lines = judged
    bad = json.loads(lines[0])
    del bad["provenance"]["backend"]
    bad["provenance"]["params"]["n_samples"] = "many"  # inside the record: not reported separately
    bad["timing"]["prompt_tokens"] = -1  # another record: reported
    with pytest.raises(DatasetInvalid) as ei:
        shape_import(store, [json.dumps(bad)])
    assert [(e.field, e.message) for e in ei.value.report.errors] == [
        ("provenance", "provenance lacks key(s) backend"), ("timing.prompt_tokens", "-1 is outside 0..1000000000000")]


def test_genuine_lines_have_the_shape(judged):
    store, lines = judged
    assert all(shape.shape_problems(json.loads(x)) == [] for x in lines)
    assert shape.shape_problems([1]) == [(None, "a judge result must be a JSON object, not a list")]


def shape_import(store, lines):
    from engine.judge.import_check import import_results

    return import_results(store, "s", lines, source="results.jsonl")
