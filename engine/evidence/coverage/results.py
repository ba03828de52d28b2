"""What every coverage method works with and returns: parameters, scored source units, uncovered regions, the
result, and the summary text as the methods read it (citations blanked).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

import numpy as np

from engine.core import citations

DEFAULT_METHOD = "unitcov"  # chosen on the development split of bench/omission_benchmark.py (see docs/evidence.md)


class CoverageError(ValueError):
    """Input the method cannot score (e.g. an empty or one-word summary); the message says why."""


@dataclass(frozen=True)
class CoverageParams:
    method: str = DEFAULT_METHOD
    pca_components: int = 20  # kde; the paper's reference code uses 5 (selectable), 20 measured better here
    bandwidth: str = "scott"  # "scott", "silverman", "cv", or a number (a multiple of the data's mean std)
    clean: bool = True  # drop stopword / short-word tokens (kde)
    min_word_length: int = 3
    threshold: Optional[float] = None  # None = the method's default
    top_regions: int = 8
    topic_distance: float = 0.5  # topiccov: cosine distance under which source sentences share a topic

    def resolved_threshold(self, default: float = 0.0) -> float:
        """The region threshold: the one asked for, else ``default`` (the method's, from the registry)."""
        return self.threshold if self.threshold is not None else default


@dataclass
class Unit:
    """A scored piece of a note: a token (kde) or a sentence (sentcov)."""
    note_id: str
    start: int
    end: int
    score: float


@dataclass
class Region:
    note_id: str
    start: int
    end: int
    text: str
    score: float  # the raw omission score (highest unit score in the region)
    # engine.evidence.text.salience weight in [0, 1] (0 = boilerplate / small talk, 1 = content): score x salience is the region's
    # best salience-weighted unit score, and regions rank by it. Defaults to 1.0 so results stored before
    # coverage-v3 still load.
    salience: float = 1.0
    # key terms of the region (drugs, named conditions, labels: engine.evidence.text.terms.key_terms) the summary never
    # writes; a region with one ranks before every region without (coverage-v5)
    missing: list[str] = field(default_factory=list)


@dataclass
class CoverageResult:
    summary_id: str
    method: str
    global_score: float
    threshold: float
    units: list[Unit]  # every scored source unit, in note order (for the heat overlay)
    regions: list[Region]  # top uncovered regions, highest first
    unsupported: list[Region] = field(default_factory=list)  # summary spans in low source density (kde)
    params: dict = field(default_factory=dict)
    seconds: float = 0.0

    flag_threshold: float = 0.0

    @property
    def flagged(self) -> bool:
        """The summary as a whole looks omissive (global score at or above the tuned flag threshold)."""
        return self.global_score >= self.flag_threshold

    def to_dict(self) -> dict:
        return asdict(self)


def checked_summary_text(summary_text: str) -> str:
    """The summary with its citations blanked (offsets kept). Any summary with a word or a number is scored — a
    one-word summary of a long source is as omissive as it looks; only an empty one is an error."""
    text = citations.strip(summary_text, keep_offsets=True)  # keep offsets, drop citations
    if not re.search(r"[A-Za-z0-9]", text):
        raise CoverageError("the summary is empty (no word once citations are removed); there is nothing to compare "
                            "with the notes")
    return text


def global_of(units: Sequence[Unit]) -> float:
    return float(np.mean([u.score for u in units]))
