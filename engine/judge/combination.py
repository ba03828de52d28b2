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
wrong citation in every sentence reaches 1). Each item's :class:`Combination` (:data:`COMBINATIONS`) gives fixed
weights and one of two forms:

* ``"mean"`` — the weighted mean of the signals' 1-5 values. The weights weigh values on the 1-5 scale, so a
  signal that spreads by hundredths (the 1.5B judge's expected scores do) only breaks the ties of one that spreads
  by half a point (the evidence's maps do): in practice the evidence orders the summaries.
* ``"z"`` — the weighted mean of the signals' standard scores over a reference population (:class:`Scales`: the
  summaries of one dataset scored by one judge configuration), so each signal orders the summaries with its stated
  weight whatever its spread; re-expressed on the 1-5 scale with the weighted mean level and spread of the signals'
  1-5 values (:func:`combine`). With no reference population (fewer than :data:`MIN_POPULATION` summaries) it
  falls back to the ``"mean"`` form and says so in its label.

A signal not computed for a summary is left out and the other weights renormalised, so with no evidence the
combination is the judge's score. Items without evidence of their own (Useful, Organized, Comprehensible, …) have
no combination: their score is the judge's. The weights are fixed, not fitted to raters (:data:`WEIGHTS_NOTE`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional

from engine.judge.features import Features

COMBINATION_VERSION = "combination-v2"  # v2: Thorough in the "z" form over the dataset's summaries
WEIGHTS_NOTE = ("Accurate, Cited, Succinct: fixed before measuring, the judge and the item's evidence weigh half each; "
                "Thorough: standard scores, judge 1/4, unit coverage 1/2, MED-OMIT 1/4 (judge 1/3 without MED-OMIT), "
                "chosen on the development split of real visit notes")
MIN_POPULATION = 10  # summaries a signal needs in the reference population to be standardised


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

FORMS = ("mean", "z")


@dataclass(frozen=True)
class Combination:
    """One item's fixed weights (signal -> weight, summing to 1) and its form (:data:`FORMS`)."""

    weights: Mapping[str, float]
    form: str = "mean"


COMBINATIONS: dict[str, Combination] = {
    # z, judge 1/4 (1/3 without MED-OMIT): chosen on real visit notes (development split), where the judge's
    # Thorough expected scores spread by hundredths and the mean form ranked exactly as coverage; the forms within
    # 0.03 of the best tied, and this one is the tie whose stated weights are its effective weights
    "thorough": Combination({"judge": 0.25, "coverage": 0.5, "medomit": 0.25}, "z"),
    "accurate": Combination({"judge": 0.5, "unsupported": 0.5}),
    "cited": Combination({"judge": 0.5, "citations": 0.5}),
    "succinct": Combination({"judge": 0.5, "restated": 0.5}),
}


def _raw(sig: Signal, expected: Optional[float], feats: Optional[Features]) -> Optional[float]:
    v = expected if sig.feature is None else getattr(feats or Features(), sig.feature)
    return None if v is None or not math.isfinite(float(v)) else float(v)


@dataclass(frozen=True)
class Scales:
    """Per signal of one item, the mean and standard deviation of its 1-5 values over a reference population
    (the summaries of one dataset scored by one judge configuration); a signal present in fewer than
    :data:`MIN_POPULATION` of them is not listed."""

    item: str
    n: int  # summaries in the population (those with a judge score for the item)
    mean: Mapping[str, float] = field(default_factory=dict)
    sd: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"item": self.item, "n": self.n, "mean": dict(self.mean), "sd": dict(self.sd)}

    @classmethod
    def from_dict(cls, d: Optional[Mapping]) -> Optional["Scales"]:
        if not d:
            return None
        return cls(str(d["item"]), int(d["n"]), {str(k): float(v) for k, v in d["mean"].items()},
                   {str(k): float(v) for k, v in d["sd"].items()})


def scales_of(item: str, population: Iterable[tuple[Optional[float], Optional[Features]]]) -> Optional[Scales]:
    """The reference scales of ``item`` over ``population`` ((judge's expected score, features) per summary); None
    when the item has no ``"z"`` combination or fewer than :data:`MIN_POPULATION` summaries have a judge score."""
    comb = COMBINATIONS.get(item)
    if comb is None or comb.form != "z":
        return None
    rows = [(e, f) for e, f in population if e is not None and math.isfinite(float(e))]
    if len(rows) < MIN_POPULATION:
        return None
    mean, sd = {}, {}
    for key in comb.weights:
        sig = SIGNALS[key]
        vals = [sig.to_scale(v) for v in (_raw(sig, e, f) for e, f in rows) if v is not None]
        if len(vals) < MIN_POPULATION:
            continue
        m = sum(vals) / len(vals)
        mean[key] = m
        v = math.sqrt(sum((v - m) ** 2 for v in vals) / len(vals))
        sd[key] = v if v > 1e-9 else 0.0  # a constant signal (up to rounding) orders nothing
    return Scales(item, len(rows), mean, sd)


@dataclass(frozen=True)
class Part:
    signal: str
    raw: float  # the expected score or the feature's share
    scaled: float  # on the 1-5 scale
    weight: float  # after renormalising over the signals present
    z: Optional[float] = None  # the standard score over the reference population ("z" form)


@dataclass(frozen=True)
class Combined:
    """One item's combined score and what it is made of."""

    item: str
    value: float
    parts: tuple[Part, ...]
    form: str = "mean"  # the form actually used ("z" only with reference scales)
    population: int = 0  # summaries the "z" form's scales were taken over

    @property
    def label(self) -> str:
        terms = " + ".join(f"{p.weight:.2f} × {SIGNALS[p.signal].label}" for p in self.parts)
        if self.form == "z":
            return f"combination of standard scores over {self.population} summaries: {terms}"
        return "combination: " + terms

    @property
    def uses_evidence(self) -> bool:
        return any(p.signal != "judge" for p in self.parts)


def has_combination(item: str) -> bool:
    return item in COMBINATIONS


def describe(item: str) -> str:
    """What the item's combination is made of, in words ('' for an item without one)."""
    comb = COMBINATIONS.get(item)
    if comb is None:
        return ""
    terms = " + ".join(f"{w:.2f} × {SIGNALS[k].label}" for k, w in comb.weights.items())
    if comb.form == "z":
        return (f"{terms}, as standard scores over the dataset's summaries scored by this judge configuration "
                f"(fixed 1-5 maps below {MIN_POPULATION} summaries); a signal not computed is left out")
    return f"{terms}, each on the 1-5 scale by a fixed map; a signal not computed is left out"


def combine(item: str, expected: Optional[float], feats: Optional[Features],
            scales: Optional[Scales] = None) -> Optional[Combined]:
    """The item's combined score (None when the judge gave no score for it); an item without a combination
    gets the judge's score as its only part.

    ``"z"`` form with ``scales``: z_k = (x_k − mean_k) / sd_k for each present signal k with a scale (sd > 0),
    value = M + S · Σ w_k z_k / Σ w_k with M = Σ w_k mean_k / Σ w_k and S = Σ w_k sd_k / Σ w_k, clipped to 1-5.
    Without ``scales`` (or with scales of another item) it is the ``"mean"`` form: Σ w_k x_k / Σ w_k."""
    if expected is None:
        return None
    comb = COMBINATIONS.get(item, Combination({"judge": 1.0}))
    present: list[tuple[str, float, float, float]] = []
    for key, w in comb.weights.items():
        sig = SIGNALS[key]
        raw = _raw(sig, expected, feats)
        if raw is None:
            continue
        present.append((key, raw, sig.to_scale(raw), w))
    if comb.form == "z" and scales is not None and scales.item == item:
        used = [t for t in present if scales.sd.get(t[0], 0.0) > 0]
        if used:
            total = sum(w for *_, w in used)
            zs = [(x - scales.mean[k]) / scales.sd[k] for k, _, x, _ in used]
            level = sum(scales.mean[k] * w for k, *_, w in used) / total
            spread = sum(scales.sd[k] * w for k, *_, w in used) / total
            zc = sum(z * w for z, (*_, w) in zip(zs, used)) / total
            parts = tuple(Part(k, raw, round(x, 4), round(w / total, 4), round(z, 4))
                          for (k, raw, x, w), z in zip(used, zs))
            return Combined(item, round(min(5.0, max(1.0, level + spread * zc)), 4), parts, "z", scales.n)
    total = sum(w for *_, w in present)
    parts = tuple(Part(k, raw, round(sc, 4), round(w / total, 4)) for k, raw, sc, w in present)
    value = sum(p.scaled * w / total for p, (*_, w) in zip(parts, present))
    return Combined(item, round(value, 4), parts)


def combined_scores(expected: Mapping[str, Optional[float]], feats: Optional[Features],
                    scales: Optional[Mapping[str, Scales]] = None) -> dict[str, Combined]:
    """item -> combined score for every item the judge scored that has a combination (``scales``: item -> its
    reference scales, for the ``"z"`` form)."""
    out = {}
    for item in COMBINATIONS:
        c = combine(item, expected.get(item), feats, (scales or {}).get(item))
        if c is not None:
            out[item] = c
    return out


def dataset_scales(scored: Mapping[str, Mapping[str, Optional[float]]],
                   feats: Mapping[str, Optional[Features]]) -> dict[str, Scales]:
    """item -> reference scales over one judge configuration's scored summaries of a dataset (``scored``: summary
    id -> item -> expected score; ``feats``: summary id -> features), for every item in the ``"z"`` form that has
    enough of them."""
    out = {}
    for item in COMBINATIONS:
        got = scales_of(item, [(items.get(item), feats.get(sid)) for sid, items in scored.items()])
        if got is not None:
            out[item] = got
    return out
