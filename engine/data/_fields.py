"""Checking one field of an input row: ids, optional texts, rater ids and groups, column sets, table detection and
rating values, each problem reported with its file, row and field.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Optional, Sequence

from engine.core import DATE_CONVENTION, ValueError_, parse_note_date, parse_value, reserved_rater_problem
from engine.data.files import InputRow
from engine.data.mapping import DIALOGUE_COLUMNS, RatingsMapping, TABLE_COLUMNS, ID_RE, dialogue_roles
from engine.data.strict_json import short_text, json_type
from engine.data.validation import Issue, ValidationReport


MAX_ID_CHARS = 200


def as_text(v: object) -> str:
    """Text of a CSV cell or a trusted scalar (callers that may see any JSON value use :func:`scalar_field`)."""
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def _opt(v: object) -> Optional[str]:
    s = as_text(v)
    return s or None


def scalar_field(report: ValidationReport, fname: str, row: Optional[InputRow], fld: str, v: object) -> Optional[str]:
    """The text of a field that may hold any JSON value: text, or a plain number (an id written as 7). Anything
    else (true/false, a list, an object, NaN, a huge number) is an issue naming the field, and None."""
    if type(v) is str:  # the common case first (every CSV cell)
        return v.strip()
    if v is None:
        return ""
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 10 ** 18:
        return str(v)
    if isinstance(v, float) and math.isfinite(v) and abs(v) < 1e18:
        return str(int(v)) if v.is_integer() else repr(v)
    report.add(Issue(fname, f"'{fld}' must be text, not {json_type(v)}", row=row.number if row else None,
                     line=row.line if row else None, field=fld, hint=f"write '{fld}' as text"))
    return None


REFUSED_VALUE = object()  # an optional field whose value was refused (the issue is in the report)


def opt_text(report: ValidationReport, fname: str, row: Optional[InputRow], fld: str, v: object):
    s = scalar_field(report, fname, row, fld, v)
    if s is None:
        return REFUSED_VALUE
    return s or None


def date_field(report: ValidationReport, fname: str, row: Optional[InputRow], fld: str, v: object):
    """An optional note date: its text when empty or readable (engine.core.dates), else an issue naming the field
    and :data:`REFUSED_VALUE` (a date is never guessed)."""
    s = opt_text(report, fname, row, fld, v)
    if s is None or s is REFUSED_VALUE:
        return s
    parsed = parse_note_date(s)
    if parsed.iso is None:
        report.add(Issue(fname, f"date {short_text(s)!r} cannot be read: {parsed.problem}", row=row.number if row else None,
                         line=row.line if row else None, field=fld,
                         hint=f"write it as YYYY-MM-DD (or with a time); {DATE_CONVENTION}"))
        return REFUSED_VALUE
    return s


def check_id(report: ValidationReport, fname: str, row: InputRow | None, fld: str, value: Optional[str]) -> bool:
    if value is None:  # already reported by scalar_field
        return False
    r = row.number if row else None
    ln = row.line if row else None
    if not value:
        report.add(Issue(fname, "an id is required", row=r, line=ln, field=fld, hint=f"fill in '{fld}'"))
        return False
    if len(value) > MAX_ID_CHARS:
        report.add(Issue(fname, f"id {short_text(value)!r} is {len(value):,} characters long (at most {MAX_ID_CHARS})",
                         row=r, line=ln, field=fld, hint="use a short identifier"))
        return False
    if not ID_RE.fullmatch(value):
        report.add(Issue(fname, f"id {short_text(value)!r} has characters other than letters, digits, '_', '-', '.', ':'",
                         row=r, line=ln, field=fld, hint="use a simple identifier"))
        return False
    return True


_RATER_OK: dict[tuple[str, str], bool] = {}


def check_rater(report: ValidationReport, fname: str, row: Optional[InputRow], rater_id: str, group: str,
                 id_field: str, group_field: str) -> bool:
    """Refuse a rating that claims a rater id or group SumCheck reserves for itself (LLM judge, adjudication)."""
    if _RATER_OK.get((rater_id, group)):
        return True
    problem = reserved_rater_problem(rater_id, group)
    if problem is None:
        if len(_RATER_OK) < 10_000:
            _RATER_OK[(rater_id, group)] = True
        return True
    fld, message = problem
    report.add(Issue(fname, message, row=row.number if row else None, line=row.line if row else None,
                     field=id_field if fld == "rater_id" else group_field,
                     hint="imported ratings are human ratings: use the rater's own id and group (e.g. junior, "
                          "senior); adjudicated scores are entered on the Spot-check page"))
    return False


def check_columns(report: ValidationReport, fname: str, header: Sequence[str], table: str) -> bool:
    required, optional = TABLE_COLUMNS[table]
    ok = True
    missing = [c for c in required if c not in header]
    if missing:
        report.add(Issue(fname, f"missing column(s) {', '.join(missing)} for the {table} table", line=1,
                         field=missing[0], hint=f"a {table} table needs columns {', '.join(required)}"))
        ok = False
    unknown = [c for c in header if c and c not in required and c not in optional]
    if unknown:
        report.add(Issue(fname, f"unknown column(s) {', '.join(unknown)} in the {table} table", line=1,
                         field=unknown[0],
                         hint=f"allowed columns: {', '.join(required + optional)}; ignore the others in the column "
                              f'mapping (Data page, or --mapping with {{"ignore": {json.dumps(unknown[:3])}}}) or '
                              'rename them ({"rename": {"old name": "expected name"}})'))
        ok = False
    return ok


def detect_table(path: Path, header: Sequence[str]) -> Optional[str]:
    """Which table a CSV/JSONL file holds: by its columns first, then by its exact file name.

    Returns None for a wide ratings export (one column per item)."""
    cols = set(header)
    if {"note_id", "subject_id", "hadm_id", "charttime", "text"} <= cols:
        return "mimic"
    if "text" in cols and cols & {"hadm_id", "encounter_id", "patient_id", "subject_id"} \
            and not cols & {"note_id", "case_id"}:
        return "keyed_summaries"
    if set(DIALOGUE_COLUMNS) <= cols:
        return "dialogue"
    if {"item", "value"} <= cols:
        return "ratings"
    if {"summary_id", "text"} <= cols:
        return "summaries"
    if {"note_id", "text"} <= cols:
        return "notes"
    if {"case_id", "target_specialty"} <= cols and "text" not in cols:
        return "cases"
    roles = dialogue_roles(header)
    if len(roles) >= 2 and {"dialogue", "note"} & set(roles) and not RatingsMapping.guess(header).items:
        return "dialogue"  # a dialogue CSV with a column missing or named otherwise: reported with the fix
    stem = path.stem.lower()
    if stem in TABLE_COLUMNS:
        if stem == "ratings" and RatingsMapping.guess(header).items:
            return None  # a wide export that happens to be called ratings.csv
        return stem  # a bundle table with missing columns: reported against that table
    return None


def table_reason(path: Path, header: Sequence[str], table: Optional[str]) -> str:
    """Why :func:`detect_table` read ``header`` as ``table`` (None: a wide ratings export), for the import report."""
    cols = set(header)
    if table == "dialogue":
        roles = dialogue_roles(header)
        missing = [r for r in DIALOGUE_COLUMNS if r not in roles]
        return ("columns " + ", ".join(roles[r] for r in DIALOGUE_COLUMNS if r in roles)
                + (f"; no column for {', '.join(missing)}" if missing else ""))
    if table == "mimic":
        return "columns note_id, subject_id, hadm_id, charttime, text"
    if table == "keyed_summaries":
        return "columns text, " + ", ".join(sorted(cols & {"hadm_id", "encounter_id", "patient_id", "subject_id"}))
    if table is not None:
        need = set(TABLE_COLUMNS[table][0])
        if path.stem.lower() == table and not need <= cols:
            return f"file name {path.name}"
        return "columns " + ", ".join(c for c in TABLE_COLUMNS[table][0] if c in cols)
    items = RatingsMapping.guess(header).items
    return (f"{len(items)} column(s) name PDSQI-9 items" if items
            else "no other format matches its columns")


def text_field(report, fname, row: Optional[InputRow], fld: str, value: object, what: str) -> Optional[str]:
    if value is not None and not isinstance(value, str):
        report.add(Issue(fname, f"{what} must be text, not {json_type(value)}", row=row.number if row else None,
                         line=row.line if row else None, field=fld, hint=f"write the {what} as text"))
        return None
    text = (value or "")
    if not text.strip():
        report.add(Issue(fname, f"{what} is empty", row=row.number if row else None, line=row.line if row else None,
                         field=fld, hint=f"provide the {what} or remove the record"))
        return None
    return text.strip("\n\r")


_VALUES: dict[tuple[str, str], Optional[float]] = {}  # (item, text) -> parsed value, for text that parsed


def rating_value(report: ValidationReport, fname: str, row: InputRow, fld: str, item, raw: object):
    """A rating value, or REFUSED_VALUE with an issue naming the field. A JSON true/false is refused for every item."""
    if type(raw) is str:
        hit = _VALUES.get((item.key, raw), REFUSED_VALUE)
        if hit is not REFUSED_VALUE:
            return hit
        try:
            value = parse_value(item, raw)
        except ValueError_ as exc:
            report.add(Issue(fname, str(exc), row=row.number, line=row.line, field=fld,
                             hint="correct the score or remove the row (a missing rating is simply absent)"))
            return REFUSED_VALUE
        if len(_VALUES) < 1_000:
            _VALUES[(item.key, raw)] = value
        return value
    if isinstance(raw, bool):
        report.add(Issue(fname, f"{item.label}: {str(raw).lower()} (a JSON true/false) is not a rating value",
                         row=row.number, line=row.line, field=fld,
                         hint='write 1-5, or "yes"/"no" (1/0) for yes/no items, or "NA"'))
        return REFUSED_VALUE
    try:
        return parse_value(item, raw)
    except ValueError_ as exc:
        report.add(Issue(fname, str(exc), row=row.number, line=row.line, field=fld,
                         hint="correct the score or remove the row (a missing rating is simply absent)"))
        return REFUSED_VALUE


_INT_FLOAT = re.compile(r"^(\d+)\.0+$")


# How exports spell a missing value (compared without case and surrounding spaces): pandas writes "nan".
MISSING = frozenset({"", "nan", "null", "none", "na", "n/a", "<na>", "nat", "#n/a"})


def is_missing(value: object) -> bool:
    """Whether a text field's value is empty or spelled as missing (:data:`MISSING`)."""
    return isinstance(value, str) and value.strip().lower() in MISSING


def plain_id(v: str | None) -> str | None:
    """An id as exports write it; "28323445.0" (a spreadsheet's or pandas' float) is read as "28323445"."""
    if v is None:
        return None
    m = _INT_FLOAT.match(v)
    return m.group(1) if m else v
