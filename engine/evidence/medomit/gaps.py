"""Passages of the notes that no extracted fact covers, taken as facts of their own.

A small model's fact list skips parts of a long, dense note: a plan line ("Start dapagliflozin 10 mg p.o. q.d.")
that no extracted fact mentions can never be reported omitted. :func:`passage_facts` reads the notes in the units
unit coverage uses (:func:`engine.evidence.coverage.unit_coverage.source_units`: sentences, long ones in windows) and
takes a unit as a fact of its own — its text word for word, linked to its own span with link kind ``"passage"`` —
when the extracted facts lying on it carry too little of it:

  * a key term of the unit (a drug, a named condition or procedure, a label: :func:`engine.evidence.text.terms.key_terms`)
    that none of those facts writes, or
  * less than :attr:`GapParams.min_carried` of the unit's content words and numbers
    (:func:`engine.evidence.coverage.unit_coverage.lexical_set`) written by those facts.

"Those facts" are the linked facts whose span overlaps the unit (a fact elsewhere in the notes that repeats a word
does not cover this unit). A unit with fewer than :attr:`GapParams.min_content` content words and numbers (a
heading, "Patient seen today.") is never a fact. Nothing here calls a model: the passages then go through the same
importance, cluster and omission steps as the model's facts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from engine.core import Case
from engine.evidence.medomit.result import Fact

PASSAGE_LINK = "passage"  # Fact.link of a passage taken as a fact


@dataclass(frozen=True)
class GapParams:
    """When a unit of the notes becomes a fact. Chosen on the development split of ACI-BENCH's real notes
    (``bench/medomit_passages_realdev.py``: 8 notes, a quarter of each note's sentences taken out): every setting
    tried (``min_carried`` 0.3 / 0.5 / 0.7, with and without the key-term rule) reached the same share of the
    taken-out sentences (0.98, the 1.5B's own facts 0.43) and detected the same share with the coverage-only
    decision (0.76, own facts 0.29), so the one adding the fewest facts was kept (31.2 facts per note against 32.1
    and 32.8; the model's own 11.2)."""

    min_carried: float = 0.3  # a unit whose overlapping facts write less than this share of its words is a gap
    key_terms: bool = True  # a key term no overlapping fact writes makes the unit a gap
    min_content: int = 3  # content words and numbers a unit needs to be a fact at all
    enabled: bool = True

    def key(self) -> dict:
        return {"min_carried": self.min_carried, "key_terms": self.key_terms, "min_content": self.min_content,
                "enabled": self.enabled}


DEFAULT_GAPS = GapParams()


def _overlaps(f: Fact, note_id: str, start: int, end: int) -> bool:
    return f.note_id == note_id and f.start is not None and f.start < end and start < f.end


def gap_units(case: Case, facts: Sequence[Fact], params: GapParams = DEFAULT_GAPS) -> list:
    """The source units (:class:`engine.evidence.coverage.unit_coverage.SourceUnit`) the linked ``facts`` leave
    uncovered, in note order (see the module docstring)."""
    from engine.evidence.coverage import lexical_set, source_units
    from engine.evidence.text import missing_key_terms

    if not params.enabled:
        return []
    linked = [f for f in facts if f.link != "unlinked"]
    out = []
    for u in source_units(case):
        words = lexical_set(u.text)
        if len(words) < params.min_content:
            continue
        on = [f for f in linked if _overlaps(f, u.note_id, u.start, u.end)]
        said = " ".join(f.text for f in on)
        carried = len(words & lexical_set(said)) / len(words) if on else 0.0
        if carried < params.min_carried or (params.key_terms and missing_key_terms(u.text, said, skip_negated=False)):
            out.append(u)
    return out


def passage_facts(case: Case, facts: Sequence[Fact], params: GapParams = DEFAULT_GAPS) -> list[Fact]:
    """The uncovered units as facts P1, P2, … (word for word, linked to their own span)."""
    return [Fact(f"P{k}", u.text, u.note_id, u.start, u.end, PASSAGE_LINK, 1.0)
            for k, u in enumerate(gap_units(case, facts, params), start=1)]
