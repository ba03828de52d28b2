"""Typed data model: cases with their notes, summaries, and long-form ratings."""
from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Iterable, Optional

from engine.core import citations
from engine.core.dates import iso_date
from engine.core.stamps import json_key

RATER_GROUPS = ("junior", "senior", "llm", "clinician", "adjudicated", "spot-check", "unknown")

# Rater groups and ids that SumCheck itself writes into the ratings it analyses; imported ratings may not claim
# them (an imported "adjudicated" rating would silently replace the human median; an "llm" one would be taken for
# the judge). Defined once here; reviews.py and agreement.py use these names.
LLM_GROUP = "llm"  # the LLM judge as a rater
ADJUDICATED_GROUP = "adjudicated"  # adjudicated final scores (Spot-check page)
CLINICIAN_GROUP = "clinician"  # a normal human group; imported ratings may use it
SPOT_CHECK_GROUP = "spot-check"  # clinicians' spot checks (Spot-check page): compared with the panel, not part of it
LLM_RATER = "llm"
ADJUDICATED_RATER = "adjudicated"
REVIEW_RATER_SUFFIX = " (review)"  # a reviewer whose name clashes with an imported rater id
RESERVED_RATER_GROUPS: tuple[str, ...] = (LLM_GROUP, ADJUDICATED_GROUP, SPOT_CHECK_GROUP)
RESERVED_RATER_IDS: tuple[str, ...] = (LLM_RATER, ADJUDICATED_RATER)


def reserved_rater_problem(rater_id: str, rater_group: str) -> Optional[tuple[str, str]]:
    """``(field, message)`` when an imported rating claims a reserved rater id or group, else None."""
    if rater_id.strip().lower() in RESERVED_RATER_IDS or rater_id.endswith(REVIEW_RATER_SUFFIX):
        return "rater_id", (f"rater id {rater_id!r} is reserved: SumCheck uses it for "
                            + ("adjudicated final scores" if rater_id.strip().lower() == ADJUDICATED_RATER
                               else "the LLM judge" if rater_id.strip().lower() == LLM_RATER
                               else "clinician reviews"))
    if rater_group.strip().lower() in RESERVED_RATER_GROUPS:
        return "rater_group", (f"rater group {rater_group!r} is reserved: SumCheck uses it for "
                               + ("adjudicated final scores" if rater_group.strip().lower() == ADJUDICATED_GROUP
                                  else "clinicians' spot checks" if rater_group.strip().lower() == SPOT_CHECK_GROUP
                                  else "the LLM judge"))
    return None



@dataclass(frozen=True)
class Note:
    note_id: str
    text: str
    date: Optional[str] = None
    note_type: Optional[str] = None
    author_specialty: Optional[str] = None

    @property
    def date_iso(self) -> Optional[str]:
        """The date as ISO 8601 (engine.core.dates), None when there is none or it cannot be read. ``date`` keeps
        the export's own text, which is what a reviewer sees; every "latest" or "in order" decision reads this."""
        return iso_date(self.date)

    def order_key(self, position: int) -> tuple:
        """Oldest first: dated notes by date, undated ones after them, ties in file order."""
        iso = self.date_iso
        return (iso is None, iso or "", position)


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

    def notes_in_order(self) -> tuple[Note, ...]:
        """The notes oldest first by their parsed date (undated ones last; ties and undated notes in file order)."""
        return tuple(n for _, n in sorted(((n.order_key(i), n) for i, n in enumerate(self.notes)),
                                          key=lambda p: p[0]))

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
        """One entry per cited note id, with the span of the citation that names it (default citation forms)."""
        return self.citations_in(citations.DEFAULT_STYLE)

    def citations_in(self, style: "citations.CitationStyle") -> tuple[Citation, ...]:
        return tuple(Citation(nid, c.start, c.end) for c in citations.find(self.text, style) for nid in c.note_ids)


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

    def citation_style(self) -> "citations.CitationStyle":
        """How this dataset's summaries cite notes (see :func:`engine.core.citations.detect_style`)."""
        return citations.detect_style([s.text for s in self.summaries],
                                      [n.note_id for c in self.cases for n in c.notes])

    def cites_notes(self) -> bool:
        """Whether any summary of the dataset cites a note (in any form the dataset uses)."""
        style = self.citation_style()
        return any(citations.find(s.text, style) for s in self.summaries)

    def summaries_for(self, case_id: str) -> list[Summary]:
        return [s for s in self.summaries if s.case_id == case_id]

    def ratings_for(self, summary_id: str) -> list[Rating]:
        return [r for r in self.ratings if r.summary_id == summary_id]

    def content_hash(self) -> str:
        """Order-independent hash of the content (used to make re-imports idempotent)."""
        return content_hash(self.cases, self.summaries, self.ratings)


_FIELDS: dict[type, tuple[str, ...]] = {}
_encode = json.JSONEncoder().encode  # json.dumps' defaults; keys are put in sorted order by _plain
_estr = json.encoder.encode_basestring_ascii  # how json.dumps writes a str (ensure_ascii)


_LEAVES = frozenset((str, int, float, bool, type(None)))


def _plain(obj: object) -> object:
    """``dataclasses.asdict`` with keys in sorted order, without its deep copies (10x faster; same JSON)."""
    cls = type(obj)
    if cls in _LEAVES:
        return obj
    names = _FIELDS.get(cls)
    if names is None:
        if not is_dataclass(cls):
            if isinstance(obj, (list, tuple)):
                return [_plain(x) for x in obj]
            return obj
        names = _FIELDS[cls] = tuple(sorted(f.name for f in fields(cls)))
    out = {}
    for n in names:
        v = getattr(obj, n)
        out[n] = v if type(v) in _LEAVES else _plain(v)
    return out


def _rating_json(r: Rating) -> str:
    """``_encode(_plain(r))`` for the common case (text ids, a finite float or None), built directly: ratings are
    the bulk of a dataset. Anything else takes the general path, so the text is always the same."""
    v = r.value
    if (type(r.item) is str and type(r.rater_group) is str and type(r.rater_id) is str and type(r.summary_id) is str
            and (v is None or (type(v) is float and v - v == 0))):
        return ('{"item": ' + _estr(r.item) + ', "rater_group": ' + _estr(r.rater_group) + ', "rater_id": '
                + _estr(r.rater_id) + ', "summary_id": ' + _estr(r.summary_id) + ', "value": '
                + ("null" if v is None else float.__repr__(v)) + "}")
    return _encode(_plain(r))


def content_hash(cases: Iterable[Case], summaries: Iterable[Summary], ratings: Iterable[Rating]) -> str:
    """sha256 of the sorted records as JSON: byte for byte what ``json.dumps(asdict(x), sort_keys=True)`` gives,
    so hashes stored by earlier versions still match (re-imports stay idempotent)."""
    was_enabled = gc.isenabled()
    gc.disable()  # many short-lived acyclic strings: the cyclic collector's passes only cost time here
    try:
        payload = {
            "cases": sorted(_encode(_plain(c)) for c in cases),
            "summaries": sorted(_encode(_plain(s)) for s in summaries),
            "ratings": sorted(_rating_json(r) for r in ratings),
        }
    finally:
        if was_enabled:
            gc.enable()
    return json_key(payload)
