"""The context rules of the stigmatizing-language detector: a lexicon match does not count when it is negated,
in the patient's own quoted words, about someone other than the patient, a clinical adjective rather than a label
of a person, or in a clinical or billing sense.
"""
from __future__ import annotations

import re
from typing import Optional

from engine.evidence.text import tokenize
RULE_NEGATED = "negated"
RULE_PATIENT_QUOTE = "patient_quote"
RULE_NOT_PATIENT = "not_the_patient"
RULE_ADJECTIVE = "clinical_adjective"
RULES = (RULE_NEGATED, RULE_PATIENT_QUOTE, RULE_NOT_PATIENT, RULE_ADJECTIVE, "clinical_use", "billing_context",
         "not_about_patient")



_NEG_CUES = {"no", "not", "never", "without", "nor", "denies", "denied", "deny", "denying", "cannot"}
_NEG_AFTER = {"observed", "noted", "seen", "present", "displayed", "exhibited", "evident", "appreciated",
              "elicited"}


_CLAUSE_WORDS = {"but", "and", "because", "though", "although", "however", "yet", "so", "which", "whereas",
                 "while", "except"}


_VERBS_AFTER_COMMA = {"is", "was", "are", "were", "has", "had", "have", "been", "remains", "remained", "appears",
                      "appeared", "seems", "seemed", "became", "becomes", "continues", "continued", "states",
                      "stated", "reports", "reported"}


_AUX = {"was", "were", "is", "are", "be", "been", "being", "has", "have", "had", "will", "would", "being"}
_PERSON_NOUNS = {"patient", "patients", "pt", "pts", "man", "men", "woman", "women", "male", "males", "female",
                 "females", "gentleman", "gentlemen", "lady", "ladies", "boy", "boys", "girl", "girls", "child",
                 "children", "kid", "kids", "person", "people", "individual", "individuals", "adult", "adults",
                 "teen", "teenager", "adolescent", "mother", "father", "mom", "dad", "veteran", "guy", "client",
                 "resident", "inmate", "student", "worker"}


_NOUN_FOLLOWERS = {"who", "whose", "with", "and", "or", "but", "on", "in", "at", "for", "from", "since", "presenting",
                   "presents", "presented", "is", "was", "are", "were", "has", "had", "have", "admitted", "here",
                   "that", "now", "being", "currently", "not", "off", "since", "brought", "found", "seen", "came",
                   "comes", "returns", "returned", "again", "himself", "herself", "themselves", "who's", "s/p",
                   "status", "x"}


_SPEECH_VERBS = {"states", "stated", "state", "says", "said", "say", "reports", "reported", "report", "describes",
                 "described", "tells", "told", "calls", "called", "explains", "explained", "admits", "admitted",
                 "writes", "wrote", "asks", "asked", "replies", "replied", "answers", "answered", "exclaims",
                 "exclaimed", "quote", "quoted", "quoting", "verbatim", "insists", "endorses", "jokes", "joked"}


_OTHER_SPEAKERS = {"nurse", "nurses", "rn", "staff", "provider", "physician", "doctor", "md", "dr", "ems", "medic",
                   "medics", "police", "officer", "family", "wife", "husband", "mother", "father", "mom", "dad",
                   "daughter", "son", "sister", "brother", "friend", "partner", "spouse", "caregiver", "parent",
                   "parents", "roommate", "neighbor", "neighbour", "team", "resident", "attending", "pcp",
                   "collateral", "girlfriend", "boyfriend", "aunt", "uncle", "guardian", "pharmacist"}


_PATIENT_SUBJECTS = {"patient", "pt", "he", "she", "they", "i", "patient's", "pt's", "who"}
_AGENTS = {"insurance", "insurer", "insurers", "pharmacy", "pharmacist", "payer", "payor", "plan", "company", "lab",
           "laboratory", "hospital", "facility", "nurse", "nursing", "physician", "doctor", "provider", "team",
           "family", "wife", "husband", "mother", "father", "daughter", "son", "parents", "parent", "guardian",
           "agency", "medicaid", "medicare", "court", "judge", "employer", "shelter", "ems", "police", "surgeon",
           "radiology", "dr", "md", "staff", "spouse",
           "partner", "caregiver", "hmo", "ppo", "carrier", "vendor", "supplier"}


_PREPOSITIONS = {"in", "at", "to", "from", "with", "by", "of", "for", "into", "after", "before", "during"}


def _words(segment: str, offset: int = 0) -> list[tuple[str, int, int]]:
    """The segment's words, lower-cased, with their offsets (plus ``offset``): letters and digits, with the
    apostrophe of a contraction or possessive ("don't", "patient's", "patients'"; a curly one read as straight),
    so that "n't" reads as a negation."""
    return [(w.text.replace("’", "'"), offset + w.start, offset + w.end)
            for w in tokenize(segment, clitics=True, offsets=True)]


_SENT_BOUNDARY = re.compile(r"[.!?;:](?=\s|$)|[\n()\[\]]")


def _clause_before(text: str, start: int) -> tuple[int, list[tuple[str, int, int]]]:
    """The words between the start of the candidate's clause and the candidate (see the module doc)."""
    lo = 0
    for m in _SENT_BOUNDARY.finditer(text, 0, start):
        lo = m.end()
    words = _words(text[lo:start], lo)
    cut, after_comma = 0, None
    for i, (w, s, _) in enumerate(words):
        if "," in text[words[i - 1][2] if i else lo:s]:
            after_comma = i
        if w in _CLAUSE_WORDS:
            cut, after_comma = i + 1, None
        elif w in _VERBS_AFTER_COMMA and after_comma is not None:
            cut, after_comma = after_comma, None
    return lo, words[cut:]


def _sentence_start(text: str, start: int) -> int:
    lo = 0
    for m in _SENT_BOUNDARY.finditer(text, 0, start):
        if m.group(0) not in "()":
            lo = m.end()
    return lo


def _words_after(text: str, end: int, n: int) -> list[str]:
    m = _SENT_BOUNDARY.search(text, end)
    return [w for w, _, _ in _words(text[end:m.start() if m else len(text)])][:n]


def _negated(text: str, start: int, end: int) -> bool:
    _, clause = _clause_before(text, start)
    window = [w for w, _, _ in clause][-6:]
    for i, w in enumerate(window):
        if w in _NEG_CUES or w.endswith("n't") or (w == "negative" and i + 1 < len(window) and window[i + 1] == "for"):
            return True
    after = _words_after(text, end, 5)
    for i, w in enumerate(after):
        if w in _CLAUSE_WORDS:
            break
        if w == "absent" or (w == "not" and i + 1 < len(after) and after[i + 1] in _NEG_AFTER):
            return True
    return False


def quotes_of(text: str) -> list[tuple[int, int]]:
    """(open, close) offsets of double-quoted passages: straight quotes paired in order, and curly “…”."""
    out = []
    straight = [m.start() for m in re.finditer('"', text)]
    out += [(straight[i], straight[i + 1]) for i in range(0, len(straight) - 1, 2)]
    out += [(m.start(), m.end() - 1) for m in re.finditer("“[^”]*”", text)]
    return out


def _patient_quote(text: str, q_open: int, q_close: int) -> bool:
    lo = _sentence_start(text, q_open)
    before = _words(text[lo:q_open])
    ws = [w for w, _, _ in before]
    lead = text[lo:q_open].lower()
    if re.search(r"\b(per (the )?(patient|pt)|in (his|her|their) (own )?words|(patient|pt)\s*:\s*$)", lead):
        return True
    cue = max((i for i, w in enumerate(ws) if w in _SPEECH_VERBS), default=None)
    if cue is not None:
        return not any(w in _OTHER_SPEAKERS for w in ws[:cue])
    after = text[q_close + 1:q_close + 60].lower()
    return bool(re.match(r"\s*,?\s*(he|she|they|the patient|patient|pt)\s+(said|says|stated|states|reported|reports"
                         r"|added|adds|explained|explains)\b", after))


def _not_the_patient(text: str, start: int, end: int) -> bool:
    _, clause = _clause_before(text, start)
    ws = [w for w, _, _ in clause[-6:]]
    for i in range(len(ws) - 1, -1, -1):
        if ws[i] in _PATIENT_SUBJECTS:
            break
        if ws[i] in _AGENTS and not (i and ws[i - 1] in _PREPOSITIONS):  # "at the pharmacy" is no subject
            return True
    after = _words_after(text, end, 6)
    for i, w in enumerate(after[:-1]):
        if w == "by":
            return any(x in _AGENTS for x in after[i + 1:i + 3])
    return False


def _next_content_word(text: str, end: int) -> Optional[str]:
    for w in _words_after(text, end, 4):
        if w not in _AUX:
            return w
    return None


def _labels_a_person(text: str, start: int, end: int, e) -> bool:
    """``noun_only`` entries: is the match used as a noun for a person (see the module doc)?"""
    low = text[start:end].lower()
    if low.endswith("s") and not low.endswith("ss"):  # plural: "diabetics" (not "homeless")
        return True
    m = re.match(r"[ \t]*(\S)?", text[end:])
    nxt = m.group(1) if m else None
    if nxt is None or not nxt.isalnum():
        return True
    w = _words(text[end:end + 40])[0][0]
    return w in _PERSON_NOUNS or w in _NOUN_FOLLOWERS


def context_rule(text: str, start: int, end: int, e,
                  quotes: list[tuple[int, int]]) -> tuple[Optional[str], bool]:
    """(the rule that clears the candidate or None, whether it is quoted)."""
    quote = next(((a, b) for a, b in quotes if a < start and end <= b), None)
    if _negated(text, start, end):
        return RULE_NEGATED, quote is not None
    if quote is not None and _patient_quote(text, *quote):
        return RULE_PATIENT_QUOTE, True
    if e.clear_prev:
        _, clause = _clause_before(text, start)
        if any(w in e.clear_prev for w, _, _ in clause[-3:]):
            return e.clear_rule, quote is not None
    if e.clear_next and _next_content_word(text, end) in e.clear_next:
        return e.clear_rule, quote is not None
    if e.patient_only and _not_the_patient(text, start, end):
        return RULE_NOT_PATIENT, quote is not None
    if e.noun_only and not _labels_a_person(text, start, end, e):
        return RULE_ADJECTIVE, quote is not None
    return None, quote is not None
