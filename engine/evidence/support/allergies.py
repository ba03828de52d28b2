"""Allergies a sentence names that the notes never record as allergies.

An allergy list is read before every order, and an invented allergy is a specific the other checks cannot see:
its substance usually *is* in the notes ("Contrast 110 mL" during a catheterisation, a drug the patient takes),
only never as an allergy. This check reads:

* the **allergens a sentence claims**: the words after "allergic to" / "allergy to" / "intolerant of" (up to three,
  to the first comma or conjunction), the one or two words before "allergy" / "allergies" / "intolerance"
  ("iodinated contrast allergy"), and the short items of an "Allergies: …" list ("sulfa (rash)", "penicillin").
  A clause that negates ("no known drug allergies", "denies allergies", "NKDA") claims none; outside an
  "Allergies:" list only words that name a substance count (:func:`is_substance`: a drug or procedure term, a word
  of :data:`ALLERGENS`, a brand name), and words that name a kind of allergy (:data:`NOT_ALLERGENS`: "drug",
  "seasonal", "known") never do;
* the **notes' allergy talk**: every line that mentions allergy, intolerance, a reaction or NKDA, and after a
  line that asks, introduces ("Allergies:") or heads the section, the lines that answer it: in a conversation the
  answer follows the question ("Any allergies?" "Penicillin gives me hives"), in a note the list follows its label.

A claimed allergen whose stem occurs in no such stretch is a finding: "an allergy to contrast: the notes' allergy
lines never name it". Stems are Porter stems (:func:`engine.evidence.text.terms.stem`).
"""
from __future__ import annotations

import re
from typing import Sequence

from engine.evidence.text import is_specific, stem, tokens

ANSWER_LINES = 2  # after a question, an "Allergies:" label or a heading: the answer's lines
MAX_LIST_LINES = 12  # a bulleted allergy list read at most this far
MENTION = re.compile(r"\ballerg\w*|\bnkda\b|\bintoleran\w*|\breactions?\b|\banaphyla\w*", re.I)
NEGATION = re.compile(r"\b(?:no|not|none|denie[sd]|deny|denying|without|negative|nkda|nka)\b", re.I)
_AFTER = re.compile(r"\b(?:allergic|allergy|allergies|intolerant|intolerance|sensitivity|reactions?)\s+"
                    r"(?:to|of|including|such\s+as|like)\s+([^,;.:()\n]+)", re.I)
_BEFORE = re.compile(r"((?:[A-Za-z][\w-]*\s+){1,2})(?:allergy|allergies|intolerance)\b(?!\s*/)(?:\s+([a-z]+))?",
                     re.I)
_LIST = re.compile(r"\ballerg(?:y|ies)\s*:\s*([^.\n]+)", re.I)
_STOP = re.compile(r"\b(?:but|which|that|with|requiring|causing|since|as|including|who|after|in|on|for)\b", re.I)
NOT_ALLERGENS = frozenset("""a an the any all his her their its my your this that these those some no known drug drugs
medication medications medicine medicines medical documented reported listed multiple several many other others
seasonal environmental food foods significant severe mild minor major possible probable prior previous history new old true
reaction reactions allergy allergies allergic intolerance intolerant sensitivity to of is are was were has have had
she he they patient s""".split())
ALLERGENS = frozenset("""sulfa sulfonamide sulfite codeine aspirin nsaid opioid opiate narcotic mycin cephalosporin
contrast iodinated iodine dye gadolinium latex adhesive tape nickel shellfish seafood fish peanut nut egg milk dairy
gluten soy wheat sesame bee wasp sting venom pollen ragweed grass tree dust mite mold mould dander cat dog
""".split())  # substances :func:`is_specific` does not know
FUNCTION_WORDS = frozenset("""for of in with to and or about from by at has have had is are was were some any
significant complaint complaints history""".split())  # "complaint of allergies": no substance before the word
ALLERGY_AS_MODIFIER = frozenset("""evaluation clinic testing test tests shots immunology immunologist specialist
workup consult consultation referral medicine medicines medication medications season symptoms doctor""".split())
NEGATION_CHARS = 40  # a negation this close before the clause's first mention of allergy negates it
MAX_ITEM_WORDS = 3  # an "Allergies:" item longer than this is prose, read by the other two patterns


def _words(text: str, substances_only: bool = True) -> list[str]:
    """The candidate allergens of ``text``, lower-case; with ``substances_only`` only words that name a substance
    (:func:`is_substance`)."""
    return [t.low for t in tokens(text) if t.low.isalpha() and len(t.low) >= 3 and t.low not in NOT_ALLERGENS
            and (not substances_only or is_substance(t.text))]


def is_substance(word: str) -> bool:
    """A word that names what one can be allergic to: a drug, procedure or finding term
    (:func:`engine.evidence.text.terms.is_specific`), a word of :data:`ALLERGENS`, or a capitalised word that is
    not a heading's (a brand name: "Lortab", "Bactrim")."""
    low = word.lower()
    return (is_specific(low) or low in ALLERGENS or low.rstrip("s") in ALLERGENS
            or (word[:1].isupper() and not word.isupper() and len(word) >= 4))


def claimed_allergens(sentence: str) -> list[str]:
    """The substances ``sentence`` says the patient is allergic to, lower-case, in order (see the module
    docstring)."""
    out: list[str] = []
    for clause in re.split(r"[;\n]|(?<=\w)\.\s", sentence):
        if not MENTION.search(clause):
            continue
        first = MENTION.search(clause)
        if NEGATION.search(clause[max(0, first.start() - NEGATION_CHARS):first.end()]):
            continue
        for m in _AFTER.finditer(clause):
            for part in re.split(r"\b(?:and|or|plus)\b", _STOP.split(m.group(1))[0]):
                out += _words(part)[:MAX_ITEM_WORDS]
        for m in _BEFORE.finditer(clause):
            if (m.group(2) or "").lower() in ALLERGY_AS_MODIFIER:
                continue
            before = []
            for w in reversed(m.group(1).split()):
                if w.lower() in FUNCTION_WORDS or w.lower().endswith("ing"):
                    break
                before.insert(0, w)
            out += _words(" ".join(before))[-2:]
        for m in _LIST.finditer(clause):
            for item in re.split(r"[,;/]|\band\b|\bplus\b", m.group(1)):
                head = item.split("(")[0]
                words = [t.low for t in tokens(head) if t.low.isalpha()]
                if 0 < len(words) <= MAX_ITEM_WORDS and not MENTION.search(head):
                    out += _words(head, substances_only=False)
    return list(dict.fromkeys(out))


def _talk(text: str) -> list[str]:
    """The lines of ``text`` that talk about allergy: each line with a mention, and after a line that asks
    ("Any allergies?"), introduces ("Allergies:") or heads ("ALLERGIES") the following :data:`ANSWER_LINES`
    non-empty lines, or its whole bulleted list."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not MENTION.search(line):
            continue
        out.append(line)
        s = line.strip()
        if not ("?" in s or s.endswith(":") or len(s.split()) <= 3):
            continue
        taken = 0
        for nxt in lines[i + 1:]:
            if not nxt.strip():
                continue
            bullet = nxt.lstrip()[:1] in "-*•"
            if taken >= ANSWER_LINES and not bullet:
                break
            out.append(nxt)
            taken += 1
            if taken >= MAX_LIST_LINES:
                break
    return out


def allergy_stems(notes: Sequence[tuple[str, str]]) -> frozenset:
    """The stems of every word the notes' allergy talk uses (:func:`_talk`)."""
    return frozenset(stem(t.low) for _, text in notes for line in _talk(text) for t in tokens(line)
                     if t.low.isalpha())


def unrecorded_allergens(sentence: str, notes: Sequence[tuple[str, str]]) -> list[str]:
    """The allergens ``sentence`` claims whose stem the notes' allergy talk never uses; words that stand side by
    side in the sentence are one allergen ("iodinated contrast")."""
    claimed = claimed_allergens(sentence)
    if not claimed:
        return []
    known = allergy_stems(notes)
    missing = [w for w in claimed if stem(w) not in known]
    out: list[str] = []
    for w in missing:
        if out and re.search(rf"\b{re.escape(out[-1])}\s+{re.escape(w)}\b", sentence, re.I):
            out[-1] = f"{out[-1]} {w}"
        else:
            out.append(w)
    return out
