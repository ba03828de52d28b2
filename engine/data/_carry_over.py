"""Carrying a reviewer's work across a re-import that replaces a dataset.

Reviews (spot checks and adjudications, with their history), judge results and evidence results belong to a
summary's *content*: its text, its case's notes and target specialty. When a dataset is replaced, every row whose
summary content is still present is carried over:

* **kept** — the same summary id has the same content;
* **re-attached** — the content is now under another summary id (a renamed id). Judge and evidence results, which
  are computed from content alone, go to every summary with that content; a review goes only where the match is
  unambiguous (exactly one summary with that content);
* **dropped** — the content is gone (or, for a review, ambiguous). :class:`CarryPlan.dropped_total` says how many;
  the store refuses to drop any unless told to (``force``).

Calibrations are fits of a whole dataset that record their own summary ids; they are kept as they are.
Everything here runs inside the store's replace transaction, so a failure leaves the old dataset untouched.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from engine.core import Dataset, json_key

CARRIED_KINDS = ("reviews", "judge results", "evidence results")


def content_key(specialty: str, notes: list[tuple], summary_text: str) -> str:
    """sha256 of what a summary's results depend on: the target specialty, the notes (id, date, type, author,
    text, in order) and the summary text."""
    return json_key({"specialty": specialty, "notes": [list(n) for n in notes], "summary": summary_text})


def dataset_content_keys(ds: Dataset) -> dict[str, str]:
    out = {}
    for s in ds.summaries:
        c = ds.case(s.case_id)
        out[s.summary_id] = content_key(c.target_specialty, [(n.note_id, n.date, n.note_type, n.author_specialty,
                                                              n.text) for n in c.notes], s.text)
    return out


def stored_content_keys(con: sqlite3.Connection, did: int) -> dict[str, str]:
    cases = {r[0]: r[1] for r in con.execute("SELECT case_id, target_specialty FROM cases WHERE dataset_id=?",
                                             (did,))}
    notes: dict[str, list] = {}
    for r in con.execute("SELECT case_id, note_id, date, note_type, author_specialty, text FROM notes "
                         "WHERE dataset_id=? ORDER BY case_id, position", (did,)):
        notes.setdefault(r[0], []).append(tuple(r[1:]))
    return {r[0]: content_key(cases[r[1]], notes.get(r[1], []), r[2])
            for r in con.execute("SELECT summary_id, case_id, text FROM summaries WHERE dataset_id=?", (did,))}


@dataclass
class KindCount:
    kind: str
    kept: int = 0
    reattached: int = 0
    dropped: int = 0

    def text(self) -> str:
        return f"{self.kind}: {self.kept} kept, {self.reattached} re-attached, {self.dropped} dropped"


@dataclass
class CarryPlan:
    counts: dict = field(default_factory=lambda: {k: KindCount(k) for k in CARRIED_KINDS})
    reviews: list = field(default_factory=list)  # (row tuple with the target summary id)
    judge: list = field(default_factory=list)
    evidence: list = field(default_factory=list)
    calibrations: list = field(default_factory=list)

    @property
    def dropped_total(self) -> int:
        return sum(c.dropped for c in self.counts.values())

    def dropped_text(self) -> str:
        return ", ".join(f"{c.dropped} {c.kind}" for c in self.counts.values() if c.dropped)


def _targets(old_sid: str, old_key: str, new_keys: dict[str, str], by_content: dict[str, list[str]]
             ) -> tuple[str, list[str]]:
    """('kept' | 'reattached' | 'dropped', target summary ids)."""
    if new_keys.get(old_sid) == old_key:
        return "kept", [old_sid]
    others = by_content.get(old_key, [])
    if others:
        return "reattached", others
    return "dropped", []


def plan(con: sqlite3.Connection, old_did: int, new_keys: dict[str, str]) -> CarryPlan:
    """What a replace would carry over from dataset ``old_did`` to a dataset with these summary content keys."""
    old_keys = stored_content_keys(con, old_did)
    by_content: dict[str, list[str]] = {}
    for sid, k in sorted(new_keys.items()):
        by_content.setdefault(k, []).append(sid)
    p = CarryPlan()
    review_ids = {}
    for row in con.execute("SELECT review_id, summary_id, reviewer, kind, item, value, comment, created_at, "
                           "superseded_by FROM reviews WHERE dataset_id=? ORDER BY review_id", (old_did,)):
        how, targets = _targets(row[1], old_keys.get(row[1], ""), new_keys, by_content)
        c = p.counts["reviews"]
        if how == "reattached" and len(targets) != 1:
            how, targets = "dropped", []  # identical content under several ids: which one was reviewed is unknown
        if how == "dropped":
            c.dropped += 1
            continue
        setattr(c, how, getattr(c, how) + 1)
        review_ids[row[0]] = targets[0]
        p.reviews.append((row[0], targets[0], *row[2:]))
    # a kept row that was superseded by a dropped one would point nowhere: it becomes current again
    p.reviews = [(*r[:8], r[8] if r[8] in review_ids else None) for r in p.reviews]
    for table, kind, target in (("judge_results", "judge results", p.judge),
                                ("evidence_results", "evidence results", p.evidence)):
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        sid_at = cols.index("summary_id")
        seen: set = set()
        for row in con.execute(f"SELECT * FROM {table} WHERE dataset_id=?", (old_did,)):
            row = tuple(row)
            how, targets = _targets(row[sid_at], old_keys.get(row[sid_at], ""), new_keys, by_content)
            c = p.counts[kind]
            if how == "dropped":
                c.dropped += 1
                continue
            setattr(c, how, getattr(c, how) + 1)
            for t in targets:
                new = list(row)
                new[sid_at] = t
                key = tuple(new[1:sid_at]) + (t,)
                if key not in seen:
                    seen.add(key)
                    target.append((new, cols, sid_at))
    p.calibrations = [tuple(r) for r in con.execute(
        "SELECT dataset_id, config_key, version, kind, created_at, payload FROM calibrations WHERE dataset_id=?",
        (old_did,))]
    return p


def _relabel(text: str, summary_id: str, case_id: str) -> str:
    try:
        d = json.loads(text)
    except ValueError:
        return text
    if not isinstance(d, dict) or (d.get("summary_id") == summary_id and d.get("case_id", case_id) == case_id):
        return text
    if "summary_id" in d:
        d["summary_id"] = summary_id
    if "case_id" in d:
        d["case_id"] = case_id
    return json.dumps(d)


def apply(con: sqlite3.Connection, new_did: int, p: CarryPlan, case_of: dict[str, str]) -> None:
    """Write the carried rows into dataset ``new_did`` (inside the caller's transaction); ``case_of``: summary id ->
    its case id in the new dataset (results carry both ids)."""
    con.executemany("INSERT INTO reviews (review_id, dataset_id, summary_id, reviewer, kind, item, value, comment, "
                    "created_at, superseded_by) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [(r[0], new_did, *r[1:]) for r in p.reviews])
    for rows, table in ((p.judge, "judge_results"), (p.evidence, "evidence_results")):
        for new, cols, sid_at in rows:
            new = list(new)
            new[0] = new_did
            new[cols.index("result")] = _relabel(new[cols.index("result")], new[sid_at], case_of[new[sid_at]])
            con.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        new)
    con.executemany("INSERT OR IGNORE INTO calibrations VALUES (?,?,?,?,?,?)",
                    [(new_did, *r[1:]) for r in p.calibrations])
