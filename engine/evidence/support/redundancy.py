"""Restatements inside one summary: a later sentence that says again what an earlier one already said.

A summary that repeats itself wastes the reader's time (the PDSQI-9 *Succinct* item). For a later sentence ``j``
and an earlier sentence ``i`` the rule reads:

* ``new values``: values ``j`` states that no earlier sentence states, a value being a number with its unit
  (:func:`values`: "58 mg/dL" is not the "58" of "58-year-old", "55 %" not "< 55 mg/dL"). A sentence with a
  new value reports something new (a later creatinine, an LVEF that recovered), never a restatement, however
  alike the words are;
* ``similarity``: the cosine of the two sentence embeddings;
* ``overlap``: the rarity-weighted share of the shorter sentence's content words (Porter stems, weighted by the
  inverse document frequency of :func:`engine.evidence.text.lexical.support_background`) that the other sentence also has;
* ``said before``: the rarity-weighted share of ``j``'s content words that some earlier sentence already has.

``j`` restates ``i`` when ``j`` has no new value and the two are close in meaning (``similarity``) with some rare
words in common, or share most of their rare words (``overlap``), or share a value while most of ``j`` was said
before. Each later sentence names at
most one earlier sentence (the strongest pair). Headings and sentences with fewer than :data:`MIN_CONTENT` content
words never take part. The thresholds (:data:`RULE`) were chosen on the bundled sample's documented restatements.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from engine.evidence.text import canonical_number, content_stems, idf_weights, rouge_scorer

MIN_CONTENT = 3
UNITS = frozenset("""% mg mcg ug g kg lb lbs mm cm m ml l dl mmhg mg/dl g/dl g/g mg/g g/l mg/l iu/ml iu/l u/l meq/l
mmol/l umol/l ng/ml pg/ml ng/dl mcg/dl ml/min copies/ml cells/ul bpm mets gy units unit u mmol year years yr yrs
month months week weeks wk wks day days d hour hours h hr hrs min minutes sec seconds x""".split())
UNIT_ALIASES = {"years": "year", "yrs": "year", "yr": "year", "months": "month", "weeks": "week", "wk": "week",
                "wks": "week", "days": "day", "d": "day", "hours": "hour", "h": "hour", "hr": "hour", "hrs": "hour",
                "lbs": "lb", "units": "unit", "u": "unit"}
_VALUE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?(?:\s*-?\s*([a-z%]+(?:/[a-z]+)?))?")


def values(text: str) -> frozenset:
    """The values a sentence states, as (number, unit) pairs; the unit is "" unless one of :data:`UNITS` follows
    the number (a range "1.8 to 0.6 g/g" gives both ends the unit)."""
    out = set()
    for m in _VALUE.finditer(re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text.lower())):
        unit = m.group(3) or ""
        unit = unit if unit in UNITS else ""
        unit = UNIT_ALIASES.get(unit, unit)
        out.add((canonical_number(m.group(1)), unit))
        if m.group(2):
            out.add((canonical_number(m.group(2)), unit))
    return frozenset(out)


@dataclass(frozen=True)
class Rule:
    """Thresholds of the restatement rule."""

    similarity: float = 0.56
    similar_words: float = 0.2  # the least overlap a pair close in meaning needs (no restatement without shared words)
    overlap: float = 0.6
    said_before: float = 0.6  # with a shared value


RULE = Rule()


@dataclass(frozen=True)
class Restatement:
    first: int  # index of the earlier sentence
    later: int  # index of the sentence that restates it
    overlap: float
    similarity: float
    shared: tuple[str, ...]  # the shared values and the rarest shared words, for the reader

    def describe(self) -> str:
        what = ", ".join(self.shared[:5])
        return (f"restates sentence {self.first + 1}" + (f" ({what})" if what else "")
                + f"; meaning similarity {self.similarity:.2f}, rare words shared {self.overlap:.0%}")


@dataclass(frozen=True)
class _Profile:
    stems: tuple[str, ...]
    weights: dict
    values: frozenset
    words: dict  # stem -> a surface word, for the description


def _profile(text: str) -> _Profile:
    stems = tuple(content_stems(text))
    w = idf_weights(stems) if stems else np.zeros(0)
    surface = {}
    rouge = rouge_scorer()
    for word in text.split():
        toks = rouge.tokens(word)
        for t in toks:
            surface.setdefault(t, word.strip(".,;:()[]").lower())
    return _Profile(stems, dict(zip(stems, (float(x) for x in w))), values(text), surface)


def _features(pa: _Profile, pb: _Profile) -> tuple[float, frozenset, tuple[str, ...]]:
    shared = [t for t in pa.stems if t in pb.weights]
    small = min(sum(pa.weights.values()), sum(pb.weights.values()))
    overlap = sum(pa.weights[t] for t in shared) / small if small > 0 else 0.0
    words = tuple(pa.words.get(t, t) for t in sorted(shared, key=lambda t: -pa.weights[t]))
    return overlap, pa.values & pb.values, words


def is_restatement(overlap: float, shared_values: frozenset, similarity: float, new_values: frozenset,
                   said_before: float, rule: Rule = RULE) -> bool:
    """The rule on one pair's features (see the module's docstring)."""
    if new_values:
        return False
    return ((similarity >= rule.similarity and overlap >= rule.similar_words) or overlap >= rule.overlap
            or (bool(shared_values) and said_before >= rule.said_before))


def restatements(sentences: Sequence[str], vectors: np.ndarray, rule: Rule = RULE,
                 skip: Sequence[bool] = ()) -> list[Restatement]:
    """The restatements among ``sentences`` (in order; ``vectors``: their unit-length embeddings, one row each;
    ``skip``: sentences that never take part, such as headings)."""
    profiles = [_profile(s) for s in sentences]
    sims = vectors @ vectors.T if len(sentences) else np.zeros((0, 0))
    out: list[Restatement] = []
    values_before: set = set()
    stems_before: set = set()
    for j in range(len(sentences)):
        pj = profiles[j]
        eligible = not (skip and skip[j]) and len(pj.stems) >= MIN_CONTENT
        new_values = frozenset(pj.values - values_before)
        total = sum(pj.weights.values())
        said = sum(w for t, w in pj.weights.items() if t in stems_before) / total if total > 0 else 0.0
        values_before |= pj.values
        stems_before |= set(pj.stems)
        if not eligible or j == 0:
            continue
        best: Optional[Restatement] = None
        for i in range(j):
            if (skip and skip[i]) or len(profiles[i].stems) < MIN_CONTENT:
                continue
            overlap, shared_values, words = _features(profiles[i], pj)
            sim = float(sims[i, j])
            if not is_restatement(overlap, shared_values, sim, new_values, said, rule):
                continue
            r = Restatement(i, j, round(overlap, 4), round(sim, 4),
                            tuple(f"{v} {u}".strip() for v, u in sorted(shared_values)) + words)
            if best is None or (r.overlap + r.similarity) > (best.overlap + best.similarity):
                best = r
        if best is not None:
            out.append(best)
    return out
