"""The terms of clinical text a reader looks for: tokens, one Porter stemmer (the one ROUGE uses), the word
endings that mark a drug or a named finding, and a source passage's key terms with the ones a summary never writes.

Coverage ranks what a summary leaves out by the key terms; the support checks read the same tokens, stems and
endings to find specifics a note never gave.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from engine.evidence.text.abbreviations import expand, words_for
from engine.evidence.text.tokenizer import tokenize


@dataclass(frozen=True)
class Tok:
    text: str
    low: str
    start: int


def tokens(text: str) -> list[Tok]:
    """The tokens of ``text`` as the support checks compare them: words as written (opening with a letter, digits
    after it, kept whole across one "-" or "/": "CHA2DS2-VASc", "s/p") and numbers as written ("2,140", "12.5",
    "152/94", "10:30"), each with its lower-cased form and offset."""
    return [Tok(w.text, w.text.lower(), w.start)
            for w in tokenize(text, case="keep", digits="inner", numbers="ratio", joiners="-/", offsets=True)]


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer  # the stemmer ROUGE (rouge-score) uses

    return PorterStemmer()


@lru_cache(maxsize=20000)
def stem(word: str) -> str:
    """The Porter stem of ``word`` (lower-cased), cached."""
    return _stemmer().stem(word.lower())


# Word endings that mark a drug (WHO INN / USAN stems) or a named clinical finding or procedure (Greco-Latin
# suffixes). A term is "specific" when it carries one: a general word a summary may paraphrase with ("woman",
# "advised", "nightly", "cervical") never does.
DRUG_STEMS = ("olol", "pril", "prilat", "sartan", "statin", "azole", "mab", "nib", "gliflozin", "gliptin", "glutide",
              "parin", "xaban", "gatran", "grel", "darone", "thyroxine", "mycin", "micin", "cillin", "cycline",
              "floxacin", "phosphamide", "platin", "taxel", "rubicin", "sone", "olone", "azepam", "zolam", "azepine",
              "oxetine", "triptan", "dipine", "tidine", "prazole", "vir", "semide", "thiazide", "lukast", "terol",
              "tropium", "formin", "caine", "profen", "fenac", "vudine", "setron", "barbital", "tretin", "dronate",
              "lamide", "trexate", "limus", "tinib", "ciclib", "zumab", "ximab", "umab", "cept", "quine", "dazole",
              "conazole", "fungin", "penem", "cef", "ceph", "amide", "idine", "oxacin", "adone", "orphine", "codone",
              "morphone", "tyline", "pramine", "peridol", "apine", "idone", "afil", "osin", "zosin", "olamine",
              "glinide", "gliptin", "lutamide", "relin", "parib", "rafenib", "lisib", "degib", "tide")
FINDING_ENDINGS = ("itis", "oma", "omas", "ectomy", "otomy", "ostomy", "plasty", "rrhage", "rrhagic", "petechial",
                   "petechiae", "infarction", "embolism", "embolus", "thrombosis", "aneurysm", "abscess", "fracture",
                   "hematoma", "transfusion", "cerebellar", "perinephric", "dissection", "perforation")


MONTHS = frozenset("january february march april may june july august september october november december".split())


def is_specific(word: str) -> bool:
    """A drug or a named finding or procedure by its ending (six letters or more, no month name)."""
    w = word.lower()
    return len(w) >= 6 and w not in MONTHS and (w.endswith(DRUG_STEMS) or w.endswith(FINDING_ENDINGS))


# ------------------------------------------------------------------------------------- key terms of the source

# For ranking what a summary leaves out (never to flag a sentence): named conditions by their ending too.
KEY_FINDING_ENDINGS = FINDING_ENDINGS + ("pathy", "osis", "emia", "uria", "penia", "scopy", "graphy", "megaly",
                                         "plegia", "trophy", "ectasis")
GENERIC_CAPS = frozenset("""the and for with not per pmh hpi ros plan assessment exam labs meds note notes history
impression summary diagnosis patient date time visit follow cont dose daily ago yes no none ok md do rn pa np
ed er am pm po iv im sc sl bid tid qid qd prn qhs hs npo dnr dni ama amb ref""".split())
# Routine abbreviations of a note's furniture — vital signs, the exam, routine panels and document words — name
# nothing a summary of the case must carry; they are no key terms (written from common clinical usage).
ROUTINE_ABBREVIATIONS = frozenset("""bp hr rr sao2 spo2 o2 temp bmi wt ht jvp jvd rrr nad heent perrla eomi cta abd ext
neuro psych msk gu gi cv resp pnd doe sob cp nkda nka rtc f/u fu pcp pmd ed er icu ccu or pacu hpi cc ros pmh psh
fh sh rx dx tx sx hx cbc bmp cmp lft lfts ua ucx bcx abg vbg cxr ecg ekg tte uop i/o ios lmp h2o ml etoh tob
hpi a/p s/p c/o r/o w/u h&p""".split())


# Devices and home therapies a reader must find in a summary when the notes order or change them (they have no
# drug stem or finding ending).
DEVICE_TERMS = frozenset("""concentrator pacemaker defibrillator catheter stent nebulizer tracheostomy gastrostomy
colostomy ileostomy nephrostomy dialysis transfusion wheelchair walker splint brace pump""".split())


def key_terms(text: str) -> list[str]:
    """The terms of a source passage a reader would look for in a summary: drugs and named conditions or
    procedures (by their endings), labels mixing letters and digits (PLA2R, CYP3A4, FEV1) and abbreviations of
    three to six capitals (FFR, EGFR, GSC) — each once, in order."""
    out = []
    for w in tokenize(text, case="keep", digits="inner", joiners="-"):  # "PD-L1" read whole, then by its parts
        for part in w.split("-"):
            low = part.lower()
            if len(part) < 2 or low in GENERIC_CAPS or low in ROUTINE_ABBREVIATIONS:
                continue
            caps = part.isupper() and part.isalpha() and 3 <= len(part) <= 6
            mixed = any(c.isdigit() for c in part) and any(c.isalpha() for c in part) and len(part) >= 3 \
                and not re.fullmatch(r"[xXqQ]\d+|\d+[a-z]+", part)
            named = (len(low) >= 6 and low not in MONTHS and (low.endswith(DRUG_STEMS)
                                                                 or low.endswith(KEY_FINDING_ENDINGS))) \
                or low in DEVICE_TERMS
            if (caps or mixed or named) and part not in out:
                out.append(part)
    return out


@lru_cache(maxsize=64)
def summary_words(summary: str) -> tuple[frozenset, frozenset]:
    """The summary's words (hyphen and slash parts too) and their stems, read once per summary."""
    have = {t.low for t in tokens(summary)}
    have |= {p for w in list(have) for p in re.split(r"[-/]", w) if p}
    return frozenset(have), frozenset(stem(w) for w in have)


def missing_key_terms(passage: str, summary: str, keys: Optional[list[str]] = None,
                      skip_negated: bool = True) -> list[str]:
    """:func:`key_terms` of a source passage (``keys`` when the caller has them) the summary never writes
    (case-insensitive; any inflection). Abbreviations count by their words on both sides
    (:mod:`engine.evidence.text.abbreviations`: "DCCV" is written by a summary that says "cardioversion", the
    longest word it stands for). With ``skip_negated`` a term the passage only names negated ("no STEMI criteria")
    is not listed (:func:`negated_only`): a reader looks for what happened, not for what did not. A coverage
    score keeps it (``skip_negated=False``): "no hydronephrosis" is a finding a summary can leave out."""
    have, stems = summary_words(expand(summary))
    keys = key_terms(passage) if keys is None else keys
    return [k for k in keys if not _written(k, have, stems) and not (skip_negated and negated_only(k, passage))]


def _written(term: str, have: frozenset, stems: frozenset) -> bool:
    low = term.lower()
    if low in have or stem(low) in stems:
        return True
    words = [w for w in tokenize(words_for(term), case="lower_text", digits="none") if len(w) >= 4]
    return bool(words) and stem(max(words, key=len)) in stems


NEGATION_CUE = re.compile(r"\b(?:no|not|without|denies|denied|deny|negative(?: for)?|free of|never|none|absent|"
                          r"rules? out|ruled out|r/o)\b[^.;:\n]{0,40}$", re.I)
NEGATED_AFTER = re.compile(r"^[^.;:\n]{0,20}\b(?:ruled out|excluded|negative|absent|not seen)\b", re.I)


def negated_only(term: str, passage: str) -> bool:
    """Every mention of ``term`` in ``passage`` is negated: a cue ("no", "without", "negative for", "ruled out"
    …) at most 40 characters before it in the same clause, or "ruled out" / "excluded" / "negative" just after."""
    hits = list(re.finditer(rf"(?<![A-Za-z0-9]){re.escape(term)}(?![A-Za-z0-9])", passage, re.I))
    if not hits:
        return False
    return all(NEGATION_CUE.search(passage[:m.start()]) or NEGATED_AFTER.search(passage[m.end():]) for m in hits)
