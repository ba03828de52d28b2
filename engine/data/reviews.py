"""Clinician spot checks and adjudicated final scores, with a full edit history.

A *review* row is one reviewer's value for one PDSQI-9 item of one summary, of one kind:

* ``spot_check``   – a clinician re-rates a summary (``rater_id`` = reviewer name, ``rater_group`` =
  ``"spot-check"``). Spot checks are compared with the imported rater panel and never join it: the panel's
  agreement statistics ignore them, and they enter the human reference only when an analysis asks for it
  (``engine.analysis.agreement.analyse(..., spot_checks_in_reference=True)``).
* ``adjudication`` – the agreed final score, stored as a single rater ``"adjudicated"`` (``rater_group`` =
  ``"adjudicated"``), whoever the adjudicator was. It is the *reference*, not one more rater: wherever a human
  median is computed (``engine.data.ratings.medians``, the score tables, ``engine.analysis.agreement``) the adjudicated score of
  an item replaces the human median of that item and is never averaged in with the raters.

Editing never overwrites: a changed value (or comment) inserts a new row and the old row's ``superseded_by``
points to it, so who said what and when is kept. "Current" rows are the ones with ``superseded_by IS NULL``;
the workspace guarantees there is at most one per summary × reviewer × kind × item.

This module never imports streamlit; the page ``pages/review.py`` is a thin layer over it.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Union

from engine.core import (ADJUDICATED_GROUP, ADJUDICATED_RATER, Dataset, ITEM_KEYS, RESERVED_RATER_IDS,
                         REVIEW_RATER_SUFFIX, Rating, SPOT_CHECK_GROUP, format_value, get_item, now_iso, parse_value)
from engine.data.store import Store

SPOT_CHECK = "spot_check"
ADJUDICATION = "adjudication"
REVIEW_KINDS: tuple[str, ...] = (SPOT_CHECK, ADJUDICATION)
KIND_LABELS: dict[str, str] = {SPOT_CHECK: "Spot check", ADJUDICATION: "Adjudicated final score"}

# SPOT_CHECK_GROUP, ADJUDICATED_RATER and ADJUDICATED_GROUP come from engine.core.models (reserved names, defined once).

CSV_COLUMNS: tuple[str, ...] = ("review_id", "dataset", "case_id", "summary_id", "reviewer", "kind", "item",
                                "item_label", "value", "value_label", "comment", "created_at", "status",
                                "superseded_by")


@dataclass(frozen=True)
class Review:
    """One stored review row (one item of one summary, by one reviewer, of one kind)."""

    review_id: int
    summary_id: str
    reviewer: str
    kind: str
    item: str
    value: Optional[float]  # None = NA
    comment: str
    created_at: str  # ISO 8601, UTC
    superseded_by: Optional[int] = None  # the review_id of the row that replaced this one

    @property
    def is_current(self) -> bool:
        return self.superseded_by is None

    @property
    def item_label(self) -> str:
        return get_item(self.item).label

    @property
    def value_label(self) -> str:
        return format_value(get_item(self.item), self.value)

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)


_COLUMNS = "review_id, summary_id, reviewer, kind, item, value, comment, created_at, superseded_by"


def _row(r: sqlite3.Row) -> Review:
    return Review(r["review_id"], r["summary_id"], r["reviewer"], r["kind"], r["item"], r["value"],
                  r["comment"], r["created_at"], r["superseded_by"])


def _check_summary(con: sqlite3.Connection, did: int, dataset: str, summary_id: str) -> str:
    """The summary's case id; ValueError naming the summary when it is not in the dataset."""
    row = con.execute("SELECT case_id FROM summaries WHERE dataset_id=? AND summary_id=?",
                      (did, summary_id)).fetchone()
    if row is None:
        raise ValueError(f"summary {summary_id!r} is not in dataset {dataset!r}; pick one of its summaries")
    return row[0]


def _check_kind(kind: str) -> str:
    if kind not in REVIEW_KINDS:
        raise ValueError(f"unknown review kind {kind!r}; expected one of {', '.join(REVIEW_KINDS)}")
    return kind


def _check_consistency(summary_id: str, merged: Mapping[str, Optional[float]]) -> None:
    """Synthesized is NA exactly when abstraction is not needed (PDSQI-9 Appendix C)."""
    if "abstraction" not in merged or "synthesized" not in merged:
        return
    syn, abst = get_item("synthesized"), get_item("abstraction")
    if merged["abstraction"] == 0.0 and merged["synthesized"] is not None:
        raise ValueError(f"summary {summary_id!r}: {syn.label} must be NA when {abst.label} is 'no' "
                         f"(got {format_value(syn, merged['synthesized'])})")
    if merged["abstraction"] == 1.0 and merged["synthesized"] is None:
        raise ValueError(f"summary {summary_id!r}: {syn.label} needs a score 1-5 when {abst.label} is 'yes' "
                         "(NA is only for summaries that need no abstraction)")


def save_review(store: Store, dataset: str, summary_id: str, reviewer: str, kind: str,
                values: Mapping[str, object], comments: Union[Mapping[str, str], str, None] = "") -> list[Review]:
    """Record ``reviewer``'s review of ``summary_id`` for the items in ``values`` (item key -> value; NA = None
    or "NA"; yes/no items take yes/no/1/0). ``comments`` is one comment per item, or a single string that is
    attached to every item saved.

    All-or-nothing: every value is validated with :func:`engine.core.rubric.parse_value` first, and a
    :class:`ValueError` naming the summary and item is raised before anything is written. An item whose value
    and comment equal the reviewer's current row is left alone; a changed one gets a new row and the old row is
    marked superseded (history is kept). Returns the rows written (empty when nothing changed).
    """
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise ValueError("a reviewer name is required")
    _check_kind(kind)
    if not values:
        raise ValueError(f"summary {summary_id!r}: no item was scored; give at least one PDSQI-9 item a value")
    parsed: dict[str, Optional[float]] = {}
    for key, raw in values.items():
        try:
            item = get_item(key)
        except KeyError:
            raise ValueError(f"summary {summary_id!r}: unknown PDSQI-9 item {key!r}; known items: "
                             f"{', '.join(ITEM_KEYS)}") from None
        try:
            parsed[key] = parse_value(item, raw)
        except ValueError as exc:
            raise ValueError(f"summary {summary_id!r}, item {key!r}: {exc}") from None
    if comments is None:
        comments = ""
    if isinstance(comments, str):
        notes = {k: comments.strip() for k in parsed}
    else:
        extra = [k for k in comments if k not in parsed]
        if extra:
            raise ValueError(f"summary {summary_id!r}: comment(s) for item(s) without a value: {', '.join(extra)}")
        notes = {k: (comments.get(k) or "").strip() for k in parsed}

    with store.transaction() as con:
        did = store.dataset_id(con, dataset)
        _check_summary(con, did, dataset, summary_id)
        if kind == SPOT_CHECK:
            if reviewer.lower() in RESERVED_RATER_IDS:
                raise ValueError(f"the reviewer name {reviewer!r} is reserved ("
                                 + ("adjudicated final scores" if reviewer.lower() == ADJUDICATED_RATER
                                    else "the LLM judge") + "); use your own name")
            if con.execute("SELECT 1 FROM ratings WHERE dataset_id=? AND rater_id=? LIMIT 1",
                           (did, reviewer)).fetchone():
                raise ValueError(f"reviewer name {reviewer!r} is already a rater id in the imported ratings of "
                                 f"dataset {dataset!r}; use another name so the spot check counts as a new rater")
        current = {r.item: r for r in map(_row, con.execute(
            f"SELECT {_COLUMNS} FROM reviews WHERE dataset_id=? AND summary_id=? AND reviewer=? AND kind=? "
            "AND superseded_by IS NULL", (did, summary_id, reviewer, kind)))}
        merged = {k: r.value for k, r in current.items()} | parsed
        _check_consistency(summary_id, merged)
        changed = [k for k in parsed
                   if k not in current or current[k].value != parsed[k] or current[k].comment != notes[k]]
        if not changed:
            return []
        next_id = con.execute("SELECT COALESCE(MAX(review_id), 0) + 1 FROM reviews").fetchone()[0]
        now = now_iso()
        written = []
        for offset, key in enumerate(changed):
            rid = next_id + offset
            if key in current:  # mark the old row first: at most one current row per item (unique index)
                con.execute("UPDATE reviews SET superseded_by=? WHERE review_id=?", (rid, current[key].review_id))
            con.execute("INSERT INTO reviews (review_id, dataset_id, summary_id, reviewer, kind, item, value, "
                        "comment, created_at, superseded_by) VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                        (rid, did, summary_id, reviewer, kind, key, parsed[key], notes[key], now))
            written.append(Review(rid, summary_id, reviewer, kind, key, parsed[key], notes[key], now))
    return written


def _order(reviews: list[Review]) -> list[Review]:
    pos = {k: i for i, k in enumerate(ITEM_KEYS)}
    return sorted(reviews, key=lambda r: (r.summary_id, r.kind, r.reviewer, pos.get(r.item, 99), r.review_id))


def current_reviews(store: Store, dataset: str, summary_id: Optional[str] = None) -> list[Review]:
    """The latest (non-superseded) row per summary × reviewer × kind × item; for one summary if given."""
    with store.connect() as con:
        did = store.dataset_id(con, dataset)
        if summary_id is None:
            rows = con.execute(f"SELECT {_COLUMNS} FROM reviews WHERE dataset_id=? AND superseded_by IS NULL",
                               (did,)).fetchall()
        else:
            _check_summary(con, did, dataset, summary_id)
            rows = con.execute(f"SELECT {_COLUMNS} FROM reviews WHERE dataset_id=? AND summary_id=? "
                               "AND superseded_by IS NULL", (did, summary_id)).fetchall()
    return _order([_row(r) for r in rows])


def review_history(store: Store, dataset: str, summary_id: str) -> list[Review]:
    """Every row for one summary, superseded ones included, oldest first."""
    with store.connect() as con:
        did = store.dataset_id(con, dataset)
        _check_summary(con, did, dataset, summary_id)
        rows = con.execute(f"SELECT {_COLUMNS} FROM reviews WHERE dataset_id=? AND summary_id=? "
                           "ORDER BY review_id", (did, summary_id)).fetchall()
    return [_row(r) for r in rows]


def has_reviewed(store: Store, dataset: str, summary_id: str, reviewer: str, kind: Optional[str] = None) -> bool:
    """Whether ``reviewer`` has submitted anything (of ``kind``, if given) for this summary."""
    reviewer = (reviewer or "").strip()
    if not reviewer:
        return False
    sql = "SELECT 1 FROM reviews WHERE dataset_id=? AND summary_id=? AND reviewer=?"
    args: tuple = (summary_id, reviewer)
    if kind is not None:
        sql += " AND kind=?"
        args += (_check_kind(kind),)
    with store.connect() as con:
        did = store.dataset_id(con, dataset)
        return con.execute(sql + " LIMIT 1", (did, *args)).fetchone() is not None


def reviews_as_ratings(store: Store, dataset: str, summary_id: Optional[str] = None) -> list[Rating]:
    """Current reviews as ratings for the statistics: spot checks as the reviewer (group ``spot-check``);
    adjudications as the single rater ``adjudicated`` (the most recent adjudication of an item wins when more
    than one adjudicator scored it)."""
    out: list[Rating] = []
    adjudicated: dict[tuple[str, str], Review] = {}
    for r in current_reviews(store, dataset, summary_id):
        if r.kind == SPOT_CHECK:
            out.append(Rating(r.summary_id, r.reviewer, r.item, r.value, SPOT_CHECK_GROUP))
        else:
            key = (r.summary_id, r.item)
            if key not in adjudicated or r.review_id > adjudicated[key].review_id:
                adjudicated[key] = r
    out += [Rating(r.summary_id, ADJUDICATED_RATER, r.item, r.value, ADJUDICATED_GROUP)
            for r in adjudicated.values()]
    pos = {k: i for i, k in enumerate(ITEM_KEYS)}
    return sorted(out, key=lambda x: (x.summary_id, x.rater_id, pos.get(x.item, 99)))


def dataset_with_reviews(store: Store, name: str) -> Dataset:
    """The stored dataset with the current reviews added to its ratings (for agreement statistics).

    Should a reviewer's name clash with a rater id imported after the review was saved, the review's rater id
    becomes ``"<name> (review)"`` so no rating is shadowed or duplicated.
    """
    ds = store.load_dataset(name)
    taken = {(r.summary_id, r.rater_id, r.item) for r in ds.ratings}
    imported_raters = {r.rater_id for r in ds.ratings}
    extra = []
    for r in reviews_as_ratings(store, name):
        if r.rater_id in imported_raters or (r.summary_id, r.rater_id, r.item) in taken:
            r = replace(r, rater_id=f"{r.rater_id}{REVIEW_RATER_SUFFIX}")
        extra.append(r)
    ds.ratings = list(ds.ratings) + extra
    return ds


def history_rows(reviews: list[Review]) -> list[dict[str, str]]:
    """Plain rows for a UI table of review history, newest first."""
    return [{"when (UTC)": r.created_at, "reviewer": r.reviewer, "kind": r.kind_label, "item": r.item_label,
             "value": r.value_label, "comment": r.comment,
             "status": "current" if r.is_current else f"replaced by #{r.superseded_by}", "#": str(r.review_id)}
            for r in sorted(reviews, key=lambda r: r.review_id, reverse=True)]


def export_reviews_csv(store: Store, dataset: str) -> str:
    """Every review row of the dataset, history included, with who and when (UTC), as CSV text.

    ``value`` is written as the page shows it (:func:`engine.core.rubric.format_value`): ``yes``/``no`` for yes/no
    items, ``NA``, or the level 1-5 (``value_label`` is kept, same text, for older readers of the export)."""
    with store.connect() as con:
        did = store.dataset_id(con, dataset)
        rows = con.execute(f"SELECT r.{_COLUMNS.replace(', ', ', r.')}, s.case_id FROM reviews r "
                           "LEFT JOIN summaries s ON s.dataset_id = r.dataset_id AND s.summary_id = r.summary_id "
                           "WHERE r.dataset_id=? ORDER BY r.review_id", (did,)).fetchall()
    from engine.core import untrusted  # every cell neutralised: names and comments are free text (CSV injection)

    out = []
    for row in rows:
        r = _row(row)
        out.append([r.review_id, dataset, row["case_id"] or "", r.summary_id, r.reviewer, r.kind, r.item,
                    r.item_label, r.value_label, r.value_label, r.comment,
                    r.created_at, "current" if r.is_current else "superseded",
                    "" if r.superseded_by is None else r.superseded_by])
    return untrusted.csv_text(out, header=CSV_COLUMNS)
