"""Fact-level checks of one summary sentence against the source notes: the specifics a reader acts on.

A sentence can read as well supported (most of its words are in the notes, it is close to a note sentence) and
still carry one false specific — a drug that was never given, a value the notes do not give for that test, the
wrong side, an allergy nobody recorded. This module finds four kinds, each with what the notes say instead:

* **absent term** — a specific term (a drug by its INN stem, a named finding or procedure by its Greco-Latin
  ending, a label mixing letters and digits such as T7 or 4R) that no note contains in any inflection (Porter
  stems; each part of a hyphenated word is read);
* **value mismatch** — a number (or a class / grade / stage in Roman numerals) attached to a term (the nearest
  content word before it, at most :data:`ANCHOR_GAP` words away) where the notes attach numbers to that same term
  but never this one: "FEV1 62%" against notes that only say "FEV1 ... 42% predicted";
* **side mismatch** — left / right / bilateral (OD / OS / OU) before or after a term the notes mention only with
  another side: "left optic neuritis" against "right optic neuritis", "optic neuritis OD";
* **unrecorded allergy** — an allergen the sentence names that the notes' allergy talk never does
  (:mod:`engine.evidence.support.allergies`: "iodinated contrast allergy" where contrast was given and sulfa is the
  only allergy).

Checks read words, never meanings; they are one part of the weak-support rule (``engine.evidence.support.alignment``) and of the
citation check (the cited notes must give the sentence's values). The word lists and the anchor gap were set
on our own synthetic sample (``bench/support_benchmark.py`` reports how many genuine sentences they flag);
``bench/specifics_eval.py`` measures them on the validity set's inserted false facts, which played no part.

Imports only the standard library and NLTK's Porter stemmer (the one ROUGE uses); :mod:`engine.evidence.support.alignment` builds
on this module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Optional, Sequence

from engine.evidence.support import allergies
from engine.evidence.text import DRUG_STEMS, FINDING_ENDINGS, MONTHS, Tok, is_specific, stem, tokens

CHECKS_VERSION = "checks-2"  # 2: the unrecorded-allergy check; results decided by the checks carry it
ANCHOR_GAP = 2  # a value belongs to the nearest content word at most this many words before it
SIDE_WINDOW = 2  # a side word applies to the term within this many words after (or OD/OS/OU just after) it
_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6}
_ROMAN_AFTER = {"class", "grade", "stage", "type", "bethesda", "gold", "nyha", "tirads", "tier", "phase", "ckd"}
_SIDES = {"left": "left", "right": "right", "bilateral": "both", "bilaterally": "both", "od": "right",
          "os": "left", "ou": "both", "l": "left", "r": "right"}
_UNITS = frozenset("""mg mcg g kg lb lbs ml l dl ul mmol meq iu u units unit mm cm m hr hrs h min mins sec s
bpm mmhg percent x q qd bid tid qid prn po iv sc sl im daily weekly days day weeks week months month years year
wks wk mo yrs yr times dose doses tab tabs tablet tablets cap caps puffs puff at on in of to from and or with
was were is are be been the a an by for per about approx approximately up down than over under""".split())


@dataclass(frozen=True)
class Finding:
    """One false-looking specific of a sentence."""

    kind: str  # "absent term" | "value mismatch" | "side mismatch" | "unrecorded allergy"
    term: str  # as the summary writes it
    anchor: str = ""  # the term a value or side belongs to
    source_says: tuple[str, ...] = ()  # what the notes attach to the anchor instead
    note_ids: tuple[str, ...] = ()  # where they say it

    def describe(self) -> str:
        where = f" (note {', '.join(self.note_ids)})" if self.note_ids else ""
        if self.kind == "absent term":
            return f"'{self.term}' appears in no note"
        if self.kind == "unrecorded allergy":
            return f"an allergy to {self.term}: no note records it as an allergy"
        if self.kind == "value mismatch":
            return f"{self.anchor} {self.term}: the notes give {self.anchor} {' / '.join(self.source_says)}{where}"
        return f"{self.term} {self.anchor}: the notes say {' / '.join(self.source_says)}{where}"


def _value(tok: Tok, prev: Optional[Tok]) -> Optional[str]:
    """The token as a normalised value: digits (thousands separators dropped, trailing zeros of a decimal kept
    apart), or a Roman numeral after class / grade / stage …; None when it is no value."""
    if tok.low[0].isdigit():
        if "/" in tok.low or ":" in tok.low:
            return None  # a date, a time or a ratio (7/12, 20/70, 1:640): not one value
        v = tok.low.replace(",", "")
        if "." in v:
            v = v.rstrip("0").rstrip(".") or "0"
        return v
    base = tok.low.split("-")[0]
    if base in _ROMAN and prev is not None and prev.low in _ROMAN_AFTER and tok.text.split("-")[0].isupper():
        return str(_ROMAN[base])
    return None


_CODE = re.compile(r"^(?:[CTLS]\d{1,2}|\d{1,2}[RL])$")  # a spinal level (T7, C5) or a lymph-node station (4R)


_DOSE_UNITS = frozenset("mg mcg g units unit meq mmol iu ml".split())


def _drug_like(tok: Tok) -> bool:
    """The word right before a dose ("ezetimibe 10 mg"): a lower-case word of five letters or more that is no
    unit, connective or verb form ("increased to 20 mg" gives the dose to no term)."""
    w = tok.text
    return w.isalpha() and w.islower() and len(w) >= 5 and not _is_unit(w) and not w.endswith(("ed", "ing"))


def _is_unit(low: str) -> bool:
    return low in _UNITS or ("/" in low and all(p in _UNITS or p in ("dl", "hpf", "min", "ml", "l") for p in
                                                 low.split("/")))


def _is_anchor(tok: Tok) -> bool:
    """A term a value can belong to: an abbreviation or label (two capitals, or a digit: FEV1, LVEF, MELD-Na,
    A1c, TSH) or a drug (:func:`engine.evidence.text.terms.is_specific`) — not a unit, a side, a capitalised word or a general word."""
    if _is_unit(tok.low) or tok.low in _SIDES or tok.low[0].isdigit() or len(tok.low) < 2:
        return False
    return sum(c.isupper() for c in tok.text) >= 2 or any(c.isdigit() for c in tok.low) or \
        is_specific(tok.low.split("-")[-1])


_TIME_UNITS = frozenset("""s sec secs second seconds min mins minute minutes h hr hrs hour hours d day days wk wks week
weeks mo mos month months y yr yrs year years episodes episode times cycles cycle doses""".split())


def _measurement(toks: Sequence[Tok], i: int, text: str) -> bool:
    """Whether the value at ``i`` measures the term before it: not a duration or a count ("21 days",
    "14 episodes") and not followed by a word of its own, unless a percent sign ties it ("42% predicted")."""
    t = toks[i]
    if text[t.start + len(t.text):t.start + len(t.text) + 1] == "%":
        return True
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if nxt is None or text[t.start + len(t.text):nxt.start].strip():
        return True  # punctuation or the end follows
    if nxt.low in _TIME_UNITS:
        return False
    return _is_unit(nxt.low) or _value(nxt, t) is not None or not nxt.low.isalpha()


def _anchored_values(toks: Sequence[Tok], text: str = "") -> list[tuple[str, str, str]]:
    """(anchor key, anchor as written, value) for every measured value with a term before it (at most
    :data:`ANCHOR_GAP` words back, across units and connectives only); values that follow a value the same way
    share its term ("FEV1 1.12 L (42% predicted)", "A1c 11.8% to 9.6%"). A general word, a comma or a full stop
    in between ends the search: "MELD-Na 18 (bilirubin 2.2" gives bilirubin's value to no term."""
    out: list[tuple[str, str, str]] = []
    last: dict[int, tuple[str, str]] = {}  # token index of a value -> its anchor
    for i, t in enumerate(toks):
        v = _value(t, toks[i - 1] if i else None)
        if v is None or (text and t.low[0].isdigit() and not _measurement(toks, i, text)):
            continue
        if not t.low[0].isdigit():  # a Roman numeral belongs to its "class" / "grade" / "stage" word
            last[i] = (stem(toks[i - 1].low), toks[i - 1].text)
        dosed = i + 1 < len(toks) and toks[i + 1].low in _DOSE_UNITS
        for j in range(i - 1, max(-1, i - 1 - ANCHOR_GAP), -1):
            if i in last:
                break
            if text and re.search(r"[,;.]", text[toks[j].start + len(toks[j].text):toks[j + 1].start]):
                break  # a comma or a full stop closes the term's clause: "UPCR 7.2 g/g, 3+ protein"
            if j in last:
                last[i] = last[j]
                break
            if _value(toks[j], toks[j - 1] if j else None) is not None:
                break
            if _is_anchor(toks[j]) or (dosed and _drug_like(toks[j])):
                last[i] = (stem(toks[j].low), toks[j].text)
                break
            if not _is_unit(toks[j].low) and not toks[j].low[0].isdigit():
                break  # a general word: the value is not this term's (a date in between is skipped)
        if i in last:
            out.append((last[i][0], last[i][1], v))
    return out


def _side_term(tok: Tok) -> bool:
    """A word a side can qualify: a lower-case word of four letters or more ("optic", "knee", "adrenal")."""
    return tok.text.isalpha() and tok.text.islower() and len(tok.text) >= 4 and not _is_unit(tok.low)


class SourceIndex:
    """What the checks read from the notes: stems per note, values attached to each term, sides per term."""

    def __init__(self, notes: Iterable[tuple[str, str]]):
        self.stems: dict[str, set[str]] = {}
        self.values: dict[str, dict[str, set[str]]] = {}  # anchor stem -> value -> note ids
        self.sides: dict[str, dict[str, set[str]]] = {}  # term stem -> side -> note ids
        self.raw_tokens: set[str] = set()
        self.note_values: dict[str, set[str]] = {}  # note id -> every value it states
        for nid, text in notes:
            toks = tokens(text)
            self.raw_tokens |= {p for t in toks for p in [t.low, *re.split(r"[-/]", t.low)] if p}
            self.stems[nid] = {stem(p) for t in toks for p in [t.low, *re.split(r"[-/]", t.low)] if p}
            for a, _, v in _anchored_values(toks, text):
                self.values.setdefault(a, {}).setdefault(v, set()).add(nid)
            for i, t in enumerate(toks):
                pv = _value(t, toks[i - 1] if i else None)
                if pv is not None:
                    self.note_values.setdefault(nid, set()).add(pv)
                side = _SIDES.get(t.low) if (t.low not in ("l", "r") or t.text.isupper()) else None
                if side is None:
                    continue
                span = toks[i + 1:i + 1 + SIDE_WINDOW] if t.low not in ("od", "os", "ou") else toks[max(0, i - 2):i]
                for u in span:
                    if _side_term(u):
                        self.sides.setdefault(stem(u.low), {}).setdefault(side, set()).add(nid)

    def has_stem(self, stem: str, note_ids: Optional[Iterable[str]] = None) -> bool:
        ids = self.stems if note_ids is None else [n for n in note_ids if n in self.stems]
        return any(stem in self.stems[n] for n in ids)


@lru_cache(maxsize=64)
def index_for(notes: tuple[tuple[str, str], ...]) -> SourceIndex:
    return SourceIndex(notes)


def absent_terms(text: str, index: SourceIndex) -> list[Finding]:
    """Specific terms (:func:`engine.evidence.text.terms.is_specific`: drugs, named findings and procedures; labels mixing letters and digits)
    that no note contains in any inflection."""
    out, seen = [], set()
    for t in tokens(text):
        if t.low[0].isdigit() or t.low in seen:
            continue
        seen.add(t.low)
        if _CODE.match(t.text):
            if t.low not in index.raw_tokens:
                out.append(Finding("absent term", t.text))
            continue
        parts = [p for p in re.split(r"[-/]", t.low) if len(p) >= 4 and p.isalpha()]
        for p in parts:
            if is_specific(p) and not index.has_stem(stem(p)) and p not in index.raw_tokens:
                out.append(Finding("absent term", t.text))
                break
    return out


def value_mismatches(text: str, index: SourceIndex, note_ids: Optional[Sequence[str]] = None) -> list[Finding]:
    """Values whose term the notes (``note_ids``: only these) give with other values and never with this one."""
    out = []
    for anchor, written, v in _anchored_values(tokens(text), text):
        given = index.values.get(anchor, {})
        if note_ids is not None:
            given = {val: ids & set(note_ids) for val, ids in given.items() if ids & set(note_ids)}
        if not given or v in given:
            continue
        if note_ids is None and len(given) > 4:
            continue  # a term the notes give with many values (dates, doses over time): no single truth
        out.append(Finding("value mismatch", v, written, tuple(sorted(given, key=lambda x: (len(x), x))[:4]),
                           tuple(sorted({n for ids in given.values() for n in ids}))))
    return out


def side_mismatches(text: str, index: SourceIndex) -> list[Finding]:
    out = []
    toks = tokens(text)
    for i, t in enumerate(toks):
        side = _SIDES.get(t.low) if (t.low not in ("l", "r") or t.text.isupper()) else None
        if side is None:
            continue
        span = toks[i + 1:i + 1 + SIDE_WINDOW] if t.low not in ("od", "os", "ou") else toks[max(0, i - 2):i]
        for u in span:
            if not _side_term(u):
                continue
            known = index.sides.get(stem(u.low), {})
            if known and side not in known and "both" not in known:
                out.append(Finding("side mismatch", t.text, u.text, tuple(sorted(known)),
                                   tuple(sorted({n for ids in known.values() for n in ids}))))
                break
    return out


_AGE = re.compile(r"\b(\d{1,3})[- ](?:years?|yrs?)[- ]old\b|\b(\d{1,3}) ?(?:y/?o|yo)\b|\baged? (\d{1,3})\b", re.I)


def ages(text: str) -> set[int]:
    return {int(g) for m in _AGE.findall(text) for g in m if g}


def age_mismatches(text: str, notes: Sequence[tuple[str, str]]) -> list[Finding]:
    """An age the notes never give (a year either way allowed: a birthday between notes), when they give one."""
    stated = {a for _, t in notes for a in ages(t)}
    said = ages(text)
    if not stated or not said:
        return []
    return [Finding("value mismatch", str(a), "age", tuple(str(x) for x in sorted(stated)),
                    tuple(n for n, t in notes if ages(t)))
            for a in sorted(said) if all(abs(a - x) > 1 for x in stated)]


def check_sentence(text: str, notes: Sequence[tuple[str, str]]) -> list[Finding]:
    """Every finding for one sentence (citation tags already removed) against a case's notes
    (``(note id, text)`` pairs)."""
    index = index_for(tuple(notes))
    return (absent_terms(text, index) + value_mismatches(text, index) + side_mismatches(text, index)
            + age_mismatches(text, notes)
            + [Finding("unrecorded allergy", w) for w in allergies.unrecorded_allergens(text, notes)])


def values_elsewhere(text: str, index: SourceIndex, cited: Sequence[str]) -> list[str]:
    """Values the sentence attaches to a term that some note gives for that term, while none of the ``cited``
    notes states the value at all: "anti-dsDNA 285 (note 2)" when note 4 is cited. Described, for the citation
    check."""
    out = []
    for anchor, written, v in _anchored_values(tokens(text), text):
        holders = index.values.get(anchor, {}).get(v, set())
        if holders and not holders & set(cited) and not any(v in index.note_values.get(n, ()) for n in cited):
            out.append(f"{written} {v} (note {', '.join(sorted(holders))})")
    return out
