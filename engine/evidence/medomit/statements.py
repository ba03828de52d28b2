"""The notes' atomic statements as MED-OMIT facts, by rules (no model).

Each note is read in the units unit coverage reads (:func:`engine.evidence.coverage.unit_coverage.source_units`: lines
without their speaker tag, cut into sentences, here with no word windows) and each sentence is cut at its clause
boundaries by the claim splitter claim verification uses
(:func:`engine.evidence.support.verification.claims.split_claims`): "BP 152/94 today; started lisinopril 10 mg
daily" gives two facts. A statement with fewer than :data:`MIN_CONTENT` content words and numbers ("Patient seen
today.", "Yes.") is not a fact. Each fact is the note's own words, linked to its span (link kind
:data:`engine.evidence.medomit.gaps.PASSAGE_LINK`), so it is weighed and decided like a passage and never clustered.
"""
from __future__ import annotations

from engine.core import Case
from engine.evidence.medomit.gaps import PASSAGE_LINK
from engine.evidence.medomit.result import Fact

MIN_CONTENT = 2  # content words and numbers a statement needs to be a fact ("BP 152/94" has two)
_NO_WINDOWS = 10 ** 6


def statement_facts(case: Case, min_content: int = MIN_CONTENT) -> list[Fact]:
    """The atomic statements of ``case``'s notes as facts S1, S2, … in note order (see the module docstring)."""
    from engine.evidence.coverage import lexical_set, source_units
    from engine.evidence.support.verification import split_claims

    out: list[Fact] = []
    for u in source_units(case, max_words=_NO_WINDOWS):
        for c in split_claims(u.text):
            if len(lexical_set(c.text)) < min_content:
                continue
            out.append(Fact(f"S{len(out) + 1}", c.text, u.note_id, u.start + c.start, u.start + c.end, PASSAGE_LINK,
                            1.0))
    return out
