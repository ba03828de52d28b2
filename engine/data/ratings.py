"""Ratings helpers: per-rater score rows and per-item medians (NA-aware).

The human reference for an item of a summary is the median of the imported rater panel (with the clinicians'
spot checks only when the caller asks for them), **unless** an adjudicated final score exists for that item: then
the adjudicated score *is* the reference. It replaces the median; it is never counted as one more rater. The LLM judge is never a human rater.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional

from engine.core import (ADJUDICATED_GROUP, ITEMS, ITEM_KEYS, Item, RESERVED_RATER_GROUPS, Rating, SPOT_CHECK_GROUP,
                         Scale, format_aggregate, format_value)


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
    with a tie counted as 0.5 (shown as a share of yes, see :func:`engine.core.rubric.format_aggregate`)."""
    vals = [v for v in values if v is not None]
    return float(statistics.median(vals)) if vals else None


def human_values(ratings: Iterable[Rating], spot_checks: bool = False) -> dict[str, list[Optional[float]]]:
    """Per item, the values of the human raters: the imported panel, plus the clinicians' spot checks when
    ``spot_checks`` (the LLM judge and adjudicated final scores always left out)."""
    by_item: dict[str, list[Optional[float]]] = {}
    for r in ratings:
        if r.rater_group not in RESERVED_RATER_GROUPS or (spot_checks and r.rater_group == SPOT_CHECK_GROUP):
            by_item.setdefault(r.item, []).append(r.value)
    return by_item


def adjudicated_values(ratings: Iterable[Rating]) -> dict[str, Optional[float]]:
    """Per item, the adjudicated final score (None = adjudicated NA); items without one are absent."""
    return {r.item: r.value for r in ratings if r.rater_group == ADJUDICATED_GROUP}


def medians(ratings: Iterable[Rating], spot_checks: bool = False) -> dict[str, Optional[float]]:
    """Per item, the human reference of one summary: the adjudicated final score where there is one, otherwise
    the median of the rater panel (with the spot checks when ``spot_checks``). Items nobody rated are absent."""
    ratings = list(ratings)
    out = {k: item_median(v) for k, v in human_values(ratings, spot_checks).items() if v}
    out.update(adjudicated_values(ratings))
    pos = {k: i for i, k in enumerate(ITEM_KEYS)}
    return dict(sorted(out.items(), key=lambda kv: pos.get(kv[0], 99)))


def reference_cell(item: Item, ratings: Iterable[Rating]) -> str:
    """The human reference of one item of one summary, as shown: the adjudicated score marked "(adjudicated)",
    or the raters' median (a share of yes for yes/no items); blank when nobody rated it."""
    ratings = [r for r in ratings if r.item == item.key]
    adjudicated = adjudicated_values(ratings)
    if item.key in adjudicated:
        return f"{format_value(item, adjudicated[item.key])} (adjudicated)"
    return format_aggregate(item, human_values(ratings).get(item.key, []))


def judge_cell(item: Item, score) -> str:
    """One item of an LLM judge result (an ``engine.judge.runner.ItemScore``, or None), as shown: the median of the
    samples for 1-5 items, the share of yes over the samples for yes/no items; blank = not scored."""
    if score is None:
        return ""
    if item.scale is Scale.BINARY and any(v is not None for v in (score.values or [])):
        return format_aggregate(item, score.values)
    if score.is_na:
        return "NA"
    return "" if score.median is None else format_value(item, score.median)


MEDIAN_ROW = "median"


def display_table(ratings: Iterable[Rating]) -> list[dict[str, str]]:
    """Plain rows for a UI table: one per rater, then the reference row (the human raters' median, or the share
    of yes for yes/no items; an adjudicated final score replaces it, marked "(adjudicated)"). Blank = not rated.
    """
    ratings = list(ratings)
    out = []
    for row in rater_rows(ratings):
        d = {"rater": row.rater_id, "group": row.rater_group}
        for item in ITEMS:
            d[item.label] = format_value(item, row.values[item.key]) if item.key in row.values else ""
        out.append(d)
    if out:
        d = {"rater": MEDIAN_ROW, "group": "reference"}
        for item in ITEMS:
            d[item.label] = reference_cell(item, ratings)
        out.append(d)
    return out
