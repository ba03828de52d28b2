"""What a claim says that its record does not, read without the model, and the model's answer beside it.

A small model asked about a whole sentence says *yes* to most plausible clinical statements; an added history, a
finding never reported or a pertinent negative on a topic never raised are words the record never uses. Per claim:

* ``novel_words``  the rarity-weighted share of the claim's content words (Porter stems) that the record never uses
  (:func:`engine.evidence.text.lexical.lexical_support` over :func:`engine.evidence.text.lexical.content_stems`),
  both sides read through :func:`engine.evidence.text.abbreviations.expand` ("DCCV" meets "cardioversion") and
  without the words of :data:`NEVER_NOVEL` (how summaries talk: "reports", "presents", "follow-up");
* ``novel_numbers``  how many numbers the claim states that the record never does
  (:func:`engine.evidence.text.lexical.claimed_numbers`: no list numbers, dates or unit numbers), at most 2;
* ``no_age``  the claim gives an age and the record mentions none;
* ``fact_check``  a fact-level check finds a value, side or term the notes give otherwise
  (:func:`engine.evidence.support.specifics.check_sentence`);
* ``model``  1 − the model's P(yes) for the sentence, that P capped at :data:`FINDING_CAP` when one of the checks
  above finds something (a number, an age or a fact the record does not give: the model's *yes* does not outweigh
  it); ``None`` when the question was not answered.

:class:`Signals` holds them; :func:`claim_signals` reads them for one claim against a :class:`RecordWords`, which
reads the record once per case.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from engine.core import Case
from engine.evidence.support import specifics
from engine.evidence.text import (claimed_numbers, content_stems, expand, lexical_support, numbers, rouge_scorer,
                                  tokenize)

NEVER_NOVEL = frozenset(("report", "state", "note", "present", "describ", "complain", "continu", "follow", "plan",
                         "recommend", "discuss", "advis", "seen", "visit", "today", "current", "prior", "histori",
                         "evalu", "assess", "manag", "symptom", "concern", "treatment", "also", "includ", "significant",
                         "given", "remain", "start", "stop", "use", "take", "taken", "recent", "ongo", "known",
                         "diagnos", "well", "month", "week", "year", "day", "time", "mention", "indic", "admit",
                         # who the patient is, which notes write as "F", "M" or "y/o"
                         "woman", "man", "femal", "male", "women", "men", "ladi", "gentleman", "girl", "boy",
                         # the months of a date (a date is not a claimed fact of its own)
                         "januari", "februari", "march", "april", "may", "june", "juli", "august", "septemb",
                         "octob", "novemb", "decemb"))
AGE_TALK = re.compile(r"\b(?:years? old|year-old|how old|aged?|birthday|\d{1,3} ?y/?o)\b", re.I)
MAX_NUMBERS = 2
MODEL_LOGIT_CAP = 6.0
FINDING_CAP = 0.05  # the model's P(yes) when a check finds a number, an age or a fact the record does not give


def model_logit(model: Optional[float]) -> float:
    """log(model / (1 − model)) within ±:data:`MODEL_LOGIT_CAP` (``model`` = 1 − P(yes)); 0 when there is none."""
    if model is None:
        return 0.0
    m = min(max(model, 1e-6), 1 - 1e-6)
    return max(-MODEL_LOGIT_CAP, min(MODEL_LOGIT_CAP, math.log(m / (1 - m))))


@dataclass(frozen=True)
class Signals:
    """One claim's signals, each higher when the claim is less likely supported (see the module docstring), and
    what the checks found, in words, for a mark's reason."""

    novel_words: float
    novel_numbers: int
    no_age: bool
    fact_check: bool
    model: Optional[float] = None
    facts: tuple[str, ...] = ()  # the fact-level checks' findings
    new_numbers: tuple[str, ...] = ()  # the claimed numbers the record never states

    @property
    def capped(self) -> bool:
        """A check found a number, an age or a fact the record does not give (the model's answer is capped)."""
        return bool(self.novel_numbers or self.no_age or self.fact_check)

    def findings(self) -> list[str]:
        """What the checks found, in words (:func:`described`)."""
        return described(self.facts, self.no_age, self.new_numbers)

    def vector(self) -> list[float]:
        """The features in the order of :data:`FEATURES`: the model's answer on the log-odds scale
        (log((1 − P(yes)) / P(yes)), within ±:data:`MODEL_LOGIT_CAP`; a missing answer counts as 0, undecided),
        the others as they are."""
        return [model_logit(self.model), self.novel_words, float(self.novel_numbers), float(self.no_age),
                float(self.fact_check)]


FEATURES = ("model", "novel_words", "novel_numbers", "no_age", "fact_check")


class RecordWords:
    """The words, numbers and notes of one case's record, read once."""

    def __init__(self, case: Case):
        self.notes = [(n.note_id, n.text) for n in case.notes]
        text = case.source_text
        self.stems = frozenset(content_stems(expand(text)))
        self.numbers = frozenset(numbers(text, generous=True))
        self.has_age = bool(AGE_TALK.search(text) or specifics.ages(text))


def _stems(claim: str) -> list[str]:
    return [s for s in content_stems(expand(claim)) if s not in NEVER_NOVEL]


def checked(claim: str, notes, record_numbers, has_age: bool) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    """The fact-level checks of ``claim`` against the notes ((note id, text) pairs): the findings of
    :func:`engine.evidence.support.specifics.check_sentence`, whether it gives an age when the record has none
    (``has_age`` False), and the numbers it claims (:func:`engine.evidence.text.lexical.claimed_numbers`) that
    ``record_numbers`` lacks (0 and 1, and its own ages, never count)."""
    ages = specifics.ages(claim)
    foreign = claimed_numbers(claim) - set(record_numbers) - {str(a) for a in ages} - {"0", "1"}
    return (tuple(f.describe() for f in specifics.check_sentence(claim, notes)), bool(ages) and not has_age,
            tuple(sorted(foreign)))


def described(facts: Sequence[str], no_age: bool, new_numbers: Sequence[str]) -> list[str]:
    """The findings of :func:`checked` in words: the fact checks, an age the record never gives, each number it
    never states."""
    return list(dict.fromkeys([*facts, *(["the record gives no age"] if no_age else []),
                               *(f"the record never states {x}" for x in new_numbers)]))


def claim_signals(claim: str, record: RecordWords, p_yes: Optional[float] = None) -> Signals:
    """The signals of ``claim`` against ``record``, with the model's P(yes) for its sentence when asked."""
    stems = _stems(claim)
    novel = 1.0 - lexical_support(stems, record.stems) if stems else 0.0
    facts, no_age, foreign = checked(claim, record.notes, record.numbers, record.has_age)
    if p_yes is not None and (foreign or no_age or facts):
        p_yes = min(p_yes, FINDING_CAP)
    return Signals(round(float(novel), 4), min(len(foreign), MAX_NUMBERS), no_age, bool(facts),
                   None if p_yes is None else 1.0 - p_yes, facts, foreign)


def novel_words(claim: str, record: RecordWords) -> list[str]:
    """The claim's words (as written) whose stems the record never uses, for a mark's reason."""
    missing = {s for s in _stems(claim) if s not in record.stems}
    out = []
    # words as written, of two characters or more, with their hyphens ("follow-up", "well-")
    for w in tokenize(claim, case="keep", digits="none", joiners="-", joiner_runs=True, open_end=True, min_len=2):
        toks = rouge_scorer().tokens(w)
        if toks and toks[0] in missing and w.lower() not in (x.lower() for x in out):
            out.append(w)
    return out
