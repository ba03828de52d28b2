"""Atomic claims of a summary sentence, by rules.

A sentence is cut where it joins statements that can be true or false on their own: at semicolons; before a
relative clause that adds a fact about its subject ("a 74-year-old male | who moved here in 1984"); before "but",
"while", "whereas", "although"; before "and" or "with" when what follows states something of its own (a verb or
a new subject: "denies fever | and reports a cough"); and the demographic opening of a sentence ("a 74-year-old
Filipino male …") is a claim of its own. Pieces shorter than :data:`MIN_WORDS` words stay with the piece before
them, so a list ("hypertension, diabetes and asthma") is one claim. A claim keeps its character offsets in the
sentence; a sentence that cuts nowhere is one claim.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from engine.evidence.text import tokenize

MIN_WORDS = 3  # a piece shorter than this joins the piece before it

_SUBJECTS = r"(?:he|she|they|it|this|there|the patient|patient|her|his|their|the|we|i)"
_VERBS = (r"(?:is|was|are|were|has|had|have|will|would|should|can|could|may|denies|denied|reports|reported|"
          r"states|stated|notes|noted|endorses|endorsed|describes|described|takes|took|started|stopped|"
          r"continues|continued|presents|presented|underwent|received|developed|complains|complained|"
          r"admits|admitted|quit|smokes|drinks|lives|works|plans|planned|needs|needed|requires|required|"
          r"feels|felt|says|said|did|does|do|got|gets|went|goes|came|comes|recently|also|then|currently)")
_CUTS = [
    re.compile(r"\s*;\s*"),
    re.compile(r",?\s+(?=(?:but|while|whereas|although|though|however)\b)", re.I),
    re.compile(r",?\s+(?=(?:who|which)\s+" + _VERBS + r"?)", re.I),
    re.compile(r",?\s+(?=and\s+(?:" + _SUBJECTS + r"\s+)?" + _VERBS + r"\b)", re.I),
    re.compile(r",\s+(?=(?:with|without)\b)", re.I),
    re.compile(r"\s+(?=(?:presents|presented|comes in|came in|returns|returned|is seen|was seen)\b)", re.I),
]
# "A 74-year-old Filipino male", "This is a 22-year-old female": the demographic head of a sentence
_DEMOGRAPHIC = re.compile(r"^(?:(?:the patient|patient|this|she|he)\s+(?:is|was)\s+)?(?:an?\s+)?"
                          r"\d{1,3}[- ](?:years?|months?)[- ]old\b[^,;]*?\b(?:male|female|man|woman|boy|girl|"
                          r"gentleman|lady|patient|individual|person)\b", re.I)


@dataclass(frozen=True)
class Claim:
    text: str
    start: int  # character offsets in the sentence it comes from
    end: int


def _cut_points(text: str) -> list[int]:
    points = set()
    for rx in _CUTS:
        for m in rx.finditer(text):
            if 0 < m.start() < len(text):
                points.add(m.end())
    m = _DEMOGRAPHIC.match(text)
    if m and m.end() < len(text.rstrip(" .")):
        rest = re.match(r"[\s,]*", text[m.end():])
        points.add(m.end() + (rest.end() if rest else 0))
    return sorted(points)


def word_count(text: str) -> int:
    """The words of a sentence piece, as :data:`MIN_WORDS` counts them: runs of letters, digits or underscores of
    any script (the regular expression word class)."""
    return len(tokenize(text, case="keep", letters="word"))


def split_claims(sentence: str) -> list[Claim]:
    """The claims of one sentence (citation tags already removed), in order, with offsets into ``sentence``."""
    text = sentence.rstrip()
    bounds = [0, *_cut_points(text), len(text)]
    pieces: list[list[int]] = []
    for a, b in zip(bounds, bounds[1:]):
        chunk = text[a:b]
        if not chunk.strip():
            continue
        if pieces and word_count(chunk) < MIN_WORDS:
            pieces[-1][1] = b
            continue
        pieces.append([a, b])
    if len(pieces) > 1 and word_count(text[pieces[0][0]:pieces[0][1]]) < MIN_WORDS:
        pieces[1][0] = pieces[0][0]
        pieces.pop(0)
    out = []
    for a, b in pieces:
        raw = text[a:b]
        lead = len(raw) - len(raw.lstrip(" ,;"))
        body = raw.strip(" ,;")
        if body:
            out.append(Claim(body, a + lead, a + lead + len(body)))
    return out or [Claim(text.strip(), 0, len(text.strip()))]
