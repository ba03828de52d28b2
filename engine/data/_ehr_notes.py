"""Notes read from an EHR or research export (FHIR, MIMIC-IV-Note) into the collector: each case's notes in date
order, and the note types named as held out kept out of the source notes and imported as reference summaries.

A held-out note (e.g. the discharge summary a clinician wrote, ``--hold-out-type DS``) is what a team compares an
automatic summary of the *earlier* notes with: it is not a source note, so the judge never sees it as evidence; it is
a summary of its case (generator ``clinician``, quality group ``reference``) that is judged and rated like the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from engine.core import Note, Summary
from engine.data.files import InputRow
from engine.data._readers import Collector
from engine.data.validation import ValidationReport

REFERENCE_GENERATOR = "clinician"
REFERENCE_GROUP = "reference"


@dataclass(frozen=True)
class PendingNote:
    """A note read from an export, with where it came from and the codes its type goes by."""

    case_id: str
    note: Note
    file: str
    row: Optional[InputRow]
    type_codes: tuple[str, ...] = ()


def add_in_order(c: Collector, report: ValidationReport, pending: Sequence[PendingNote],
                 specialty: dict[str, str], default_specialty: str, hold_out_types: Sequence[str] = ()) -> int:
    """Add every case (in order of first appearance; its target specialty from ``specialty``, else the default —
    unless a cases table read before already holds the case) and its notes oldest first (undated notes last, ties
    in file order); held-out notes become reference summaries. Returns the number of notes held out."""
    want = {t.strip().lower() for t in hold_out_types if t.strip()}
    by_case: dict[str, list[tuple[int, PendingNote]]] = {}
    for i, p in enumerate(pending):
        by_case.setdefault(p.case_id, []).append((i, p))
    n_held = 0
    for cid, notes in by_case.items():
        kept = []
        for i, p in notes:
            if want and any(code.lower() in want for code in (*p.type_codes, p.note.note_type or "")):
                n_held += 1
                c.add_summary(report, p.file, p.row, Summary(f"{cid}-{p.note.note_id}", cid, p.note.text,
                                                             REFERENCE_GENERATOR, REFERENCE_GROUP,
                                                             f"held-out {p.note.note_type or 'note'}"))
            else:
                kept.append((i, p))
        first = (kept or notes)[0][1]
        if cid not in c.cases:  # a cases table given alongside names the target specialty of its cases
            c.add_case(report, first.file, first.row, cid, specialty.get(cid) or default_specialty)
        for _, p in sorted(kept, key=lambda ip: ip[1].note.order_key(ip[0])):
            c.add_note(report, p.file, p.row, cid, p.note)  # none left: the cross-check reports the case
    return n_held
