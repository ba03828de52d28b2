"""Per-summary evidence as numbers, for calibration and triage.

Reads what the product already computed and stored (the default coverage method's estimated omission share, the
sentence-support result with its citation verdicts and restatements, the claim verification's unsupported share
and lowest P(supported), MED-OMIT's omitted weight share — results of the smoke-test model are never read) and adds what is cheap to compute here (stigmatizing-
language hits of the summary, its length, the length of the case's notes and the summary's length relative to
them). Nothing in here calls the judge.

The two source-length features are there because raters' scores move with them: in the PDSQI-9 validation
(779 summaries, 7 physicians) the length of the notes correlated with the raters' scores (Spearman ρ −0.31 for
Thorough, −0.20 for Succinct, −0.19 for Organized) — a long record is harder to summarise thoroughly and briefly.
The judge scores each summary on its own rubric and is not calibrated for that effect; the calibration's correction
(:mod:`engine.judge.calibration`) can learn it from the local raters. No default combination uses them.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Optional

from engine.evidence.coverage import DEFAULT_METHOD as DEFAULT_COVERAGE_METHOD, METHODS
from engine.core import Dataset


# append only: a stored calibration reads the first len(its coefficients) of these
FEATURE_NAMES = ("omission", "weak_support", "citation_problems", "stigma_hits", "log_words", "unsupported",
                 "lowest_supported", "medomit_share", "restated", "log_source_words", "length_ratio")


@dataclass(frozen=True)
class Features:
    """Evidence about one summary that does not come from the judge (None = not computed)."""

    omission: Optional[float] = None  # estimated share of source facts left out (unit coverage)
    weak_support: Optional[float] = None  # share of summary sentences with weak support in the notes
    citation_problems: Optional[float] = None  # share of citations that are wrong or point to no note
    stigma_hits: Optional[float] = None  # stigmatizing terms the summary carries or introduces
    log_words: Optional[float] = None  # log(1 + words in the summary)
    unsupported: Optional[float] = None  # share of the verified sentences with an unsupported claim
    lowest_supported: Optional[float] = None  # the least supported claim's P(supported)
    medomit_share: Optional[float] = None  # MED-OMIT: omitted facts' weight / all linked facts' weight
    restated: Optional[float] = None  # share of summary sentences that restate an earlier one
    log_source_words: Optional[float] = None  # log(1 + words in the case's notes)
    length_ratio: Optional[float] = None  # words in the summary / words in the case's notes

    def vector(self) -> list[Optional[float]]:
        return [getattr(self, n) for n in FEATURE_NAMES]


@dataclass(frozen=True)
class EvidenceSummary:
    """The numbers behind :class:`Features`, with the counts a reviewer reads in a reason."""

    features: Features
    omission_flag: Optional[bool]  # the coverage method's own flag (global score above its threshold)
    weak_sentences: int
    sentences: int
    citation_problems: int
    citations: int
    stigma_terms: tuple[str, ...]
    unsupported_sentences: int = 0
    verified_sentences: int = 0


def _json(text: Optional[str]) -> Optional[dict]:
    try:
        d = json.loads(text) if text else None
    except ValueError:
        return None
    return d if isinstance(d, dict) else None


def evidence_for(store, dataset: str, ds: Dataset, extra_stigma=(), summary_ids=None) -> dict[str, EvidenceSummary]:
    """summary id -> its evidence numbers (only ``summary_ids`` when given); stored evidence that is missing leaves
    that feature None."""
    from engine.evidence import stigma

    cov = store.evidence_results(dataset, f"coverage:{DEFAULT_COVERAGE_METHOD}") if store is not None else {}
    ali = store.evidence_results(dataset, "alignment") if store is not None else {}
    ver = store.evidence_results(dataset, "verification") if store is not None else {}
    med = store.evidence_results(dataset, "medomit") if store is not None else {}
    lexicon = stigma.load_lexicon(extra_stigma)
    out: dict[str, EvidenceSummary] = {}
    note_scans: dict[str, list] = {}  # case id -> its notes' stigma scans, made once for all its summaries
    wanted = None if summary_ids is None else set(summary_ids)
    for s in ds.summaries:
        if wanted is not None and s.summary_id not in wanted:
            continue
        c, a = _json(cov.get(s.summary_id)), _json(ali.get(s.summary_id))
        omission = flag = None
        if c and isinstance(c.get("global_score"), (int, float)):
            omission = float(c["global_score"])
            m = METHODS.get(c.get("method", ""))  # the current flag threshold, as the pages apply it
            thr = m.flag_for(c.get("params") or {}) if m is not None else c.get("flag_threshold")
            flag = bool(omission > thr) if isinstance(thr, (int, float)) else None
        weak = n_sent = problems = n_cit = 0
        weak_share = cit_share = restated = None
        if a and isinstance(a.get("sentences"), list):
            sents = [x for x in a["sentences"] if isinstance(x, dict)]
            n_sent = len(sents)
            weak = sum(1 for x in sents if x.get("weak"))
            n_cit = sum(1 for x in sents if x.get("citation_verdict") not in (None, ""))
            problems = sum(1 for x in sents if x.get("citation_verdict") in ("wrong", "missing", "unknown"))
            weak_share = weak / n_sent if n_sent else None
            cit_share = problems / n_cit if n_cit else None
            restated = sum(1 for x in sents if x.get("restates") is not None) / n_sent if n_sent else None
        try:
            case = ds.case(s.case_id)
            if s.case_id not in note_scans:
                note_scans[s.case_id] = stigma.scan_notes(case, lexicon)
            st = stigma.assess(case, s, lexicon=lexicon, note_scans=note_scans[s.case_id])
            terms = tuple(h.hit.text for h in st.summary_hits)
        except (KeyError, ValueError):
            terms = ()
        words = len(s.text.split())
        src = _source_words(ds, s.case_id)
        v_share, v_low, n_uns, n_ver = _verification(_json(ver.get(s.summary_id)))
        feats = Features(omission, weak_share, cit_share, float(len(terms)), math.log1p(words), v_share, v_low,
                         _medomit_share(_json(med.get(s.summary_id))), restated,
                         None if src is None else math.log1p(src), words / src if src else None)
        out[s.summary_id] = EvidenceSummary(feats, flag, weak, n_sent, problems, n_cit, terms, n_uns, n_ver)
    return out


def _source_words(ds: Dataset, case_id: str) -> Optional[int]:
    try:
        return sum(len(n.text.split()) for n in ds.case(case_id).notes)
    except KeyError:
        return None


def _verification(v: Optional[dict]) -> tuple[Optional[float], Optional[float], int, int]:
    """(unsupported share, lowest P(supported), unsupported sentences, scored sentences) of a stored verification;
    Nones for none, one by the smoke-test model, or one with nothing scored."""
    if not v or v.get("smoke_test") or not isinstance(v.get("sentences"), list):
        return None, None, 0, 0
    ps = [x.get("p_supported") for x in v["sentences"] if isinstance(x, dict)]
    scored = [float(p) for p in ps if isinstance(p, (int, float))]
    if not scored:
        return None, None, 0, 0
    n_uns = sum(1 for x in v["sentences"] if isinstance(x, dict) and x.get("verdict") == "unsupported")
    return n_uns / len(scored), min(scored), n_uns, len(scored)


def _medomit_share(m: Optional[dict]) -> Optional[float]:
    """Omitted weight / total weight of the scored facts of a complete MED-OMIT result; None for none, an incomplete
    one, one by the smoke-test model, or one whose facts are not the default source's
    (:mod:`engine.evidence.medomit.facts`)."""
    from engine.evidence.medomit import DEFAULT_FACT_SOURCE, MedOmitResult

    if not m or m.get("status") != "complete":
        return None
    try:
        res = MedOmitResult.from_dict(m)
    except (KeyError, TypeError, ValueError):
        return None
    if res.smoke_test or res.fact_source != DEFAULT_FACT_SOURCE:
        return None  # the Thorough combination's MED-OMIT signal is the model-extracted facts' weight
    total = sum(s.score for s in res.scores if s.fact_id not in {f.fact_id for f in res.not_found})
    return float(res.document_weight or 0.0) / total if total > 0 else None
