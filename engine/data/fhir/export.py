"""A dataset written as a FHIR R4 Bulk Data export (one NDJSON file per resource type), which
:mod:`engine.data.fhir.reader` reads back into the same cases, notes, summaries and ratings.

* ``Patient.ndjson``: one patient per case (id = the case id).
* ``PractitionerRole.ndjson``: one role per note author specialty.
* ``DocumentReference.ndjson``: each note (US Core clinical note: category ``clinical-note``, the note type as
  ``type.text`` with its LOINC coding where the type is one of :data:`LOINC_NOTE_TYPES`, the date as
  ``context.period.start`` (:func:`fhir_date`: a FHIR ``dateTime`` read from the note's date text by
  :mod:`engine.core.dates`; where the text is not already one, the text as written rides in the extension
  :data:`ORIGINAL_TEXT` on that element, ``context.period._start``), the text base64 in the attachment or, for every
  ``binary_every``-th note, in a
  ``Binary`` the attachment's url points to) and each summary (type :data:`SUMMARY_TYPE` in
  :data:`SUMMARY_TYPE_SYSTEM`, the case's target specialty as ``context.practiceSetting``, generator, quality group
  and prompt variant as extensions). Note and summary ids ride in an identifier of
  :data:`~engine.data.fhir.reader.NOTE_ID_SYSTEM`.
* ``Binary.ndjson`` (when some notes use it), ``Questionnaire.ndjson`` (the PDSQI-9) and
  ``QuestionnaireResponse.ndjson`` (ratings and any other responses given).

Every resource is validated with the ``fhir.resources`` R4B model before it is written; a resource it refuses is
named in one line (resource, field, value, why) and nothing is written.
"""
from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from engine.core import Dataset, parse_note_date
from engine.data.fhir.questionnaire import ResponseRecord, fhir_id, questionnaire, response
from engine.data.fhir.reader import EXTENSION_BASE, LOINC, NOTE_ID_SYSTEM
from engine.data.strict_json import short_text

SUMMARY_TYPE_SYSTEM = "urn:sumcheck:document-type"
SUMMARY_TYPE = "llm-summary"
US_CORE_CATEGORY = {"coding": [{"system": "http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category",
                                "code": "clinical-note", "display": "Clinical Note"}]}
LOINC_NOTE_TYPES = {"progress note": "11506-3", "discharge summary": "18842-5", "consult note": "11488-4",
                    "history and physical note": "34117-2", "procedure note": "28570-0",
                    "emergency department note": "34111-5", "nurse note": "34746-8", "referral note": "57133-1"}


ORIGINAL_TEXT = EXTENSION_BASE + "original-text"  # on a date element: the date as the source wrote it
# A FHIR dateTime (R4): a year, year-month or date, or a date and time with its zone.
FHIR_DATETIME = re.compile(
    r"([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)(-(0[1-9]|1[0-2])(-(0[1-9]|[1-2][0-9]|3[0-1])"
    r"(T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?(Z|(\+|-)((0[0-9]|1[0-3]):[0-5][0-9]|14:00)))?)?)?")


def fhir_date(text: str) -> tuple[str | None, dict | None]:
    """(FHIR ``dateTime``, extension element) for a note's date text. A text that already is a ``dateTime`` is
    written as it is; any other is read by :func:`engine.core.dates.parse_note_date` (a date, or a date and
    wall-clock time, written with zone ``Z``: the source names none) and the text itself goes in the
    :data:`ORIGINAL_TEXT` extension, so a re-import reads the date exactly as stored. A text that cannot be read
    (no date to write) has only the extension."""
    if FHIR_DATETIME.fullmatch(text):
        return text, None
    iso = parse_note_date(text).iso
    value = None if iso is None else iso + ("Z" if "T" in iso else "")
    return value, {"extension": [{"url": ORIGINAL_TEXT, "valueString": text}]}


def _period(date_text: str) -> dict:
    value, original = fhir_date(date_text)
    period: dict = {} if value is None else {"start": value}
    if original is not None:
        period["_start"] = original
    return period


@dataclass(frozen=True)
class FhirExport:
    folder: Path
    files: dict[str, int]  # file name -> resources written


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _type(note_type: str | None) -> dict | None:
    if not note_type:
        return None
    code = LOINC_NOTE_TYPES.get(note_type.strip().lower())
    cc: dict = {"text": note_type}
    if code:
        cc["coding"] = [{"system": LOINC, "code": code, "display": note_type}]
    return cc


def dataset_resources(ds: Dataset, responses: Iterable[ResponseRecord] = (), binary_every: int = 0
                      ) -> dict[str, list[dict]]:
    """The resources of ``ds`` by type (see the module docstring); ratings become responses, with any given."""
    out: dict[str, list[dict]] = {t: [] for t in ("Patient", "PractitionerRole", "Binary", "DocumentReference",
                                                  "Questionnaire", "QuestionnaireResponse")}
    roles: dict[str, str] = {}
    summary_res: dict[str, str] = {}
    n_note = 0
    for case in ds.cases:
        pid = fhir_id(case.case_id)
        out["Patient"].append({"resourceType": "Patient", "id": pid})
        for note in case.notes:
            n_note += 1
            rid = fhir_id(f"{case.case_id}-note-{note.note_id}")
            doc: dict = {"resourceType": "DocumentReference", "id": rid, "status": "current",
                         "identifier": [{"system": NOTE_ID_SYSTEM, "value": note.note_id}],
                         "category": [US_CORE_CATEGORY], "subject": {"reference": f"Patient/{pid}"}}
            if _type(note.note_type):
                doc["type"] = _type(note.note_type)
            if note.author_specialty:
                role = roles.setdefault(note.author_specialty, fhir_id(f"role-{len(roles) + 1}"))
                doc["author"] = [{"reference": f"PractitionerRole/{role}"}]
            if binary_every and n_note % binary_every == 0:
                out["Binary"].append({"resourceType": "Binary", "id": f"{rid}-text",
                                      "contentType": "text/plain; charset=utf-8", "data": _b64(note.text)})
                att = {"contentType": "text/plain; charset=utf-8", "url": f"Binary/{rid}-text"}
            else:
                att = {"contentType": "text/plain; charset=utf-8", "data": _b64(note.text)}
            doc["content"] = [{"attachment": att}]
            if note.date:
                doc["context"] = {"period": _period(note.date)}
            out["DocumentReference"].append(doc)
    for s in ds.summaries:
        rid = fhir_id(f"summary-{s.summary_id}")
        summary_res[s.summary_id] = rid
        spec = ds.case(s.case_id).target_specialty
        doc = {"resourceType": "DocumentReference", "id": rid, "status": "current",
               "identifier": [{"system": NOTE_ID_SYSTEM, "value": s.summary_id}],
               "type": {"coding": [{"system": SUMMARY_TYPE_SYSTEM, "code": SUMMARY_TYPE,
                                    "display": "LLM-generated summary"}]},
               "subject": {"reference": f"Patient/{fhir_id(s.case_id)}"},
               "content": [{"attachment": {"contentType": "text/plain; charset=utf-8", "data": _b64(s.text)}}],
               "context": {"practiceSetting": {"text": spec}}}
        ext = [{"url": EXTENSION_BASE + name, "valueString": v}
               for name, v in (("generator-model", s.generator_model), ("quality-group", s.quality_group),
                               ("prompt-variant", s.prompt_variant)) if v]
        if ext:
            doc["extension"] = ext
        out["DocumentReference"].append(doc)
    for spec, role in roles.items():
        out["PractitionerRole"].append({"resourceType": "PractitionerRole", "id": role, "specialty": [{"text": spec}]})
    records = list(rating_records(ds)) + list(responses)
    if records:
        out["Questionnaire"].append(questionnaire())
        for rec in records:
            out["QuestionnaireResponse"].append(response(rec, summary_res.get(rec.summary_id,
                                                                              fhir_id(f"summary-{rec.summary_id}")),
                                                         NOTE_ID_SYSTEM))
    return {t: rs for t, rs in out.items() if rs}


def rating_records(ds: Dataset) -> Iterable[ResponseRecord]:
    """One response per summary x rater (x group) of the dataset's ratings, items in rubric order."""
    grouped: dict[tuple[str, str, str], list] = {}
    for r in ds.ratings:
        grouped.setdefault((r.summary_id, r.rater_id, r.rater_group), []).append((r.item, r.value))
    for (sid, rid, group), values in grouped.items():
        yield ResponseRecord(sid, rid, "rater", tuple(values), group)


def _one_line(text: object, limit: int = 200) -> str:
    return short_text(" ".join(str(text).split()), limit)


def refusal(rtype: str, res: dict, exc) -> str:
    """One line for a resource its R4B model refused (a pydantic ``ValidationError``): the resource, then for its
    first problem the field (a dotted path), the value (quoted, control characters escaped) and why."""
    errors = exc.errors(include_url=False) if hasattr(exc, "errors") else []
    first = errors[0] if errors else {}
    fld = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__") or "(the resource)"
    value = first.get("input")
    shown = f" value {_one_line(value, 80)!r}" if isinstance(value, (str, int, float)) else ""
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    why = _one_line(first.get("msg") or exc)
    return f"{rtype}/{_one_line(res.get('id'), 80)}: field {fld}:{shown} is not valid FHIR ({why}){more}"


def validate_resources(resources: dict[str, list[dict]]) -> None:
    """Raise ValueError, in one line (:func:`refusal`), naming the first resource that its R4B model refuses."""
    from fhir.resources.R4B import get_fhir_model_class
    from pydantic import ValidationError

    for rtype, items in resources.items():
        model = get_fhir_model_class(rtype)
        for res in items:
            try:
                model.model_validate(res)
            except ValidationError as exc:
                raise ValueError(refusal(rtype, res, exc)) from None


def write_bulk(resources: dict[str, list[dict]], folder: str | os.PathLike) -> FhirExport:
    """Write one NDJSON file per resource type into ``folder`` (created if needed), after validating them."""
    validate_resources(resources)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for rtype, items in resources.items():
        name = f"{rtype}.ndjson"
        tmp = out / (name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            for res in items:
                fh.write(json.dumps(res, ensure_ascii=False, separators=(",", ":")) + "\n")
        os.replace(tmp, out / name)
        files[name] = len(items)
    return FhirExport(out, files)


def responses_only(records: Sequence[ResponseRecord]) -> dict[str, list[dict]]:
    """The PDSQI-9 Questionnaire and the responses of ``records`` (no documents), for a ratings-only export."""
    return {"Questionnaire": [questionnaire()],
            "QuestionnaireResponse": [response(r, fhir_id(f"summary-{r.summary_id}"), NOTE_ID_SYSTEM)
                                      for r in records]}
