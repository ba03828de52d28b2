"""Replies of MED-OMIT's LLM steps that are schema-valid but empty of content: echoed instructions, placeholders,
a differential of likelihood words. A step with such a reply fails; nothing is invented for it.
"""
from __future__ import annotations

import re


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
    return " ".join(re.findall(r"[a-z0-9]+", (text or "").lower()))


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
    """The ``check`` of a DDx step: raises ValueError for an empty DDx, an entry that is an echoed instruction, a
    placeholder or only likelihood words, or a DDx whose entries are mostly the same name."""
    dx = value["diagnoses"]
    if not dx:
        raise ValueError("empty DDx")
    for i, d in enumerate(dx):
        why = empty_content(d["name"]) or empty_content(d["reason"], placeholder_check=False)
        if not why and set(_words(d["name"]).split()) <= LIKELIHOOD_WORDS:
            why = f"only likelihood words {d['name'].strip()!r}"
        if why:
            raise ValueError(f"diagnosis {i + 1} is empty of content: {why}")
    if len(dx) >= 2:
        names = [_words(d["name"]) for d in dx]
        top = max(names.count(n) for n in set(names))
        if top > len(dx) / 2:
            raise ValueError(f"{top} of the {len(dx)} diagnoses are the same name")
