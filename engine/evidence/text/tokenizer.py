"""The one word tokenizer and the one number-word vocabulary of the evidence checks.

Every check that cuts text into words calls :func:`tokenize`. A reading that needs a rule of its own (case kept for
abbreviations, a decimal number kept whole, hyphenated words kept whole, character offsets) asks for it by a named
parameter of :func:`tokenize`, whose docstring says which reading needs it and why; no check writes a regular
expression of its own to cut words.

Number words are listed once: :data:`NUMBER_WORDS` (:data:`ONES`, :data:`TENS`, :data:`SCALES`), which
:func:`engine.evidence.text.lexical.numbers` reads as digits and :mod:`engine.evidence.text.salience` reads before a
unit ("two weeks") as clinical content, and :func:`is_number_word`. :data:`QUANTITY_WORDS` are the amounts that
measure a unit like a number does without naming one ("half", "a few").
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple, Optional

# ------------------------------------------------------------------------------------------------ number words

ONES: dict[str, int] = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
TENS: dict[str, int] = {w: 10 * (i + 2) for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
SCALES: dict[str, int] = {"hundred": 100, "hundreds": 100, "thousand": 1000, "thousands": 1000}

# A word that names a number: "zero" to "nineteen", the tens, and the scales. "half" names a fraction and is read
# by lexical.numbers only after a number ("twelve and a half"); it is a quantity word, not a number word.
NUMBER_WORDS: frozenset[str] = frozenset(ONES) | frozenset(TENS) | frozenset(SCALES)

# Amounts that measure a unit the way a number does ("half an hour", "a few days", "several weeks",
# "a couple of months"); the longer form first.
QUANTITY_WORDS: tuple[str, ...] = ("a couple of", "a couple", "a few", "several", "half")


def is_number_word(word: str) -> bool:
    """A word that says a number ("eight", "twenty-five", "hundred"): each of its hyphen-joined parts is in
    :data:`NUMBER_WORDS`."""
    parts = word.lower().split("-")
    return bool(parts) and all(p in NUMBER_WORDS for p in parts)


# ------------------------------------------------------------------------------------------------ the tokenizer

class Word(NamedTuple):
    """A token and its character offsets in the text that was cut (``text.lower()`` with ``case="lower_text"``);
    ``text`` is the token as :func:`tokenize` returns it (lower-cased unless ``case="keep"``)."""

    text: str
    start: int
    end: int


CASES = ("lower", "keep", "lower_text")
LETTERS = ("ascii", "ascii_nocase", "unicode", "word")
DIGITS = ("word", "inner", "none")
NUMBERS = {"decimal": r"\d+(?:\.\d+)?", "grouped": r"\d+(?:[.,]\d+)*", "ratio": r"\d+(?:[.,/:]\d+)*"}


def tokenize(text: str, *, case: str = "lower", letters: str = "ascii", digits: str = "word",
             numbers: Optional[str] = None, joiners: str = "", joiner_runs: bool = False, open_end: bool = False,
             clitics: bool = False, extra: str = "", symbols: bool = False,
             apart: Optional[tuple[str, str]] = None, min_len: int = 1, offsets: bool = False) -> list:
    """The words of ``text``, in order, as strings (or :class:`Word` with ``offsets``).

    With the defaults a word is a run of ASCII letters and digits, lower-cased: "CHA2DS2-VASc 2,140 don't" ->
    ``["cha2ds2", "vasc", "2", "140", "don", "t"]``. Each parameter changes one rule for the reading that needs it:

    ``case``
        ``"lower"`` (default): each word lower-cased after it is found. ``"keep"``: words as written — for
        abbreviations and names, where the capitals carry the meaning ("HTN", "ED" against the word "ed").
        ``"lower_text"``: the whole text lower-cased (``str.lower``) before it is cut, the way readings that compare
        normalised text (salience's copy-forward key, a diagnosis name, a model's answer word) have always read it;
        it differs from ``"lower"`` only where ``str.lower`` turns a non-ASCII letter into an ASCII one (the Kelvin
        sign into "k", "İ" into "i" and a combining dot), and offsets then refer to ``text.lower()``.
    ``letters``
        ``"ascii"`` (default): A-Z and a-z. ``"ascii_nocase"``: the same read case-insensitively by the regular
        expression engine, which also takes the four letters whose case folds into ASCII (İ, ı, ſ, the Kelvin sign)
        — the salience lexicons' reading. ``"unicode"``: any letter of any script (an alphanumeric character that
        is no decimal digit, so "m²" stays one word) — for MED-OMIT's placing of a model's fact in a note, which may
        quote accented names. ``"word"``: a run of the regular expression word class ``\\w`` (letters, digits and
        the underscore of every script) — for counting the words of a sentence piece. ``"unicode"`` and ``"word"``
        set their own digits (``"none"``, ``"word"``) and take no ``joiners``, ``extra``, ``clitics``, ``symbols``
        or ``apart``.
    ``digits``
        ``"word"`` (default): ASCII digits are word characters anywhere ("a1c", "40mg", "2nd"). ``"inner"``: a word
        opens with a letter and may go on with digits ("CHA2DS2", "x10", "T2DM"; "40mg" gives "mg") — for the term
        and abbreviation readings, which read numbers apart (``numbers``). ``"none"``: letters only ("ex19del"
        gives "ex", "del") — for readings of words as words (stopwords, lexicons, stems of a claim).
    ``numbers``
        A number as a token of its own kind (any decimal digit), besides the words; needs ``digits`` other than
        ``"word"``. ``"decimal"``: one decimal point kept ("2.5"; "1.2.3" gives "1.2", "3") — for spoken numbers.
        ``"grouped"``: decimal points and thousands commas kept ("2,140.5") — for placing a fact's numbers.
        ``"ratio"``: also "/" and ":" ("120/80", "10:30", "1/10/24") — for the tokens of the support checks, which
        compare a value as written.
    ``joiners``
        Characters that join two runs of word characters into one word, one at a time: "-" keeps hyphenated words
        ("CHA2DS2-VASc"), "." keeps dotted abbreviations ("b.i.d"), "/" keeps "s/p", "'" keeps "don't".
    ``joiner_runs``
        Several joiners in a row still join ("well--known", "r/-o") — for the salience lexicons, whose words were
        always read so.
    ``open_end``
        A word may also end with joiners ("patients'", "follow-") — with ``joiner_runs``, for readings that take a
        word's trailing apostrophe or hyphen with it (salience titles, alignment's source words, a claim's words).
    ``clitics``
        An apostrophe (' or ’) joins the letters of a contraction or possessive to the word and may end it ("don't",
        "patient’s", "patients'"), but never digits ("5'10" gives "5'", "10") — for the stigma rules, which read
        "n't" as a negation.
    ``extra``
        Further characters that are word characters everywhere, first included: "&" for "h&p" in a title, "%."
        for a fact's normal form ("2.5", "10%").
    ``symbols``
        Every other non-space character is a token of its own ("(", ",", "/") — for spoken numbers, where
        punctuation ends a run of number words.
    ``apart``
        ``(before, after)``: the word must stand apart — no word character of any script (``\\w``) and none of the
        characters ``before`` directly before it, none of ``after`` directly after it; a word glued to one yields
        nothing ("pHTN" gives no "HTN"). For abbreviations and acronyms, which are read only as whole tokens.
    ``min_len``
        Words shorter than this (counted as found, before lower-casing) are dropped.
    ``offsets``
        :class:`Word` tuples (the word, its start and end in the text that was cut) instead of strings.
    """
    if case not in CASES:
        raise ValueError(f"case must be one of {CASES}, not {case!r}")
    rx = _regex(letters, digits, numbers, joiners, joiner_runs, open_end, clitics, extra, symbols, apart)
    src = text.lower() if case == "lower_text" else text
    low = case == "lower"
    if offsets:
        return [Word(m.group().lower() if low else m.group(), m.start(), m.end()) for m in rx.finditer(src)
                if m.end() - m.start() >= min_len]
    found = rx.findall(src)
    if min_len > 1:
        found = [w for w in found if len(w) >= min_len]
    return [w.lower() for w in found] if low else found


@lru_cache(maxsize=None)
def _regex(letters: str, digits: str, numbers: Optional[str], joiners: str, joiner_runs: bool, open_end: bool,
           clitics: bool, extra: str, symbols: bool, apart: Optional[tuple[str, str]]) -> re.Pattern:
    """The compiled expression of one combination of :func:`tokenize`'s parameters."""
    if letters not in LETTERS or digits not in DIGITS or (numbers is not None and numbers not in NUMBERS):
        raise ValueError(f"unknown letters={letters!r}, digits={digits!r} or numbers={numbers!r}")
    if numbers and digits == "word":
        raise ValueError("numbers need digits='inner' or 'none': with digits='word' a digit opens a word")
    if letters in ("unicode", "word"):
        wanted = "none" if letters == "unicode" else "word"
        if digits != wanted or joiners or extra or clitics or symbols or apart:
            raise ValueError(f"letters={letters!r} takes digits={wanted!r} and no joiners, extra, clitics, symbols "
                             "or apart")
        word = r"[^\W\d_]+" if letters == "unicode" else r"\w+"
    else:
        if (clitics and joiners) or ((joiner_runs or open_end) and not joiners):
            raise ValueError("clitics take no joiners; joiner_runs and open_end need joiners")
        alpha, extra = "A-Za-z", re.escape(extra) if extra else ""
        first = alpha + ("0-9" if digits == "word" else "") + extra
        body = alpha + ("" if digits == "none" else "0-9") + extra
        join = "".join(re.escape(c) for c in joiners)
        if clitics:
            word = f"[{first}][{body}]*(?:['’][{alpha}]+)*['’]?"
        elif not join:
            word = f"[{first}][{body}]*"
        elif open_end and joiner_runs:
            word = f"[{first}][{body}{join}]*"
        else:
            step = "+" if joiner_runs else ""
            word = f"[{first}][{body}]*(?:[{join}]{step}[{body}]+)*" + (f"[{join}]?" if open_end else "")
    parts = ([NUMBERS[numbers]] if numbers else []) + [word]
    if symbols:
        parts.append(r"[^\s" + first + (r"\d" if numbers else "") + "]")
    pattern = "|".join(parts) if len(parts) > 1 else word
    if apart is not None:
        before, after = ("".join(re.escape(c) for c in s) for s in apart)
        pattern = rf"(?<![\w{before}])(?:{pattern})(?![\w{after}])"
    return re.compile(pattern, re.IGNORECASE if letters == "ascii_nocase" else 0)
