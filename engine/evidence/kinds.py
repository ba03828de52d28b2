"""The registry of evidence kinds: every kind of evidence the workspace stores per summary, reached by its key.

A kind's key is the method name its results are stored under (``alignment``, ``coverage:<method>`` for each
registered coverage method, ``medomit``, ``verification``). The CLI (``python -m engine evidence``), the pages,
the committee report and the benchmarks read stored evidence through :func:`stored_results`, which turns the
stored JSON into the kind's typed result.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Optional

from engine.evidence.support import ALIGNMENT_VERSION, result_from_dict as alignment_from
from engine.evidence.coverage import COVERAGE_VERSION, METHODS, result_from_dict as coverage_from
from engine.evidence.medomit import METHOD_VERSION, MedOmitResult
from engine.evidence.support.verification import (METHOD_KEY as VERIFY_KEY, METHOD_VERSION as VERIFY_VERSION,
                                                  VerificationResult)


@dataclass(frozen=True)
class EvidenceKind:
    key: str  # the method key its results are stored under
    label: str
    computed_with: str  # what computes it: "embeddings" or "LLM"
    version: str  # part of every stored result's key: a new version recomputes stored results
    parse: Callable[[str], object]  # stored JSON -> the typed result

    def load(self, text: str):
        return self.parse(text)


def _kinds() -> dict[str, EvidenceKind]:
    out = {"alignment": EvidenceKind("alignment", "sentence support, citations and restatements", "embeddings",
                                     ALIGNMENT_VERSION, lambda t: alignment_from(json.loads(t)))}
    for key, m in METHODS.items():
        out[f"coverage:{key}"] = EvidenceKind(f"coverage:{key}", f"uncovered source regions ({m.label})", "embeddings",
                                              COVERAGE_VERSION, lambda t: coverage_from(json.loads(t)))
    out["medomit"] = EvidenceKind("medomit", "MED-OMIT omitted facts with importance weights", "LLM", METHOD_VERSION,
                                  MedOmitResult.from_json)
    out[VERIFY_KEY] = EvidenceKind(VERIFY_KEY, "claim verification (P(supported) per claim)", "LLM", VERIFY_VERSION,
                                   lambda t: VerificationResult.from_dict(json.loads(t)))
    return out


EVIDENCE_KINDS: dict[str, EvidenceKind] = _kinds()


def kind(key: str) -> EvidenceKind:
    """The kind registered under ``key``; ValueError naming the registered keys otherwise."""
    try:
        return EVIDENCE_KINDS[key]
    except KeyError:
        raise ValueError(f"unknown evidence kind {key!r}; registered: {', '.join(EVIDENCE_KINDS)}") from None


def stored_results(store, dataset: str, key: str) -> dict[str, object]:
    """summary id -> the typed result of evidence kind ``key`` stored for dataset ``dataset`` (the newest)."""
    k = kind(key)
    return {sid: k.load(text) for sid, text in store.evidence_results(dataset, key).items()}


def stored_result(store, dataset: str, key: str, summary_id: str) -> Optional[object]:
    """The typed result of evidence kind ``key`` stored for one summary (the newest), or None; only that one is
    parsed."""
    text = store.evidence_results(dataset, key).get(summary_id)
    return None if text is None else kind(key).load(text)
