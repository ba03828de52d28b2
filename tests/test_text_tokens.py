"""The one word tokenizer of the evidence checks (engine.evidence.text.tokenizer) reads every text exactly as each
check's own regular expression read it before the checks shared it, and the number words are listed once.

``READINGS`` pairs, for each place that cuts words, the expression it used (kept here as the reference) with the
shared tokenizer called with that place's parameters: both give the same tokens on the sample's notes and
summaries (whole, and line by line), on tricky strings, and on random strings of letters, digits, joiners,
punctuation and non-ASCII characters. ``EXPECTED`` writes out the tokens each reading gives on :data:`TRICKY`.
``CALLERS`` runs each check's own function, where its words have one, against the reference.
"""
import csv
import random
import re

import pytest

from conftest import BUNDLE
from engine.evidence.coverage import note_flags as omission_flags
from engine.evidence.medomit import _importance as importance, _linking as linking
from engine.evidence.medomit import _checks as medomit_checks
from engine.evidence.medomit import result as medomit_result
from engine.evidence.stigma import detector, _rules as rules
from engine.evidence.support.verification import ask, claims
from engine.evidence.text import abbreviations, lexical, salience, terms
from engine.evidence.text.tokenizer import (NUMBER_WORDS, ONES, QUANTITY_WORDS, SCALES, TENS, Word, is_number_word,
                                         tokenize)


def _spans(rx, s, lower=False):
    return [(m.group().lower() if lower else m.group(), m.start(), m.end()) for m in rx.finditer(s)]


def _new_spans(words):
    return [(w.text, w.start, w.end) for w in words]


_TERMS_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-/][A-Za-z0-9]+)*|\d+(?:[.,/:]\d+)*")
_ABBREV = re.compile(r"(?<![\w/.-])[A-Za-z][A-Za-z0-9]*(?:[./-][A-Za-z0-9]+)*(?![\w/-])")
_STIGMA = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*['’]?")
_LINKING = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")

# reading -> (the expression the check used, the shared tokenizer with the check's parameters)
READINGS = {
    "lexical.words": (
        lambda s: re.findall(r"[a-z0-9]+(?:[.'/-][a-z0-9]+)*", s.lower()),
        lambda s: tokenize(s, case="lower_text", joiners=".'/-")),
    "lexical.numbers": (  # numbers() cuts its lower-cased text with hyphens read as spaces
        lambda s: re.findall(r"[a-z]+|\d+(?:\.\d+)?|[^\sa-z\d]", s.lower().replace("-", " ")),
        lambda s: tokenize(s.lower().replace("-", " "), case="keep", digits="none", numbers="decimal",
                           symbols=True)),
    "terms.tokens": (
        lambda s: _spans(_TERMS_TOKEN, s),
        lambda s: _new_spans(tokenize(s, case="keep", digits="inner", numbers="ratio", joiners="-/",
                                      offsets=True))),
    "terms.key_terms": (
        lambda s: re.findall(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*", s),
        lambda s: tokenize(s, case="keep", digits="inner", joiners="-")),
    "terms.written": (
        lambda s: re.findall(r"[a-z]+", s.lower()),
        lambda s: tokenize(s, case="lower_text", digits="none")),
    "salience.words": (
        lambda s: [w.lower() for w in re.findall(r"[a-z][a-z'-]*[a-z]|[a-z]", s, re.I)],
        lambda s: tokenize(s, letters="ascii_nocase", digits="none", joiners="'-", joiner_runs=True)),
    "salience.norm_words": (
        lambda s: re.findall(r"[a-z0-9]+", s.lower()),
        lambda s: tokenize(s, case="lower_text")),
    "salience.title_words": (
        lambda s: re.findall(r"[a-z&][a-z&'-]*", s.lower()),
        lambda s: tokenize(s, case="lower_text", digits="none", extra="&", joiners="'-", joiner_runs=True,
                           open_end=True)),
    "salience.acronyms": (
        lambda s: re.findall(r"(?<![\w/])[A-Za-z0-9][A-Za-z0-9/&-]*[A-Za-z0-9](?![\w/])", s),
        lambda s: tokenize(s, case="keep", joiners="/&-", joiner_runs=True, apart=("/", "/"), min_len=2)),
    "abbreviations.tokens": (
        lambda s: _spans(_ABBREV, s),
        lambda s: _new_spans(tokenize(s, case="keep", digits="inner", joiners="./-", apart=("/.-", "/-"),
                                      offsets=True))),
    "stigma.words": (
        lambda s: [(t.replace("’", "'"), a, b) for t, a, b in _spans(_STIGMA, s, lower=True)],
        lambda s: [(w.text.replace("’", "'"), w.start, w.end) for w in tokenize(s, clitics=True, offsets=True)]),
    "medomit.checks.words": (
        lambda s: " ".join(re.findall(r"[a-z0-9]+", (s or "").lower())),
        lambda s: " ".join(tokenize(s or "", case="lower_text"))),
    "answer_word": (  # verification.ask._norm, medomit.importance: the letters of a model's answer token
        lambda s: re.sub(r"[^a-z]", "", s.strip().lower()),
        lambda s: "".join(tokenize(s.strip(), case="lower_text", digits="none"))),
    "regions.key": (
        lambda s: " ".join(re.findall(r"[a-z0-9]+", s.lower())),
        lambda s: " ".join(tokenize(s, case="lower_text"))),
    "regions.word_count": (
        lambda s: len(re.findall(r"[A-Za-z]{2,}", s)),
        lambda s: len(tokenize(s, case="keep", digits="none", min_len=2))),
    "omission_flags.words": (
        lambda s: re.findall(r"[a-z][a-z0-9]{3,}", s.lower()),
        lambda s: tokenize(s, case="lower_text", digits="inner", min_len=4)),
    "omission_flags.caps": (
        lambda s: re.findall(r"\b[A-Z]{2,6}\b", s),
        lambda s: [w for w in tokenize(s, case="keep", letters="word")
                   if 2 <= len(w) <= 6 and w.isascii() and w.isalpha() and w.isupper()]),
    "medomit.result.name": (
        lambda s: re.findall(r"[a-z0-9]+", s.lower()),
        lambda s: tokenize(s, case="lower_text")),
    "medomit.result.fact": (
        lambda s: " ".join(re.findall(r"[a-z0-9%.]+", s.lower())),
        lambda s: " ".join(tokenize(s, case="lower_text", extra="%."))),
    "medomit.linking.words": (
        lambda s: _spans(_LINKING, s, lower=True),
        lambda s: _new_spans(tokenize(s, letters="unicode", digits="none", numbers="grouped", offsets=True))),
    "word_count": (  # medomit.decision, verification.claims: words of a sentence piece
        lambda s: len(re.findall(r"\w+", s)),
        lambda s: len(tokenize(s, case="keep", letters="word"))),
    "signals.claim_words": (
        lambda s: re.findall(r"[A-Za-z][A-Za-z-]+", s),
        lambda s: tokenize(s, case="keep", digits="none", joiners="-", joiner_runs=True, open_end=True,
                           min_len=2)),
    "alignment.source_words": (
        lambda s: re.findall(r"[a-z][a-z'-]*", s.lower()),
        lambda s: tokenize(s, case="lower_text", digits="none", joiners="'-", joiner_runs=True, open_end=True)),
    "stigma.slug": (
        lambda s: re.sub(r"[^a-z0-9]+", "_", s.lower()).strip("_") or "term",
        lambda s: "_".join(tokenize(s, case="lower_text")) or "term"),
    "stigma.family_key": (
        lambda s: re.sub(r"[^a-z]", "", (s.lower().split() or [""])[-1]),
        lambda s: "".join(tokenize((s.lower().split() or [""])[-1], case="keep", digits="none"))),
}


def _legacy_expand(text):
    table = {k: v for k, v in abbreviations.ABBREVIATIONS.items() if v}

    def one(m):
        tok, key = m.group(0), m.group(0).lower()
        words = table.get(key) if (tok != key or key in abbreviations.LOWER_CASE_TOO) else None
        return f"{tok} ({words})" if words else tok

    return _ABBREV.sub(one, text)


def _legacy_label(token):
    t = re.sub(r"[^a-z]", "", token.strip().lower())
    hits = [k for k in importance.LABELS if k.startswith(t)] if len(t) >= 2 else []
    return hits[0] if len(hits) == 1 else None


def _legacy_omission_words(text):
    return ({w[:6] for w in re.findall(r"[a-z][a-z0-9]{3,}", text.lower()) if w not in omission_flags._STOP}
            | {m.lower() for m in re.findall(r"\b[A-Za-z]+(?:-[A-Za-z0-9]+)*\d[A-Za-z0-9-]*\b", text)}
            | {m.lower() for m in re.findall(r"\b[A-Z]{2,6}\b", text)})


_STOP_DX = {"of", "the", "and", "with", "due", "to"}

# a check's own function -> what the check's own expression gave
CALLERS = {
    "lexical.words": (lexical.words, READINGS["lexical.words"][0]),
    "terms.tokens": (lambda s: [(t.text, t.start, t.start + len(t.text)) for t in terms.tokens(s)
                                if t.low == t.text.lower()], READINGS["terms.tokens"][0]),
    "salience._words": (salience._words, READINGS["salience.words"][0]),
    "salience._norm_words": (salience._norm_words, READINGS["salience.norm_words"][0]),
    "salience._acronym_candidates": (salience._acronym_candidates, READINGS["salience.acronyms"][0]),
    "abbreviations.expand": (abbreviations.expand, _legacy_expand),
    "stigma.rules._words": (rules._words, READINGS["stigma.words"][0]),
    "stigma.detector._slug": (detector._slug, READINGS["stigma.slug"][0]),
    "medomit.checks._words": (medomit_checks._words, READINGS["medomit.checks.words"][0]),
    "medomit.result._norm_name": (medomit_result._norm_name,
                                  lambda s: {w for w in re.findall(r"[a-z0-9]+", s.lower()) if w not in _STOP_DX}),
    "medomit.result._norm_fact": (medomit_result._norm_fact, READINGS["medomit.result.fact"][0]),
    "medomit.linking._words": (lambda s: list(zip(*linking._words(s))),
                               lambda s: [(t, (a, b)) for t, a, b in READINGS["medomit.linking.words"][0](s)]),
    "medomit.importance._label_of": (importance._label_of, _legacy_label),
    "verification.ask._norm": (ask._norm, READINGS["answer_word"][0]),
    "verification.claims.word_count": (claims.word_count, READINGS["word_count"][0]),
    "coverage.omission_flags._content_words": (omission_flags._content_words, _legacy_omission_words),
}

LONG_TRICKY = [
    "Metoprolol 12.5 mg b.i.d. x10^9/L; eGFR 58 mL/min/1.73 m2",
    "CHA2DS2-VASc 4, HAS-BLED 2; T-score -1.8 (osteopenia); Wt 2,140 g",
    "don't can’t patient's patients' 5'10\" rock 'n' roll",
    "BP 152/94 at 10:30 on 1/10/24 — s/p CABG, h&p, r/o MI, f/u PCP in 2–3 wks",
    "twenty-one, a half, two hundred and twelve, twelve and a half, one thirty-eight",
    "ex19del PD-L1 HbA1c 7.2% T2DM pHTN (HTN) HTN, well--known follow- -up",
    "İstanbul ſtent K-rate ıd café m² ½ ١٢.٥ foo_bar naïve \u212aelvin",
    "  [doctor]: um, mm-hmm... okay--so; 3.4.5 1.2.3 a/b/c -x- 'quoted'  ",
    "",
]

TRICKY = [
    'Metoprolol 12.5 mg b.i.d.; Wt 2,140 g',
    'T-score -1.8; CHA2DS2-VASc 4 (HAS-BLED 2)',
    "don't can’t patients' 5'10",
    '2–3 wks — s/p CABG, h&p, pHTN',
    'WBC 7.1 x10^9/L; eGFR 58 mL/min/1.73 m2',
    'twenty-one and a half, well--known',
    'İstanbul ſtent café m² foo_bar ١٢.٥',
]

EXPECTED = {
    'abbreviations.tokens': [
        ['Metoprolol', 'mg', 'b.i.d', 'Wt', 'g'],
        ['T-score', 'CHA2DS2-VASc', 'HAS-BLED'],
        ['don', 't', 'can', 't', 'patients'],
        ['wks', 's/p', 'CABG', 'h', 'p', 'pHTN'],
        ['WBC', 'x10', 'eGFR', 'mL/min/1.73', 'm2'],
        ['twenty-one', 'and', 'a', 'half'],
        [],
    ],
    'alignment.source_words': [
        ['metoprolol', 'mg', 'b', 'i', 'd', 'wt', 'g'],
        ['t-score', 'cha', 'ds', 'vasc', 'has-bled'],
        ["don't", 'can', 't', "patients'"],
        ['wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', 'x', 'l', 'egfr', 'ml', 'min', 'm'],
        ['twenty-one', 'and', 'a', 'half', 'well--known'],
        ['i', 'stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'answer_word': [
        'metoprololmgbidwtg',
        'tscorechadsvaschasbled',
        'dontcantpatients',
        'wksspcabghpphtn',
        'wbcxlegfrmlminm',
        'twentyoneandahalfwellknown',
        'istanbultentcafmfoobar',
    ],
    'lexical.numbers': [
        ['metoprolol', '12.5', 'mg', 'b', '.', 'i', '.', 'd', '.', ';', 'wt', '2', ',', '140', 'g'],
        ['t', 'score', '1.8', ';', 'cha', '2', 'ds', '2', 'vasc', '4', '(', 'has', 'bled', '2', ')'],
        ['don', "'", 't', 'can', '’', 't', 'patients', "'", '5', "'", '10'],
        ['2', '–', '3', 'wks', '—', 's', '/', 'p', 'cabg', ',', 'h', '&', 'p', ',', 'phtn'],
        ['wbc', '7.1', 'x', '10', '^', '9', '/', 'l', ';', 'egfr', '58', 'ml', '/', 'min', '/', '1.73', 'm', '2'],
        ['twenty', 'one', 'and', 'a', 'half', ',', 'well', 'known'],
        ['i', '̇', 'stanbul', 'ſ', 'tent', 'caf', 'é', 'm', '²', 'foo', '_', 'bar', '١٢.٥'],
    ],
    'lexical.words': [
        ['metoprolol', '12.5', 'mg', 'b.i.d', 'wt', '2', '140', 'g'],
        ['t-score', '1.8', 'cha2ds2-vasc', '4', 'has-bled', '2'],
        ["don't", 'can', 't', 'patients', "5'10"],
        ['2', '3', 'wks', 's/p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', '7.1', 'x10', '9/l', 'egfr', '58', 'ml/min/1.73', 'm2'],
        ['twenty-one', 'and', 'a', 'half', 'well', 'known'],
        ['i', 'stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'medomit.checks.words': [
        'metoprolol 12 5 mg b i d wt 2 140 g',
        't score 1 8 cha2ds2 vasc 4 has bled 2',
        'don t can t patients 5 10',
        '2 3 wks s p cabg h p phtn',
        'wbc 7 1 x10 9 l egfr 58 ml min 1 73 m2',
        'twenty one and a half well known',
        'i stanbul tent caf m foo bar',
    ],
    'medomit.linking.words': [
        ['metoprolol', '12.5', 'mg', 'b', 'i', 'd', 'wt', '2,140', 'g'],
        ['t', 'score', '1.8', 'cha', '2', 'ds', '2', 'vasc', '4', 'has', 'bled', '2'],
        ['don', 't', 'can', 't', 'patients', '5', '10'],
        ['2', '3', 'wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', '7.1', 'x', '10', '9', 'l', 'egfr', '58', 'ml', 'min', '1.73', 'm', '2'],
        ['twenty', 'one', 'and', 'a', 'half', 'well', 'known'],
        ['i̇stanbul', 'ſtent', 'café', 'm²', 'foo', 'bar', '١٢.٥'],
    ],
    'medomit.result.fact': [
        'metoprolol 12.5 mg b.i.d. wt 2 140 g',
        't score 1.8 cha2ds2 vasc 4 has bled 2',
        'don t can t patients 5 10',
        '2 3 wks s p cabg h p phtn',
        'wbc 7.1 x10 9 l egfr 58 ml min 1.73 m2',
        'twenty one and a half well known',
        'i stanbul tent caf m foo bar .',
    ],
    'medomit.result.name': [
        ['metoprolol', '12', '5', 'mg', 'b', 'i', 'd', 'wt', '2', '140', 'g'],
        ['t', 'score', '1', '8', 'cha2ds2', 'vasc', '4', 'has', 'bled', '2'],
        ['don', 't', 'can', 't', 'patients', '5', '10'],
        ['2', '3', 'wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', '7', '1', 'x10', '9', 'l', 'egfr', '58', 'ml', 'min', '1', '73', 'm2'],
        ['twenty', 'one', 'and', 'a', 'half', 'well', 'known'],
        ['i', 'stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'omission_flags.caps': [
        [],
        ['HAS', 'BLED'],
        [],
        ['CABG'],
        ['WBC'],
        [],
        [],
    ],
    'omission_flags.words': [
        ['metoprolol'],
        ['score', 'cha2ds2', 'vasc', 'bled'],
        ['patients'],
        ['cabg', 'phtn'],
        ['egfr'],
        ['twenty', 'half', 'well', 'known'],
        ['stanbul', 'tent'],
    ],
    'regions.key': [
        'metoprolol 12 5 mg b i d wt 2 140 g',
        't score 1 8 cha2ds2 vasc 4 has bled 2',
        'don t can t patients 5 10',
        '2 3 wks s p cabg h p phtn',
        'wbc 7 1 x10 9 l egfr 58 ml min 1 73 m2',
        'twenty one and a half well known',
        'i stanbul tent caf m foo bar',
    ],
    'regions.word_count': [
        3,
        6,
        3,
        3,
        4,
        6,
        5,
    ],
    'salience.acronyms': [
        ['Metoprolol', '12', 'mg', 'Wt', '140'],
        ['T-score', 'CHA2DS2-VASc', 'HAS-BLED'],
        ['don', 'can', 'patients', '10'],
        ['wks', 's/p', 'CABG', 'h&p', 'pHTN'],
        ['WBC', 'x10', '9/L', 'eGFR', '58', 'mL/min/1', '73', 'm2'],
        ['twenty-one', 'and', 'half', 'well--known'],
        [],
    ],
    'salience.norm_words': [
        ['metoprolol', '12', '5', 'mg', 'b', 'i', 'd', 'wt', '2', '140', 'g'],
        ['t', 'score', '1', '8', 'cha2ds2', 'vasc', '4', 'has', 'bled', '2'],
        ['don', 't', 'can', 't', 'patients', '5', '10'],
        ['2', '3', 'wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', '7', '1', 'x10', '9', 'l', 'egfr', '58', 'ml', 'min', '1', '73', 'm2'],
        ['twenty', 'one', 'and', 'a', 'half', 'well', 'known'],
        ['i', 'stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'salience.title_words': [
        ['metoprolol', 'mg', 'b', 'i', 'd', 'wt', 'g'],
        ['t-score', 'cha', 'ds', 'vasc', 'has-bled'],
        ["don't", 'can', 't', "patients'"],
        ['wks', 's', 'p', 'cabg', 'h&p', 'phtn'],
        ['wbc', 'x', 'l', 'egfr', 'ml', 'min', 'm'],
        ['twenty-one', 'and', 'a', 'half', 'well--known'],
        ['i', 'stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'salience.words': [
        ['metoprolol', 'mg', 'b', 'i', 'd', 'wt', 'g'],
        ['t-score', 'cha', 'ds', 'vasc', 'has-bled'],
        ["don't", 'can', 't', 'patients'],
        ['wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', 'x', 'l', 'egfr', 'ml', 'min', 'm'],
        ['twenty-one', 'and', 'a', 'half', 'well--known'],
        ['i̇stanbul', 'ſtent', 'caf', 'm', 'foo', 'bar'],
    ],
    'signals.claim_words': [
        ['Metoprolol', 'mg', 'Wt'],
        ['T-score', 'CHA', 'DS', 'VASc', 'HAS-BLED'],
        ['don', 'can', 'patients'],
        ['wks', 'CABG', 'pHTN'],
        ['WBC', 'eGFR', 'mL', 'min'],
        ['twenty-one', 'and', 'half', 'well--known'],
        ['stanbul', 'tent', 'caf', 'foo', 'bar'],
    ],
    'stigma.family_key': [
        'g',
        '',
        '',
        'phtn',
        'm',
        'wellknown',
        '',
    ],
    'stigma.slug': [
        'metoprolol_12_5_mg_b_i_d_wt_2_140_g',
        't_score_1_8_cha2ds2_vasc_4_has_bled_2',
        'don_t_can_t_patients_5_10',
        '2_3_wks_s_p_cabg_h_p_phtn',
        'wbc_7_1_x10_9_l_egfr_58_ml_min_1_73_m2',
        'twenty_one_and_a_half_well_known',
        'i_stanbul_tent_caf_m_foo_bar',
    ],
    'stigma.words': [
        ['metoprolol', '12', '5', 'mg', 'b', 'i', 'd', 'wt', '2', '140', 'g'],
        ['t', 'score', '1', '8', 'cha2ds2', 'vasc', '4', 'has', 'bled', '2'],
        ["don't", "can't", "patients'", "5'", '10'],
        ['2', '3', 'wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', '7', '1', 'x10', '9', 'l', 'egfr', '58', 'ml', 'min', '1', '73', 'm2'],
        ['twenty', 'one', 'and', 'a', 'half', 'well', 'known'],
        ['stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'terms.key_terms': [
        ['Metoprolol', 'mg', 'b', 'i', 'd', 'Wt', 'g'],
        ['T-score', 'CHA2DS2-VASc', 'HAS-BLED'],
        ['don', 't', 'can', 't', 'patients'],
        ['wks', 's', 'p', 'CABG', 'h', 'p', 'pHTN'],
        ['WBC', 'x10', 'L', 'eGFR', 'mL', 'min', 'm2'],
        ['twenty-one', 'and', 'a', 'half', 'well', 'known'],
        ['stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'terms.tokens': [
        ['Metoprolol', '12.5', 'mg', 'b', 'i', 'd', 'Wt', '2,140', 'g'],
        ['T-score', '1.8', 'CHA2DS2-VASc', '4', 'HAS-BLED', '2'],
        ['don', 't', 'can', 't', 'patients', '5', '10'],
        ['2', '3', 'wks', 's/p', 'CABG', 'h', 'p', 'pHTN'],
        ['WBC', '7.1', 'x10', '9', 'L', 'eGFR', '58', 'mL/min/1', '73', 'm2'],
        ['twenty-one', 'and', 'a', 'half', 'well', 'known'],
        ['stanbul', 'tent', 'caf', 'm', 'foo', 'bar', '١٢.٥'],
    ],
    'terms.written': [
        ['metoprolol', 'mg', 'b', 'i', 'd', 'wt', 'g'],
        ['t', 'score', 'cha', 'ds', 'vasc', 'has', 'bled'],
        ['don', 't', 'can', 't', 'patients'],
        ['wks', 's', 'p', 'cabg', 'h', 'p', 'phtn'],
        ['wbc', 'x', 'l', 'egfr', 'ml', 'min', 'm'],
        ['twenty', 'one', 'and', 'a', 'half', 'well', 'known'],
        ['i', 'stanbul', 'tent', 'caf', 'm', 'foo', 'bar'],
    ],
    'word_count': [
        11,
        10,
        7,
        9,
        13,
        7,
        7,
    ],
}


def _corpus() -> list[str]:
    texts = []
    for name in ("notes.csv", "summaries.csv"):
        with open(BUNDLE / name, encoding="utf-8", newline="") as f:
            texts += [r["text"] for r in csv.DictReader(f)]
    return texts + [line for t in texts for line in t.splitlines() if line.strip()]


# letters, digits, joiners and punctuation; dashes; non-ASCII letters, digits and number signs, among them the four
# letters whose case folds into ASCII (İ, ı, ſ, the Kelvin sign)
_ALPHABET = [*"abcxyzABCXYZ0123456789", *" .'-/&%’,:;_^()\"", "\n", "–", "—", "é", "²", "½", "İ", "ı", "ſ", "\u212a",
             "١", "µ", "ß", "  "]


def _random_strings(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(0, 24))) for _ in range(n)]


@pytest.fixture(scope="module")
def texts():
    return _corpus() + TRICKY + LONG_TRICKY + _random_strings(3000)


@pytest.mark.parametrize("reading", sorted(READINGS))
def test_the_shared_tokenizer_reads_as_each_check_read(reading, texts):
    old, new = READINGS[reading]
    diff = [s for s in texts if old(s) != new(s)]
    assert diff == [], f"{reading}: {len(diff)} of {len(texts)} texts read differently, e.g. {diff[:3]!r}"


@pytest.mark.parametrize("reading", sorted(READINGS))
def test_each_reading_gives_the_tokens_written_out(reading):
    new = READINGS[reading][1]
    for s, want in zip(TRICKY, EXPECTED[reading], strict=True):
        got = new(s)
        if isinstance(got, list) and got and isinstance(got[0], tuple):  # (token, start, end): offsets hold
            assert all(s[a:b].lower().replace("’", "'") == t.lower() for t, a, b in got), (reading, s)
            got = [t for t, _, _ in got]
        assert got == want, (reading, s)


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_each_check_cuts_its_words_as_before(caller, texts):
    new, old = CALLERS[caller]
    diff = [s for s in texts if new(s) != old(s)]
    assert diff == [], f"{caller}: {len(diff)} of {len(texts)} texts read differently, e.g. {diff[:3]!r}"


def test_offsets_refer_to_the_text_as_written():
    words = tokenize("Pt's HTN, CHA2DS2-VASc 3", case="keep", digits="inner", joiners="-", numbers="ratio",
                     offsets=True)
    assert words == [Word("Pt", 0, 2), Word("s", 3, 4), Word("HTN", 5, 8), Word("CHA2DS2-VASc", 10, 22),
                     Word("3", 23, 24)]
    assert tokenize("CHA2DS2-VASc 2,140 don't") == ["cha2ds2", "vasc", "2", "140", "don", "t"]


@pytest.mark.parametrize("params", [
    dict(digits="word", numbers="decimal"),  # a digit would open a word and a number alike
    dict(letters="unicode", joiners="-"), dict(letters="unicode", digits="word"), dict(letters="word", digits="none"),
    dict(letters="word", symbols=True), dict(letters="unicode", digits="none", symbols=True),
    dict(clitics=True, joiners="-"), dict(joiner_runs=True), dict(open_end=True),
    dict(case="upper"), dict(letters="latin"), dict(numbers="roman"),
])
def test_parameters_that_do_not_combine_are_refused(params):
    with pytest.raises(ValueError):
        tokenize("a b", **params)


def test_number_words_are_listed_once():
    assert NUMBER_WORDS == set("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred hundreds
    thousand thousands""".split())
    assert NUMBER_WORDS == set(ONES) | set(TENS) | set(SCALES)
    assert lexical.NUMBER_WORDS is NUMBER_WORDS and lexical.is_number_word is is_number_word
    assert [w for w in ("eight", "Twenty-five", "hundred", "ninety-nine", "half", "a few", "several", "point", "")
            if is_number_word(w)] == ["eight", "Twenty-five", "hundred", "ninety-nine"]
    assert not NUMBER_WORDS & set(QUANTITY_WORDS)  # "half", "a few": amounts, no number words


@pytest.mark.parametrize("text,stated,source,claimed", [
    ("twenty-one", ["21"], ["21"], ["21"]),
    ("a half", [], ["0.5", "50"], []),
    ("twelve and a half", ["12", "12.5"], ["0.5", "12", "12.5", "50"], ["12", "12.5"]),
    ("two hundred and twelve", ["12", "200", "212"], ["12", "200", "212"], ["12", "200", "212"]),
    ("seventeen", ["17"], ["17"], ["17"]),
    ("ninety-nine", ["99"], ["99"], ["99"]),
    ("a thousand", ["1000"], ["1000"], ["1000"]),
    ("one thirty-eight", ["1", "38"], ["1", "138", "38"], ["1", "38"]),
    ("Wt 2,140 g", ["2140"], ["2140"], ["2140"]),
    ("T-score -1.8", ["1.8"], ["1.8"], ["1.8"]),
    ("WBC 7.1 x10^9/L", ["7.1", "9"], ["10", "7.1", "9"], ["7.1"]),
    ("eGFR 58 mL/min/1.73 m2", ["1.73", "58"], ["1.73", "2", "58"], ["58"]),
    ("CHA2DS2-VASc 3", ["3"], ["2", "3"], ["3"]),
])
def test_spoken_and_written_numbers(text, stated, source, claimed):
    assert sorted(lexical.numbers(text)) == stated
    assert sorted(lexical.numbers(text, generous=True)) == source
    assert sorted(lexical.claimed_numbers(text)) == claimed


def test_salience_reads_before_a_unit_the_number_words_it_always_read():
    """The clinical-content rule reads a number word before a unit ("two weeks") from the one vocabulary, leaving
    out the words it has never read (salience.UNREAD_NUMBER_WORDS, documented there): the amounts it reads are the
    ones it always read."""
    assert salience.UNREAD_NUMBER_WORDS < NUMBER_WORDS
    amounts = set(salience.AMOUNT_WORDS[3:-1].split("|"))
    assert amounts == set("""one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty
    forty fifty sixty hundred several half""".split()) | {"a few", "a couple", "a couple of"}
    read = [s for s in ("for two weeks", "a few days", "a couple of months", "eleven years", "sixty pills",
                        "lost eighteen pounds", "ninety percent") if salience.has_clinical_content(s)]
    assert read == ["for two weeks", "a few days", "a couple of months", "eleven years", "sixty pills"]
