"""MIMIC-IV-Note (``discharge.csv``, ``radiology.csv``, plain or gzipped): one case per admission (``hadm_id``), its
notes in ``charttime`` then ``note_seq`` order, ``note_type`` kept (DS discharge summary, RR radiology report, AR
addendum). Reports outside an admission (no ``hadm_id``) are counted and skipped. The note type named by
``hold_out_types`` (e.g. ``DS``) is kept out of the source notes and imported as the case's reference summary
(:mod:`engine.data.ehr_notes`).

The dates of MIMIC are shifted into the years 2100-2250; they are read like any other date.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from engine.core.models import Note
from engine.data.ehr_notes import PendingNote
from engine.data.fields import REFUSED_VALUE, check_id, date_field, opt_text, plain_id, scalar_field, text_field
from engine.data.files import InputRow
from engine.data.validation import Issue, ValidationReport

MIMIC_REQUIRED = ("note_id", "subject_id", "hadm_id", "charttime", "text")
MIMIC_OPTIONAL = ("note_type", "note_seq", "storetime")


def is_mimic(header) -> bool:
    return set(MIMIC_REQUIRED) <= set(header)


def read_mimic(report: ValidationReport, path: Path, header, rows: list[InputRow]) -> tuple[list[PendingNote], Counter]:
    """The notes of one MIMIC-IV-Note file, each keyed to its admission, in chart-time and sequence order."""
    fname = str(path)
    counts: Counter = Counter()
    unknown = [h for h in header if h not in MIMIC_REQUIRED + MIMIC_OPTIONAL]
    if unknown:
        report.add(Issue(fname, f"column(s) {', '.join(unknown[:5])} are not MIMIC-IV-Note columns and are ignored",
                         line=1, field=unknown[0], severity="warning"))
    found: list[tuple[tuple, PendingNote]] = []
    for row in rows:
        v = row.values
        hadm = plain_id(scalar_field(report, fname, row, "hadm_id", v.get("hadm_id")))
        nid = scalar_field(report, fname, row, "note_id", v.get("note_id"))
        if hadm == "":
            counts["skipped (no admission, hadm_id empty)"] += 1
            continue
        if not (check_id(report, fname, row, "hadm_id", hadm) & check_id(report, fname, row, "note_id", nid)):
            continue
        text = text_field(report, fname, row, "text", v.get("text"), "note text")
        date = date_field(report, fname, row, "charttime", v.get("charttime"))
        ntype = opt_text(report, fname, row, "note_type", v.get("note_type"))
        seq_text = scalar_field(report, fname, row, "note_seq", v.get("note_seq")) or ""
        seq = plain_id(seq_text)
        if seq and not seq.isdigit():
            report.add(Issue(fname, f"note_seq {seq_text[:20]!r} is not a whole number", row=row.number,
                             line=row.line, field="note_seq", hint="MIMIC numbers a patient's notes 1, 2, 3, ..."))
            continue
        if text is None or date is REFUSED_VALUE or ntype is REFUSED_VALUE:
            continue
        note = Note(nid, text, date, ntype, None)
        key = (note.date_iso is None, note.date_iso or "", int(seq) if seq else 0, row.number)
        found.append((key, PendingNote(hadm, note, fname, row, (ntype,) if ntype else ())))
        counts["notes"] += 1
    found.sort(key=lambda p: p[0])
    return [p for _, p in found], counts
