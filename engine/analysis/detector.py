"""The stigmatizing-language detector and the LLM judge against the raters on the two stigma items (Cohen's κ).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from engine import statistics as rel
from engine.core import Dataset
from engine.analysis.items import plain_reason


@dataclass
class DetectorAgreement:
    """One PDSQI-9 stigmatizing-language item: the lexicon detector and the LLM judge against the raters' reference
    (adjudicated score, else the raters' median; a tie of yes and no counts as no reference and is left out)."""
    item: str
    label: str
    n: int  # summaries with a reference answer
    reference_yes: int
    detector_yes: int
    detector_agree: int  # summaries where the detector gives the reference answer
    detector_kappa: Optional[rel.Estimate]
    llm_n: int  # of those, summaries the LLM judge answered
    llm_yes: int
    llm_agree: int
    llm_kappa: Optional[rel.Estimate]
    notes: list[str] = field(default_factory=list)


def detector_agreement(ds: Dataset, detector: dict[str, dict[str, float]],
                       llm: Optional[dict[str, dict[str, Optional[float]]]] = None) -> list[DetectorAgreement]:
    """Per stigmatizing-language item: agreement of the detector's yes/no (``detector``: summary id -> item ->
    1.0/0.0, from engine.evidence.stigma.detector) and of the LLM judge's median with the raters' reference — counts and Cohen's
    κ with its asymptotic 95 % CI (engine.statistics.cohen_kappa). κ is not defined when a side answers the same
    for every summary; the reason is kept in ``notes``."""
    from engine.data import medians
    from engine.core import get_item

    out = []
    for key in ("stigmatizing_notes", "stigmatizing_summary"):
        ref, det, llm_pairs = [], [], []
        for s in ds.summaries:
            m = medians(ds.ratings_for(s.summary_id)).get(key)
            d = detector.get(s.summary_id, {}).get(key)
            if m is None or m == 0.5 or d is None:
                continue
            ref.append(1.0 if m > 0.5 else 0.0)
            det.append(float(d))
            v = (llm or {}).get(s.summary_id, {}).get(key)
            if v is not None and v != 0.5:
                llm_pairs.append((ref[-1], 1.0 if v > 0.5 else 0.0))
        notes: list[str] = []

        def kappa(pairs, who):
            if len(pairs) < 2:
                notes.append(f"{who}: fewer than two summaries to compare")
                return None
            try:
                return rel.cohen_kappa(np.array(pairs, dtype=float))
            except Exception as exc:  # no variance on a side: κ undefined
                notes.append(f"{who}: κ not defined ({plain_reason(exc)})")
                return None

        pairs = list(zip(ref, det))
        out.append(DetectorAgreement(
            key, get_item(key).label, len(ref), int(sum(ref)), int(sum(det)), sum(a == b for a, b in pairs),
            kappa(pairs, "detector"), len(llm_pairs), int(sum(b for _, b in llm_pairs)),
            sum(a == b for a, b in llm_pairs), kappa(llm_pairs, "LLM judge") if llm_pairs else None, notes))
    return out
