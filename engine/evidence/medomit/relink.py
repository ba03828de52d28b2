"""Stored MED-OMIT results brought up to today's facts without extracting the facts again.

Two kinds of fact can be missing from a stored result's weighing:
  * a fact the model extracted but an older linking could not place in the notes ("not found in the notes");
    :func:`link_fact` now links every fact whose text stands word for word in a note, a short one ("HTN") where
    the note writes it as a token of its own;
  * a passage of the notes no extracted fact covers (:func:`engine.evidence.medomit.gaps.passage_facts`), which
    older results did not take as facts.
For these, :func:`relink_case` asks only the steps they lack, once per case: the importance of both against the
case's stored differential, and the clusters of the newly linked facts (passages are not clustered, as in a full
run), merged into the stored clusters (a new sub-cluster with the same diagnosis, polarity and mechanism as a
stored one joins it). It then decides every summary of the case again
(:meth:`engine.evidence.medomit.pipeline.MedOmit.decide_again`). Nothing else is recomputed.

Where a stored result is read for display, :func:`placed_when_read` places facts of the first kind without asking
anything: whether a fact is "not found in the notes" is the link stored with it, so a result stored before today's
linking would otherwise keep listing a fact the notes write ("HTN" in "72 y/o M with HTN, HLD, T2DM"). Placing a
fact does not weigh it (that takes the model's importance step): it carries no score, and its line of the notes is
weighed through the facts and passages stored on that line (a line no placed fact covered became a passage fact
of its own when the result was made).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from engine.core import Case, Summary
from engine.evidence.medomit.gaps import PASSAGE_LINK, passage_facts
from engine.evidence.medomit._linking import link_fact, link_verbatim
from engine.evidence.medomit.result import Cluster, Fact, FactScore, MedOmitResult


def newly_linked(result: MedOmitResult, case: Case) -> list[Fact]:
    """The stored facts not found in the notes that today's linking places, with their new place."""
    notes = {n.note_id: n.text for n in case.notes}
    out = []
    for f in result.facts:
        if f.link != "unlinked":
            continue
        nid, s, e, kind, score = link_fact(f.text, f.text, notes, f.note_id)
        if kind != "unlinked":
            out.append(replace(f, note_id=nid, start=s, end=e, link=kind, link_score=score))
    return out


def placed_when_read(result: MedOmitResult, case: Case) -> MedOmitResult:
    """``result`` as it is read for display: each fact stored as not found in the notes that stands word for word
    in one of ``case``'s notes (:func:`engine.evidence.medomit._linking.link_verbatim`, a short fact as a token of its
    own) is placed there (link "exact"), and the placed facts' ids are kept in the provenance
    (``placed_when_read``). Scores, weight, count and clusters stay as stored (see the module docstring); the
    stored result itself is not changed. A fact the notes do not write word for word stays not found (the similar
    sentence was tried when the result was made)."""
    notes = {n.note_id: n.text for n in case.notes}
    placed = {}
    for f in result.facts:
        hit = link_verbatim(f.text, notes, f.note_id) if f.link == "unlinked" else None
        if hit is not None:
            placed[f.fact_id] = replace(f, note_id=hit[0], start=hit[1], end=hit[2], link="exact", link_score=1.0)
    if not placed:
        return result
    return replace(result, facts=[placed.get(f.fact_id, f) for f in result.facts],
                   provenance={**(result.provenance or {}), "placed_when_read": sorted(placed)})


def read_stored(text: str, case: Case) -> MedOmitResult:
    """A stored MED-OMIT result (its JSON) read for display: :meth:`MedOmitResult.from_json`, then
    :func:`placed_when_read`."""
    return placed_when_read(MedOmitResult.from_json(text), case)


def _merged(clusters: Sequence[Cluster], new: Sequence[Cluster]) -> list[Cluster]:
    out = [Cluster(c.diagnosis, c.polarity, c.mechanism, list(c.fact_ids)) for c in clusters]
    for c in new:
        same = next((o for o in out if (o.diagnosis, o.polarity, o.mechanism.lower()) ==
                     (c.diagnosis, c.polarity, c.mechanism.lower())), None)
        if same is None:
            out.append(Cluster(c.diagnosis, c.polarity, c.mechanism, list(c.fact_ids)))
        else:
            same.fact_ids = sorted(set(same.fact_ids) | set(c.fact_ids))
    return out


def relink_case(mo, case: Case, results: Sequence[tuple[Summary, MedOmitResult]]) -> list[MedOmitResult]:
    """Every complete result of one case with the newly linked facts weighed (see the module docstring); results
    with nothing to link are decided again as they are. ``mo``: a MedOmit over the model that made the results."""
    complete = [(s, r) for s, r in results if r.status == "complete"]
    if not complete:
        return [r for _, r in results]
    base = complete[0][1]
    placed = {f.fact_id: f for f in newly_linked(base, case)}
    known = {f.fact_id for f in base.facts}
    model_facts = [placed.get(f.fact_id, f) for f in base.facts if f.link != PASSAGE_LINK]
    passages = [] if any(f.link == PASSAGE_LINK for f in base.facts) else passage_facts(case, model_facts, mo.gaps)
    passages = [p for p in passages if p.fact_id not in known]
    importance: dict[str, str] = {}
    clusters = base.clusters
    records: list = []
    if placed or passages:
        importance = (mo.importance(case, list(placed.values()) + passages, base.ddx, records) or ({}, {}))[0]
    if placed:
        clusters = _merged(base.clusters, mo.clusters(list(placed.values()), base.ddx, records) or [])
    new = set(placed) | {p.fact_id for p in passages}
    out = []
    for s, r in results:
        if r.status != "complete":
            out.append(r)
            continue
        facts = [placed.get(f.fact_id, f) for f in r.facts] + passages
        extra = [FactScore(k, False, v, 0.0, [], 0.0, []) for k, v in importance.items() if k in new]
        updated = replace(r, facts=facts, clusters=clusters, scores=list(r.scores) + extra,
                          steps=list(r.steps) + records)
        res = mo.decide_again(updated, case, s)
        res.provenance = {**res.provenance, "relinked_facts": sorted(placed),
                          "passage_facts": [p.fact_id for p in passages]}
        out.append(res)
    return out
