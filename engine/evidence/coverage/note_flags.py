"""Note-level omission flags: what a multi-note record can lose whole, shown beside the ranked uncovered regions.

The ranked region list (:func:`engine.evidence.coverage.regions.merge_regions`) orders source passages one by one. Two
omissions are about the record rather than one passage, and a reader checking a summary of several notes looks
for them first; they are listed as flags above the regions, each with the passage it points to:

* ``uncited_note`` — the summary cites some notes but never this one. The flag points to the note's first-ranked
  uncovered region (the same ranking as the region list), else to its least covered passage: the encounter the
  summary may have skipped.
* ``pending`` — the latest note (by date; the last note when the notes carry no dates) says a result or report is
  still pending or awaited, and no summary sentence says something is pending about the same thing. A summary that
  reports a preliminary result as if it were final, or drops a result still to come, hides what the next reader
  must follow up.

Both rules are deterministic and need no model beyond the coverage units already computed. Every flag kind is
registered once in :data:`FLAG_KINDS`.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

from engine.core import Case, Note, citations
from engine.evidence.coverage.results import Region, Unit
from engine.evidence.text import tokenize


@dataclass(frozen=True)
class FlagKind:
    key: str
    label: str  # a short label for the page, the CLI and the report
    meaning: str  # what the flag says, in words


FLAG_KINDS: dict[str, FlagKind] = {k.key: k for k in (
    FlagKind("uncited_note", "note never cited",
             "the summary cites other notes but never this one; the passage shown is its least covered content"),
    FlagKind("pending", "pending in the latest note",
             "the latest note says this is still pending or awaited; no summary sentence says so"),
)}


@dataclass(frozen=True)
class OmissionFlag:
    kind: str  # a key of FLAG_KINDS
    note_id: str
    start: int
    end: int
    text: str  # the passage the flag points to (empty when the note has no scored content)
    reason: str  # the flag in words, with the note it is about

    def to_dict(self) -> dict:
        return asdict(self)


# A source sentence saying a result or report is still to come.
PENDING = re.compile(r"\b(?:pending|awaiting|awaited|await|not yet (?:resulted|back|available|final)|"
                     r"results? to follow|to follow up on)\b", re.I)
# ... unless it says nothing is ("Pending: none", "no results pending", "nothing outstanding pending").
NOTHING_PENDING = re.compile(r"\b(?:pending|awaiting)\s*[:\-–]\s*(?:none|nil|n/?a|nothing)\b|"
                             r"\b(?:no|nothing|none)\b(?:\W+\w+){0,3}\W+(?:pending|awaited|awaiting)\b", re.I)
# A summary sentence saying something is still to come or provisional.
CARRIED = re.compile(r"\b(?:pending|await\w*|preliminary|provisional|not yet|to follow|outstanding|"
                     r"final (?:report|pathology|results?|read)|expected)\b", re.I)
_STOP = frozenset("""with from that this have been were will what when which their there than then into over after
before about also pending awaiting await awaited final report expected next week results result until once""".split())
MAX_PENDING = 3  # flags of this kind per summary, in note order


def _content_words(text: str) -> set[str]:
    """Words of four letters or more (their first six letters, so "sequencing" meets "sequenced"), labels with a
    digit ("PD-L1", "ROS1") and abbreviations of two capitals or more ("NGS", "IF/EM" as IF and EM)."""
    words = {w[:6] for w in tokenize(text, case="lower_text", digits="inner", min_len=4) if w not in _STOP}
    labels = {m.lower() for m in re.findall(r"\b[A-Za-z]+(?:-[A-Za-z0-9]+)*\d[A-Za-z0-9-]*\b", text)}
    caps = {w.lower() for w in tokenize(text, case="keep", letters="word")  # a whole word of 2-6 capitals
            if 2 <= len(w) <= 6 and w.isascii() and w.isalpha() and w.isupper()}
    return words | labels | caps


def latest_notes(case: Case) -> list[Note]:
    """The notes of the latest calendar day (by the parsed date, :attr:`Note.date_iso`); the last note when no note
    carries a readable date."""
    dated = [(n.date_iso[:10], n) for n in case.notes if n.date_iso]
    if not dated:
        return [case.notes[-1]] if case.notes else []
    top = max(d for d, _ in dated)
    return [n for d, n in dated if d == top]


def pending_flags(case: Case, summary_text: str) -> list[OmissionFlag]:
    """Sentences of the latest note that say a result is pending, which no summary sentence carries: a summary
    sentence carries one when it says something is pending, preliminary or expected and shares a content word with
    it."""
    from engine.evidence.text import split_sentences
    from engine.evidence.coverage.unit_coverage import source_units

    latest = {n.note_id for n in latest_notes(case)}
    pending = [u for u in source_units(case) if u.note_id in latest and PENDING.search(u.text)
               and not NOTHING_PENDING.search(u.text)]
    if not pending:  # most records: nothing to carry, and the summary is not read
        return []
    plain = citations.strip(summary_text)
    carriers = [_content_words(s.text) for s in split_sentences(plain) if CARRIED.search(s.text)]
    out = []
    for u in pending:
        words = _content_words(u.text)
        if any(words & c for c in carriers):
            continue
        out.append(OmissionFlag("pending", u.note_id, u.start, u.end, u.text.strip(),
                                f"note {u.note_id} (the latest) says this is still pending; the summary does not"))
        if len(out) == MAX_PENDING:
            break
    return out


def uncited_note_flags(case: Case, summary_text: str, units: Sequence[Unit], threshold: float,
                       style: citations.CitationStyle = citations.DEFAULT_STYLE) -> list[OmissionFlag]:
    """One flag per note the summary never cites, when it cites at least one note of the case (a summary without
    citations is the citation check's finding, not this one). ``units``: the coverage method's scored units."""
    from engine.evidence.coverage.regions import merge_regions
    from engine.evidence.text import unit_salience

    ids = [n.note_id for n in case.notes]
    cited = set(citations.cited_ids(summary_text, style)) & set(ids)
    if not cited:
        return []
    uncited = [nid for nid in ids if nid not in cited]
    if not uncited:
        return []
    salience = unit_salience(case, units)  # read over the whole record (copied-forward lines need every note)
    mine = [(u, w) for u, w in zip(units, salience) if u.note_id in uncited]
    # regions never span notes, so ranking only the uncited notes' units gives each its first-ranked region
    regions = merge_regions(case, [u for u, _ in mine], threshold, len(mine) or 1, salience=[w for _, w in mine],
                            summary_text=citations.strip(summary_text, style)) if mine else []
    out = []
    for nid in uncited:
        first: Optional[Region] = next((r for r in regions if r.note_id == nid and r.salience > 0), None)
        if first is not None:
            start, end, text = first.start, first.end, first.text
        else:  # nothing above the threshold: the note's least covered content unit
            scored = [(u.score * w, u) for u, w in zip(units, salience) if u.note_id == nid and w > 0]
            if scored:
                u = max(scored, key=lambda x: x[0])[1]
                start, end = u.start, u.end
                text = case.note(nid).text[start:end].strip()
            else:
                start = end = 0
                text = ""
        out.append(OmissionFlag("uncited_note", nid, start, end, text,
                                f"the summary cites note{'s' if len(cited) > 1 else ''} "
                                f"{', '.join(i for i in ids if i in cited)} but never note {nid}"))
    return out


def omission_flags(case: Case, summary_text: str, units: Sequence[Unit], threshold: float,
                   style: citations.CitationStyle = citations.DEFAULT_STYLE) -> list[OmissionFlag]:
    """Every flag of the summary: notes never cited first (in note order), then pending results."""
    return uncited_note_flags(case, summary_text, units, threshold, style) + pending_flags(case, summary_text)


def describe(flags: Sequence[OmissionFlag]) -> str:
    """The flags of one summary in a few words, for a table cell ("" when there is none)."""
    notes = [f.note_id for f in flags if f.kind == "uncited_note"]
    pending = sum(f.kind == "pending" for f in flags)
    parts = []
    if notes:
        parts.append(f"note{'s' if len(notes) > 1 else ''} {', '.join(notes)} never cited")
    if pending:
        parts.append(f"{pending} pending item{'s' if pending > 1 else ''} not carried")
    return "; ".join(parts)
