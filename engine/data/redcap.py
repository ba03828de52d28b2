"""REDCap round trip: the team's spot-check ratings as a REDCap import file with its data dictionary.

:func:`export_redcap` writes two CSV texts:

* the **data dictionary**: one instrument, :data:`INSTRUMENT`, with ``record_id`` (the summary id), ``reviewer`` and
  one radio field per PDSQI-9 item (``pdsqi_<item>``: 1–5, yes = 1 / no = 0, Synthesized also ``NA``, shown only
  when abstraction is needed), in REDCap's 18-column dictionary layout;
* the **data file**: one row per summary × reviewer, as a repeating instrument (``redcap_repeat_instrument``,
  ``redcap_repeat_instance`` = the reviewer's number), the instrument's ``_complete`` field set to 2 (complete).

The data file is also a wide ratings file this program reads without a mapping (``record_id`` → summary,
``reviewer`` → rater, ``pdsqi_<item>`` → item, the ``redcap_`` and ``_complete`` columns ignored), so the team's
ratings come back in as they went out. Rater ids must be plain identifiers, so a reviewer's name is written as
:func:`rater_id` makes it ("Dr A" → ``Dr_A``). Every cell goes through the CSV formula guard.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from engine.core import ITEMS, Scale, untrusted
from engine.data.reviews import SPOT_CHECK, current_reviews
from engine.data.store import Store

INSTRUMENT = "pdsqi_review"
DICTIONARY_COLUMNS = ("Variable / Field Name", "Form Name", "Section Header", "Field Type", "Field Label",
                      "Choices, Calculations, OR Slider Labels", "Field Note",
                      "Text Validation Type OR Show Slider Number", "Text Validation Min", "Text Validation Max",
                      "Identifier?", "Branching Logic (Show field only if...)", "Required Field?",
                      "Custom Alignment", "Question Number (surveys only)", "Matrix Group Name", "Matrix Ranking?",
                      "Field Annotation")


@dataclass(frozen=True)
class RedcapExport:
    data_csv: str
    dictionary_csv: str
    records: int  # summaries with at least one reviewer's rating
    rows: int  # summary x reviewer instances


def field_name(item_key: str) -> str:
    return f"pdsqi_{item_key}"


def rater_id(reviewer: str) -> str:
    """A reviewer's name as a rater id the ratings loaders accept (letters, digits, '_', '-', '.', ':')."""
    return re.sub(r"[^A-Za-z0-9_.:\-]+", "_", reviewer.strip()).strip("_") or "reviewer"


def _choices(item) -> str:
    if item.scale is Scale.BINARY:
        return "1, Yes | 0, No"
    levels = " | ".join(f"{v}, {v}" for v in range(1, 6))
    return levels + (" | NA, Not applicable" if item.allows_na else "")


def dictionary_rows() -> list[list[str]]:
    blank = [""] * (len(DICTIONARY_COLUMNS) - 6)
    rows = [["record_id", INSTRUMENT, "", "text", "Summary ID", ""] + blank,
            ["reviewer", INSTRUMENT, "", "text", "Reviewer", ""] + blank]
    for it in ITEMS:
        row = [field_name(it.key), INSTRUMENT, "", "radio", it.label, _choices(it)] + blank
        if it.allows_na:  # shown only when abstraction is needed, like the rubric asks
            row[DICTIONARY_COLUMNS.index("Branching Logic (Show field only if...)")] = \
                f"[{field_name('abstraction')}] = '1'"
        rows.append(row)
    return rows


def _cell(item, value) -> str:
    if value is None:
        return "NA" if item.allows_na else ""
    return str(int(round(value)))


def export_redcap(store: Store, dataset: str) -> RedcapExport:
    """The dataset's current spot-check reviews as a REDCap data file and its data dictionary (see module doc)."""
    by: dict[tuple[str, str], dict[str, object]] = {}
    for r in current_reviews(store, dataset):
        if r.kind == SPOT_CHECK:
            by.setdefault((r.summary_id, r.reviewer), {})[r.item] = r.value
    header = ["record_id", "redcap_repeat_instrument", "redcap_repeat_instance", "reviewer"] + \
             [field_name(it.key) for it in ITEMS] + [f"{INSTRUMENT}_complete"]
    rows, instance = [], {}
    for (sid, reviewer) in sorted(by):
        instance[sid] = instance.get(sid, 0) + 1
        values = by[(sid, reviewer)]
        rows.append([sid, INSTRUMENT, instance[sid], rater_id(reviewer)]
                    + [_cell(it, values[it.key]) if it.key in values else "" for it in ITEMS] + [2])
    return RedcapExport(untrusted.csv_text(rows, header),
                        untrusted.csv_text(dictionary_rows(), list(DICTIONARY_COLUMNS)), len(instance), len(rows))
