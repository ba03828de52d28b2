"""The record's lines that best match a claim.

The record is cut into lines: a transcript into its turns, a note into its sentences (:func:`record_lines`). A
claim's passage is the few lines that share the most of its content words, each word weighted by its rarity (the
support background's idf, :func:`engine.evidence.text.lexical.idf_weights`), both sides read through the clinical
abbreviations (:func:`engine.evidence.text.abbreviations.expand`: "DCCV" meets "cardioversion"), with the line
before each for context (a question before its answer), in record order; a sentence that cites notes also gets the
best-matching line of each cited note (:meth:`LineIndex.passage` with ``notes``). It is shown beside every answer,
and it is what the model reads instead of the record when the whole record does not fit the model's context.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from engine.core import Case
from engine.evidence.text import content_stems, expand, idf_weights, is_dialogue, numbers, split_sentences

TOP_LINES = 3  # best-matching lines in a passage (each with the line before it)


@dataclass(frozen=True)
class Line:
    note_id: str
    start: int  # character offsets in the note
    end: int
    text: str


@dataclass(frozen=True)
class PassageRef:
    """A stretch of one note shown as the place a claim was checked against."""

    note_id: str
    start: int
    end: int
    text: str

    def to_dict(self) -> dict:
        return {"note_id": self.note_id, "start": self.start, "end": self.end, "text": self.text}


def record_lines(case: Case) -> list[Line]:
    """A transcript's turns (non-empty lines) and a note's sentences, in record order."""
    out: list[Line] = []
    for n in case.notes:
        if is_dialogue(n.text):
            pos = 0
            for raw in n.text.splitlines(keepends=True):
                if raw.strip():
                    lead = len(raw) - len(raw.lstrip())
                    body = raw.strip()
                    out.append(Line(n.note_id, pos + lead, pos + lead + len(body), body))
                pos += len(raw)
        else:
            out.extend(Line(n.note_id, s.start, s.end, s.text) for s in split_sentences(n.text))
    return out


class LineIndex:
    """Content stems and numbers of each line, computed once per record."""

    def __init__(self, lines: Sequence[Line]):
        self.lines = list(lines)
        self.stems = [frozenset(content_stems(expand(x.text))) for x in self.lines]
        self.nums = [frozenset(numbers(x.text, generous=True)) for x in self.lines]

    def scores(self, claim: str) -> list[float]:
        stems = content_stems(expand(claim))
        nums = numbers(claim)
        w = dict(zip(stems, idf_weights(stems))) if stems else {}
        total = sum(w.values()) + len(nums) or 1.0
        return [(sum(v for t, v in w.items() if t in st) + len(nums & ns)) / total
                for st, ns in zip(self.stems, self.nums)]

    def best(self, claim: str, k: int = TOP_LINES) -> list[int]:
        """Indices of the ``k`` best-matching lines (ties: earlier first), only lines that share something."""
        sc = self.scores(claim)
        order = sorted(range(len(sc)), key=lambda i: (-sc[i], i))
        return [i for i in order[:k] if sc[i] > 0]

    def passage(self, claim: str, k: int = TOP_LINES, context: int = 1, notes: Sequence[str] = ()) -> list[int]:
        """The best lines with ``context`` lines before each (same note), in record order; with ``notes`` (the
        note ids a sentence cites) also the best-matching line of each of those notes."""
        keep: set[int] = set()
        best = self.best(claim, k)
        if notes:
            sc = self.scores(claim)
            for nid in notes:
                mine = [i for i, ln in enumerate(self.lines) if ln.note_id == nid and sc[i] > 0]
                if mine and not any(self.lines[i].note_id == nid for i in best):
                    best.append(max(mine, key=lambda i: (sc[i], -i)))
        for i in best:
            for j in range(i - context, i + 1):
                if j >= 0 and self.lines[j].note_id == self.lines[i].note_id:
                    keep.add(j)
        return sorted(keep)

    def refs(self, idx: Sequence[int]) -> list[PassageRef]:
        """Consecutive lines of one note joined into one reference each."""
        out: list[PassageRef] = []
        prev = -2
        for i in idx:
            ln = self.lines[i]
            if out and i == prev + 1 and out[-1].note_id == ln.note_id:
                last = out[-1]
                out[-1] = PassageRef(last.note_id, last.start, ln.end, last.text + "\n" + ln.text)
            else:
                out.append(PassageRef(ln.note_id, ln.start, ln.end, ln.text))
            prev = i
        return out
