"""Loaders for every supported input format, all-or-nothing.

Formats (detected from file name, header or keys):

* **case JSON** – one file per case ``{"target_specialty", "notes": {"1": text, ...}, "summary"}``; a single
  file or a folder of them. The case id is the file stem unless the file has ``case_id``.
* **tidy bundle** – tables ``cases``, ``notes``, ``summaries``, ``ratings`` (long form) as CSV or JSONL.
* **wide ratings CSV** – one row per summary x rater, one column per PDSQI-9 item, as exported by
  REDCap and similar survey tools; the column mapping (:class:`RatingsMapping`) is editable.
* **dialogue CSV** – ``encounter_id, dialogue, note``: the dialogue is the source, the note the summary.

:func:`load_paths` reads everything, validates it as one unit (cross references included) and either
returns a :class:`~engine.models.Dataset` or raises :class:`~engine.validation.DatasetInvalid` with a report
that names file, row and field of every problem. Nothing is written by this module.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from .models import Case, Dataset, Note, Rating, Summary
from .rubric import ITEM_KEYS, ValueError_, get_item, parse_value
from .validation import DatasetInvalid, Issue, ValidationReport

csv.field_size_limit(2**31 - 1)

TABLE_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # table: (required columns, optional columns)
    "cases": (("case_id", "target_specialty"), ()),
    "notes": (("case_id", "note_id", "text"), ("date", "note_type", "author_specialty")),
    "summaries": (("summary_id", "case_id", "text"), ("generator_model", "quality_group", "prompt_variant")),
    "ratings": (("summary_id", "rater_id", "item", "value"), ("rater_group",)),
}
DIALOGUE_COLUMNS = ("encounter_id", "dialogue", "note")
CASE_JSON_KEYS_REQUIRED = ("target_specialty", "notes")
CASE_JSON_KEYS_OPTIONAL = ("case_id", "summary", "summary_id", "summaries", "generator_model", "quality_group",
                           "prompt_variant")
SUMMARY_OBJ_KEYS = ("summary_id", "text", "generator_model", "quality_group", "prompt_variant")
NOTE_OBJ_KEYS = ("text", "date", "note_type", "author_specialty")
_ID_RE = re.compile(r"^[A-Za-z0-9_.:\-]+$")
# Columns that survey tools add and that carry no rating.
_SURVEY_META_RE = re.compile(r"^(redcap_.*|.*_complete|.*timestamp.*|record_id_dag|survey_.*)$", re.IGNORECASE)

_ITEM_ALIASES: dict[str, tuple[str, ...]] = {
    "cited": ("cited", "citation", "citations", "pdsqi_cited", "pdsqi_1"),
    "accurate": ("accurate", "accuracy", "pdsqi_accurate", "pdsqi_2"),
    "thorough": ("thorough", "thoroughness", "pdsqi_thorough", "pdsqi_3"),
    "useful": ("useful", "usefulness", "pdsqi_useful", "pdsqi_4"),
    "organized": ("organized", "organised", "organization", "pdsqi_organized", "pdsqi_5"),
    "comprehensible": ("comprehensible", "comprehension", "pdsqi_comprehensible", "pdsqi_6"),
    "succinct": ("succinct", "succinctness", "pdsqi_succinct", "pdsqi_7"),
    "abstraction": ("abstraction", "abstraction_needed", "need_abstraction", "pdsqi_abstraction", "pdsqi_8"),
    "synthesized": ("synthesized", "synthesised", "synthesis", "pdsqi_synthesized", "pdsqi_8b"),
    "stigmatizing_notes": ("stigmatizing_notes", "stigma_notes", "stigmatizing_note", "pdsqi_stigma_notes",
                           "pdsqi_9a"),
    "stigmatizing_summary": ("stigmatizing_summary", "stigma_summary", "pdsqi_stigma_summary", "pdsqi_9b"),
}
_SUMMARY_ALIASES = ("summary_id", "record_id", "record", "summary")
_RATER_ALIASES = ("rater_id", "rater", "evaluator", "reviewer", "redcap_data_access_group")
_GROUP_ALIASES = ("rater_group", "group", "seniority")


@dataclass
class RatingsMapping:
    """How the columns of a wide ratings CSV map to the data model. Editable by the user.

    ``items`` maps a PDSQI-9 item key to a column name; columns in ``ignore`` are skipped; any other
    column that is not survey metadata is reported as unknown.
    """

    summary_col: str = ""
    rater_col: str = ""
    rater_group_col: str = ""
    items: dict[str, str] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    default_rater_group: str = "unknown"

    @classmethod
    def guess(cls, header: Sequence[str]) -> "RatingsMapping":
        low = {h.strip().lower(): h for h in header}

        def pick(aliases: Iterable[str]) -> str:
            for a in aliases:
                if a in low:
                    return low[a]
            return ""

        items = {}
        for key, aliases in _ITEM_ALIASES.items():
            col = pick(aliases)
            if col:
                items[key] = col
        return cls(pick(_SUMMARY_ALIASES), pick(_RATER_ALIASES), pick(_GROUP_ALIASES), items)

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "RatingsMapping":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        unknown = set(data) - {"summary_col", "rater_col", "rater_group_col", "items", "ignore",
                               "default_rater_group"}
        if unknown:
            raise ValueError(f"{path}: unknown mapping keys {sorted(unknown)}")
        bad = set(data.get("items", {})) - set(ITEM_KEYS)
        if bad:
            raise ValueError(f"{path}: 'items' names unknown PDSQI-9 items {sorted(bad)}; known: {', '.join(ITEM_KEYS)}")
        return cls(**data)

    def merged_over(self, guess: "RatingsMapping") -> "RatingsMapping":
        """This mapping, with blanks filled from ``guess`` (an explicit mapping wins)."""
        return RatingsMapping(
            self.summary_col or guess.summary_col,
            self.rater_col or guess.rater_col,
            self.rater_group_col or guess.rater_group_col,
            {**guess.items, **self.items},
            list(self.ignore),
            self.default_rater_group if self.default_rater_group != "unknown" else guess.default_rater_group,
        )


@dataclass
class LoadOptions:
    mapping: Optional[RatingsMapping] = None
    default_specialty: str = "Unspecified"
    default_rater_group: str = "unknown"


# --------------------------------------------------------------------------- reading raw files


def _decode(path: Path, report: ValidationReport) -> Optional[str]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        report.add(Issue(str(path), f"cannot read file: {exc.strerror or exc}", hint="check the path and permissions"))
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        report.add(Issue(str(path), f"not valid UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                         line=line, hint="re-save the file as UTF-8 (e.g. 'iconv -f cp1252 -t utf-8')"))
        return None


@dataclass
class _Row:
    number: int  # 1-based data row
    line: int
    values: dict[str, object]


def _read_csv(path: Path, text: str, report: ValidationReport) -> Optional[tuple[list[str], list[_Row]]]:
    fname = str(path)
    if not text.strip():
        report.add(Issue(fname, "file is empty", hint="export the data again"))
        return None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except csv.Error as exc:
        report.add(Issue(fname, f"cannot parse the header: {exc}", line=1))
        return None
    header = [h.strip() for h in header]
    seen: set[str] = set()
    for h in header:
        if not h:
            report.add(Issue(fname, "a column has an empty name", row=None, line=1, hint="name every column"))
        elif h in seen:
            report.add(Issue(fname, f"column '{h}' appears twice", line=1, field=h, hint="keep one of them"))
        seen.add(h)
    rows: list[_Row] = []
    number = 0
    while True:
        start_line = reader.line_num + 1
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            report.add(Issue(fname, f"the file ends inside a quoted field or is malformed ({exc})",
                             row=number + 1, line=start_line,
                             hint="the file looks truncated or has an unbalanced quote; export it again"))
            return None
        if not rec or all(not c.strip() for c in rec):
            continue
        number += 1
        if len(rec) != len(header):
            report.add(Issue(fname, f"row has {len(rec)} fields but the header has {len(header)}",
                             row=number, line=start_line,
                             hint="the file may be truncated or a field has an unquoted comma; export it again"))
            continue
        rows.append(_Row(number, start_line, dict(zip(header, rec))))
    return header, rows


def _read_jsonl(path: Path, text: str, report: ValidationReport) -> Optional[tuple[list[str], list[_Row]]]:
    fname = str(path)
    rows: list[_Row] = []
    keys: list[str] = []
    number = 0
    ok = True
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        number += 1
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            report.add(Issue(fname, f"invalid JSON ({exc.msg} at column {exc.colno})", row=number, line=lineno,
                             hint="the line is cut off or malformed; export the file again"))
            ok = False
            continue
        if not isinstance(obj, dict):
            report.add(Issue(fname, "each line must be a JSON object", row=number, line=lineno))
            ok = False
            continue
        for k in obj:
            if k not in keys:
                keys.append(k)
        rows.append(_Row(number, lineno, obj))
    if number == 0:
        report.add(Issue(fname, "file is empty", hint="export the data again"))
        return None
    return (keys, rows) if ok else None


# --------------------------------------------------------------------------- helpers


def _str(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def _opt(v: object) -> Optional[str]:
    s = _str(v)
    return s or None


def _check_id(report: ValidationReport, fname: str, row: _Row | None, fld: str, value: str) -> bool:
    r = row.number if row else None
    ln = row.line if row else None
    if not value:
        report.add(Issue(fname, "an id is required", row=r, line=ln, field=fld, hint=f"fill in '{fld}'"))
        return False
    if not _ID_RE.match(value):
        report.add(Issue(fname, f"id {value!r} has characters other than letters, digits, '_', '-', '.', ':'",
                         row=r, line=ln, field=fld, hint="use a simple identifier"))
        return False
    return True


def _check_columns(report: ValidationReport, fname: str, header: Sequence[str], table: str) -> bool:
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
                         hint=f"allowed columns: {', '.join(required + optional)}; rename or remove the others"))
        ok = False
    return ok


def _detect_table(path: Path, header: Sequence[str]) -> Optional[str]:
    """Which table a CSV/JSONL file holds: by its columns first, then by its exact file name.

    Returns None for a wide ratings export (one column per item)."""
    cols = set(header)
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
    stem = path.stem.lower()
    if stem in TABLE_COLUMNS:
        if stem == "ratings" and RatingsMapping.guess(header).items:
            return None  # a wide export that happens to be called ratings.csv
        return stem  # a bundle table with missing columns: reported against that table
    return None


# --------------------------------------------------------------------------- format readers


class _Collector:
    """Accumulates parsed records with their origin, for duplicate and cross-reference checks."""

    def __init__(self) -> None:
        self.cases: dict[str, tuple[str, str, Optional[_Row]]] = {}  # case_id -> (specialty, file, row)
        self.notes: dict[tuple[str, str], tuple[Note, str, Optional[_Row]]] = {}
        self.note_order: list[tuple[str, str]] = []
        self.summaries: dict[str, tuple[Summary, str, Optional[_Row]]] = {}
        self.ratings: dict[tuple[str, str, str], tuple[Rating, str, Optional[_Row]]] = {}

    @staticmethod
    def _where(fname: str, row: Optional[_Row]) -> str:
        return f"{fname}" + (f" row {row.number}" if row else "")

    def add_case(self, report, fname, row, case_id, specialty) -> None:
        if case_id in self.cases:
            _, f0, r0 = self.cases[case_id]
            report.add(Issue(fname, f"duplicate case id {case_id!r} (first defined in {self._where(f0, r0)})",
                             row=row.number if row else None, line=row.line if row else None, field="case_id",
                             hint="give every case a unique id"))
            return
        self.cases[case_id] = (specialty, fname, row)

    def add_note(self, report, fname, row, case_id, note: Note) -> None:
        key = (case_id, note.note_id)
        if key in self.notes:
            _, f0, r0 = self.notes[key]
            report.add(Issue(fname, f"duplicate note id {note.note_id!r} in case {case_id!r} "
                                    f"(first defined in {self._where(f0, r0)})",
                             row=row.number if row else None, line=row.line if row else None, field="note_id",
                             hint="note ids must be unique within a case"))
            return
        self.notes[key] = (note, fname, row)
        self.note_order.append(key)

    def add_summary(self, report, fname, row, s: Summary) -> None:
        if s.summary_id in self.summaries:
            _, f0, r0 = self.summaries[s.summary_id]
            report.add(Issue(fname, f"duplicate summary id {s.summary_id!r} (first defined in {self._where(f0, r0)})",
                             row=row.number if row else None, line=row.line if row else None, field="summary_id",
                             hint="give every summary a unique id"))
            return
        self.summaries[s.summary_id] = (s, fname, row)

    def add_rating(self, report, fname, row, r: Rating) -> None:
        key = (r.summary_id, r.rater_id, r.item)
        if key in self.ratings:
            _, f0, r0 = self.ratings[key]
            report.add(Issue(fname, f"rater {r.rater_id!r} rated {r.item!r} of summary {r.summary_id!r} twice "
                                    f"(first in {self._where(f0, r0)})",
                             row=row.number if row else None, line=row.line if row else None, field="item",
                             hint="keep one rating per summary, rater and item"))
            return
        self.ratings[key] = (r, fname, row)


def _text_field(report, fname, row: Optional[_Row], fld: str, value: object, what: str) -> Optional[str]:
    if value is not None and not isinstance(value, str):
        report.add(Issue(fname, f"{what} must be text, got {type(value).__name__}", row=row.number if row else None,
                         line=row.line if row else None, field=fld))
        return None
    text = (value or "")
    if not text.strip():
        report.add(Issue(fname, f"{what} is empty", row=row.number if row else None, line=row.line if row else None,
                         field=fld, hint=f"provide the {what} or remove the record"))
        return None
    return text.strip("\n\r")


def _read_table(c: _Collector, report: ValidationReport, path: Path, table: str, header, rows: list[_Row],
                opts: LoadOptions) -> None:
    fname = str(path)
    if not _check_columns(report, fname, header, table):
        return
    for row in rows:
        v = row.values
        rn, ln = row.number, row.line
        if table == "cases":
            cid = _str(v.get("case_id"))
            spec = _str(v.get("target_specialty"))
            if not _check_id(report, fname, row, "case_id", cid):
                continue
            if not spec:
                report.add(Issue(fname, "target specialty is empty", row=rn, line=ln, field="target_specialty",
                                 hint="name the specialty the summary is written for, e.g. 'Cardiology'"))
                continue
            c.add_case(report, fname, row, cid, spec)
        elif table == "notes":
            cid, nid = _str(v.get("case_id")), _str(v.get("note_id"))
            if not (_check_id(report, fname, row, "case_id", cid) & _check_id(report, fname, row, "note_id", nid)):
                continue
            text = _text_field(report, fname, row, "text", v.get("text"), "note text")
            if text is None:
                continue
            c.add_note(report, fname, row, cid, Note(nid, text, _opt(v.get("date")), _opt(v.get("note_type")),
                                                     _opt(v.get("author_specialty"))))
        elif table == "summaries":
            sid, cid = _str(v.get("summary_id")), _str(v.get("case_id"))
            if not (_check_id(report, fname, row, "summary_id", sid) & _check_id(report, fname, row, "case_id", cid)):
                continue
            text = _text_field(report, fname, row, "text", v.get("text"), "summary text")
            if text is None:
                continue
            c.add_summary(report, fname, row, Summary(sid, cid, text, _opt(v.get("generator_model")),
                                                      _opt(v.get("quality_group")), _opt(v.get("prompt_variant"))))
        elif table == "ratings":
            sid, rid = _str(v.get("summary_id")), _str(v.get("rater_id"))
            item_key = _str(v.get("item"))
            if not (_check_id(report, fname, row, "summary_id", sid) & _check_id(report, fname, row, "rater_id", rid)):
                continue
            try:
                item = get_item(item_key)
            except KeyError as exc:
                report.add(Issue(fname, str(exc.args[0]), row=rn, line=ln, field="item",
                                 hint="use one of the PDSQI-9 item keys"))
                continue
            raw = v.get("value")
            if isinstance(raw, str) and not raw.strip():
                raw = None
            try:
                value = parse_value(item, raw)
            except ValueError_ as exc:
                report.add(Issue(fname, str(exc), row=rn, line=ln, field="value",
                                 hint="correct the score or remove the row (a missing rating is simply absent)"))
                continue
            group = _str(v.get("rater_group")).lower() or opts.default_rater_group
            c.add_rating(report, fname, row, Rating(sid, rid, item.key, value, group))


def _read_dialogue(c: _Collector, report: ValidationReport, path: Path, header, rows: list[_Row],
                   opts: LoadOptions) -> None:
    fname = str(path)
    unknown = [h for h in header if h not in DIALOGUE_COLUMNS]
    if unknown:
        report.add(Issue(fname, f"unknown column(s) {', '.join(unknown)} in a dialogue CSV", line=1, field=unknown[0],
                         hint="a dialogue CSV has exactly the columns encounter_id, dialogue, note"))
        return
    for row in rows:
        eid = _str(row.values.get("encounter_id"))
        if not _check_id(report, fname, row, "encounter_id", eid):
            continue
        dialogue = _text_field(report, fname, row, "dialogue", row.values.get("dialogue"), "dialogue")
        note = _text_field(report, fname, row, "note", row.values.get("note"), "note (the summary)")
        if dialogue is None or note is None:
            continue
        c.add_case(report, fname, row, eid, opts.default_specialty)
        c.add_note(report, fname, row, eid, Note("1", dialogue, note_type="Dialogue transcript"))
        c.add_summary(report, fname, row, Summary(eid, eid, note))


def _read_wide_ratings(c: _Collector, report: ValidationReport, path: Path, header, rows: list[_Row],
                       opts: LoadOptions) -> None:
    fname = str(path)
    guess = RatingsMapping.guess(header)
    mapping = opts.mapping.merged_over(guess) if opts.mapping else guess
    problems = False
    for attr, what in (("summary_col", "summary id"), ("rater_col", "rater id")):
        col = getattr(mapping, attr)
        if not col:
            report.add(Issue(fname, f"no column holds the {what}", line=1,
                             hint=f"set '{attr}' in the column mapping (columns are: {', '.join(header)})"))
            problems = True
        elif col not in header:
            report.add(Issue(fname, f"mapped column '{col}' for the {what} is not in the file", line=1, field=col,
                             hint="correct the column mapping"))
            problems = True
    for key, col in mapping.items.items():
        if col not in header:
            report.add(Issue(fname, f"mapped column '{col}' for item '{key}' is not in the file", line=1, field=col,
                             hint="correct the column mapping"))
            problems = True
    if not mapping.items:
        report.add(Issue(fname, "no column maps to a PDSQI-9 item", line=1,
                         hint=f"map columns to items ({', '.join(ITEM_KEYS)}) in the column mapping"))
        problems = True
    used = {mapping.summary_col, mapping.rater_col, mapping.rater_group_col, *mapping.items.values(), *mapping.ignore}
    unknown = [h for h in header if h and h not in used and not _SURVEY_META_RE.match(h)]
    if unknown:
        report.add(Issue(fname, f"unknown column(s) {', '.join(unknown)}", line=1, field=unknown[0],
                         hint="map each to a PDSQI-9 item, or add it to 'ignore' in the column mapping"))
        problems = True
    if problems:
        return
    abstraction_col = mapping.items.get("abstraction")
    for row in rows:
        v = row.values
        sid, rid = _str(v.get(mapping.summary_col)), _str(v.get(mapping.rater_col))
        if not (_check_id(report, fname, row, mapping.summary_col, sid)
                & _check_id(report, fname, row, mapping.rater_col, rid)):
            continue
        group = (_str(v.get(mapping.rater_group_col)) if mapping.rater_group_col else "").lower()
        if not group:
            group = mapping.default_rater_group if mapping.default_rater_group != "unknown" \
                else opts.default_rater_group
        abstraction_no = False
        if abstraction_col:
            try:
                abstraction_no = parse_value(get_item("abstraction"), _str(v.get(abstraction_col)) or "1") == 0.0
            except ValueError_:
                pass
        for key, col in mapping.items.items():
            item = get_item(key)
            raw = _str(v.get(col))
            if not raw:
                if item.allows_na and abstraction_no:
                    c.add_rating(report, fname, row, Rating(sid, rid, key, None, group))
                continue  # blank = not rated
            try:
                value = parse_value(item, raw)
            except ValueError_ as exc:
                report.add(Issue(fname, str(exc), row=row.number, line=row.line, field=col,
                                 hint="correct the score, or leave the cell blank if it was not rated"))
                continue
            c.add_rating(report, fname, row, Rating(sid, rid, key, value, group))


def _read_case_json(c: _Collector, report: ValidationReport, path: Path, text: str) -> None:
    fname = str(path)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        report.add(Issue(fname, f"invalid JSON ({exc.msg})", line=exc.lineno,
                         hint="the file is cut off or malformed; export it again"))
        return
    if not isinstance(obj, dict):
        report.add(Issue(fname, "a case file must hold one JSON object",
                         hint='expected {"target_specialty": ..., "notes": {"1": ...}, "summary": ...}'))
        return
    missing = [k for k in CASE_JSON_KEYS_REQUIRED if k not in obj]
    if "summary" not in obj and "summaries" not in obj:
        missing.append("summary")
    for k in missing:
        report.add(Issue(fname, f"missing key '{k}'", field=k,
                         hint='a case file looks like {"target_specialty": ..., "notes": {"1": text}, "summary": text}'))
    unknown = [k for k in obj if k not in CASE_JSON_KEYS_REQUIRED + CASE_JSON_KEYS_OPTIONAL]
    if unknown:
        report.add(Issue(fname, f"unknown key(s) {', '.join(unknown)}", field=unknown[0],
                         hint=f"allowed keys: {', '.join(CASE_JSON_KEYS_REQUIRED + CASE_JSON_KEYS_OPTIONAL)}"))
    if missing or unknown:
        return
    cid = _str(obj.get("case_id")) or path.stem
    if not _check_id(report, fname, None, "case_id", cid):
        return
    spec = obj["target_specialty"]
    if not isinstance(spec, str) or not spec.strip():
        report.add(Issue(fname, "target specialty is empty", field="target_specialty",
                         hint="name the specialty the summary is written for"))
        return
    c.add_case(report, fname, None, cid, spec.strip())
    notes = obj["notes"]
    entries: list[tuple[str, object]]
    if isinstance(notes, dict):
        entries = [(str(k), v) for k, v in notes.items()]
    elif isinstance(notes, list):
        entries = [(_str(n.get("note_id")) if isinstance(n, dict) and n.get("note_id") is not None else str(i + 1), n)
                   for i, n in enumerate(notes)]
    else:
        report.add(Issue(fname, "'notes' must be an object {note_id: text} or a list", field="notes"))
        return
    if not entries:
        report.add(Issue(fname, "the case has no notes", field="notes", hint="add at least one source note"))
    for nid, val in entries:
        fld = f"notes.{nid}"
        if not _check_id(report, fname, None, fld, nid):
            continue
        meta: dict = {}
        if isinstance(val, dict):
            bad = [k for k in val if k not in NOTE_OBJ_KEYS + ("note_id",)]
            if bad:
                report.add(Issue(fname, f"unknown key(s) {', '.join(bad)} in note {nid}", field=fld,
                                 hint=f"allowed: {', '.join(NOTE_OBJ_KEYS)}"))
                continue
            meta, val = val, val.get("text")
        text = _text_field(report, fname, None, fld, val, f"note {nid} text")
        if text is None:
            continue
        c.add_note(report, fname, None, cid, Note(nid, text, _opt(meta.get("date")), _opt(meta.get("note_type")),
                                                  _opt(meta.get("author_specialty"))))
    if "summaries" in obj:
        summ = obj["summaries"]
        if not isinstance(summ, list):
            report.add(Issue(fname, "'summaries' must be a list", field="summaries"))
            return
        for i, s in enumerate(summ):
            fld = f"summaries[{i}]"
            if not isinstance(s, dict):
                report.add(Issue(fname, "each summary must be an object with 'text'", field=fld))
                continue
            bad = [k for k in s if k not in SUMMARY_OBJ_KEYS]
            if bad:
                report.add(Issue(fname, f"unknown key(s) {', '.join(bad)}", field=fld,
                                 hint=f"allowed: {', '.join(SUMMARY_OBJ_KEYS)}"))
                continue
            sid = _str(s.get("summary_id")) or f"{cid}-s{i + 1}"
            text = _text_field(report, fname, None, fld + ".text", s.get("text"), "summary text")
            if text is not None and _check_id(report, fname, None, fld + ".summary_id", sid):
                c.add_summary(report, fname, None, Summary(sid, cid, text, _opt(s.get("generator_model")),
                                                           _opt(s.get("quality_group")), _opt(s.get("prompt_variant"))))
    if "summary" in obj:
        sid = _str(obj.get("summary_id")) or cid
        text = _text_field(report, fname, None, "summary", obj.get("summary"), "summary text")
        if text is not None and _check_id(report, fname, None, "summary_id", sid):
            c.add_summary(report, fname, None, Summary(sid, cid, text, _opt(obj.get("generator_model")),
                                                       _opt(obj.get("quality_group")), _opt(obj.get("prompt_variant"))))


# --------------------------------------------------------------------------- entry points


def _expand(paths: Sequence[str | os.PathLike], report: ValidationReport) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(f for f in path.iterdir() if f.is_file() and f.suffix.lower() in (".csv", ".jsonl", ".json"))
            if not found:
                report.add(Issue(str(path), "folder holds no .csv, .jsonl or .json file",
                                 hint="point to the folder with the case files or the bundle tables"))
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            report.add(Issue(str(path), "no such file or folder", hint="check the path"))
    return files


def load_paths(paths: Sequence[str | os.PathLike], options: Optional[LoadOptions] = None,
               context: Optional[Dataset] = None, name: Optional[str] = None) -> tuple[Dataset, ValidationReport]:
    """Read and validate ``paths`` as one unit.

    ``context`` is an existing dataset that the new records may refer to (e.g. a ratings file imported
    into a dataset that already holds the summaries). Returns the new records as a :class:`Dataset`
    and the report; raises :class:`DatasetInvalid` when any error was found.
    """
    opts = options or LoadOptions()
    report = ValidationReport()
    c = _Collector()
    for path in _expand(paths, report):
        fname = str(path)
        report.files.append(fname)
        text = _decode(path, report)
        if text is None:
            continue
        suffix = path.suffix.lower()
        if suffix == ".json":
            report.formats[fname] = "case JSON"
            _read_case_json(c, report, path, text)
            continue
        parsed = _read_jsonl(path, text, report) if suffix == ".jsonl" else _read_csv(path, text, report)
        if parsed is None:
            continue
        header, rows = parsed
        table = _detect_table(path, header)
        if table == "dialogue":
            report.formats[fname] = "dialogue CSV"
            _read_dialogue(c, report, path, header, rows, opts)
        elif table is not None:
            report.formats[fname] = f"bundle table '{table}'"
            _read_table(c, report, path, table, header, rows, opts)
        elif suffix == ".csv":
            report.formats[fname] = "wide ratings CSV"
            _read_wide_ratings(c, report, path, header, rows, opts)
        else:
            report.add(Issue(fname, "cannot tell which table this JSONL file holds", line=1,
                             hint="name it cases/notes/summaries/ratings.jsonl"))
    ds = _assemble(c, report, context, name or _default_name(paths))
    report.counts = {"cases": len(ds.cases), "notes": sum(len(k.notes) for k in ds.cases),
                     "summaries": len(ds.summaries), "ratings": len(ds.ratings)}
    if not report.ok:
        raise DatasetInvalid(report)
    return ds, report


def sniff_wide_ratings(path: str | os.PathLike) -> Optional[tuple[list[str], RatingsMapping]]:
    """If ``path`` is a CSV that would be read as a wide ratings export, return its header and the guessed
    column mapping (for the user to edit); otherwise None."""
    p = Path(path)
    if p.suffix.lower() != ".csv":
        return None
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            header = [h.strip() for h in next(csv.reader(fh), [])]
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not header or _detect_table(p, header) is not None:
        return None
    return header, RatingsMapping.guess(header)


def _default_name(paths: Sequence[str | os.PathLike]) -> str:
    if not paths:
        return "dataset"
    p = Path(paths[0])
    return p.stem if p.is_file() else p.name or "dataset"


def _assemble(c: _Collector, report: ValidationReport, context: Optional[Dataset], name: str) -> Dataset:
    ctx_cases = {k.case_id for k in context.cases} if context else set()
    ctx_summaries = {s.summary_id for s in context.summaries} if context else set()
    ctx_ratings = {(r.summary_id, r.rater_id, r.item) for r in context.ratings} if context else set()
    for cid, (_, f, row) in c.cases.items():
        if cid in ctx_cases:
            report.add(Issue(f, f"case {cid!r} already exists in dataset {context.name!r}",
                             row=row.number if row else None, field="case_id",
                             hint="import into a new dataset, or replace the dataset"))
    for (cid, nid), (_, f, row) in c.notes.items():
        if cid not in c.cases:
            report.add(Issue(f, f"note {nid!r} belongs to unknown case {cid!r}", row=row.number if row else None,
                             line=row.line if row else None, field="case_id",
                             hint="add the case to the cases table or correct the case id"))
    for cid, (_, f, row) in c.cases.items():
        if not any(k[0] == cid for k in c.notes):
            report.add(Issue(f, f"case {cid!r} has no notes", row=row.number if row else None, field="case_id",
                             hint="add its source notes"))
    for sid, (s, f, row) in c.summaries.items():
        if sid in ctx_summaries:
            report.add(Issue(f, f"summary {sid!r} already exists in dataset {context.name!r}",
                             row=row.number if row else None, field="summary_id"))
        if s.case_id not in c.cases and s.case_id not in ctx_cases:
            report.add(Issue(f, f"summary {sid!r} refers to unknown case {s.case_id!r}",
                             row=row.number if row else None, line=row.line if row else None, field="case_id",
                             hint="add the case or correct the case id"))
    for key, (r, f, row) in c.ratings.items():
        if r.summary_id not in c.summaries and r.summary_id not in ctx_summaries:
            report.add(Issue(f, f"rating for unknown summary {r.summary_id!r}", row=row.number if row else None,
                             line=row.line if row else None, field="summary_id",
                             hint="import the summaries first, or correct the summary id"))
        elif key in ctx_ratings:
            report.add(Issue(f, f"rater {r.rater_id!r} already rated {r.item!r} of {r.summary_id!r} in this dataset",
                             row=row.number if row else None, field="item"))
    cases = []
    for cid, (spec, _, _) in c.cases.items():
        notes = tuple(c.notes[k][0] for k in c.note_order if k[0] == cid)
        cases.append(Case(cid, spec, notes))
    return Dataset(name=name, cases=cases, summaries=[v[0] for v in c.summaries.values()],
                   ratings=[v[0] for v in c.ratings.values()])
