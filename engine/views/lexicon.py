"""The Lexicon page: the built-in stigmatizing-language lexicon, the clinicians' entries stored in the workspace with
the lexicon version in use, and the page's two actions (add an entry, deactivate one)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.data import StoreBusy, StoreError
from engine.evidence.stigma import LexiconError, load_lexicon
from engine.evidence.stigma import add_clinician_entry, workspace_entries

__all__ = ["ACTIONS", "LexiconError", "LexiconView", "StoreBusy", "StoreError", "add_entry", "deactivate_entry",
           "lexicon_page_view"]

ACTIONS = ("add_entry", "deactivate_entry")


@dataclass
class LexiconView:
    """``built_in``: the built-in lexicon (categories, entries, version, references) and ``per_category`` its
    entries per category; ``entry_rows``: every clinician entry as the table shows it; ``active``: entry id ->
    (term, category) of the active ones; ``version``: the lexicon version in use (None with ``entry_error`` when an
    entry cannot be used); ``store_error``: why the workspace's entries could not be read ("" when they were)."""

    built_in: object = None
    per_category: dict[str, int] = field(default_factory=dict)

    entry_rows: list[dict] = field(default_factory=list)
    active: dict[int, tuple[str, str]] = field(default_factory=dict)
    version: Optional[str] = None
    entry_error: str = ""
    store_error: str = ""


def lexicon_page_view(store) -> LexiconView:
    """What the Lexicon page shows; ``store`` None (the workspace could not be opened) gives the built-in lexicon
    alone."""
    base = load_lexicon()
    per_cat = {c: sum(e.category == c for e in base.entries) for c in base.categories}
    if store is None:
        return LexiconView(base, per_cat, store_error="the workspace could not be opened")
    rows = store.stigma_entries(active_only=False, with_meta=True)
    view = LexiconView(
        built_in=base, per_category=per_cat,
        entry_rows=[{"#": r["entry_id"], "term": r["term"], "category": r["category"], "suggest": r.get("suggest", ""),
                     "source / note": r.get("source", ""), "only as a noun for a person": bool(r.get("noun_only")),
                     "only when the patient does it": bool(r.get("patient_only")), "added by": r["added_by"],
                     "added": r["created_at"],
                     "status": "active" if r["active"] else f"deactivated {r['deactivated_at'] or ''}".strip()}
                    for r in rows],
        active={r["entry_id"]: (r["term"], r["category"]) for r in rows if r["active"]})
    try:
        view.version = load_lexicon(workspace_entries(store)).version
    except LexiconError as exc:
        view.entry_error = str(exc)
    return view


def add_entry(store, term: str, category: str, suggest: str = "", source: str = "", noun_only: bool = False,
              patient_only: bool = False, added_by: str = "") -> tuple[dict, str]:
    """Validate and store a clinician entry; (the entry, the lexicon version now). Raises
    :class:`engine.evidence.stigma.detector.LexiconError` with the reason when it is refused."""
    added = add_clinician_entry(store, term, category, suggest=suggest, source=source, noun_only=noun_only,
                                patient_only=patient_only, added_by=added_by)
    return added, load_lexicon(workspace_entries(store)).version


def deactivate_entry(store, entry_id: int) -> tuple[dict, str]:
    """Deactivate a clinician entry; (the entry, the lexicon version now)."""
    gone = store.deactivate_stigma_entry(int(entry_id))
    return gone, load_lexicon(workspace_entries(store)).version
