"""PDSQI-9 as FHIR: the instrument as a ``Questionnaire`` and each rater's (or judge configuration's) scores of one
summary as a ``QuestionnaireResponse``.

* The Questionnaire (:data:`QUESTIONNAIRE_URL`) has one ``choice`` item per PDSQI-9 item, ``linkId`` = the item key,
  its answer options coded in :data:`ANSWER_SYSTEM`: "1".."5" with the rubric's anchors, "1"/"0" for yes/no items,
  "NA" where the item allows it.
* A response's ``subject`` is the summary's ``DocumentReference`` (its id, and the summary id as an identifier in
  the note-id system, so that it resolves in a re-import whether or not the documents come with it); its ``author``
  is an identifier: the rater id in :data:`RATER_SYSTEM`, or the judge configuration in :data:`JUDGE_SYSTEM` with the
  result's provenance (model hash, prompt version, parameters) as an extension.
* Read back, a rater's responses become ratings (group from the :data:`GROUP_EXTENSION`, else the import default);
  a judge configuration's responses are records of its results and are counted, not turned into ratings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from engine.core import ITEMS, Scale, get_item

QUESTIONNAIRE_URL = "urn:sumcheck:questionnaire:pdsqi-9"
QUESTIONNAIRE_VERSION = "1.0"
ANSWER_SYSTEM = "urn:sumcheck:pdsqi-9:answer"
RATER_SYSTEM = "urn:sumcheck:rater"
JUDGE_SYSTEM = "urn:sumcheck:judge-configuration"
GROUP_EXTENSION = "urn:sumcheck:fhir:rater-group"
PROVENANCE_EXTENSION = "urn:sumcheck:fhir:judge-provenance"
_ID_BAD = re.compile(r"[^A-Za-z0-9\-.]+")


def fhir_id(text: str) -> str:
    """A FHIR resource id made from any text (letters, digits, '-' and '.', at most 64 characters)."""
    return (_ID_BAD.sub("-", text).strip("-") or "x")[:64]


def _code(value: Optional[float]) -> str:
    return "NA" if value is None else str(int(value))


def _answer(value: Optional[float]) -> dict:
    """An answer option's coding, or a decimal for a score between levels (a judge's median of two samples)."""
    if value is not None and value != int(value):
        return {"valueDecimal": value}
    return {"valueCoding": {"system": ANSWER_SYSTEM, "code": _code(value)}}


def _options(item) -> list[dict]:
    if item.scale is Scale.BINARY:
        pairs = [("1", "Yes"), ("0", "No")]
    else:
        pairs = [(str(i), f"{i}: {item.anchor(i)}" if item.anchors else str(i)) for i in range(1, 6)]
        if item.allows_na:
            pairs.append(("NA", "Not applicable"))
    return [{"valueCoding": {"system": ANSWER_SYSTEM, "code": c, "display": d}} for c, d in pairs]


def questionnaire() -> dict:
    """The PDSQI-9 instrument as a FHIR R4 Questionnaire resource (JSON object)."""
    return {"resourceType": "Questionnaire", "id": "pdsqi-9", "url": QUESTIONNAIRE_URL,
            "version": QUESTIONNAIRE_VERSION, "name": "PDSQI9", "status": "active",
            "title": "Provider Documentation Summarization Quality Instrument (PDSQI-9)",
            "item": [{"linkId": it.key, "text": f"{it.label}: {it.question}", "type": "choice", "required": False,
                      "answerOption": _options(it)} for it in ITEMS]}


@dataclass(frozen=True)
class ResponseRecord:
    """One author's scores of one summary: ``author_kind`` is "rater" or "judge"; ``values`` maps item keys to the
    score (None = NA); ``provenance`` is the judge result's provenance as JSON text."""

    summary_id: str
    author_id: str
    author_kind: str = "rater"
    values: tuple[tuple[str, Optional[float]], ...] = ()
    rater_group: Optional[str] = None
    author_label: Optional[str] = None
    provenance: Optional[str] = None
    authored: Optional[str] = None


def response(rec: ResponseRecord, summary_resource_id: str, note_id_system: str) -> dict:
    """One ResponseRecord as a FHIR R4 QuestionnaireResponse resource (JSON object)."""
    system = JUDGE_SYSTEM if rec.author_kind == "judge" else RATER_SYSTEM
    res: dict = {"resourceType": "QuestionnaireResponse",
                 "id": fhir_id(f"{rec.summary_id}.{rec.author_kind}.{rec.author_id}"),
                 "questionnaire": f"{QUESTIONNAIRE_URL}|{QUESTIONNAIRE_VERSION}", "status": "completed",
                 "subject": {"reference": f"DocumentReference/{summary_resource_id}",
                             "identifier": {"system": note_id_system, "value": rec.summary_id}},
                 "author": {"identifier": {"system": system, "value": rec.author_id},
                            "display": rec.author_label or rec.author_id},
                 "item": [{"linkId": k, "answer": [_answer(v)]} for k, v in rec.values]}
    ext = []
    if rec.rater_group:
        ext.append({"url": GROUP_EXTENSION, "valueString": rec.rater_group})
    if rec.provenance:
        ext.append({"url": PROVENANCE_EXTENSION, "valueString": rec.provenance})
    if ext:
        res["extension"] = ext
    if rec.authored:
        res["authored"] = rec.authored
    return res


def is_pdsqi(res: dict) -> bool:
    q = res.get("questionnaire")
    return isinstance(q, str) and q.split("|")[0] == QUESTIONNAIRE_URL


def read_response(res: dict) -> tuple[Optional[ResponseRecord], list[tuple[str, str]]]:
    """A QuestionnaireResponse of the PDSQI-9 read back: the record (None when it cannot be) and the problems
    found, each as (field path, message)."""
    problems: list[tuple[str, str]] = []
    subject = res.get("subject") if isinstance(res.get("subject"), dict) else {}
    ident = subject.get("identifier") if isinstance(subject.get("identifier"), dict) else {}
    sid = ident.get("value") if isinstance(ident.get("value"), str) else None
    if sid is None:
        ref = subject.get("reference")
        sid = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and "/" in ref else None
    if not sid:
        problems.append(("subject", "the response names no summary (subject)"))
    author = res.get("author") if isinstance(res.get("author"), dict) else {}
    a_ident = author.get("identifier") if isinstance(author.get("identifier"), dict) else {}
    kind = "judge" if a_ident.get("system") == JUDGE_SYSTEM else "rater"
    author_id = a_ident.get("value") if isinstance(a_ident.get("value"), str) else author.get("display")
    if not isinstance(author_id, str) or not author_id.strip():
        problems.append(("author", "the response names no rater (author)"))
    values: list[tuple[str, Optional[float]]] = []
    for i, it in enumerate(res.get("item") or []):
        key = it.get("linkId") if isinstance(it, dict) else None
        try:
            item = get_item(key if isinstance(key, str) else "")
        except KeyError:
            problems.append((f"item[{i}].linkId", f"{str(key)[:40]!r} is not a PDSQI-9 item"))
            continue
        answers = it.get("answer") or []
        if len(answers) != 1 or not isinstance(answers[0], dict):
            problems.append((f"item[{i}].answer", f"{item.label} needs exactly one answer"))
            continue
        a = answers[0]
        if isinstance(a.get("valueCoding"), dict):
            raw = a["valueCoding"].get("code")
        else:
            raw = next((a[k] for k in ("valueInteger", "valueDecimal", "valueString", "valueBoolean") if k in a),
                       None)
        values.append((item.key, raw))  # parsed against the item's scale by the caller
    ext = {e.get("url"): e.get("valueString") for e in res.get("extension") or [] if isinstance(e, dict)}
    if problems:
        return None, problems
    return ResponseRecord(sid, author_id.strip(), kind, tuple(values), ext.get(GROUP_EXTENSION),
                          author.get("display"), ext.get(PROVENANCE_EXTENSION), res.get("authored")), []
