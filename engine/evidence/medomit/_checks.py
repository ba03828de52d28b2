"""Replies of MED-OMIT's LLM steps that are schema-valid but empty of content: echoed instructions, placeholders,
a differential of likelihood words. A step with such a reply fails; nothing is invented for it.
"""
from __future__ import annotations

from engine.evidence.medomit.result import Diagnosis
from engine.evidence.text import tokenize


# fragments of our own prompts that a weak model copies back instead of answering
ECHOED_INSTRUCTIONS = ("at most 10 conditions", "most likely first", "probable possible or unlikely",
                       "one sentence reason", "exact words from the note", "short exact quote",
                       "list the atomic facts", "atomic facts of this note", "give the differential diagnosis",
                       "with a short explanation", "reply with json only")


PLACEHOLDERS = {"", "n a", "na", "none", "null", "condition", "conditions", "diagnosis", "diagnoses", "fact", "facts",
                "string", "name", "quote", "reason", "text", "likelihood", "example", "placeholder", "tbd",
                "unknown", "diagnosis 1", "condition 1", "fact 1", "dx", "ddx"}


LIKELIHOOD_WORDS = {"probable", "possible", "unlikely", "likely", "most", "first", "or", "and", "likelihood", "less",
                    "more", "least", "very", "highly"}


def _words(text: str) -> str:
    """``text``'s letters and digits, lower-cased, one space between words (case and punctuation ignored)."""
    return " ".join(tokenize(text or "", case="lower_text"))


def empty_content(text: str, placeholder_check: bool = True) -> str:
    """Why ``text`` is empty of content ("" when it is not): an echoed instruction, or a placeholder."""
    w = _words(text)
    echo = next((e for e in ECHOED_INSTRUCTIONS if e in w), None)
    if echo:
        return f"echoed instruction {text.strip()!r}"
    if placeholder_check and (w in PLACEHOLDERS or (text or "").strip() in {"...", "…"}):
        return f"placeholder {text.strip()!r}"
    return ""


def check_facts(value: dict) -> None:
    """The ``check`` of a fact-extraction step: raises ValueError when a fact (or its quote) is an echoed
    instruction or a placeholder."""
    for i, f in enumerate(value["facts"]):
        why = empty_content(f["fact"]) or empty_content(f["quote"], placeholder_check=False)
        if why:
            raise ValueError(f"fact {i + 1} is empty of content: {why}")


def check_ddx(value: dict) -> None:
    """The ``check`` of a DDx step: raises ValueError for an empty DDx or an entry that is an echoed instruction, a
    placeholder or only likelihood words. A name written again (a small model that loops on its first diagnosis) is
    no reason to fail: :func:`distinct_diagnoses` keeps its first entry."""
    dx = value["diagnoses"]
    if not dx:
        raise ValueError("empty DDx")
    for i, d in enumerate(dx):
        why = empty_content(d["name"]) or empty_content(d["reason"], placeholder_check=False)
        if not why and set(_words(d["name"]).split()) <= LIKELIHOOD_WORDS:
            why = f"only likelihood words {d['name'].strip()!r}"
        if why:
            raise ValueError(f"diagnosis {i + 1} is empty of content: {why}")


def distinct_diagnoses(entries: list[dict]) -> tuple[list[Diagnosis], str]:
    """The diagnoses of a DDx reply's entries with every name written again dropped (the first entry of each name
    kept, in order, and ranked anew; names compared by their words, case and punctuation ignored), and a note of
    what was dropped ("" when nothing)."""
    seen: set[str] = set()
    out: list[Diagnosis] = []
    for d in entries:
        key = _words(d["name"])
        if key not in seen:
            seen.add(key)
            out.append(Diagnosis(len(out) + 1, d["name"].strip(), d["likelihood"], d["reason"].strip()))
    dropped = len(entries) - len(out)
    return out, (f"{dropped} of the {len(entries)} diagnoses repeated an earlier name and were dropped" if dropped
                 else "")
