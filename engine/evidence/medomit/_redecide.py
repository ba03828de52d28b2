"""A stored MED-OMIT result decided again under the current coverage, from its stored answers: no question asked.

The decision's coverage changes over versions (key terms read through the abbreviation list, a term named only
negated not counted missing: a summary writing "cardioversion" covers "elective DCCV in March"). Coverage only
rises with those changes, so a fact stored *present* stays present, and a fact stored *omitted* is decided again:

* a fact decided whole, with the model's stored P(stated): :func:`engine.evidence.medomit.decision.combine` of
  that answer and the fact's current coverage;
* a fact decided whole on its coverage alone: decided again when the current coverage still decides it whatever
  the model would answer; when the model's answer could now change it, the stored decision stands (no question
  is asked here) and the result says how many facts stood so;
* a fact decided part by part: as stored (the parts' answers are not all kept).

The document weight and the omission count are the sums over the facts still omitted
(:func:`engine.evidence.medomit.result.score_document`'s rule).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional, Sequence

from engine.evidence.medomit.decision import (DEFAULT_DECISION, DECISION_VERSION, DecisionParams, combine,
                                              fact_coverage, fact_parts, model_decides)
from engine.evidence.medomit.result import MedOmitResult, fact_score


def redecided(result: MedOmitResult, summary_text: str, emb, params: DecisionParams = DEFAULT_DECISION
              ) -> MedOmitResult:
    """``result`` with its omitted facts decided again (see the module docstring); ``emb`` as for
    :func:`engine.evidence.medomit.decision.fact_coverage`."""
    if result.status != "complete":
        return result
    unlinked = {f.fact_id for f in result.not_found}
    texts = {f.fact_id: f.text for f in result.facts}
    whole = [s for s in result.scores if s.omitted and s.fact_id not in unlinked and not s.missing
             and len(fact_parts(texts[s.fact_id])) == 1]
    cov = dict(zip([s.fact_id for s in whole],
                   fact_coverage([texts[s.fact_id] for s in whole], summary_text, emb).tolist())) if whole else {}
    scores, stood = [], 0
    one_step = bool(result.provenance.get("one_step"))
    for s in result.scores:
        c: Optional[float] = cov.get(s.fact_id)
        if c is None or (s.coverage is not None and c <= s.coverage + 1e-9):
            scores.append(s)
            continue
        if s.p_stated is None and model_decides(c, params):
            stood += 1  # the model's answer could now change it: not asked here
            scores.append(s)
            continue
        d = combine(s.fact_id, c, s.p_stated, params, decisive=s.p_stated is None)
        s = replace(s, omitted=d.omitted, p_omitted=d.p_omitted, coverage=d.coverage, explanation=d.explanation)
        if not d.omitted and one_step:  # as the one-step pipeline leaves a present fact: importance never read
            s = replace(s, importance=None, importance_p=None, importance_weight=0.0,
                        score=fact_score(None, s.uniqueness))
        scores.append(s)
    counted = [s.score for s in scores if s.omitted and s.fact_id not in unlinked]
    decision = {**(result.provenance.get("decision") or {}), **params.key(), "decision": DECISION_VERSION,
                "decided again": "from the stored answers" + (f"; {stood} fact(s) kept as stored (the model would "
                                                              "have been asked)" if stood else "")}
    return replace(result, scores=scores, document_weight=round(sum(counted), 6), omission_count=len(counted),
                   provenance={**result.provenance, "decision": decision})


def stored_or_redecided(store, dataset: str, summary_id: str, key: str, summary_text: str,
                        embedder: Callable[[], object], earlier: Sequence[str]) -> Optional[MedOmitResult]:
    """The result stored under ``key``; else one stored under an ``earlier`` key, decided again
    (:func:`redecided`, ``embedder()`` called only then) and stored under ``key``."""
    if store is None:
        return None
    hit = store.get_evidence(dataset, "medomit", key, summary_id)
    if hit is not None:
        return MedOmitResult.from_json(hit)
    for old in earlier:
        raw = store.get_evidence(dataset, "medomit", old, summary_id)
        if raw is None:
            continue
        res = redecided(MedOmitResult.from_json(raw), summary_text, embedder())
        store.put_evidence(dataset, "medomit", key, summary_id, res.status, res.to_json())
        return res
    return None
