"""The words, stems and numbers of clinical text, as the evidence checks read them.

* :func:`words`, :func:`numbers` (digits and number words, canonical), :func:`canonical_number`,
  :func:`claimed_numbers` (a sentence's numbers without its list numbers, dates and unit numbers); the number words
  are those of :mod:`engine.evidence.text.tokenizer` (``NUMBER_WORDS`` and ``is_number_word`` are also importable
  from here);
* :func:`content_stems` (Porter stems of the content words) weighted by rarity (:func:`idf_weights` over the
  background document frequencies of :func:`support_background`), :func:`lexical_support`;
* :func:`rouge_scorer`: ROUGE-1/2/L with the tokenizer of the ``rouge-score`` package, cached per text.
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from engine.evidence.text.tokenizer import NUMBER_WORDS, ONES, SCALES, TENS, is_number_word, tokenize


BACKGROUND_PATH = Path(__file__).resolve().parents[2] / "resources" / "support_background.json"


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (:func:`engine.evidence.text.tokenizer.tokenize`): letters and digits, kept
    whole across one "." "'" "/" or "-" ("b.i.d", "don't", "s/p", "cha2ds2-vasc")."""
    return tokenize(text, case="lower_text", joiners=".'/-")


LIST_MARKER = re.compile(r"^\s*(?:\(?\d{1,2}[.)]|[-*•])\s+")


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:g}"


def canonical_number(tok: str) -> str:
    t = tok.lstrip("0") or "0"
    if "." in t:
        t = t.rstrip("0").rstrip(".") or "0"
        t = "0" + t if t.startswith(".") else t
    return t


def numbers(text: str, generous: bool = False) -> set[str]:
    """The numbers a text states, as canonical digit strings: digits ("2,140" -> 2140; "152/94" -> 152, 94; not
    the digits inside a word such as "CHA2DS2") and number words ("thirty-eight" -> 38, "two hundred and twelve"
    -> 212, "two point five" -> 2.5, "twelve and a half" -> 12.5, "a thousand" -> 1000).

    ``generous`` reads a *source*: it adds the digits inside words ("ex19del"), a year's short form (2024 -> 24,
    "1/10/24" -> 2024), "half" as 50 and 0.5, and the spoken run-together forms ("one thirty-eight" -> 138,
    "one fifty-two" -> 152) — a summary's number counts as stated when any reading of the source gives it."""
    t = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text.lower())
    out = {canonical_number(m.group()) for m in re.finditer(r"(?<![a-z0-9.])\d+(?:\.\d+)?", t)}
    if generous:
        out |= {canonical_number(m.group()) for m in re.finditer(r"\d+(?:\.\d+)?", t)}
        out |= {y[2:] for y in out if re.fullmatch(r"(?:19|20)\d\d", y)}
        out |= {"20" + m.group(1) for m in re.finditer(r"\d{1,2}/\d{1,2}/(\d{2})(?!\d)", t)}
        if re.search(r"\bhalf\b", t):
            out |= {"50", "0.5"}
    run: list[str] = []
    # letters-only words, decimal numbers and each punctuation mark (which ends a run of number words)
    for w in tokenize(t.replace("-", " "), case="keep", digits="none", numbers="decimal", symbols=True) + [""]:
        if w in ONES or w in TENS or w in SCALES or w == "a" or (run and w in ("point", "and", "half")):
            run.append(w)
        elif run:
            out |= _spoken_values(run, generous)
            run = []
    return out


_MONTHS = ("jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june|july|august|"
           "september|october|november|december")
_NOT_CLAIMED = re.compile(
    r"(?:^|(?<=[:;\n]))\s*(?:\(\d{1,2}\)|#?\d{1,2}[.)](?!\d))\s+"  # a list number: "2.", "3)", "(4)", "#5."
    r"|#\s?\d{1,2}\b"  # a problem number: "#4 Hypertension"
    r"|\b(?:problem|item|section|step|part|diagnosis|issue)\s+#?\d{1,2}\s*[:.)]"  # "Problem 5:"
    r"|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{4}-\d{1,2}-\d{1,2}\b"  # dates: 3/12/2024, 3/12, 2024-03-12
    rf"|\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"  # March 12, 2024
    rf"|\b(?:{_MONTHS})\.?,?\s+\d{{4}}\b|\b(?:19|20)\d\d\b"  # January 2024; a year
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b\.?(?:,?\s+\d{{4}})?"  # 12 March 2024
    r"|/\s?1\.73\s?m(?:2|\u00b2)|\bx\s?10\^?\d+|\b10\^\d+|/\s?24\s?h(?:rs?|ours?)?\b",  # units
    re.I)


def claimed_numbers(text: str) -> set[str]:
    """The numbers a summary's sentence claims (:func:`numbers`), leaving out what only structures or dates it:
    list and problem numbers ("2. Nexium 40 mg", "#4 Hypertension", "Problem 5:"), dates and their parts
    ("3/12/2024", "2024-03-12", "March 12, 2024", "January 2024", a year such as 2019) and numbers inside units
    ("mL/min/1.73 m2", "x10^9/L", "/24 h")."""
    return numbers(_NOT_CLAIMED.sub(" ", text))


def _spoken_values(run: list[str], generous: bool) -> set[str]:
    chunks: list[Optional[float]] = []  # None marks a scale word: the next chunk adds to the scaled one
    decimal, half, i = "", False, 0
    while i < len(run):
        w = run[i]
        if w in TENS and i + 1 < len(run) and 0 < ONES.get(run[i + 1], 0) < 10:
            chunks.append(TENS[w] + ONES[run[i + 1]])
            i += 2
            continue
        if w in ONES:
            chunks.append(ONES[w])
        elif w in TENS:
            chunks.append(TENS[w])
        elif w == "a" and i + 1 < len(run) and run[i + 1] in SCALES:
            chunks.append(1)
        elif w in SCALES and chunks and chunks[-1] is not None:
            chunks[-1] *= SCALES[w]
            chunks.append(None)
        elif w == "point" and chunks and i + 1 < len(run) and run[i + 1] in ONES:
            decimal = "".join(str(ONES[x]) for x in run[i + 1:] if x in ONES)
            break
        elif w == "half" and chunks:
            half = True
        i += 1
    vals = [c for c in chunks if c is not None]
    out = {_fmt(v) for v in vals}
    composed = sum(vals) if None in chunks else None
    if composed is not None:
        out.add(_fmt(composed))
    last = composed if composed is not None else (vals[-1] if vals else None)
    if last is not None and decimal:
        out.add(canonical_number(f"{_fmt(last)}.{decimal}"))
    if last is not None and half:
        out.add(_fmt(last + 0.5))
    if generous and composed is None and len(vals) >= 2 and all(v == int(v) for v in vals):
        for a in range(len(vals)):
            for b in range(a + 2, min(len(vals), a + 3) + 1):
                out.add(canonical_number("".join(str(int(v)) for v in vals[a:b])))
    return out


@lru_cache(maxsize=1)
def _stop_stems() -> frozenset:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from engine.evidence.text.salience import FILLERS, GENERIC_WORDS, STOPWORDS

    words = set(ENGLISH_STOP_WORDS) | set(STOPWORDS) | set(GENERIC_WORDS) | set(FILLERS) | {"doctor", "guest"}
    return frozenset(words | {t for w in words for t in rouge_scorer().tokens(w)})


def content_stems(text: str) -> list[str]:
    """The sentence's content words as Porter stems (ROUGE's tokenizer), each once, in order: no digits, no
    stopwords, generic words ("patient", "wife") or fillers, at least three letters."""
    stop = _stop_stems()
    return list(dict.fromkeys(t for t in rouge_scorer().tokens(LIST_MARKER.sub("", text))
                              if len(t) > 2 and not t[0].isdigit() and t not in stop))


@lru_cache(maxsize=4)
def _load_background(path: str) -> tuple[int, dict]:
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        return int(d["n_sources"]), dict(d["df"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0, {}  # fallback: every content word weighs the same


def support_background() -> tuple[int, dict]:
    """(N, stem -> number of background sources holding it) from :data:`BACKGROUND_PATH`; (0, {}) without it."""
    return _load_background(str(BACKGROUND_PATH))


def idf_weights(stems: Sequence[str], background: Optional[tuple[int, dict]] = None) -> np.ndarray:
    n, df = background if background is not None else support_background()
    return np.array([math.log((n + 1) / (df.get(t, 0) + 0.5)) for t in stems])


def lexical_support(stems: Sequence[str], source_stems, background: Optional[tuple[int, dict]] = None) -> float:
    """Rarity-weighted share of ``stems`` found in the source (1.0 when the sentence has no content word)."""
    if not stems:
        return 1.0
    w = idf_weights(stems, background)
    return float(sum(x for x, t in zip(w, stems) if t in source_stems) / w.sum())


class Rouge:
    """ROUGE-1/2/L F1 as rouge-score computes them (its tokenizer and Porter stemmer), with each sentence
    tokenised once: aligning one summary means thousands of sentence pairs."""

    def __init__(self):
        from rouge_score import tokenizers

        self.tok = tokenizers.DefaultTokenizer(use_stemmer=True)
        self._cache: dict[str, list[str]] = {}

    def tokens(self, text: str) -> list[str]:
        t = self._cache.get(text)
        if t is None:
            t = self._cache[text] = self.tok.tokenize(text)
            if len(self._cache) > 50_000:
                self._cache.clear()
        return t

    @staticmethod
    def _f(overlap: int, n_target: int, n_pred: int) -> float:
        if not overlap or not n_target or not n_pred:
            return 0.0
        p, r = overlap / n_pred, overlap / n_target
        return 2 * p * r / (p + r)

    @staticmethod
    def _lcs(a: list[str], b: list[str]) -> int:
        prev = [0] * (len(b) + 1)
        for x in a:
            cur = [0]
            for j, y in enumerate(b):
                cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
            prev = cur
        return prev[-1]

    def mean_f(self, target: str, pred: str) -> float:
        from collections import Counter

        t, p = self.tokens(target), self.tokens(pred)
        out = 0.0
        for n in (1, 2):
            tn = Counter(tuple(t[i:i + n]) for i in range(len(t) - n + 1))
            pn = Counter(tuple(p[i:i + n]) for i in range(len(p) - n + 1))
            out += self._f(sum((tn & pn).values()), sum(tn.values()), sum(pn.values()))
        out += self._f(self._lcs(t, p), len(t), len(p))
        return out / 3


_ROUGE: Optional[Rouge] = None


def rouge_scorer() -> Rouge:
    global _ROUGE
    if _ROUGE is None:
        _ROUGE = Rouge()
    return _ROUGE
