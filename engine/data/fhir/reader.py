"""Cases, notes and summaries from the resources of a FHIR export.

* **Notes** are ``DocumentReference`` resources (their text from :mod:`engine.data.fhir.attachments`) and
  ``Composition`` resources (their sections). A note's id is the resource id (or the value of an identifier in
  :data:`NOTE_ID_SYSTEM`, which SumCheck's own export writes); its date ``DocumentReference.date``, else
  ``context.period.start`` (``Composition.date``), kept as written and parsed for ordering; its type the display of the
  LOINC coding of ``type`` (else ``type.text``, else any coding's display or code); its author specialty the
  ``specialty`` of the author's ``PractitionerRole`` when the export holds it.
* **Cases**: one per patient (``subject``), or one per encounter (``context.encounter`` /
  ``Composition.encounter``) with ``case_by="encounter"``. The target specialty is the ``context.practiceSetting`` of
  a summary of the case when one names it, else the default the user gave.
* **Summaries**: documents whose ``type`` or ``category`` carries one of the codes the user named
  (``summary_types``: ``code`` or ``system|code``) are the summaries of their case.
* Documents that are ``superseded`` or ``entered-in-error``, or replaced by another document of the export
  (``relatesTo`` ``replaces``), are skipped and counted; documents whose content is not text (a PDF, an image) are
  skipped and counted by content type; everything else the export holds is counted and ignored.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from engine.core.models import Note, Rating, Summary
from engine.core.rubric import get_item
from engine.data.ehr_notes import PendingNote, add_in_order
from engine.data.fhir.attachments import Content, composition_text, document_text
from engine.data.fhir.questionnaire import is_pdsqi, read_response
from engine.data.fhir.source import Export, Located, reference_id, validate
from engine.data.fields import REFUSED_VALUE, check_id, check_rater, date_field, rating_value, text_field
from engine.data.mapping import LoadOptions
from engine.data.readers import Collector
from engine.data.validation import Issue, ValidationReport

NOTE_ID_SYSTEM = "urn:sumcheck:note-id"
EXTENSION_BASE = "urn:sumcheck:fhir:"  # + generator-model, quality-group, prompt-variant (on summary documents)
LOINC = "http://loinc.org"
_SKIP_STATUS = ("superseded", "entered-in-error")


def concept_label(cc: object) -> Optional[str]:
    """What a CodeableConcept says in words: the LOINC coding's display, else its text, else any display or code."""
    if not isinstance(cc, dict):
        return None
    codings = [c for c in cc.get("coding") or [] if isinstance(c, dict)]
    for c in codings:
        if c.get("system") == LOINC and c.get("display"):
            return str(c["display"])
    if cc.get("text"):
        return str(cc["text"])
    for key in ("display", "code"):
        for c in codings:
            if c.get(key):
                return str(c[key])
    return None


def concept_codes(*concepts: object) -> tuple[str, ...]:
    """Every ``code`` and ``system|code`` of the codings of the concepts given (lists of concepts included)."""
    out: list[str] = []
    for cc in concepts:
        for one in (cc if isinstance(cc, list) else [cc]):
            for c in (one.get("coding") or []) if isinstance(one, dict) else []:
                if isinstance(c, dict) and isinstance(c.get("code"), str):
                    out.append(c["code"])
                    if isinstance(c.get("system"), str):
                        out.append(f"{c['system']}|{c['code']}")
    return tuple(out)


def _extension(res: dict, name: str) -> Optional[str]:
    for e in res.get("extension") or []:
        if isinstance(e, dict) and e.get("url") == EXTENSION_BASE + name and isinstance(e.get("valueString"), str):
            return e["valueString"]
    return None


def _note_id(doc: Located) -> Optional[str]:
    for ident in doc.resource.get("identifier") or []:
        if isinstance(ident, dict) and ident.get("system") == NOTE_ID_SYSTEM and isinstance(ident.get("value"), str):
            return ident["value"].strip()
    return doc.rid or reference_id(doc.full_url)


def _first_ref(value: object) -> Optional[str]:
    one = value[0] if isinstance(value, list) and value else value
    ref = one.get("reference") if isinstance(one, dict) else None
    return ref if isinstance(ref, str) else None


def _case_ref(doc: Located, case_by: str) -> tuple[Optional[str], str]:
    """(reference, field) that names the document's case."""
    res = doc.resource
    if case_by == "encounter":
        if doc.rtype == "Composition":
            return _first_ref(res.get("encounter")), "encounter"
        return _first_ref((res.get("context") or {}).get("encounter")), "context.encounter"
    return _first_ref(res.get("subject")), "subject"


def _author_specialty(doc: Located, export: Export) -> Optional[str]:
    for a in doc.resource.get("author") or []:
        target = export.resolve(a.get("reference") if isinstance(a, dict) else None, doc)
        if target is not None and target.rtype == "PractitionerRole":
            for sp in target.resource.get("specialty") or []:
                label = concept_label(sp)
                if label:
                    return label
    return None


def _date_text(doc: Located) -> tuple[Optional[str], str]:
    res = doc.resource
    if isinstance(res.get("date"), str):
        return res["date"], "date"
    start = ((res.get("context") or {}).get("period") or {}).get("start")
    return (start, "context.period.start") if isinstance(start, str) else (None, "date")


def _replaced(docs: list[Located], export: Export, report: ValidationReport) -> set[int]:
    """ids (``id()``) of documents another document of the export replaces; a loop of replacements is reported."""
    edges: dict[int, list[Located]] = {}
    for d in docs:
        for rel in d.resource.get("relatesTo") or []:
            if isinstance(rel, dict) and rel.get("code") == "replaces":
                target = export.resolve((rel.get("target") or {}).get("reference"), d)
                if target is not None:
                    edges.setdefault(id(d), []).append(target)
    replaced = {id(t) for ts in edges.values() for t in ts}
    done: set[int] = set()
    for d in docs:  # depth-first along "replaces"; meeting a document already on the path closes a loop
        path, stack = [d], [iter(edges.get(id(d), ()))]
        while stack and id(d) not in done:
            nxt = next(stack[-1], None)
            if nxt is None:
                done.add(id(path.pop()))
                stack.pop()
            elif any(nxt is p for p in path):
                cycle = path[next(i for i, p in enumerate(path) if p is nxt):] + [nxt]
                report.add(d.issue("documents replace each other in a loop: " +
                                   " replaces ".join(p.label for p in cycle), "relatesTo",
                                   hint="a document can only replace an earlier one; correct the relatesTo references"))
            elif id(nxt) not in done:
                path.append(nxt)
                stack.append(iter(edges.get(id(nxt), ())))
    return replaced


def read_export(export: Export, report: ValidationReport, opts: LoadOptions, c: Collector) -> Counter:
    """Validate the documents of ``export`` and add their cases, notes and summaries to ``c``. Returns the counts the
    import report states (notes, summaries, skipped documents by reason, ignored resources by type)."""
    counts: Counter = Counter()
    if opts.case_by not in ("patient", "encounter"):
        report.add(Issue("(options)", f"cannot make one case per {opts.case_by!r}", field="case_by",
                         hint="one case per 'patient' or per 'encounter'"))
        return counts
    valid = [r for r in export.resources if validate(r, report)]
    docs = [r for r in valid if r.rtype in ("DocumentReference", "Composition")]
    responses = [r for r in valid if r.rtype == "QuestionnaireResponse"]
    if responses:
        _read_responses(responses, export, report, opts, c, counts)
    if not docs and responses:
        return +counts
    if not docs and any(r.rtype in ("DocumentReference", "Composition") for r in export.resources):
        c.broken.update(("cases", "notes", "summaries"))  # every document failed validation: reported above
        return counts
    if not docs:
        files = sorted({r.file for r in export.resources}) or ["(FHIR export)"]
        report.add(Issue(files[0], "the export holds no valid DocumentReference or Composition (the notes)",
                         hint="export the patients' clinical notes (US Core DocumentReference) with the other "
                              "resources"))
        c.broken.update(("cases", "notes", "summaries"))
        return counts
    replaced = _replaced(docs, export, report)
    wanted = {t.strip().lower() for t in opts.summary_types if t.strip()}
    pending: list[PendingNote] = []
    specialty: dict[str, str] = {}
    for doc in docs:
        res = doc.resource
        status = res.get("status") if doc.rtype == "DocumentReference" else None
        if status in _SKIP_STATUS or res.get("docStatus") == "entered-in-error" or \
                (doc.rtype == "Composition" and res.get("status") == "entered-in-error"):
            counts[f"skipped ({status or 'entered-in-error'})"] += 1
            continue
        if id(doc) in replaced:
            counts["skipped (replaced by a later version)"] += 1
            continue
        row = doc.input_row()
        ref, ref_field = _case_ref(doc, opts.case_by)
        if ref is None:
            report.add(doc.issue(f"{doc.label} names no {opts.case_by}", ref_field,
                                 hint="every note must name its patient (subject)" if opts.case_by == "patient" else
                                      "import one case per patient, or export the documents with their encounter"))
            continue
        target = export.resolve(ref, doc)
        case_id = (target.rid if target is not None and target.rid else None) or reference_id(ref)
        if not check_id(report, doc.file, row, doc.prefix + ref_field, case_id):
            continue
        codes = concept_codes(res.get("type"), res.get("category"))
        if doc.rtype == "DocumentReference":
            got = document_text(doc, export)
        else:
            got = Content(text=composition_text(doc))
        if got.problem:
            report.add(doc.issue(f"{doc.label}: {got.problem}", got.field, hint=got.hint))
            continue
        if got.skipped_type:
            counts[f"skipped (content {got.skipped_type})"] += 1
            continue
        text = text_field(report, doc.file, row, doc.prefix + ("content" if doc.rtype == "DocumentReference"
                                                               else "section"), got.text, "document text")
        if text is None:
            continue
        if wanted and any(code.lower() in wanted for code in codes):
            sid = _note_id(doc)
            if not check_id(report, doc.file, row, doc.prefix + "id", sid):
                continue
            author = res.get("author") or [{}]
            generator = _extension(res, "generator-model") or (author[0].get("display") if isinstance(author[0], dict)
                                                                 else None)
            c.add_summary(report, doc.file, row, Summary(sid, case_id, text, generator,
                                                         _extension(res, "quality-group"),
                                                         _extension(res, "prompt-variant")))
            setting = concept_label((res.get("context") or {}).get("practiceSetting"))
            if setting:
                specialty.setdefault(case_id, setting)
            counts["summaries"] += 1
            continue
        nid = _note_id(doc)
        if not check_id(report, doc.file, row, doc.prefix + "id", nid):
            continue
        date_text, date_fld = _date_text(doc)
        date = date_field(report, doc.file, row, doc.prefix + date_fld, date_text)
        if date is REFUSED_VALUE:
            continue
        note = Note(nid, text, date, concept_label(res.get("type")), _author_specialty(doc, export))
        pending.append(PendingNote(case_id, note, doc.file, row, codes))
        counts["notes"] += 1
    counts["held out as reference summaries"] = add_in_order(c, report, pending, specialty, opts.default_specialty,
                                                             opts.hold_out_types)
    counts["notes"] -= counts["held out as reference summaries"]
    for rtype, n in export.ignored.items():
        counts[f"ignored {rtype}"] = n
    return +counts


def _read_responses(responses: list[Located], export: Export, report: ValidationReport, opts: LoadOptions,
                    c: Collector, counts: Counter) -> None:
    """PDSQI-9 QuestionnaireResponses: a rater's become ratings; a judge configuration's are counted."""
    for qr in responses:
        if not is_pdsqi(qr.resource):
            counts["ignored QuestionnaireResponse (another questionnaire)"] += 1
            continue
        rec, problems = read_response(qr.resource)
        for fld, msg in problems:
            report.add(qr.issue(f"{qr.label}: {msg}", fld, hint="export the PDSQI-9 responses again"))
        if rec is None:
            continue
        if rec.author_kind == "judge":
            counts["judge results (kept as records, not ratings)"] += 1
            continue
        doc = export.resolve((qr.resource.get("subject") or {}).get("reference"), qr)
        sid = _note_id(doc) if doc is not None and doc.rtype in ("DocumentReference", "Composition") else \
            rec.summary_id
        row = qr.input_row()
        if not (check_id(report, qr.file, row, qr.prefix + "subject", sid)
                & check_id(report, qr.file, row, qr.prefix + "author", rec.author_id)):
            continue
        group = (rec.rater_group or opts.default_rater_group).strip().lower()
        if not check_rater(report, qr.file, row, rec.author_id, group, qr.prefix + "author",
                           qr.prefix + "extension"):
            continue
        for i, (key, raw) in enumerate(rec.values):
            value = rating_value(report, qr.file, row, f"{qr.prefix}item[{i}].answer", get_item(key), raw)
            if value is REFUSED_VALUE:
                continue
            c.add_rating(report, qr.file, row, Rating(sid, rec.author_id, key, value, group))
            counts["ratings"] += 1
