"""Default item scores that need no raters: the judge's expected score combined with the item's own evidence.

Each signal is put on the rubric's 1-5 scale by a fixed map (higher = better, clipped to 1-5):

==============  ==========================================================  =========================
signal          what it reads (:class:`engine.judge.features.Features`)      on the 1-5 scale
==============  ==========================================================  =========================
judge           the judge's expected score                                   itself
coverage        unit coverage's estimated share of the source left out       5 − 8 · share
medomit         MED-OMIT's omitted importance weight / all facts' weight     5 − 4 · share
unsupported     share of verified sentences with an unsupported claim        5 − 8 · share
citations       share of citations that are wrong or point to no note        5 − 4 · share
restated        share of summary sentences that restate an earlier one       5 − 8 · share
==============  ==========================================================  =========================

(a summary leaving out half of its source, or with every other sentence unsupported or restated, reaches 1; a
wrong citation in every sentence reaches 1). The combination of an item is the weighted mean of its signals
(:data:`COMBINATIONS`); a signal not computed for a summary is left out and the other weights renormalised, so
with no evidence the combination is the judge's score. Items without evidence of their own (Useful, Organized,
Comprehensible, …) have no combination: their score is the judge's. The weights are fixed, not fitted: every
item gives the judge and its evidence half each (:data:`WEIGHTS_NOTE`). They weigh values on the 1-5 scale: a
judge whose expected scores spread by hundredths (the 1.5B's do) leaves the ranking to the evidence, whose maps
spread by half a point or more, and only breaks its ties.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from engine.judge.features import Features

COMBINATION_VERSION = "combination-v1"
WEIGHTS_NOTE = ("fixed before measuring: the judge and the item's evidence weigh half each (the evidence's half "
                "split evenly between its signals)")


def _scale(k: float) -> Callable[[float], float]:
    return lambda share: min(5.0, max(1.0, 5.0 - k * share))


@dataclass(frozen=True)
class Signal:
    key: str
    label: str
    feature: Optional[str]  # the Features attribute (None: the judge's expected score)
    to_scale: Callable[[float], float]


SIGNALS: dict[str, Signal] = {s.key: s for s in (
    Signal("judge", "judge's expected score", None, lambda e: e),
    Signal("coverage", "unit coverage", "omission", _scale(8.0)),
    Signal("medomit", "MED-OMIT omitted weight", "medomit_share", _scale(4.0)),
    Signal("unsupported", "unsupported claims", "unsupported", _scale(8.0)),
    Signal("citations", "citation verdicts", "citation_problems", _scale(4.0)),
    Signal("restated", "restatements", "restated", _scale(8.0)),
)}

COMBINATIONS: dict[str, dict[str, float]] = {
    "thorough": {"judge": 0.5, "coverage": 0.25, "medomit": 0.25},
    "accurate": {"judge": 0.5, "unsupported": 0.5},
    "cited": {"judge": 0.5, "citations": 0.5},
    "succinct": {"judge": 0.5, "restated": 0.5},
}


@dataclass(frozen=True)
class Part:
    signal: str
    raw: float  # the expected score or the feature's share
    scaled: float  # on the 1-5 scale
    weight: float  # after renormalising over the signals present


@dataclass(frozen=True)
class Combined:
    """One item's combined score and what it is made of."""

    item: str
    value: float
    parts: tuple[Part, ...]

    @property
    def label(self) -> str:
        return "combination: " + " + ".join(f"{p.weight:.2f} × {SIGNALS[p.signal].label}" for p in self.parts)

    @property
    def uses_evidence(self) -> bool:
        return any(p.signal != "judge" for p in self.parts)


def has_combination(item: str) -> bool:
    return item in COMBINATIONS


def combine(item: str, expected: Optional[float], feats: Optional[Features]) -> Optional[Combined]:
    """The item's combined score (None when the judge gave no score for it); an item without a combination
    gets the judge's score as its only part."""
    if expected is None:
        return None
    weights = COMBINATIONS.get(item, {"judge": 1.0})
    present: list[tuple[str, float, float, float]] = []
    for key, w in weights.items():
        sig = SIGNALS[key]
        raw = expected if sig.feature is None else getattr(feats or Features(), sig.feature)
        if raw is None:
            continue
        present.append((key, float(raw), sig.to_scale(float(raw)), w))
    total = sum(w for *_, w in present)
    parts = tuple(Part(k, raw, round(sc, 4), round(w / total, 4)) for k, raw, sc, w in present)
    value = sum(p.scaled * w / total for p, (*_, w) in zip(parts, present))
    return Combined(item, round(value, 4), parts)


def combined_scores(expected: Mapping[str, Optional[float]], feats: Optional[Features]) -> dict[str, Combined]:
    """item -> combined score for every item the judge scored that has a combination."""
    out = {}
    for item in COMBINATIONS:
        c = combine(item, expected.get(item), feats)
        if c is not None:
            out[item] = c
    return out
