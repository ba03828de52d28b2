"""The source side of the weak-support rule: a case's units (transcript units without speaker tags and
disfluencies) with their embeddings, words and numbers (:class:`SourceProfile`), and one summary sentence's lexical
and semantic support and foreign specifics against the whole source or against some of its notes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from engine.core import Case
from engine.evidence.embeddings import Embedder
from engine.evidence.text import (LIST_MARKER, SPEAKER_TAG, Sentence, content_stems, lexical_support, numbers,
                                  rouge_scorer, split_sentences, tokenize)

_DISFLUENCY = re.compile(r"(?<![\w-])(?:um+|uh+|er+m?|hmm+|hm|mm+|mhm|mm-hmm|mm-hm|uh-huh|uh-uh|you know|i mean)"
                         r"(?![\w-])[,.]?\s*", re.I)
_AGE = re.compile(r"\b(\d{1,3})[- ](?:years?|months?|weeks?)[- ]old\b|\baged? (\d{1,3})\b|\b(\d{1,3}) ?(?:y/?o|yo)\b",
                  re.I)
_AGE_TALK = re.compile(r"\b(?:years? old|how old|age|aged|birthday)\b", re.I)
_TITLE_NAME = re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr)\.?\s+([A-Z][a-z'-]+)")


def clean_unit(text: str) -> str:
    """A transcript unit without its speaker tag and disfluencies ("[patient] so, um, ..." -> "so, ...")."""
    return " ".join(_DISFLUENCY.sub("", SPEAKER_TAG.sub("", text, count=1)).split())


@dataclass
class SourceProfile:
    """What the support rule reads from a case's notes: its units (sentences; in a transcript without speaker
    tags and disfluencies), the embeddings of the units and of adjacent pairs, and its words, stems and numbers."""
    units: list[tuple[str, Sentence, str]]  # (note id, sentence, unit text)
    unit_vecs: np.ndarray  # units, then pairs of adjacent units within a note
    stems: frozenset
    words: frozenset
    numbers: frozenset
    states_age: bool


def source_units(case: Case) -> list[tuple[str, Sentence, str]]:
    from engine.evidence.text import is_dialogue

    out = []
    for n in case.notes:
        talk = is_dialogue(n.text)
        for s in split_sentences(n.text):
            out.append((n.note_id, s, (clean_unit(s.clean) or s.clean) if talk else s.clean))
    return out


def source_profile(case: Case, emb: Embedder, units: Optional[list] = None) -> SourceProfile:
    units = units if units is not None else source_units(case)
    texts = [u for _, _, u in units]
    pairs = [texts[i - 1] + " " + texts[i] for i in range(1, len(units)) if units[i - 1][0] == units[i][0]]
    vecs = emb.sentence_embeddings(texts + pairs)
    text = "\n".join(texts)
    # the source's words, lower-cased letters with their apostrophes and hyphens ("patient's", "follow-up")
    words = tokenize(text, case="lower_text", digits="none", joiners="'-", joiner_runs=True, open_end=True)
    return SourceProfile(units, vecs, frozenset(rouge_scorer().tokens(text)), frozenset(words),
                         frozenset(numbers(text, generous=True)), bool(_AGE.search(text) or _AGE_TALK.search(text)))


def foreign_specifics(text: str, profile: SourceProfile) -> list[str]:
    """Numbers and titled names the sentence states and the source never does (see the module's rule)."""
    t = LIST_MARKER.sub("", text)
    ages = {g for m in _AGE.findall(t) for g in m if g}
    out = [x for x in sorted(numbers(t), key=lambda v: (len(v), v))
           if x not in profile.numbers and not (x in ages and not profile.states_age)]
    out += [f"{m.group(0)}" for m in _TITLE_NAME.finditer(t) if m.group(1).lower() not in profile.words]
    return out


@dataclass
class SupportEvidence:
    score: float
    lexical: float
    semantic: float
    foreign: list[str]


def sentence_support(text: str, profile: SourceProfile, emb: Embedder, vec: Optional[np.ndarray] = None
                     ) -> SupportEvidence:
    """The rule's evidence for one summary sentence (citation tags already stripped) against a source."""
    v = vec if vec is not None else emb.sentence_embeddings([text])[0]
    sem = float((profile.unit_vecs @ v).max()) if len(profile.unit_vecs) else 0.0
    lex = lexical_support(content_stems(text), profile.stems)
    return SupportEvidence(0.5 * (lex + sem), lex, sem, foreign_specifics(text, profile))


def note_support(text: str, profile: SourceProfile, note_ids: Sequence[str], vec: np.ndarray,
                 stems_of: dict[str, frozenset]) -> float:
    """½(lexical + semantic) of a summary sentence against the notes ``note_ids`` alone: the share of its content
    words (rarity-weighted) those notes hold, and its best cosine with one of their units."""
    union = frozenset().union(*(stems_of.get(n, frozenset()) for n in note_ids))
    lex = lexical_support(content_stems(text), union)
    idx = [i for i, (nid, _, _) in enumerate(profile.units) if nid in note_ids]
    sem = float((profile.unit_vecs[idx] @ vec).max()) if idx else 0.0
    return 0.5 * (lex + sem)
