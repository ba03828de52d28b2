"""MIMIC-IV-Note (``discharge.csv``, ``radiology.csv``, plain or gzipped): one case per admission (``hadm_id``), its
notes in ``charttime`` then ``note_seq`` order, ``note_type`` kept (DS discharge summary, RR radiology report, AR
addendum). Reports outside an admission are counted and skipped: a ``hadm_id`` that is empty or spelled as missing
(:data:`engine.data._fields.MISSING`: ``nan`` as pandas writes it, ``NULL``, ``None``, ``NA`` ...). The same
spellings in ``note_id`` or ``subject_id`` are a missing id (an error), in ``charttime``, ``note_type`` and
``note_seq`` an empty value. An admission holds one patient: a note whose ``subject_id`` differs from that of an
earlier note of its admission (in this file or another MIMIC file of the import) is an error naming both. The note
type named by ``hold_out_types`` (e.g. ``DS``) is kept out of the source notes and imported as the case's reference
summary (:mod:`engine.data._ehr_notes`).

The dates of MIMIC are shifted into the years 2100-2250; they are read like any other date.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from engine.core import Note
from engine.data._ehr_notes import PendingNote
from engine.data._fields import REFUSED_VALUE, check_id, date_field, is_missing, plain_id, scalar_field, text_field
from engine.data.files import InputRow
from engine.data.validation import Issue, ValidationReport

MIMIC_REQUIRED = ("note_id", "subject_id", "hadm_id", "charttime", "text")
MIMIC_OPTIONAL = ("note_type", "note_seq", "storetime")


def is_mimic(header) -> bool:
    return set(MIMIC_REQUIRED) <= set(header)


def _value(report: ValidationReport, fname: str, row: InputRow, fld: str) -> str | None:
    """The text of a field, "" when it is empty or spelled as missing (:func:`engine.data._fields.is_missing`); None
    when refused."""
    s = scalar_field(report, fname, row, fld, row.values.get(fld))
    return "" if is_missing(s) else s


def read_mimic(report: ValidationReport, path: Path, header, rows: list[InputRow],
               patients: dict[str, tuple[str, str, InputRow]] | None = None) -> tuple[list[PendingNote], Counter]:
    """The notes of one MIMIC-IV-Note file, each keyed to its admission, in chart-time and sequence order.

    ``patients`` (admission -> subject id, file and row of its first note) is shared by the MIMIC files of one
    import, so that an admission whose notes name two patients is found across files too."""
    fname = str(path)
    counts: Counter = Counter()
    patients = {} if patients is None else patients
    unknown = [h for h in header if h not in MIMIC_REQUIRED + MIMIC_OPTIONAL]
    if unknown:
        report.add(Issue(fname, f"column(s) {', '.join(unknown[:5])} are not MIMIC-IV-Note columns and are ignored",
                         line=1, field=unknown[0], severity="warning"))
    found: list[tuple[tuple, PendingNote]] = []
    for row in rows:
        v = row.values
        raw_hadm = scalar_field(report, fname, row, "hadm_id", v.get("hadm_id"))
        hadm = "" if is_missing(raw_hadm) else plain_id(raw_hadm)
        nid = _value(report, fname, row, "note_id")
        if hadm == "":
            counts["skipped (no admission, hadm_id empty)" if raw_hadm == "" else
                   f"skipped (no admission, hadm_id {raw_hadm!r})"] += 1
            continue
        subject = plain_id(_value(report, fname, row, "subject_id"))
        if not (check_id(report, fname, row, "hadm_id", hadm) & check_id(report, fname, row, "note_id", nid)
                & check_id(report, fname, row, "subject_id", subject)):
            continue
        first = patients.setdefault(hadm, (subject, fname, row))
        if first[0] != subject:
            report.add(Issue(fname, f"admission {hadm!r} holds notes of two patients: subject_id {subject!r} here, "
                                    f"{first[0]!r} in {first[1]} row {first[2].number}", row=row.number,
                             line=row.line, field="hadm_id",
                             hint="an admission belongs to one patient: correct the hadm_id or subject_id of one of "
                                  "the two rows (a placeholder admission id such as 0 marks a report outside an "
                                  "admission: leave it empty)"))
            continue
        text = text_field(report, fname, row, "text", v.get("text"), "note text")
        chart, ntype, seq_text = (_value(report, fname, row, f) for f in ("charttime", "note_type", "note_seq"))
        if chart is None or ntype is None or seq_text is None:
            continue
        date = date_field(report, fname, row, "charttime", chart)
        ntype = ntype or None
        seq = plain_id(seq_text)
        if seq and not seq.isdigit():
            report.add(Issue(fname, f"note_seq {seq_text[:20]!r} is not a whole number", row=row.number,
                             line=row.line, field="note_seq", hint="MIMIC numbers a patient's notes 1, 2, 3, ..."))
            continue
        if text is None or date is REFUSED_VALUE:
            continue
        note = Note(nid, text, date, ntype, None)
        key = (note.date_iso is None, note.date_iso or "", int(seq) if seq else 0, row.number)
        found.append((key, PendingNote(hadm, note, fname, row, (ntype,) if ntype else ())))
        counts["notes"] += 1
    found.sort(key=lambda p: p[0])
    return [p for _, p in found], counts
