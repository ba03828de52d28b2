"""Triage: which summaries a reviewer should look at first, and why.

Each summary gets a priority in [0, 1] (higher = review first) from two parts, documented here so a reviewer can
check it:

* **judge risk** = the worst 1-5 item's shortfall, (5 − score) / 4, where the score is the one
  :mod:`engine.judge.used_scores` picks per item: the calibrated score when a calibration of this judge
  configuration fitted the item without losing ranking, else the item's default combination of the judge with its
  evidence (:mod:`engine.judge.combination`), else the judge's expected score; 0.5 when the summary has no judge
  result (unknown is not safe). The reasons also name the items furthest below their own typical level: each
  item's shortfall from its median over the queue's summaries (:func:`item_medians`), in rubric points. The
  lowest items alone would name the same item for nearly every summary — Thorough's combination, whose evidence
  (how much of the source a summary leaves out) sits around 3 where the judge's scores sit near 5 — while the
  shortfall from each item's own median names what is unusual about this summary. Only the reasons read it: on
  real visit notes with omissions of known size, a judge risk from the shortfalls ordered the summaries worse than
  the lowest score does (``bench/triage_bench.py``).
* **evidence risk** = min(1, 0.4·[coverage flags an omission] + 0.4·(share of weakly supported sentences) +
  0.3·(share of citation problems) + 0.3·[stigmatizing language in the summary] + 0.4·(share of sentences with
  a claim the record does not support, by claim verification)).

priority = 0.6 · judge risk + 0.4 · evidence risk. The queue is sorted by priority; its thirds are the strata
("review first", "middle", "lowest risk") that a spot-check sample can be drawn across (:func:`stratified_sample`),
so a sample still sees summaries the judge liked.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from engine.core import ITEMS, get_item

STRATA = ("review first", "middle", "lowest risk")
MIN_MEDIAN = 10  # scored summaries an item needs before a summary's shortfall from its median is named
W_JUDGE, W_EVIDENCE = 0.6, 0.4
LIKERT = tuple(i.key for i in ITEMS if i.is_likert)


@dataclass(frozen=True)
class TriageEntry:
    summary_id: str
    case_id: str
    priority: float
    judge_risk: float
    evidence_risk: float
    stratum: str
    reasons: tuple[str, ...]  # with numbers
    blind_reasons: tuple[str, ...]  # the same without any judge score (for a blinded reviewer)
    score_source: str  # "calibrated …", "expected score" or "not judged"


def item_medians(scores: Mapping[str, Optional[Mapping[str, Optional[float]]]]) -> dict[str, float]:
    """item -> the median of its scores over the queue's summaries (``scores``: summary id -> item -> score), for
    every 1-5 item with at least :data:`MIN_MEDIAN` scores."""
    by_item: dict[str, list[float]] = {}
    for sc in scores.values():
        for k, v in (sc or {}).items():
            if k in LIKERT and v is not None:
                by_item.setdefault(k, []).append(float(v))
    return {k: statistics.median(v) for k, v in by_item.items() if len(v) >= MIN_MEDIAN}


def below_median(got: Mapping[str, float], medians: Mapping[str, float], n: int = 2) -> list[tuple[str, float]]:
    """The (at most ``n``) items of one summary furthest below their medians, as (item, shortfall in rubric
    points), largest first; items at or above their median are not named."""
    gaps = [(k, round(medians[k] - v, 4)) for k, v in got.items() if k in medians]
    return sorted([g for g in gaps if g[1] > 0.005], key=lambda g: (-g[1], g[0]))[:n]


def _judge_part(scores: Optional[Mapping[str, Optional[float]]], source: str,
                medians: Optional[Mapping[str, float]] = None) -> tuple[float, list[str], list[str]]:
    if not scores:
        return 0.5, ["not judged yet"], ["not judged yet"]
    got = {k: v for k, v in scores.items() if k in LIKERT and v is not None}
    if not got:
        return 0.5, ["no 1-5 item scored"], ["no 1-5 item scored"]
    low = sorted(got.items(), key=lambda kv: kv[1])[:2]
    risk = max(0.0, min(1.0, (5.0 - low[0][1]) / 4.0))
    reasons = [f"lowest judge items ({source}): " + ", ".join(f"{get_item(k).label} {v:.1f}" for k, v in low)]
    blind = ["judge: lowest items " + ", ".join(get_item(k).label for k, _ in low)]
    medians = medians or {}
    below = below_median(got, medians)
    if below:
        reasons.append("furthest below the dataset's median: " + ", ".join(
            f"{get_item(k).label} {got[k]:.1f} (median {medians[k]:.1f})" for k, _ in below))
        blind.append("judge: furthest below the dataset's median " + ", ".join(get_item(k).label for k, _ in below))
    return risk, reasons, blind


def _evidence_part(ev) -> tuple[float, list[str]]:
    if ev is None:
        return 0.0, []
    out, risk = [], 0.0
    f = ev.features
    if ev.omission_flag:
        risk += 0.4
        out.append(f"coverage flags omissions (estimated {f.omission:.0%} left out)")
    if f.weak_support:
        risk += 0.4 * f.weak_support
        out.append(f"{ev.weak_sentences} of {ev.sentences} sentences weakly supported")
    if f.citation_problems:
        risk += 0.3 * f.citation_problems
        out.append(f"{ev.citation_problems} of {ev.citations} citations wrong or missing")
    if f.unsupported:
        risk += 0.4 * f.unsupported
        out.append(f"{ev.unsupported_sentences} of {ev.verified_sentences} sentences state something the record "
                   "does not (claim verification)")
    if ev.stigma_terms:
        risk += 0.3
        out.append("stigmatizing language: " + ", ".join(f"“{t}”" for t in ev.stigma_terms[:3]))
    return min(1.0, risk), out


def queue(summaries: Sequence, scores: Mapping[str, Mapping[str, Optional[float]]], source: str,
          evidence: Mapping[str, object]) -> list[TriageEntry]:
    """The triage queue, highest priority first. ``summaries``: objects with ``summary_id`` and ``case_id``;
    ``scores``: summary id -> item -> the score to use (calibrated or expected; their medians over ``summaries``
    give the "furthest below the dataset's median" reason); ``source``: how those scores were made (shown in the
    reasons); ``evidence``: summary id -> :class:`engine.judge.features.EvidenceSummary`."""
    rows = []
    medians = item_medians({s.summary_id: scores.get(s.summary_id) for s in summaries})
    for s in summaries:
        sc = scores.get(s.summary_id)
        jr, jreasons, jblind = _judge_part(sc, source, medians)
        er, ereasons = _evidence_part(evidence.get(s.summary_id))
        rows.append((W_JUDGE * jr + W_EVIDENCE * er, jr, er, s, jreasons + ereasons, jblind + ereasons,
                     source if sc else "not judged"))
    rows.sort(key=lambda r: (-r[0], r[3].summary_id))
    n = len(rows)
    out = []
    for i, (p, jr, er, s, reasons, blind, src) in enumerate(rows):
        stratum = STRATA[min(2, i * 3 // n)] if n else STRATA[0]
        out.append(TriageEntry(s.summary_id, s.case_id, round(p, 4), round(jr, 4), round(er, 4), stratum,
                               tuple(reasons), tuple(blind), src))
    return out


def stratified_sample(entries: Sequence[TriageEntry], n: int, seed: int = 0) -> list[TriageEntry]:
    """``n`` summaries drawn across the strata in turn (review first, middle, lowest risk, …), at random within
    each; the result is in queue order."""
    rng = random.Random(seed)
    pools = {s: [e for e in entries if e.stratum == s] for s in STRATA}
    for p in pools.values():
        rng.shuffle(p)
    picked: list[TriageEntry] = []
    while len(picked) < min(n, len(entries)):
        for s in STRATA:
            if pools[s] and len(picked) < n:
                picked.append(pools[s].pop())
    order = {e.summary_id: i for i, e in enumerate(entries)}
    return sorted(picked, key=lambda e: order[e.summary_id])


def for_dataset(store, name: str, ds, config_key: Optional[str] = None) -> tuple[list[TriageEntry], str]:
    """The queue of a stored dataset for one judge configuration (default: the one covering most summaries), with
    its calibration when one is stored; returns (entries, a sentence saying what the scores are)."""
    from engine.judge.features import evidence_for
    from engine.judge.used_scores import for_dataset as scores_for_dataset

    evidence = evidence_for(store, name, ds)
    used = scores_for_dataset(store, name, config_key, evidence, ds)
    scores: dict = {}
    source = "no judge results"
    if used is not None:
        scores = used.used
        source = used.source
    entries = queue(ds.summaries, scores, source, evidence)
    return entries, source
