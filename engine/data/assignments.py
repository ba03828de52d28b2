"""Reviewers and blinded assignment: which reviewer reviews which summary, and where reviewers disagree.

* :func:`plan_assignments` gives every summary ``per_summary`` different reviewers (at least two for independent
  review), balanced across reviewers (their loads differ by at most one) and stratified by the summaries' generator
  model and quality group: within each stratum the least-loaded reviewers are chosen first, so every reviewer sees
  every kind of summary in proportion. The order is seeded, so a plan can be made again identically.
* :func:`save_plan` stores a plan for a dataset in one transaction (it replaces the dataset's earlier plan);
  :func:`reviewer_queue` is one reviewer's assigned summaries with whether they have saved their spot check.
* :func:`disagreements` lists the summary items where the reviewers' current spot checks differ by more than a
  margin (1–5 items) or disagree (yes/no items), and that have no adjudicated score yet: the adjudication queue.

Blinding itself (other reviewers' and the judge's scores hidden until a reviewer has saved their own) is the review
page's, over :func:`engine.data.reviews.has_reviewed`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional, Sequence

from engine.core import Summary, get_item, now_iso
from engine.data.reviews import ADJUDICATION, SPOT_CHECK, current_reviews
from engine.data.schema import StoreError
from engine.data.store import Store


@dataclass(frozen=True)
class Assignment:
    summary_id: str
    reviewer: str
    stratum: str  # "generator · quality group" of the summary


@dataclass(frozen=True)
class QueueEntry:
    summary_id: str
    stratum: str
    done: bool  # the reviewer has saved a spot check of this summary


@dataclass(frozen=True)
class Disagreement:
    summary_id: str
    item: str
    values: dict[str, Optional[float]]  # reviewer -> current spot-check value (None = NA)
    spread: float  # max - min of the numeric values (yes/no: 1 when they disagree)


def stratum_of(s: Summary) -> str:
    return f"{s.generator_model or 'unknown generator'} · {s.quality_group or 'no quality group'}"


def plan_assignments(summaries: Sequence[Summary], reviewers: Sequence[str], per_summary: int = 2,
                     seed: int = 0) -> list[Assignment]:
    """Assign each summary to ``per_summary`` distinct reviewers, balanced and stratified (see the module doc)."""
    names = [r.strip() for r in reviewers if r and r.strip()]
    if len(set(names)) != len(names):
        raise ValueError("a reviewer is named twice")
    if per_summary < 1:
        raise ValueError("each summary needs at least one reviewer")
    if len(names) < per_summary:
        raise ValueError(f"{per_summary} reviewers per summary need at least {per_summary} reviewers; "
                         f"{len(names)} given")
    rng = random.Random(seed)
    order = {r: i for i, r in enumerate(rng.sample(names, len(names)))}  # seeded tie-break between reviewers
    load = {r: 0 for r in names}
    strata: dict[str, list[Summary]] = {}
    for s in summaries:
        strata.setdefault(stratum_of(s), []).append(s)
    out = []
    for key in sorted(strata):
        members = sorted(strata[key], key=lambda s: s.summary_id)
        rng.shuffle(members)
        in_stratum = {r: 0 for r in names}
        for s in members:
            chosen = sorted(names, key=lambda r: (load[r], in_stratum[r], order[r]))[:per_summary]
            for r in chosen:
                load[r] += 1
                in_stratum[r] += 1
                out.append(Assignment(s.summary_id, r, key))
    return out


def save_plan(store: Store, dataset: str, plan: Sequence[Assignment]) -> int:
    """Store ``plan`` as the dataset's assignments, replacing any earlier plan, in one transaction."""
    stamp = now_iso()
    with store.transaction() as con:
        did = store.dataset_id(con, dataset)
        known = {r[0] for r in con.execute("SELECT summary_id FROM summaries WHERE dataset_id=?", (did,))}
        unknown = sorted({a.summary_id for a in plan} - known)
        if unknown:
            raise StoreError(f"the plan names summaries that are not in dataset {dataset!r}: {', '.join(unknown[:5])}")
        con.execute("DELETE FROM assignments WHERE dataset_id=?", (did,))
        con.executemany("INSERT INTO assignments (dataset_id, summary_id, reviewer, stratum, plan, created_at) "
                        "VALUES (?,?,?,?,?,?)", [(did, a.summary_id, a.reviewer, a.stratum, stamp, stamp)
                                                 for a in plan])
    return len(plan)


def assignments(store: Store, dataset: str, reviewer: Optional[str] = None) -> list[Assignment]:
    with store.connect() as con:
        did = store.dataset_id(con, dataset)
        sql = "SELECT summary_id, reviewer, stratum FROM assignments WHERE dataset_id=?"
        args: tuple = (did,)
        if reviewer is not None:
            sql, args = sql + " AND reviewer=?", (did, reviewer)
        rows = con.execute(sql, args).fetchall()
    return sorted((Assignment(*r) for r in rows), key=lambda a: (a.summary_id, a.reviewer))


def reviewers(store: Store, dataset: str) -> list[str]:
    return sorted({a.reviewer for a in assignments(store, dataset)})


def reviewer_queue(store: Store, dataset: str, reviewer: str) -> list[QueueEntry]:
    """The summaries assigned to ``reviewer``: the ones still to do first, then the done ones."""
    mine = assignments(store, dataset, reviewer)
    if not mine:
        return []
    with store.connect() as con:  # one query for the whole queue, not one per summary
        did = store.dataset_id(con, dataset)
        done = {r[0] for r in con.execute("SELECT DISTINCT summary_id FROM reviews WHERE dataset_id=? AND "
                                          "reviewer=? AND kind=?", (did, reviewer.strip(), SPOT_CHECK))}
    out = [QueueEntry(a.summary_id, a.stratum, a.summary_id in done) for a in mine]
    return sorted(out, key=lambda e: (e.done, e.summary_id))


def disagreements(store: Store, dataset: str, margin: float = 1.0) -> list[Disagreement]:
    """Items where two or more reviewers' current spot checks differ by more than ``margin`` (a yes/no item: any
    difference), without an adjudicated score yet; largest spread first."""
    by: dict[tuple[str, str], dict[str, Optional[float]]] = {}
    adjudicated = set()
    for r in current_reviews(store, dataset):
        if r.kind == ADJUDICATION:
            adjudicated.add((r.summary_id, r.item))
        elif r.kind == SPOT_CHECK:
            by.setdefault((r.summary_id, r.item), {})[r.reviewer] = r.value
    out = []
    for (sid, item), vals in by.items():
        if len(vals) < 2 or (sid, item) in adjudicated:
            continue
        nums = [v for v in vals.values() if v is not None]
        na_split = 0 < len(nums) < len(vals)  # one says NA, another scores it
        spread = (max(nums) - min(nums)) if nums else 0.0
        binary = get_item(item).scale.name == "BINARY"
        if na_split or (spread > 0 if binary else spread > margin):
            out.append(Disagreement(sid, item, dict(sorted(vals.items())), float(spread)))
    return sorted(out, key=lambda d: (-d.spread, d.summary_id, d.item))
