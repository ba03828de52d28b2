"""Where a fact of the notes came from: a fact (or its quote) placed in the note and character span that writes it.

Three ways, tried in order by :func:`link_fact`:
  * **word for word** (:func:`find_verbatim`): the fact's characters in the note, case and white space ignored; a
    short fact ("HTN") only where the note writes it as a token of its own (:func:`find_token`);
  * **the same words** (:func:`find_words`): the fact's words and numbers in the note one after another, the
    punctuation between them ignored — a fact that joins a heading to its list item ("Discharge meds: Apixaban 5 mg
    p.o. b.i.d.") is written in the note as "Discharge meds:\\n- Apixaban 5 mg p.o. b.i.d.";
  * **the most similar passage**: difflib's ratio against runs of one to :data:`MAX_WINDOW` consecutive sentences
    of a note (sentences as :func:`engine.evidence.text.sentences.split_sentences` reads them, so "p.o." and
    "b.i.d." do not end one; each line of a list is a sentence), kept when ≥ :data:`FUZZY_MIN`. A fact that gathers
    several list lines is compared with those lines together.
The first two are links of kind "exact", the third "fuzzy"; a fact none of them places is "unlinked".
"""
from __future__ import annotations

import difflib
import re
from functools import lru_cache
from typing import Optional

from engine.evidence.text import split_sentences, tokenize

MIN_VERBATIM = 5  # characters (white space not counted) from which a probe is found anywhere in the squeezed note
MIN_TOKEN = 2  # a shorter probe is found only as a token of its own (find_token); one character is never placed
MIN_WORDS = 3  # a probe of fewer words is never placed by its words alone (find_words)
FUZZY_MIN = 0.55  # difflib ratio from which the most similar passage is the fact's place
MAX_WINDOW = 6  # consecutive sentences compared with one fact at most


@lru_cache(maxsize=32)  # a case's notes are searched for every fact: each note is squeezed once
def _squeezed(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` lower-cased without any white space, with each kept character's index in ``text``."""
    keep = [(i, c.lower()) for i, c in enumerate(text) if not c.isspace()]
    return "".join(c for _, c in keep), tuple(i for i, _ in keep)


@lru_cache(maxsize=32)
def _words(text: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    """``text``'s words (letters of any script: a model may quote an accented name) and numbers (a decimal number
    or "2,140" is one), lower-cased, with their character spans."""
    found = tokenize(text, letters="unicode", digits="none", numbers="grouped", offsets=True)
    return tuple(w.text for w in found), tuple((w.start, w.end) for w in found)


def find_token(note: str, probe: str) -> Optional[tuple[int, int]]:
    """Where a short ``probe`` ("HTN", "T2DM", "Cr 1") stands in ``note`` as a token of its own: not run on from a
    letter or digit at either end, so punctuation, white space or the text's ends bound it ("HTN," and "(HTN)"
    count; "pHTN" and "HTNs" do not; a number is not the start or end of a longer one: "Cr 1" is not in
    "Cr 1.1"), white space inside it matched loosely. A probe whose letters are all capitals
    (an abbreviation) is matched in its own case ("HTN" is not "htn"), any other ignoring case. There is no
    expansion of abbreviations: "HTN" is not found in a note that writes only "hypertension". (start, end) or
    None."""
    words = probe.split()
    if len("".join(words)) < MIN_TOKEN:
        return None
    first, last = words[0][0], words[-1][-1]
    pattern = ((r"(?<![^\W_])" if first.isalnum() else "") + (r"(?<!\d[.,])" if first.isdigit() else "")
               + r"\s*".join(re.escape(w) for w in words)
               + (r"(?![^\W_])" if last.isalnum() else "") + (r"(?![.,]\d)" if last.isdigit() else ""))
    letters = [c for c in probe if c.isalpha()]
    m = re.search(pattern, note, 0 if letters and all(c.isupper() for c in letters) else re.IGNORECASE)
    return (m.start(), m.end()) if m else None


def find_verbatim(note: str, probe: str) -> Optional[tuple[int, int]]:
    """Where ``probe`` stands in ``note`` word for word, ignoring case and white space ("Wt 85.7 kg" in
    "wt  85.7kg"; a trailing full stop, semicolon, comma or colon of the probe not needed): (start, end) or None.
    A probe of fewer than :data:`MIN_VERBATIM` characters (white space not counted) would be found inside any
    longer word ("HTN" in "pHTN"), so it is found only where the note writes it as a token (:func:`find_token`)."""
    hay, idx = _squeezed(note)
    whole = probe.strip().strip('"').strip()
    for candidate in dict.fromkeys((whole, whole.rstrip(".;,:"))):
        p, _ = _squeezed(candidate)
        if len(p) < MIN_VERBATIM:
            span = find_token(note, candidate)
            if span is not None:
                return span
            continue
        i = hay.find(p)
        if i >= 0:
            return idx[i], idx[i + len(p) - 1] + 1
    return None


def find_words(note: str, probe: str) -> Optional[tuple[int, int]]:
    """Where ``probe``'s words and numbers (at least :data:`MIN_WORDS`) stand in ``note`` one after another, case
    and whatever lies between them ignored: punctuation, list bullets, line breaks ("Discharge meds: Apixaban 5 mg"
    in "Discharge meds:\\n- Apixaban 5 mg"). A number is a whole token ("1.2" is not "1, 2"). (start, end) of the
    first word to the last, or None."""
    want = _words(probe)[0]
    if len(want) < MIN_WORDS:
        return None
    have, spans = _words(note)
    first, n = want[0], len(want)
    close = probe.rstrip()[-1:] if probe.rstrip()[-1:] in ")]" else ""
    for i, w in enumerate(have[:len(have) - n + 1]):
        if w == first and have[i:i + n] == want:
            end = spans[i + n - 1][1]
            return spans[i][0], end + (1 if close and note[end:end + 1] == close else 0)
    return None


def link_verbatim(text: str, notes: dict[str, str], prefer: Optional[str] = None) -> Optional[tuple[str, int, int]]:
    """The first note (``prefer`` first, then the notes in order) where ``text`` stands word for word
    (:func:`find_verbatim`), else the first where its words do (:func:`find_words`), as (note id, start, end);
    None when no note does."""
    if not text.strip():
        return None
    order = ([prefer] if prefer in notes else []) + [n for n in notes if n != prefer]
    for find in (find_verbatim, find_words):
        for nid in order:
            span = find(notes[nid], text)
            if span is not None:
                return nid, span[0], span[1]
    return None


@lru_cache(maxsize=32)
def _lines(text: str) -> tuple[tuple[int, int], ...]:
    """``text``'s sentences (:func:`split_sentences`), each further cut at its line breaks, as character spans."""
    out = []
    for s in split_sentences(text):
        at = s.start
        for line in text[s.start:s.end].split("\n"):
            lead = len(line) - len(line.lstrip())
            if line.strip():
                out.append((at + lead, at + lead + len(line.strip())))
            at += len(line) + 1
    return tuple(out)


def _most_similar(probes: list[str], notes: dict[str, str], order: list[str]) -> tuple[
        Optional[str], Optional[int], Optional[int], float]:
    """The run of one to :data:`MAX_WINDOW` consecutive sentences of a note most similar to any of ``probes``
    (lower-cased, white space as single spaces): (note id, start, end, difflib ratio). A run ends once it is half
    as long again as the longest probe."""
    best: tuple[Optional[str], Optional[int], Optional[int], float] = (None, None, None, 0.0)
    longest = max(len(p) for p in probes)
    for nid in order:
        t, lines = notes[nid], _lines(notes[nid])
        for i, (s, _) in enumerate(lines):
            for j in range(i, min(i + MAX_WINDOW, len(lines))):
                e = lines[j][1]
                window = " ".join(t[s:e].lower().split())
                for probe in probes:
                    m = difflib.SequenceMatcher(None, probe, window, autojunk=False)
                    if m.real_quick_ratio() > best[3] and m.quick_ratio() > best[3]:  # upper bounds first
                        r = m.ratio()
                        if r > best[3]:
                            best = (nid, s, e, r)
                if len(window) > 1.5 * longest:
                    break
    return best


def link_fact(text: str, quote: str, notes: dict[str, str], prefer: Optional[str]) -> tuple[
        Optional[str], Optional[int], Optional[int], str, float]:
    """Find where a fact came from (see the module docstring), its quote tried before its own text, ``prefer``'s
    note before the others. A fact the notes state word for word, or in the same words, is always linked. Returns
    note id, start, end, link kind ("exact", "fuzzy", "unlinked") and score (1.0 for exact, else the ratio)."""
    order = ([prefer] if prefer in notes else []) + [n for n in notes if n != prefer]
    q = quote.strip().strip('"').strip()
    for probe in (q, text):
        hit = link_verbatim(probe, notes, prefer)
        if hit is not None:
            return hit[0], hit[1], hit[2], "exact", 1.0
    probes = [" ".join(p.lower().split()) for p in dict.fromkeys((q, text)) if p.strip()]
    nid, s, e, r = _most_similar(probes, notes, order) if probes else (None, None, None, 0.0)
    if nid is not None and r >= FUZZY_MIN:
        return nid, s, e, "fuzzy", round(r, 3)
    return None, None, None, "unlinked", round(r, 3)
