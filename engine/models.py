"""Typed data model: cases with their notes, summaries, and long-form ratings."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional

RATER_GROUPS = ("junior", "senior", "llm", "clinician", "adjudicated", "unknown")

_CITATION = re.compile(r"<\s*NoteID\s*:\s*([A-Za-z0-9_.\-]+)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Note:
    note_id: str
    text: str
    date: Optional[str] = None
    note_type: Optional[str] = None
    author_specialty: Optional[str] = None


@dataclass(frozen=True)
class Case:
    case_id: str
    target_specialty: str
    notes: tuple[Note, ...]

    def note(self, note_id: str) -> Note:
        for n in self.notes:
            if n.note_id == note_id:
                return n
        raise KeyError(f"case {self.case_id!r} has no note {note_id!r}")

    @property
    def source_text(self) -> str:
        return "\n\n".join(n.text for n in self.notes)

    @property
    def word_count(self) -> int:
        return sum(len(n.text.split()) for n in self.notes)


@dataclass(frozen=True)
class Citation:
    note_id: str
    start: int  # character offsets of the tag in the summary text
    end: int


@dataclass(frozen=True)
class Summary:
    summary_id: str
    case_id: str
    text: str
    generator_model: Optional[str] = None
    quality_group: Optional[str] = None
    prompt_variant: Optional[str] = None

    @property
    def citations(self) -> tuple[Citation, ...]:
        return tuple(Citation(m.group(1), m.start(), m.end()) for m in _CITATION.finditer(self.text))


@dataclass(frozen=True)
class Rating:
    summary_id: str
    rater_id: str
    item: str
    value: Optional[float]  # None = NA (explicit); a missing rating has no row at all
    rater_group: str = "unknown"


@dataclass
class Dataset:
    """An in-memory dataset: what a loader produces and what the store returns."""

    name: str
    cases: list[Case] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)
    ratings: list[Rating] = field(default_factory=list)
    source: str = ""

    def case(self, case_id: str) -> Case:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(f"dataset {self.name!r} has no case {case_id!r}")

    def summary(self, summary_id: str) -> Summary:
        for s in self.summaries:
            if s.summary_id == summary_id:
                return s
        raise KeyError(f"dataset {self.name!r} has no summary {summary_id!r}")

    def summaries_for(self, case_id: str) -> list[Summary]:
        return [s for s in self.summaries if s.case_id == case_id]

    def ratings_for(self, summary_id: str) -> list[Rating]:
        return [r for r in self.ratings if r.summary_id == summary_id]

    def content_hash(self) -> str:
        """Order-independent hash of the content (used to make re-imports idempotent)."""
        return content_hash(self.cases, self.summaries, self.ratings)


def content_hash(cases: Iterable[Case], summaries: Iterable[Summary], ratings: Iterable[Rating]) -> str:
    payload = {
        "cases": sorted((json.dumps(asdict(c), sort_keys=True) for c in cases)),
        "summaries": sorted((json.dumps(asdict(s), sort_keys=True) for s in summaries)),
        "ratings": sorted((json.dumps(asdict(r), sort_keys=True) for r in ratings)),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()
