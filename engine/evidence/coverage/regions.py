"""Which regions of the source notes a summary does not cover (omission evidence from embeddings).

Methods
-------
* ``kde`` — EmbedKDECheck (Oukelmoun et al., "Detecting Omissions in LLM-Generated Medical Summaries"): token embeddings of the whole source and of the summary,
  optional cleaning (stopwords, short words), standardisation and PCA fitted on both sets together, a Gaussian
  KDE fitted on the summary's tokens; each source token gets the density ratio r = density / (lowest density of
  any summary token) and the omission score 1/r, reported here as log(1/r) (same order, no overflow); the global
  score is the maximum. The reverse direction (KDE on the source, scored on summary tokens) flags summary
  content the source may not support.
* ``unitcov`` (default) — beyond the paper: the source is cut into units (sentences; transcript lines without
  their speaker tag; long sentences in 40-word windows); each unit is as covered as the better of its best cosine
  with a summary sentence and the share of its content words and numbers (spoken numbers read as digits) the
  summary repeats; the global score is the salience-weighted mean of 1 − coverage (:mod:`engine.evidence.text.salience`),
  mapped by a line fitted per source kind (notes / conversation) on the development split of
  ``bench/omission_benchmark.py`` (a logistic curve) onto the true omission rate, so the score reads as "estimated share of the
  facts left out" and one flag threshold serves every case. Any non-empty summary is scored.
* ``topiccov`` — source sentences grouped into topics (average-linkage clustering); a topic is as covered as its
  best-covered sentence; the global score is the mean over topics.
* ``sentcov`` — each source sentence is matched to its most similar summary sentence; its omission score is
  1 − that similarity; the global score is the mean over source sentences.

Every method is registered once in :data:`METHODS` (key, label, scoring function, thresholds) and reached by its
key from the CLI (``python -m engine omissions --method KEY``), the Case page and the benchmark.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Optional, Sequence

import numpy as np

from engine.core import Case, Summary, citations
from engine.evidence.coverage.embedding_methods import kde_scores, sentcov_scores, topiccov_scores
from engine.evidence.coverage.results import CoverageError, CoverageParams, CoverageResult, DEFAULT_METHOD, Region, Unit
from engine.evidence.embeddings import Embedder, EMBEDDING_NAME
from engine.evidence.coverage.unit_coverage import unitcov_scores
from engine.evidence.text import tokenize


# A region stating a change or a next step (started, stopped, switched, pending, scheduled, ordered, referred …)
# counts like one naming a missing key term: both tiers together were chosen on the development split of
# bench/omission_benchmark.py (share of removed facts in the first 5 regions, notes 0.31 -> 0.49, conversations
# 0.24 -> 0.34; key terms alone 0.43 / 0.31; see docs/evidence.md for the test split).
RANK_ACTIONS = True  # False: the key-term tier alone (the benchmark's comparison)
_ACTION = re.compile(r"\b(?:start(?:s|ed|ing)?|initiat\w*|stop(?:s|ped)?|discontinu\w*|hold|held|switch\w*|"
                     r"increas\w*|decreas\w*|reduc\w*|taper\w*|titrat\w*|pending|scheduled|ordered|refer\w*|"
                     r"recommend\w*|avoid\w*|must|planned|due)\b", re.I)


def region_rank_key(r: Region) -> tuple:
    """Sort key (ascending = best first): salience-0 regions last; then by tier — a region that names a key term
    the summary never writes (``missing``) and states a change or a next step first, then one with a missing key
    term, then one stating a change or a next step, then the rest; within a tier by score x salience (a negative
    kde score is not scaled), then by raw score."""
    weighted = r.score * r.salience if r.score > 0 else r.score
    action = RANK_ACTIONS and _ACTION.search(r.text or "") is not None
    tier = 0 if r.missing and action else 1 if r.missing else 2 if action else 3
    return (r.salience <= 0, tier, -weighted, -r.score)


def region_marks(r: Region) -> str:
    """The tier of :func:`region_rank_key` as marks a reader sees: "★" the region names a key term the summary never
    writes, "➜" it states a change or a next step; regions rank by these marks first, then by score x salience."""
    action = RANK_ACTIONS and _ACTION.search(r.text or "") is not None
    return ("★" if r.missing else "") + ("➜" if action else "")


def region_rank_score(r: Region) -> float:
    """The number regions of one tier are ranked by (score x salience)."""
    return r.score * r.salience if r.score > 0 else r.score


REGIONS_ORDER = ("rank order, not the order of the omission score: the regions whose score is at or above the "
                 "threshold first, then (when fewer pass it) the least covered places below it; within each, by "
                 "marks — ★➜, ★, ➜, none (★: names a key term the summary never writes; ➜: states a change or a "
                 "next step) — and within one mark by rank_score (omission score x salience), highest first; "
                 "regions of salience 0 (headers, boilerplate) last")


def listed_order_key(r: Region, threshold: float) -> tuple:
    """The order :data:`REGIONS_ORDER` states, from what a listed region shows (its score against ``threshold``,
    its salience, :func:`region_marks`, :func:`region_rank_score`): ascending = listed first. It is the order
    :func:`select_regions` stores (the threshold's regions, then the top-up places, each by
    :func:`region_rank_key`), except that a top-up place whose own score reaches the threshold sorts with the
    regions at or above it."""
    return (r.score < threshold, *region_rank_key(r))


def region_row(r: Region, threshold: float) -> dict:
    """A listed region as plain data with the figures its place in :data:`REGIONS_ORDER` comes from."""
    return {"note_id": r.note_id, "start": r.start, "end": r.end, "text": r.text, "marks": region_marks(r),
            "rank_score": round(region_rank_score(r), 4), "score": r.score, "salience": r.salience,
            "below_threshold": r.score < threshold, "missing": list(r.missing)}


# ------------------------------------------------------------------------------------------------- kde


# ------------------------------------------------------------------------------------------------- sentcov


# ------------------------------------------------------------------------------------------------- unitcov


# ------------------------------------------------------------------------------------------------- regions


def merge_regions(case: Case, units: Sequence[Unit], threshold: float, top: int, min_words: int = 2,
                  salience: Optional[Sequence[float]] = None, summary_text: Optional[str] = None) -> list[Region]:
    """Adjacent units at or above the threshold (same note, only spaces/punctuation between) become one region,
    widened to whole words and trimmed of punctuation at its ends; the region's score is its highest unit score,
    and score x salience its highest salience-weighted unit score (``salience``: one weight per unit; None =
    :func:`engine.evidence.text.salience.unit_salience`, all 1.0 = rank by raw score). With ``summary_text``, each region lists
    its key terms the summary never writes (:func:`engine.evidence.text.terms.missing_key_terms`). Regions are ranked by
    :func:`region_rank_key`."""
    from engine.evidence.text import missing_key_terms

    if salience is None:
        from engine.evidence.text import unit_salience

        salience = unit_salience(case, units)
    if len(salience) != len(units):
        raise ValueError("merge_regions needs one salience weight per unit")
    regions: list[list] = []
    notes = {n.note_id: n.text for n in case.notes}
    cur: Optional[list] = None
    for u, w in zip(units, salience):
        if u.score < threshold:
            if cur:
                regions.append(cur)
            cur = None
            continue
        if cur and cur[0] == u.note_id and not re.search(r"[A-Za-z0-9]", notes[u.note_id][cur[2]:u.start]) \
                and u.start - cur[2] <= 3:
            cur[2], cur[3] = max(cur[2], u.end), max(cur[3], u.score)
            cur[4], cur[5] = max(cur[4], float(w)), max(cur[5], u.score * float(w))
        else:
            if cur:
                regions.append(cur)
            cur = [u.note_id, u.start, u.end, u.score, float(w), u.score * float(w)]
    if cur:
        regions.append(cur)
    out, seen = [], set()
    # a region's salience makes score x salience its best salience-weighted unit score (a header merged into a
    # content sentence ranks by the sentence's score); with a score <= 0 (kde at a very low threshold) it is the
    # largest unit weight
    cands = [Region(nid, s, e, "", sc, min(1.0, max(0.0, best / sc)) if sc > 0 else w)
             for nid, s, e, sc, w, best in regions]
    widened = []
    for r in cands:
        t = notes[r.note_id]
        s, e = r.start, r.end
        while s > 0 and t[s - 1].isalnum():
            s -= 1
        while e < len(t) and t[e].isalnum():
            e += 1
        while s < e and (t[s].isspace() or t[s] in ",;:.)]}-–—/"):
            s += 1  # a region never opens on the punctuation that closed the text before it
        while e > s and (t[e - 1].isspace() or t[e - 1] in ",;:([{-–—/"):
            e -= 1
        missing = missing_key_terms(t[s:e], summary_text) if summary_text is not None else []
        widened.append(Region(r.note_id, s, e, t[s:e], round(r.score, 4), round(r.salience, 4), missing))
    for r in sorted(widened, key=region_rank_key):
        key = " ".join(tokenize(r.text, case="lower_text"))
        if len(tokenize(r.text, case="keep", digits="none", min_len=2)) < min_words or key in seen:
            continue  # a header or a lone fragment is no "region"; the same text repeated is listed once
        seen.add(key)
        out.append(r)
        if len(out) == top:
            break
    return out


def select_regions(case: Case, units: Sequence[Unit], method: str, threshold: float, top: int,
                   salience: Optional[Sequence[float]] = None, summary_text: Optional[str] = None) -> list[Region]:
    """The regions :func:`score_coverage` stores: up to ``top`` regions at or above the threshold; when fewer pass
    it, also the least covered places (units in the top 10 % of scores, 1 % for kde), all ranked by
    :func:`region_rank_key`. ``salience`` as in :func:`merge_regions` (None = the engine.evidence.text.salience rule)."""
    if salience is None:
        from engine.evidence.text import unit_salience

        salience = unit_salience(case, units)
    min_words = METHODS[method].min_region_words if method in METHODS else 2
    regions = merge_regions(case, units, threshold, top, min_words, salience, summary_text)
    if len(regions) < top:  # few units above the threshold: also list the least covered places
        cut = float(np.quantile([u.score for u in units], 0.99 if min_words == 1 else 0.9))
        extra = merge_regions(case, units, min(cut, threshold), top, min_words, salience, summary_text)
        seen = {(r.note_id, r.start) for r in regions}
        extra = [r for r in extra if (r.note_id, r.start) not in seen][: top - len(regions)]
        # the regions at or above the threshold first: a top-up place never outranks them
        return sorted(regions, key=region_rank_key) + sorted(extra, key=region_rank_key)
    return sorted(regions, key=region_rank_key)


# ------------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class CoverageMethod:
    """One way of scoring what a summary leaves out; registered once, reached by ``key`` from the CLI
    (``omissions --method KEY``), the Case page and the benchmark."""
    key: str
    label: str
    score: Callable  # (case, summary, embedder, CoverageParams) -> (units, global score, unsupported, info)
    region_threshold: float  # units at or above it are highlighted (the Case page's slider starts here)
    flag_threshold: float  # global score at or above it flags the summary as likely omissive
    unit: str  # what a scored unit is: "sentence", "token"
    min_region_words: int  # a region needs this many real words to be listed
    global_meaning: str  # what the global score is, in words
    thresholds_from: str  # where the thresholds come from
    flag_by_kind: Optional[dict] = None  # source kind -> flag threshold, where the kinds need their own

    def flag_for(self, info: dict) -> float:
        """The flag threshold for a result whose scoring info is ``info`` (its source kind, where known)."""
        return (self.flag_by_kind or {}).get(info.get("source_kind", ""), self.flag_threshold)


# unitcov's "likely omission" flag, per source kind. A good summary of notes leaves facts out by design: the flag
# says the summary is estimated to leave out more than a third of them (the team's sample: its 12 high-quality
# summaries score 0.11-0.31, none flagged; bench/flag_realdev.py prints the rates by quality group). A real
# conversation holds much a complete note rightly leaves out: 0.551 is the lowest threshold flagging at most 10 % of
# clinicians' complete notes on the ACI-BENCH development split (bench/flag_realdev.py --choose; test split:
# complete 0 %, half-omitted 29 %). The former single threshold 0.171 flagged 78 % / 94 % of complete notes there.
UNITCOV_FLAGS = {"notes": 0.333, "conversation": 0.551}

METHODS: dict[str, CoverageMethod] = {m.key: m for m in (
    CoverageMethod("unitcov", "unit coverage (default)", unitcov_scores, 0.5, UNITCOV_FLAGS["notes"], "sentence", 2,
                   "estimated share of the source's facts the summary leaves out (0-1)",
                   "region threshold: the development split of bench/omission_benchmark.py; flag thresholds per "
                   "source kind (UNITCOV_FLAGS)", UNITCOV_FLAGS),
    CoverageMethod("topiccov", "topic coverage", topiccov_scores, 0.6, 0.632, "sentence", 2,
                   "mean over source topics of 1 − the topic's best cosine with a summary sentence",
                   "tuned on the sample before the honest benchmark (no split)"),
    CoverageMethod("sentcov", "sentence coverage", sentcov_scores, 0.6, 0.628, "sentence", 2,
                   "mean over source sentences of 1 − the best cosine with a summary sentence",
                   "tuned on the sample before the honest benchmark (no split)"),
    CoverageMethod("kde", "EmbedKDECheck (paper)", kde_scores, 25.0, 25.3, "token", 1,
                   "highest log(1/r) of a source token (r: summary density ratio)",
                   "tuned on the sample before the honest benchmark (no split)"),
)}
# the thresholds by key, for callers that need only those
assert DEFAULT_METHOD in METHODS, DEFAULT_METHOD  # the default is a registered method
DEFAULT_THRESHOLDS = {k: m.region_threshold for k, m in METHODS.items()}
FLAG_THRESHOLDS = {k: m.flag_threshold for k, m in METHODS.items()}


def method(key: str) -> CoverageMethod:
    """The registered method ``key``; a CoverageError naming the choices otherwise."""
    try:
        return METHODS[key]
    except KeyError:
        raise CoverageError(f"unknown coverage method {key!r}; choose one of {', '.join(METHODS)}") from None


def score_coverage(case: Case, summary: Summary, emb: Embedder, params: CoverageParams = CoverageParams()
                   ) -> CoverageResult:
    m = method(params.method)
    t0 = time.perf_counter()
    thr = params.resolved_threshold(m.region_threshold)
    units, g, unsupported, info = m.score(case, summary, emb, replace(params, threshold=thr))
    regions = select_regions(case, units, params.method, thr, params.top_regions,
                             summary_text=citations.strip(summary.text))
    return CoverageResult(summary.summary_id, params.method, round(g, 4), thr, units, regions, unsupported,
                          {**asdict(params), **info}, round(time.perf_counter() - t0, 3), m.flag_for(info))


# ------------------------------------------------------------------------------------------------- calibration


@dataclass
class Calibration:
    threshold: float
    precision: float
    recall: float
    f1: float
    n: int


def calibrate(scores: Sequence[float], labels: Sequence[bool]) -> Calibration:
    """F1-maximising threshold for 'omitted' = score >= threshold, from labelled (source, summary) pairs."""
    if len(scores) != len(labels) or not scores:
        raise ValueError("calibration needs as many labels as scores, and at least one")
    pos = sum(bool(x) for x in labels)
    if pos == 0:
        raise ValueError("calibration needs at least one pair labelled omitted")
    best = Calibration(math.inf, 0.0, 0.0, 0.0, len(scores))
    for t in sorted(set(scores)):
        pred = [s >= t for s in scores]
        tp = sum(p and y for p, y in zip(pred, labels))
        fp = sum(p and not y for p, y in zip(pred, labels))
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / pos
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        if f1 > best.f1:
            best = Calibration(float(t), round(prec, 4), round(rec, 4), round(f1, 4), len(scores))
    return best


def result_from_dict(d: dict) -> CoverageResult:
    """A stored result; its flag threshold is the registry's current one (a decision over the stored global score,
    not part of the scoring)."""
    flag = METHODS[d["method"]].flag_for(d["params"]) if d["method"] in METHODS else d["flag_threshold"]
    return CoverageResult(d["summary_id"], d["method"], d["global_score"], d["threshold"],
                          [Unit(**u) for u in d["units"]], [Region(**r) for r in d["regions"]],
                          [Region(**r) for r in d["unsupported"]], d["params"], d["seconds"], flag)


# Part of every stored result's key: bump it when the scoring code changes, so stored and shipped results
# (sample_data/evidence_results.jsonl) are recomputed instead of shown stale.
# v2: citations stripped by engine.core.citations (every form, runs with separators)
# v3: regions ranked by score x salience (engine.evidence.text.salience: boilerplate and small talk last); Region.salience
# v4: the method registry, unitcov (default), any non-empty summary scored. v5: regions naming a key term the summary
# never writes rank first; units no longer split after an abbreviation; region ends trimmed of punctuation; a
# unit's coverage capped by the share of its key terms the summary writes (calibration refitted).
# v6: that cap starts at 0.3 instead of 0.5, so a unit whose key terms the summary never writes is uncovered
# (calibration refitted); devices and home therapies (engine.evidence.text.terms.DEVICE_TERMS) are key terms.
# v7: the one Porter stemmer and number reader of engine.evidence.text.
COVERAGE_VERSION = "coverage-v8"  # v8: key terms read through the abbreviation list; a term only named negated is
# not a missing key term


def coverage_key(case: Case, summary: Summary, params: CoverageParams, model: str) -> str:
    from engine.core import json_key

    return json_key({"version": COVERAGE_VERSION, "params": asdict(params), "model": model,
                     "notes": [asdict(n) for n in case.notes], "summary": summary.text})


def coverage_cached(store, dataset: str, case: Case, summary: Summary, emb,
                    params: CoverageParams = CoverageParams()) -> CoverageResult:
    """Score once and keep the result in the workspace: reopening a case shows it at once.

    ``emb`` is an :class:`Embedder` or a function returning one (called only when the result is not stored,
    so a stored result is shown without loading the model)."""
    import json

    key = coverage_key(case, summary, params, EMBEDDING_NAME)
    method = f"coverage:{params.method}"
    hit = store.get_evidence(dataset, method, key, summary.summary_id) if store is not None else None
    if hit is not None:
        return result_from_dict(json.loads(hit))
    res = score_coverage(case, summary, emb if isinstance(emb, Embedder) else emb(), params)
    if store is not None:
        store.put_evidence(dataset, method, key, summary.summary_id, "complete", json.dumps(res.to_dict()))
    return res
