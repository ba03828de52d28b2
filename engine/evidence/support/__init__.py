"""Faithfulness evidence from the summary's side: is what each summary sentence says supported by the notes?

* ``alignment`` — the source sentences that support each summary sentence;
* ``specifics`` — fact-level checks of one sentence (numbers, doses, dates, laterality, negation, key terms);
* ``allergies`` — allergens a sentence names that the notes never record as allergies (one of the checks);
* ``redundancy`` — restatements inside one summary;
* ``verification`` — claim-level verification by the judge model (a closed question per claim).

Imports: engine.core, engine.llm, engine.data, engine.evidence.text, engine.evidence.embeddings,
engine.evidence.coverage.
"""
from engine.evidence.support.alignment import (ALIGNMENT_VERSION, AlignmentResult, CITED_SUPPORT, NO_CITATION_ISSUE,
                                               WEAK_SUPPORT, align_summary, alignment_cached, alignment_key,
                                               combined_scores, is_heading, result_from_dict)
from engine.evidence.support.allergies import allergy_stems, claimed_allergens, unrecorded_allergens
from engine.evidence.support.redundancy import restatements
from engine.evidence.support import alignment, specifics  # modules read as namespaces

__all__ = ["ALIGNMENT_VERSION", "AlignmentResult", "CITED_SUPPORT", "NO_CITATION_ISSUE", "WEAK_SUPPORT",
           "align_summary", "alignment", "alignment_cached", "alignment_key", "allergy_stems", "claimed_allergens",
           "combined_scores", "is_heading", "restatements", "result_from_dict", "specifics", "unrecorded_allergens"]
