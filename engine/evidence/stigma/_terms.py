"""The lexicon's term syntax and word families: :func:`compile_term` turns a term into its regular expression, its
final word widened by :func:`word_family`; :func:`family_key` is what two matches of one word family share; and
:class:`LexiconError`, raised on an entry or term that cannot be used."""
from __future__ import annotations

import re

from engine.evidence.text import tokenize

_SUFFIXES = ("ances", "ance", "ants", "ant", "ences", "ence", "ents", "ent", "ers", "er", "ings", "ing", "edly",
             "ed", "ly", "als", "al", "es", "s", "e")


class LexiconError(ValueError):
    """An entry (built in or supplied at run time) that cannot be used; the message says which and why."""


_LAST_WORD = re.compile(r"(?<![A-Za-z(|])([A-Za-z]{3,})$")


def word_family(term: str) -> str:
    """``term`` with its final plain word widened to the word's family (term syntax): an '-ing' word to its agent
    nouns and third person (seeking -> seek(ing|er|ers|s)), an '-ive' / '-ent' / '-al' / '-ic' adjective to its
    adverb, any other word to its plural. A term ending in a group or a '*' is left as written (it lists its forms)."""
    m = _LAST_WORD.search(term)
    if not m:
        return term
    word = m.group(1)
    low = word.lower()
    if low.endswith("ing") and len(low) > 5:
        family = f"{word[:-3]}(ing|er|ers|s)"
    elif low.endswith(("ive", "ent", "al", "ic")):
        family = f"{word}(|ly)"
    elif low.endswith(("ss", "us", "is", "ly", "y")):
        family = word
    else:
        family = f"{word}(|s)"
    return term[:m.start(1)] + family


def compile_term(term: str) -> re.Pattern:
    """The regular expression of a term in the lexicon's term syntax (see the data file's ``about``), its final
    word widened to its family (:func:`word_family`)."""
    src = word_family(term).replace(" * ", "\x00")
    if src.startswith("* ") or src.endswith(" *") or src == "*" or "*" in src.replace(" * ", ""):
        raise LexiconError(f"term {term!r}: '*' must stand alone between two words")
    pos = 0

    def seq() -> str:
        nonlocal pos
        out: list[str] = []
        while pos < len(src) and src[pos] not in "|)":
            c = src[pos]
            if c == "(":
                pos += 1
                alts = [seq()]
                while pos < len(src) and src[pos] == "|":
                    pos += 1
                    alts.append(seq())
                if pos >= len(src) or src[pos] != ")":
                    raise LexiconError(f"term {term!r}: unbalanced '('")
                pos += 1
                out.append("(?:" + "|".join(alts) + ")")
                continue
            if c == "-":
                out.append(r"[-\s]?")
            elif c == " ":
                out.append(r"\s+")
            elif c == "\x00":
                out.append(r"(?:\s+[\w/.'’-]+){0,3}?\s+")
            else:
                out.append(re.escape(c))
            pos += 1
        return "".join(out)

    body = seq()
    if pos != len(src):
        raise LexiconError(f"term {term!r}: unbalanced ')' or '|' outside parentheses")
    pattern = re.compile(r"(?<![\w-])" + body + r"(?!\w)", re.IGNORECASE)
    if pattern.match("") or pattern.search(" "):
        raise LexiconError(f"term {term!r} matches empty text")
    return pattern


def family_key(text: str) -> str:
    """What two matches of one word family share: the last word, letters only, without a derivational or
    inflectional ending ("abusers" -> "abus", "malingering" / "malingerer" -> "malinger", "noncompliance" /
    "noncompliant" -> "noncompli"). Not the Porter stemmer of engine.evidence.text.terms, which splits families
    the detector must join (malingering "maling" / malingerer "malinger", compliance "complianc" / compliant)."""
    last = "".join(tokenize((text.lower().split() or [""])[-1], case="keep", digits="none"))
    for suf in _SUFFIXES:
        if last.endswith(suf) and len(last) - len(suf) >= 4:
            return last[: -len(suf)]
    return last
