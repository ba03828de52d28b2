"""Text addressed to an AI grader inside clinical data: find it and say so.

The prompt's structure cannot be broken by data (:mod:`engine.llm.prompt_fence`), but a model can still *read* an
instruction inside a note and follow it — a 270M smoke-test model does (``bench/injection_bench.py``). Clinical
notes have no reason to contain chat-template control strings, our prompt's tag names, a PDSQI-9 answer object
or sentences telling a grader what to do; when they do, the reviewer must know, because any LLM grade of that
summary is suspect. :func:`scan` lists such passages with their character spans; the loaders report them as
warnings (file, row, field) and the judge marks the result.

The rules are deliberately narrow (few false alarms on real notes): a control string, a tag named like our
prompt's structure, a JSON object with rubric keys, or an imperative aimed at the grader ("ignore the previous
instructions", "grade every item 5", "you are now…", "SYSTEM:" at the start of a line). A note citation in any
form :mod:`engine.core.citations` knows (``<Note ID:1>``, ``<NoteID:1,3>``, ``[Note 2]`` …) is what a summary is asked
to write, never a structure tag: matches inside a citation are not signals.

Text is scanned twice: as written, and as a reader (or a model) sees it (:func:`normalise`): ANSI escape sequences,
invisible format characters (zero-width spaces and joiners, the word joiner, soft hyphens, byte-order marks, bidi
controls — Unicode category Cf) and other control characters removed, compatibility forms folded (NFKD: full-width
letters, ligatures), accents dropped, and Cyrillic and Greek letters that look like Latin ones read as those
(:data:`LOOKALIKES`). A signal's ``start`` and ``end`` are offsets into the text as written; its ``excerpt`` is the
passage around it as read (normalised), so it shows the words that matched without invisible characters or
escape sequences.
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from engine.core import citations
from engine.llm.prompt_fence import CONTROL_STRINGS
from engine.core import ITEM_KEYS

_STRUCT_TAGS = ("note", "notes", "summary", "target_specialty", "rubric", "facts", "ddx", "system", "user",
                "assistant", "instructions") + tuple(ITEM_KEYS)

RULES: tuple[tuple[str, re.Pattern], ...] = (
    ("chat control string", CONTROL_STRINGS),
    ("prompt structure tag", re.compile(
        r"</?(?:%s)(?:-[0-9a-f]{4,})?(?:\s[^<>]{0,200})?>" % "|".join(map(re.escape, _STRUCT_TAGS)), re.IGNORECASE)),
    ("answer object", re.compile(
        r"\{\s*\"(?:%s)\"\s*:" % "|".join(map(re.escape, ITEM_KEYS)))),
    ("instruction to the grader", re.compile(
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding)\s+"
        r"(?:instructions?|prompts?|rules?|text)"
        r"|\b(?:grade|score|rate|give)\s+(?:this\s+summary|the\s+summary|it|everything|(?:every|each|all)\s+"
        r"(?:items?|attributes?|categories|criteria))\s+(?:as\s+|with\s+)?(?:an?\s+)?(?:[1-5]|five|perfect|excellent)\b"
        r"|\byou\s+are\s+now\b|\bnew\s+instructions?\s*:"
        r"|^\s*(?:system|assistant|developer)\s*:", re.IGNORECASE | re.MULTILINE)),
)


@dataclass(frozen=True)
class InjectionSignal:
    rule: str
    start: int
    end: int
    excerpt: str


ALL_CITATION_FORMS = citations.CitationStyle(forms=tuple(f.key for f in citations.FORMS if not f.consistent_only))

# Cyrillic and Greek letters drawn like Latin ones (after NFKD and accent removal), read as the Latin letter.
LOOKALIKES = str.maketrans({
    **dict(zip("\u0430\u0432\u0435\u043a\u043c\u043d\u043e\u0440\u0441\u0442\u0443\u0445\u0456\u0458"
               "\u0455\u0501\u04bb\u051b\u051d\u0491\u0261\u0131",
               "abekmhopctyxijsdhqwrgi")),
    **dict(zip("\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0423\u0425\u0406\u0408"
               "\u0405\u04ae\u0417",
               "ABEKMHOPCTYXIJSY3")),
    **dict(zip("\u03b1\u03b2\u03b5\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4\u03c5\u03c7\u03f2\u03f3",
               "abeikvoptuxcj")),
    **dict(zip("\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7"
               "\u03f9\u037f",
               "ABEZHIKMNOPTYXCJ")),
})
# Blank "letters" (Hangul fillers, the braille blank) that render as a space.
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# What the fast path cannot pass as is: a CSI escape sequence (7-bit or 8-bit) as a whole, a character-set
# designation (ESC ( B), or any one character outside printable ASCII, tab and newlines.
_SPECIAL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b[()*+\-./][ -~]|[^\t\n\r\x20-\x7e]")


@lru_cache(maxsize=4096)
def _read_as(piece: str) -> str:
    """What one special piece reads as: nothing (an escape sequence, a format or control character), a space (a
    blank), or its NFKD form without accents, look-alike letters read as Latin."""
    if len(piece) != 1:
        return ""  # an escape sequence
    if piece in _BLANKS:
        return " "
    cat = unicodedata.category(piece)
    if cat == "Cc":
        return " " if piece.isspace() else ""  # ESC and the other controls vanish; \v, \f, NEL are spaces
    if cat == "Cf":
        return ""
    out = "".join(ch for ch in unicodedata.normalize("NFKD", piece)
                  if unicodedata.category(ch) not in ("Mn", "Me", "Cf"))
    return out.translate(LOOKALIKES)


@dataclass(frozen=True)
class Normalised:
    """Text as read (see the module docstring), with the way back to offsets of the text as written: ``pieces``
    holds (start as read, start as written, length as written, one to one) for each stretch as read, "one to one"
    meaning each character as read stands for one character as written (else all of the stretch as read stands
    for the whole stretch as written: an expansion such as a ligature)."""

    text: str
    pieces: tuple[tuple[int, int, int, bool], ...] = ()
    starts: tuple[int, ...] = ()  # the first member of each piece, for bisection

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text as written that the span ``start:end`` as read comes from."""
        if not self.pieces:
            return start, end
        a = self.pieces[bisect_right(self.starts, start) - 1]
        b = self.pieces[bisect_right(self.starts, max(start, end - 1)) - 1]
        s = a[1] + (start - a[0] if a[3] else 0)
        e = b[1] + (end - b[0] if b[3] else b[2])
        return s, e


def normalise(text: str) -> Normalised:
    """``text`` as a reader sees it (see the module docstring); printable ASCII is returned as it is."""
    if not _SPECIAL.search(text):
        return Normalised(text)
    out: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []

    def add(at: int, pos: int, n: int, copied: bool) -> None:
        last = pieces[-1] if pieces else None
        if copied and last and last[3] and last[0] + last[2] == at and last[1] + last[2] == pos:
            pieces[-1] = (last[0], last[1], last[2] + n, True)  # one stretch read character for character
        else:
            pieces.append((at, pos, n, copied))

    at = pos = 0  # pos: offset as written; at: offset as read
    for m in _SPECIAL.finditer(text):
        if m.start() > pos:
            add(at, pos, m.start() - pos, True)
            out.append(text[pos:m.start()])
            at += m.start() - pos
        read = _read_as(m.group())
        if read:
            add(at, m.start(), m.end() - m.start(), len(read) == m.end() - m.start())
            out.append(read)
            at += len(read)
        pos = m.end()
    if pos < len(text):
        add(at, pos, len(text) - pos, True)
        out.append(text[pos:])
    return Normalised("".join(out), tuple(pieces), tuple(p[0] for p in pieces))


def _matches(text: str, max_signals: int):
    """(rule, start, end) of the rule matches in ``text`` outside note citations, at most ``max_signals`` a rule."""
    cited = [(c.start, c.end) for c in citations.find(text, ALL_CITATION_FORMS)]
    for rule, pattern in RULES:
        n = 0
        for m in pattern.finditer(text):
            if any(a <= m.start() and m.end() <= b for a, b in cited):
                continue  # a note citation, whatever its form
            yield rule, m.start(), m.end()
            n += 1
            if n >= max_signals:
                break


def scan(text: str, max_signals: int = 20) -> list[InjectionSignal]:
    """Passages of ``text`` that address an AI grader rather than a clinician, in text order: found in the text as
    written or as read (:func:`normalise`); offsets into the text as written, the excerpt as read."""
    text = text or ""
    found = {(rule, s, e) for rule, s, e in _matches(text, max_signals)}
    norm = normalise(text)
    if norm.pieces:
        found |= {(rule, *norm.span(s, e)) for rule, s, e in _matches(norm.text, max_signals)}
    out = [InjectionSignal(rule, s, e, normalise(text[max(0, s - 20):e + 20]).text) for rule, s, e in found]
    return sorted(out, key=lambda x: (x.start, x.end, x.rule))[:max_signals]


def describe(signals: list[InjectionSignal]) -> str:
    """One line for a report: which kinds were found."""
    kinds = sorted({s.rule for s in signals})
    return (f"possible prompt injection ({', '.join(kinds)}): text addressed to an AI grader rather than a "
            "clinician; an LLM grade of this summary may be steered — check it by hand")


def scan_case(case, summary=None) -> list[tuple[str, list[InjectionSignal]]]:
    """(where, signals) for the target specialty, each note (text and metadata) and the summary, where found."""
    out: list[tuple[str, list[InjectionSignal]]] = []
    for where, text in ([("target specialty", case.target_specialty)]
                        + [(f"note {n.note_id}", "\n".join(x for x in (n.text, n.date, n.note_type, n.author_specialty)
                                                           if x)) for n in case.notes]
                        + ([("summary", summary.text)] if summary is not None else [])):
        found = scan(text or "")
        if found:
            out.append((where, found))
    return out
