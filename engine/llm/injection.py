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
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from engine.core import citations
from engine.llm.prompt_fence import CONTROL_STRINGS
from engine.core.rubric import ITEM_KEYS

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


def scan(text: str, max_signals: int = 20) -> list[InjectionSignal]:
    """Passages of ``text`` that address an AI grader rather than a clinician, in text order."""
    out: list[InjectionSignal] = []
    cited = [(c.start, c.end) for c in citations.find(text or "", ALL_CITATION_FORMS)]
    for rule, pattern in RULES:
        for m in pattern.finditer(text or ""):
            if any(a <= m.start() and m.end() <= b for a, b in cited):
                continue  # a note citation, whatever its form
            out.append(InjectionSignal(rule, m.start(), m.end(), text[max(0, m.start() - 20):m.end() + 20]))
            if len(out) >= max_signals:
                break
    return sorted(out, key=lambda s: s.start)[:max_signals]


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
