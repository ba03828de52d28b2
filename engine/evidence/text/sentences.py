"""Sentence splitting for notes and summaries (pysbd: rule-based, handles clinical abbreviations such as
"Dr.", "b.i.d.", "e.g.", "vs."), with character offsets. Citation tags that open a sentence belong to the
sentence before them ("... LVEF 35%. <NoteID:2> Next ..."); citations are read by :mod:`engine.core.citations`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from engine.core import citations as cit



@dataclass(frozen=True)
class Sentence:
    index: int
    start: int  # character offsets in the text (trailing whitespace excluded)
    end: int
    text: str  # the sentence as written (citation tags included)
    clean: str  # without citation tags, for embedding / ROUGE
    citations: tuple[str, ...]


@lru_cache(maxsize=1)
def segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def split_sentences(text: str, style: cit.CitationStyle = cit.DEFAULT_STYLE) -> list[Sentence]:
    spans: list[list[int]] = []
    for seg in segmenter().segment(text):
        s, e = seg.start, seg.end
        for part in re.split(r"(\n\s*\n)", text[s:e]):  # a blank line always ends a sentence
            if part.strip():
                ps = text.index(part, s)
                spans.append([ps, ps + len(part)])
                s = ps + len(part)
    merged: list[list[int]] = []
    for s, e in spans:
        piece = text[s:e].lstrip()
        # a "sentence" that starts in lower case is the tail of an abbreviation the splitter did not know
        # ("25 mg p.o. q.d.", "2 wks. then ...") unless a line break separates them
        if merged and (piece[:1].islower() or piece[:1] in "(,;:") and "\n" not in text[merged[-1][1] - 1:s + 1]:
            merged[-1][1] = e
            continue
        lead = cit.leading_run(text[s:e], style)
        if lead and merged:
            merged[-1][1] = s + lead
            s = s + lead
        if text[s:e].strip():
            merged.append([s, e])
        elif merged:
            merged[-1][1] = e
    out = []
    for i, (s, e) in enumerate(merged):
        raw = text[s:e]
        lead = len(raw) - len(raw.lstrip())
        s2, e2 = s + lead, s + len(raw.rstrip())
        sent = text[s2:e2]
        out.append(Sentence(i, s2, e2, sent, " ".join(cit.strip(sent, style, keep_offsets=True).split()),
                            tuple(cit.cited_ids(sent, style))))
    return [x for x in out if x.clean]
