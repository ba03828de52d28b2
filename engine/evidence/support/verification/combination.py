"""One probability from every signal of a claim: a logistic model whose weights are never negative.

``P(unsupported) = σ(b₀ + Σ bᵢ xᵢ)`` over the signals of :mod:`.signals` (:data:`.signals.FEATURES`), with every
``bᵢ ≥ 0``: each signal can only raise the probability that a claim is unsupported (a monotone combination). The
weights were fitted on the development split of ``bench/verify_bench.py`` (real conversations, their notes' sentences,
edits and what summarizers add) and are shipped in :data:`COMBINATION_PATH` with the split they were chosen on; the
same file gives the two thresholds on P(supported) = 1 − P(unsupported):

* below ``unsupported`` a claim is *unsupported* (chosen for precision on the development split);
* from ``unsupported`` up to ``supported`` it is *uncertain*: shown apart, never as unsupported;
* at or above ``supported`` it is *supported*.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from engine.evidence.support.verification.signals import FEATURES, Signals

COMBINATION_PATH = Path(__file__).resolve().parents[3] / "resources" / "verify_combination.json"


@dataclass(frozen=True)
class Combination:
    version: str
    features: tuple[str, ...]
    intercept: float
    weights: tuple[float, ...]
    unsupported_below: float  # P(supported) below it: unsupported
    supported_from: float  # P(supported) at or above it: supported; in between: uncertain
    chosen_on: str = ""

    def p_supported(self, s: Signals) -> float:
        z = self.intercept + sum(w * x for w, x in zip(self.weights, s.vector()))
        return 1.0 - 1.0 / (1.0 + math.exp(-z))

    def verdict(self, p: float) -> str:
        return "unsupported" if p < self.unsupported_below else "uncertain" if p < self.supported_from else "supported"

    def drivers(self, s: Signals) -> list[tuple[str, float]]:
        """Each signal's part of the claim's score (weight × value), largest first, those that add nothing left out."""
        parts = [(f, w * x) for f, w, x in zip(self.features, self.weights, s.vector()) if w * x > 0]
        return sorted(parts, key=lambda p: -p[1])

    def to_dict(self) -> dict:
        return {"version": self.version, "features": list(self.features), "intercept": self.intercept,
                "weights": list(self.weights), "unsupported_below": self.unsupported_below,
                "supported_from": self.supported_from, "chosen_on": self.chosen_on}

    @classmethod
    def from_dict(cls, d: dict) -> "Combination":
        feats = tuple(d["features"])
        if feats != FEATURES:
            raise ValueError(f"the combination's features {feats} are not this version's {FEATURES}")
        weights = tuple(float(w) for w in d["weights"])
        if any(w < 0 for w in weights):
            raise ValueError("a combination weight is negative: the combination must be monotone")
        return cls(str(d["version"]), feats, float(d["intercept"]), weights, float(d["unsupported_below"]),
                   float(d["supported_from"]), str(d.get("chosen_on", "")))


@lru_cache(maxsize=1)
def shipped_combination() -> Combination:
    return Combination.from_dict(json.loads(COMBINATION_PATH.read_text(encoding="utf-8")))


def fit_monotone(X: Sequence[Sequence[float]], y: Sequence[int], l2: float = 1e-2,
                 sample_weight: Optional[Sequence[float]] = None) -> tuple[float, tuple[float, ...]]:
    """(intercept, weights) of a logistic regression of ``y`` (1 = unsupported) on the signals ``X`` with every
    weight ≥ 0 (:func:`engine.statistics.bounded_logistic`: L-BFGS-B with bounds, a small L2 penalty on the
    weights), the intercept free; ``sample_weight`` weighs each row (default: 1)."""
    from engine.statistics import bounded_logistic

    fit = bounded_logistic(X, y, lower=0.0, l2=l2, sample_weight=sample_weight)
    return fit.intercept, fit.weights
