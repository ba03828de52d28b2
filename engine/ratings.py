"""Ratings helpers: per-rater score rows and per-item medians (NA-aware)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional

from .models import Rating
from .rubric import ITEM_KEYS, ITEMS, format_value


@dataclass(frozen=True)
class RaterRow:
    rater_id: str
    rater_group: str
    values: dict[str, Optional[float]] = field(default_factory=dict)  # item -> value (None = NA); absent = unrated


def rater_rows(ratings: Iterable[Rating]) -> list[RaterRow]:
    rows: dict[str, RaterRow] = {}
    for r in ratings:
        row = rows.setdefault(r.rater_id, RaterRow(r.rater_id, r.rater_group, {}))
        row.values[r.item] = r.value
    return sorted(rows.values(), key=lambda x: (x.rater_group, x.rater_id))


def item_median(values: Iterable[Optional[float]]) -> Optional[float]:
    """Median of the rated, non-NA values (None when there are none). For yes/no items this is the majority,
    with a tie counted as 0.5."""
    vals = [v for v in values if v is not None]
    return float(statistics.median(vals)) if vals else None


def medians(ratings: Iterable[Rating]) -> dict[str, Optional[float]]:
    by_item: dict[str, list[Optional[float]]] = {k: [] for k in ITEM_KEYS}
    for r in ratings:
        by_item.setdefault(r.item, []).append(r.value)
    return {k: item_median(v) for k, v in by_item.items() if v}


def display_table(ratings: Iterable[Rating]) -> list[dict[str, str]]:
    """Plain rows for a UI table: one per rater, then the median row. Blank = not rated."""
    ratings = list(ratings)
    out = []
    for row in rater_rows(ratings):
        d = {"rater": row.rater_id, "group": row.rater_group}
        for item in ITEMS:
            d[item.label] = format_value(item, row.values[item.key]) if item.key in row.values else ""
        out.append(d)
    if out:
        med = medians(ratings)
        d = {"rater": "median", "group": "all"}
        for item in ITEMS:
            v = med.get(item.key)
            d[item.label] = "" if item.key not in med else ("NA" if v is None else f"{v:g}")
        out.append(d)
    return out
