"""Clinician entries of the stigmatizing-language lexicon in the workspace, part of :class:`engine.data.store.Store`.
The validation belongs to the lexicon's owner (``check``: :func:`engine.evidence.stigma.entries.check_clinician_entry`);
the store keeps the entries, their history and the all-or-nothing write.
"""
from __future__ import annotations

import sqlite3
from typing import Any, Callable, Optional

from engine.core import now_iso
from engine.data.schema import StoreError


class LexiconStore:
    """Clinician lexicon entries (mixed into the workspace store)."""

    # -- clinician stigmatizing-language lexicon entries -----------------------------------------------
    # Entries a clinician adds in Settings, on top of engine/resources/stigma_lexicon.json. ``stigma_entries()`` gives
    # them in the dict shape engine.evidence.stigma.detector.load_lexicon(extra_entries) accepts; every change changes the lexicon
    # version that stigma results carry. Deactivated entries are kept (with when) and no longer used.
    _STIGMA_COLS = "entry_id, term, category, source, suggest, noun_only, patient_only, added_by, created_at, " \
                   "active, deactivated_at"

    @staticmethod
    def _stigma_dict(row: sqlite3.Row, with_meta: bool) -> dict:
        d: dict = {"term": row["term"], "category": row["category"]}
        if row["source"]:
            d["source"] = row["source"]
        if row["suggest"]:
            d["suggest"] = row["suggest"]
        if row["noun_only"]:
            d["noun_only"] = True
        if row["patient_only"]:
            d["patient_only"] = True
        if with_meta:
            d.update(entry_id=row["entry_id"], added_by=row["added_by"], created_at=row["created_at"],
                     active=bool(row["active"]), deactivated_at=row["deactivated_at"])
        return d

    @staticmethod
    def _stigma_rows(con: sqlite3.Connection, active_only: bool) -> list[sqlite3.Row]:
        return con.execute(f"SELECT {LexiconStore._STIGMA_COLS} FROM stigma_entries"
                           + (" WHERE active = 1" if active_only else "") + " ORDER BY entry_id").fetchall()

    def stigma_entries(self, active_only: bool = True, with_meta: bool = False) -> list[dict]:
        """The clinician lexicon entries, oldest first, as dicts ``engine.evidence.stigma.detector.load_lexicon`` accepts (term,
        category, and source / suggest / noun_only / patient_only where set). ``with_meta`` adds entry_id,
        added_by, created_at, active and deactivated_at (for showing them; not for load_lexicon)."""
        with self.connect() as con:
            return [self._stigma_dict(r, with_meta) for r in self._stigma_rows(con, active_only)]

    def add_stigma_entry(self, term: str, category: str, *, check: Callable[[list[dict], dict], Any],
                         suggest: Optional[str] = None, source: str = "", noun_only: bool = False,
                         patient_only: bool = False, added_by: str = "") -> dict:
        """Add an active clinician entry and return it (``with_meta`` shape). ``check(current, raw)`` is the
        lexicon owner's validation (:func:`engine.evidence.stigma.detector.check_clinician_entry`): it gets the active entries and
        the new one (whitespace normalised; ``added_by`` included) inside the write transaction and returns the
        entry to store, or raises saying why it cannot be used. A term that became an active entry meanwhile is
        refused with :class:`StoreError`."""
        norm = lambda v: " ".join(str(v or "").split())  # noqa: E731
        raw = {"term": norm(term), "category": str(category or "").strip(), "source": norm(source),
               "suggest": norm(suggest) or None, "noun_only": bool(noun_only), "patient_only": bool(patient_only),
               "added_by": norm(added_by)}
        raw = {k: v for k, v in raw.items() if v not in (None, "", False) or k in ("term", "category")}
        with self.transaction() as con:
            current = [self._stigma_dict(r, False) for r in self._stigma_rows(con, True)]
            new = check(current, raw)
            try:
                cur = con.execute("INSERT INTO stigma_entries (term, category, source, suggest, noun_only, "
                                  "patient_only, added_by, created_at) VALUES (?,?,?,?,?,?,?,?)",
                                  (new.term, raw["category"], raw.get("source", ""), raw.get("suggest"),
                                   int(bool(noun_only)), int(bool(patient_only)), raw.get("added_by", ""),
                                   now_iso()))
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{raw['term']!r} is already an active clinician entry; it is not added twice") \
                    from exc
            row = con.execute(f"SELECT {self._STIGMA_COLS} FROM stigma_entries WHERE entry_id=?",
                              (cur.lastrowid,)).fetchone()
        return self._stigma_dict(row, True)

    def deactivate_stigma_entry(self, entry_id: int) -> dict:
        """Stop using a clinician entry (kept, marked inactive); returns it. StoreError when there is no active
        entry with that id."""
        with self.transaction() as con:
            row = con.execute(f"SELECT {self._STIGMA_COLS} FROM stigma_entries WHERE entry_id=?",
                              (entry_id,)).fetchone()
            if row is None or not row["active"]:
                active = [str(r[0]) for r in con.execute("SELECT entry_id FROM stigma_entries WHERE active=1 "
                                                         "ORDER BY entry_id")]
                raise StoreError(f"no active clinician lexicon entry #{entry_id}"
                                 + (" (it was already deactivated)" if row is not None else "")
                                 + (f"; active entries: {', '.join(active)}" if active else
                                    "; there are no active clinician entries"))
            con.execute("UPDATE stigma_entries SET active=0, deactivated_at=? WHERE entry_id=?", (now_iso(), entry_id))
            row = con.execute(f"SELECT {self._STIGMA_COLS} FROM stigma_entries WHERE entry_id=?",
                              (entry_id,)).fetchone()
        return self._stigma_dict(row, True)
