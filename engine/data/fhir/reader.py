"""Cases, notes and summaries from the resources of a FHIR export.

* **Notes** are ``DocumentReference`` resources (their text from :mod:`engine.data.fhir._attachments`: plain text,
  HTML or a C-CDA document) and ``Composition`` resources (their sections). A note's id is the resource id (or the
  value of an identifier in :data:`NOTE_ID_SYSTEM`, which SumCheck's own export writes); its date
  ``DocumentReference.date``, else ``context.period.start`` (``Composition.date``), kept as written (as the source
  wrote it where the element carries :data:`ORIGINAL_TEXT`) and parsed for ordering; its type the display of the
  LOINC coding of ``type`` (else ``type.text``, else any coding's display or code); a note read from a C-CDA
  document takes the document's ``effectiveTime`` and ``code`` instead where it has them. Its author specialty is
  the ``specialty`` of the author's ``PractitionerRole`` when the export holds it.
* **Cases**: one per patient (``subject``), or one per encounter (``context.encounter`` /
  ``Composition.encounter``) with ``case_by="encounter"``. An id is unique only within its resource type, so the
  case reference must be of the case's type (a Patient, an Encounter) and a document's subject, where it names
  one, a Patient: a subject that is a Group, a Practitioner, a Device or a Location is an error naming the entry
  and ``subject``, never a case (so a case id is the Patient's or Encounter's id, as written). A reference's type is
  the resource it resolves to in the export, else its ``Type/id`` form, else its ``type``; a ``urn:uuid`` reference
  that none of them types is taken as the case's type. The target specialty is the ``context.practiceSetting`` of
  a summary of the case when one names it, else the default the user gave.
* **Summaries**: documents whose ``type`` or ``category`` (or their C-CDA document's ``code``) carries one of the
  codes the user named (``summary_types``: ``code`` or ``system|code``) are the summaries of their case.
* Documents that are ``superseded`` or ``entered-in-error``, or replaced by another document of the export
  (``relatesTo`` ``replaces``), are skipped and counted; documents whose content is not text (a PDF, an image) are
  skipped and counted by content type, as are a document's other attachments beside the one read; a C-CDA document
  that cannot be read is skipped with a warning saying why. A case that gets no note because of this is reported
  once, at its cause (:mod:`engine.data.fhir._reading`). Everything else the export holds is counted and ignored.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from engine.core import Note, Rating, Summary, get_item
from engine.data._ehr_notes import PendingNote, add_in_order
from engine.data.fhir._attachments import Content, composition_text, document_text
from engine.data.fhir.questionnaire import is_pdsqi, read_response
from engine.data.fhir._reading import Reading
from engine.data.fhir.source import Export, Located, reference_id, reference_type, validate
from engine.data._fields import REFUSED_VALUE, check_id, check_rater, date_field, rating_value, text_field
from engine.data.mapping import LoadOptions
from engine.data._readers import Collector
from engine.data.strict_json import short_text
from engine.data.validation import Issue, ValidationReport

NOTE_ID_SYSTEM = "urn:sumcheck:note-id"
EXTENSION_BASE = "urn:sumcheck:fhir:"  # + generator-model, quality-group, prompt-variant (on summary documents)
ORIGINAL_TEXT = EXTENSION_BASE + "original-text"  # on a date element: the date as the source wrote it
LOINC = "http://loinc.org"
_SKIP_STATUS = ("superseded", "entered-in-error")
_CASE_TYPE = {"patient": "Patient", "encounter": "Encounter"}
_NOT_A_PATIENT = ("SumCheck makes one case per patient: a note's subject must be a Patient; a note about a group, "
                  "a practitioner, a device or a location is no patient's note: leave it out of the export or "
                  "correct its subject")


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


def _first_ref(value: object) -> Optional[dict]:
    one = value[0] if isinstance(value, list) and value else value
    return one if isinstance(one, dict) else None


def _case_ref(doc: Located, case_by: str) -> tuple[Optional[dict], str]:
    """(Reference, field) that names the document's case."""
    res = doc.resource
    if case_by == "encounter":
        if doc.rtype == "Composition":
            return _first_ref(res.get("encounter")), "encounter"
        return _first_ref((res.get("context") or {}).get("encounter")), "context.encounter"
    return _first_ref(res.get("subject")), "subject"


def _ref_type(ref: dict, doc: Located, export: Export) -> tuple[Optional[Located], Optional[str]]:
    """The resource a Reference points to (when the export holds it) and its type (from the resource, else the
    reference's own ``Type/id`` or ``type``; None when nothing says)."""
    target = export.resolve(ref.get("reference"), doc)
    held = export.type_of(ref.get("reference"), doc) if target is None else target.rtype
    return target, held or reference_type(ref.get("reference"), ref.get("type"))


def case_of(doc: Located, export: Export, case_by: str) -> tuple[Optional[str], str, Optional[Issue]]:
    """(case id, field, problem): the id of the Patient (or Encounter) the document is about. A subject that is
    not a Patient (a Group, a Practitioner, a Device, ...) and a case reference of another type than the case's are
    problems, never cases: an id is only unique within its resource type."""
    subject = _first_ref(doc.resource.get("subject"))
    if subject is not None and case_by != "patient":
        _, stype = _ref_type(subject, doc, export)
        if stype not in (None, "Patient"):
            return None, "subject", doc.issue(
                f"{doc.label}: its subject {short_text(str(subject.get('reference')))!r} is a {stype}, not a "
                "Patient", "subject", hint=_NOT_A_PATIENT)
    ref, fld = _case_ref(doc, case_by)
    if ref is None or not isinstance(ref.get("reference"), str) or not ref["reference"]:
        return None, fld, doc.issue(f"{doc.label} names no {case_by}", fld,
                                    hint="every note must name its patient (subject)" if case_by == "patient" else
                                    "import one case per patient, or export the documents with their encounter")
    target, rtype = _ref_type(ref, doc, export)
    want = _CASE_TYPE[case_by]
    if rtype not in (None, want):
        return None, fld, doc.issue(
            f"{doc.label}: its {fld} {short_text(ref['reference'])!r} is a {rtype}, not a {want}", fld,
            hint=_NOT_A_PATIENT if case_by == "patient" else
            "a case per encounter needs an Encounter reference; import one case per patient instead")
    return (target.rid if target is not None and target.rid else None) or reference_id(ref["reference"]), fld, None


def _author_specialty(doc: Located, export: Export) -> Optional[str]:
    for a in doc.resource.get("author") or []:
        target = export.resolve(a.get("reference") if isinstance(a, dict) else None, doc)
        if target is not None and target.rtype == "PractitionerRole":
            for sp in target.resource.get("specialty") or []:
                label = concept_label(sp)
                if label:
                    return label
    return None


def _original_text(element: object) -> Optional[str]:
    """The :data:`ORIGINAL_TEXT` extension of a primitive's element (``_date``, ``_start``), when it has one."""
    for e in (element.get("extension") or []) if isinstance(element, dict) else []:
        if isinstance(e, dict) and e.get("url") == ORIGINAL_TEXT and isinstance(e.get("valueString"), str):
            return e["valueString"]
    return None


def _date_text(doc: Located) -> tuple[Optional[str], str]:
    """(date text, field): ``date``, else ``context.period.start``; the date as the source wrote it where the
    element carries it (:data:`ORIGINAL_TEXT`, which SumCheck's own export writes)."""
    res = doc.resource
    original = _original_text(res.get("_date"))
    if original is not None or isinstance(res.get("date"), str):
        return (original if original is not None else res["date"]), "date"
    period = (res.get("context") or {}).get("period") or {}
    original = _original_text(period.get("_start")) if isinstance(period, dict) else None
    start = period.get("start") if isinstance(period, dict) else None
    if original is not None or isinstance(start, str):
        return (original if original is not None else start), "context.period.start"
    return None, "date"


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
    r = Reading(export, report, opts, c, counts)
    kept = {id(d) for d in docs}
    for bad in export.resources:  # documents that failed validation: their cases are not "unknown" later
        if bad.rtype in ("DocumentReference", "Composition") and id(bad) not in kept:
            r.lose(case_of(bad, export, opts.case_by)[0], bad, f"{bad.label} (refused above)", True)
    replaced = _replaced(docs, export, report)
    for doc in docs:
        if not _skipped(doc, replaced, r):
            _read_document(doc, r)
    counts["held out as reference summaries"] = add_in_order(c, report, r.pending, r.specialty,
                                                             opts.default_specialty, opts.hold_out_types)
    counts["notes"] -= counts["held out as reference summaries"]
    r.report_lost_cases()
    r.report_nothing_read(docs[0].file)
    r.report_dropped(docs[0].file)
    for rtype, n in export.ignored.items():
        counts[f"ignored {rtype}"] = n
    return +counts


def _skipped(doc: Located, replaced: set[int], r: Reading) -> bool:
    """A superseded, entered-in-error or replaced document: counted, and remembered as its case's loss."""
    res = doc.resource
    status = res.get("status") if doc.rtype == "DocumentReference" else None
    if status in _SKIP_STATUS or res.get("docStatus") == "entered-in-error" or \
            (doc.rtype == "Composition" and res.get("status") == "entered-in-error"):
        why = f"skipped ({status or 'entered-in-error'})"
    elif id(doc) in replaced:
        why = "skipped (replaced by a later version)"
    else:
        return False
    r.counts[why] += 1
    r.lose(case_of(doc, r.export, r.opts.case_by)[0], doc, f"{doc.label} ({why})", False)
    return True


def _read_document(doc: Located, r: Reading) -> None:
    """One document as a note or a summary of its case; every problem reported, every skip counted."""
    res, report = doc.resource, r.report
    codes = concept_codes(res.get("type"), res.get("category"))
    summary_id = _note_id(doc) if r.wanted and any(code.lower() in r.wanted for code in codes) else None
    case_id, case_fld, problem = case_of(doc, r.export, r.opts.case_by)
    if problem is not None:
        report.add(problem)
    text: Optional[str] = None
    if problem is None and check_id(report, doc.file, doc.input_row(), doc.prefix + case_fld, case_id):
        got = document_text(doc, r.export) if doc.rtype == "DocumentReference" else composition_text(doc)
        text = _checked_text(doc, got, case_id, r)
    if text is None:
        if summary_id:
            r.c.rejected_summaries.add(summary_id)  # ratings of it are not "unknown" later
        return
    codes = codes + got.codes
    if r.wanted and any(code.lower() in r.wanted for code in codes):
        _add_summary(doc, case_id, text, got, r)
    else:
        _add_note(doc, case_id, text, got, codes, r)


def _checked_text(doc: Located, got: Content, case_id: str, r: Reading) -> Optional[str]:
    """The document's text, or None with the problem reported (an error) or the skip counted (a C-CDA that cannot
    be read is also a warning)."""
    if got.problem:
        r.report.add(doc.issue(f"{doc.label}: {got.problem}", got.field, hint=got.hint))
        r.lose(case_id, doc, f"{doc.label} (refused above: {got.problem})", True)
        return None
    if got.unreadable:
        r.report.add(doc.issue(f"{doc.label}: its C-CDA document cannot be read: {got.unreadable}; the document is "
                               "skipped", got.field, severity="warning",
                               hint="export the note as a C-CDA document with a structured body, or as text"))
        r.counts["skipped (C-CDA not readable)"] += 1
        r.lose(case_id, doc, f"{doc.label} (its C-CDA cannot be read: {got.unreadable})", False)
        return None
    if got.skipped_type:
        r.counts[f"skipped (content {got.skipped_type})"] += 1
        r.lose(case_id, doc, f"{doc.label} (content {got.skipped_type}, not text)", False)
        return None
    for other in got.others:
        r.counts[f"other attachment(s) not read ({other})"] += 1
    if got.dropped is not None and got.dropped.dropped_elements:
        r.dropped[doc.label] = got.dropped
        if got.dropped.unclosed:
            r.report.add(doc.issue(
                f"{doc.label}: an unclosed <{got.dropped.unclosed}> element holds the rest of the HTML as "
                f"{got.dropped.unclosed} content: its {got.dropped.unclosed_chars:,} characters were left out of the "
                "note", got.field, severity="warning",
                hint=f"close the <{got.dropped.unclosed}> element, or export the document as plain text"))
    text = text_field(r.report, doc.file, doc.input_row(), doc.prefix + got.field, got.text, "document text")
    if text is None:
        r.lose(case_id, doc, f"{doc.label} (refused above: its text is empty)", True)
    return text


def _add_summary(doc: Located, case_id: str, text: str, got: Content, r: Reading) -> None:
    res = doc.resource
    sid = _note_id(doc)
    row = doc.input_row(text=got.field)
    if not check_id(r.report, doc.file, row, doc.prefix + "id", sid):
        return
    author = res.get("author") or [{}]
    generator = _extension(res, "generator-model") or (author[0].get("display") if isinstance(author[0], dict)
                                                         else None)
    r.c.add_summary(r.report, doc.file, row, Summary(sid, case_id, text, generator, _extension(res, "quality-group"),
                                                     _extension(res, "prompt-variant")))
    r.summaries.append((sid, case_id, doc))
    setting = concept_label((res.get("context") or {}).get("practiceSetting"))
    if setting:
        r.specialty.setdefault(case_id, setting)
    r.counts["summaries"] += 1


def _add_note(doc: Located, case_id: str, text: str, got: Content, codes: tuple[str, ...], r: Reading) -> None:
    res = doc.resource
    nid = _note_id(doc)
    date_text, date_fld = (got.date, got.date_field) if got.date else _date_text(doc)
    row = doc.input_row(text=got.field, date=date_fld, note_type="type", author_specialty="author")
    if not check_id(r.report, doc.file, row, doc.prefix + "id", nid):
        r.lose(case_id, doc, f"{doc.label} (refused above: its id)", True)
        return
    date = date_field(r.report, doc.file, row, doc.prefix + date_fld, date_text)
    if date is REFUSED_VALUE:
        r.lose(case_id, doc, f"{doc.label} (refused above: its date)", True)
        return
    note = Note(nid, text, date, got.note_type or concept_label(res.get("type")), _author_specialty(doc, r.export))
    r.pending.append(PendingNote(case_id, note, doc.file, row, codes))
    r.counts["notes"] += 1


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
