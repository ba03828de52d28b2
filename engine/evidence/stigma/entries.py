"""Clinician entries of the stigmatizing-language lexicon: validated against the built-in lexicon and the active
entries (engine.evidence.stigma.detector), stored in the workspace, read back for the detector.
"""
from __future__ import annotations

from typing import Any, Sequence

from engine.evidence.stigma.detector import LexiconEntry, LexiconError, compile_term, load_lexicon


def workspace_entries(store) -> list[dict[str, Any]]:
    """The active lexicon entries a clinician added in Settings to the workspace ``store`` (oldest first), in the
    shape ``extra_entries`` takes: ``assess(case, summary, extra_entries=workspace_entries(store))``."""
    return store.stigma_entries(active_only=True)


def _literal(term: str) -> bool:
    """A lexicon term without the term syntax's alternatives or '*' gaps (it reads as the words it finds)."""
    return not any(c in term for c in "()|*")


CLINICIAN_TERM_MAX = 200  # characters of a clinician entry's term
CLINICIAN_TEXT_MAX = 500  # characters of its suggestion, source / note and author


def check_clinician_entry(current: Sequence[dict], raw: dict) -> "LexiconEntry":
    """The lexicon entry ``raw`` (a clinician entry in :func:`load_lexicon`'s ``extra_entries`` shape, plus
    ``added_by``) would become beside the active clinician entries ``current``; :class:`LexiconError` saying why
    when it cannot be used: an empty or too long text, an unknown category, a term the lexicon's syntax rejects,
    or a term the built-in lexicon or an active clinician entry already finds."""
    term = raw.get("term", "")
    if not term:
        raise LexiconError("the term is empty: type the word or phrase to flag, e.g. 'entitled'")
    if len(term) > CLINICIAN_TERM_MAX:
        raise LexiconError(f"the term is {len(term)} characters long; shorten it to at most {CLINICIAN_TERM_MAX} "
                           "(a word or a short phrase)")
    for what, key in (("suggestion", "suggest"), ("source / note", "source"), ("added by", "added_by")):
        value = raw.get(key) or ""
        if len(value) > CLINICIAN_TEXT_MAX:
            raise LexiconError(f"the {what} is {len(value)} characters long; shorten it to at most "
                               f"{CLINICIAN_TEXT_MAX}")
    raw = {k: v for k, v in raw.items() if k != "added_by"}
    base = load_lexicon()
    if raw.get("category") not in base.categories:
        raise LexiconError(f"category {raw.get('category')!r} is not a lexicon category; choose one of "
                           f"{', '.join(base.categories)}")
    try:
        lex = load_lexicon([*current, raw])  # the lexicon's own validation: its LexiconError says what
    except LexiconError as exc:
        raise LexiconError(f"{exc}. Write the term as plain words, or in the lexicon's term syntax: "
                           "(a|b|) alternatives, '-' for an optional hyphen, a lone '*' between two words "
                           "for up to three words") from exc
    new = lex.entries[-1]
    new_pattern = compile_term(new.term)
    for e in lex.entries[:-1]:
        covered = (e.term.lower() == new.term.lower()
                   or _literal(new.term) and compile_term(e.term).fullmatch(new.term)
                   or _literal(e.term) and new_pattern.fullmatch(e.term))
        if not covered:
            continue
        if e.origin == "lexicon":
            raise LexiconError(f"{raw['term']!r} is already in the built-in lexicon (entry {e.id!r}, term "
                               f"{e.term!r}, category {e.category}); there is no need to add it")
        raise LexiconError(f"{raw['term']!r} is already a clinician entry (term {e.term!r}, category "
                           f"{e.category}); deactivate that entry first to replace it")
    return new


def add_clinician_entry(store, term: str, category: str, **fields) -> dict:
    """Add a clinician entry to the workspace ``store`` (``fields``: suggest, source, noun_only, patient_only,
    added_by), validated by :func:`check_clinician_entry`; returns the stored entry."""
    return store.add_stigma_entry(term, category, check=check_clinician_entry, **fields)
