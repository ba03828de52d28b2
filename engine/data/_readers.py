"""The format readers: bundle tables, dialogue CSV, wide rating exports and case JSON, each feeding one collector
of cases, summaries and ratings.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from engine.core import ITEM_KEYS, Note, Rating, Summary, ValueError_, get_item, parse_value
from engine.data._fields import (REFUSED_VALUE, as_text, check_columns, check_id, check_rater, date_field, opt_text,
                                 rating_value, scalar_field, text_field)
from engine.data.files import InputRow
from engine.data.mapping import (CASE_JSON_KEYS_OPTIONAL, CASE_JSON_KEYS_REQUIRED, DIALOGUE_COLUMNS, LoadOptions,
                                 NOTE_OBJ_KEYS, RatingsMapping, SUMMARY_OBJ_KEYS, SURVEY_META_RE, dialogue_roles)
from engine.data.strict_json import JsonProblem, short_text, json_type, loads_strict
from engine.data.validation import Issue, ValidationReport


class Collector:
    """Accumulates parsed records with their origin, for duplicate and cross-reference checks.

    ``broken`` names tables ("cases", "notes", "summaries"; "*" = any) supplied by a file that failed as a whole,
    and ``rejected_cases`` / ``rejected_summaries`` ids whose own record failed: references to them are not
    reported again as "unknown" (one broken file must not bury the row errors of the others)."""

    def __init__(self) -> None:
        self.cases: dict[str, tuple[str, str, Optional[InputRow]]] = {}  # case_id -> (specialty, file, row)
        self.notes: dict[tuple[str, str], tuple[Note, str, Optional[InputRow]]] = {}
        self.note_order: list[tuple[str, str]] = []
        self.summaries: dict[str, tuple[Summary, str, Optional[InputRow]]] = {}
        self.ratings: dict[tuple[str, str, str], tuple[Rating, str, Optional[InputRow]]] = {}
        self.broken: set[str] = set()
        self.rejected_cases: set[str] = set()
        self.rejected_summaries: set[str] = set()

    @staticmethod
    def _where(fname: str, row: Optional[InputRow]) -> str:
        return f"{fname}" + (f" row {row.number}" if row else "")

    def add_case(self, report, fname, row, case_id, specialty) -> None:
        if case_id in self.cases:
            _, f0, r0 = self.cases[case_id]
            report.add(Issue(fname, f"duplicate case id {case_id!r} (first defined in {self._where(f0, r0)})",
                             row=row.number if row else None, line=row.line if row else None, field="case_id",
                             hint="give every case a unique id"))
            return
        self.cases[case_id] = (specialty, fname, row)

    def _defined_before(self, table: dict, key, report, fname, row, what: str, first: str, field: str,
                        hint: str) -> bool:
        """True (with an issue naming where it was first defined) when ``table`` already holds ``key``."""
        if key not in table:
            return False
        _, f0, r0 = table[key]
        report.add(Issue(fname, f"{what} ({first} {self._where(f0, r0)})", row=row.number if row else None,
                         line=row.line if row else None, field=field, hint=hint))
        return True

    def add_note(self, report, fname, row, case_id, note: Note) -> None:
        key = (case_id, note.note_id)
        if self._defined_before(self.notes, key, report, fname, row,
                                f"duplicate note id {note.note_id!r} in case {case_id!r}", "first defined in",
                                "note_id", "note ids must be unique within a case"):
            return
        self.notes[key] = (note, fname, row)
        self.note_order.append(key)

    def add_summary(self, report, fname, row, s: Summary) -> None:
        if self._defined_before(self.summaries, s.summary_id, report, fname, row,
                                f"duplicate summary id {s.summary_id!r}", "first defined in", "summary_id",
                                "give every summary a unique id"):
            return
        self.summaries[s.summary_id] = (s, fname, row)

    def add_rating(self, report, fname, row, r: Rating) -> None:
        key = (r.summary_id, r.rater_id, r.item)
        if self._defined_before(self.ratings, key, report, fname, row,
                                f"rater {r.rater_id!r} rated {r.item!r} of summary {r.summary_id!r} twice",
                                "first in", "item", "keep one rating per summary, rater and item"):
            return
        self.ratings[key] = (r, fname, row)


def read_table(c: Collector, report: ValidationReport, path: Path, table: str, header, rows: list[InputRow],
                opts: LoadOptions) -> None:
    fname = str(path)
    if not check_columns(report, fname, header, table):
        c.broken.add(table)
        return
    valid_ids: set[str] = set()  # ids (already stripped) that passed check_id in this file
    for row in rows:
        if table == "cases":
            _case_row(c, report, fname, row)
        elif table == "notes":
            _note_row(c, report, fname, row)
        elif table == "summaries":
            _summary_row(c, report, fname, row)
        elif table == "ratings":
            _rating_row(c, report, fname, row, opts, valid_ids)


def _case_row(c: Collector, report: ValidationReport, fname: str, row: InputRow) -> None:
    """One row of the cases table; a case whose specialty is refused or empty is rejected."""
    v = row.values
    cid = scalar_field(report, fname, row, "case_id", v.get("case_id"))
    spec = scalar_field(report, fname, row, "target_specialty", v.get("target_specialty"))
    if not check_id(report, fname, row, "case_id", cid):
        return
    if spec is None:
        c.rejected_cases.add(cid)
        return
    if not spec:
        report.add(Issue(fname, "target specialty is empty", row=row.number, line=row.line, field="target_specialty",
                         hint="name the specialty the summary is written for, e.g. 'Cardiology'"))
        c.rejected_cases.add(cid)
        return
    c.add_case(report, fname, row, cid, spec)


def _note_row(c: Collector, report: ValidationReport, fname: str, row: InputRow) -> None:
    """One row of the notes table."""
    v = row.values
    cid = scalar_field(report, fname, row, "case_id", v.get("case_id"))
    nid = scalar_field(report, fname, row, "note_id", v.get("note_id"))
    if not (check_id(report, fname, row, "case_id", cid) & check_id(report, fname, row, "note_id", nid)):
        return
    text = text_field(report, fname, row, "text", v.get("text"), "note text")
    meta = [(date_field if k == "date" else opt_text)(report, fname, row, k, v.get(k))
            for k in ("date", "note_type", "author_specialty")]
    if text is None or REFUSED_VALUE in meta:
        return
    c.add_note(report, fname, row, cid, Note(nid, text, *meta))


def _summary_row(c: Collector, report: ValidationReport, fname: str, row: InputRow) -> None:
    """One row of the summaries table; a summary with a refused field is rejected."""
    v = row.values
    sid = scalar_field(report, fname, row, "summary_id", v.get("summary_id"))
    cid = scalar_field(report, fname, row, "case_id", v.get("case_id"))
    if not (check_id(report, fname, row, "summary_id", sid) & check_id(report, fname, row, "case_id", cid)):
        if sid:
            c.rejected_summaries.add(sid)
        return
    text = text_field(report, fname, row, "text", v.get("text"), "summary text")
    meta = [opt_text(report, fname, row, k, v.get(k))
            for k in ("generator_model", "quality_group", "prompt_variant")]
    if text is None or REFUSED_VALUE in meta:
        c.rejected_summaries.add(sid)
        return
    c.add_summary(report, fname, row, Summary(sid, cid, text, *meta))


def _rating_row(c: Collector, report: ValidationReport, fname: str, row: InputRow, opts: LoadOptions,
                valid_ids: set[str]) -> None:
    """One row of the ratings table. ``valid_ids``: ids of this file already seen valid (up to 100,000), whose
    rows skip the id checks."""
    v = row.values
    sid, rid = v.get("summary_id"), v.get("rater_id")
    item_key, group = v.get("item"), v.get("rater_group")
    if type(sid) is str and type(rid) is str and type(item_key) is str and type(group) in (str, type(None)) \
            and sid in valid_ids and rid in valid_ids:  # the common case: ids already seen valid
        item_key, group = item_key.strip(), (group or "").strip()
    else:
        sid = scalar_field(report, fname, row, "summary_id", sid)
        rid = scalar_field(report, fname, row, "rater_id", rid)
        item_key = scalar_field(report, fname, row, "item", item_key)
        group = scalar_field(report, fname, row, "rater_group", group)
        if not (check_id(report, fname, row, "summary_id", sid)
                & check_id(report, fname, row, "rater_id", rid)):
            return
        if len(valid_ids) < 100_000:
            valid_ids.update((sid, rid))
    if item_key is None or group is None:
        return
    try:
        item = get_item(item_key)
    except KeyError as exc:
        report.add(Issue(fname, short_text(str(exc.args[0]), 300), row=row.number, line=row.line, field="item",
                         hint="use one of the PDSQI-9 item keys"))
        return
    raw = v.get("value")
    if isinstance(raw, str) and not raw.strip():
        raw = None
    value = rating_value(report, fname, row, "value", item, raw)
    if value is REFUSED_VALUE:
        return
    group_field = "rater_group" if group else "rater_group (default)"
    group = group.lower() or opts.default_rater_group
    if not check_rater(report, fname, row, rid, group, "rater_id", group_field):
        return
    c.add_rating(report, fname, row, Rating(sid, rid, item.key, value, group))


def read_dialogue(c: Collector, report: ValidationReport, path: Path, header, rows: list[InputRow],
                   opts: LoadOptions) -> None:
    fname = str(path)
    roles = dialogue_roles(header)
    missing = [r for r in DIALOGUE_COLUMNS if r not in header]
    if missing:
        renames = {roles[r]: r for r in missing if r in roles}
        for role in missing:
            if role in roles:
                report.add(Issue(fname, f"missing column '{role}' (a column '{roles[role]}' is there)", line=1,
                                 field=roles[role],
                                 hint=f"rename it: Data page 'Columns of the other tables' ({roles[role]} -> {role}),"
                                      f" or --mapping with {json.dumps({'rename': renames})}"))
            else:
                report.add(Issue(fname, f"missing column '{role}'", line=1, field=role,
                                 hint="a dialogue CSV has the columns encounter_id, dialogue, note (the note is the "
                                      f"summary); add the '{role}' column or rename the one that holds it"))
        c.broken.update(("cases", "notes", "summaries"))
        return
    unknown = [h for h in header if h not in DIALOGUE_COLUMNS]
    if unknown:
        report.add(Issue(fname, f"unknown column(s) {', '.join(unknown)} in a dialogue CSV", line=1, field=unknown[0],
                         hint="a dialogue CSV has the columns encounter_id, dialogue, note; ignore the others in "
                              f"the column mapping (Data page 'Columns to ignore', or --mapping with "
                              f'{{"ignore": {json.dumps(unknown[:3])}}}) or rename them ({{"rename": '
                              '{"transcript": "dialogue"}})'))
        c.broken.update(("cases", "notes", "summaries"))
        return
    for row in rows:
        eid = scalar_field(report, fname, row, "encounter_id", row.values.get("encounter_id"))
        if not check_id(report, fname, row, "encounter_id", eid):
            continue
        dialogue = text_field(report, fname, row, "dialogue", row.values.get("dialogue"), "dialogue")
        note = text_field(report, fname, row, "note", row.values.get("note"), "note (the summary)")
        if dialogue is None or note is None:
            c.rejected_cases.add(eid)
            c.rejected_summaries.add(eid)
            continue
        c.add_case(report, fname, row, eid, opts.default_specialty)
        c.add_note(report, fname, row, eid, Note("1", dialogue, note_type="Dialogue transcript"))
        c.add_summary(report, fname, row, Summary(eid, eid, note))


def read_wide_ratings(c: Collector, report: ValidationReport, path: Path, header, rows: list[InputRow],
                       opts: LoadOptions) -> None:
    fname = str(path)
    guess = RatingsMapping.guess(header)
    mapping = opts.mapping.merged_over(guess) if opts.mapping else guess
    problems = False
    for fld, msg in mapping.problems():
        report.add(Issue(fname, f"column mapping: {msg}", line=1, field=fld, hint="correct the column mapping"))
        problems = True
    for attr, what in (("summary_col", "summary id"), ("rater_col", "rater id")):
        col = getattr(mapping, attr)
        if not col:
            report.add(Issue(fname, f"no column holds the {what}", line=1,
                             hint=f"choose the {what} column (on the Data page: the \"{what}\" row of the column "
                                  f"table; in a mapping file: '{attr}'); the columns are: "
                                  f"{short_text(', '.join(header), 500)}"))
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
    unknown = [h for h in header if h and h not in used and not SURVEY_META_RE.match(h)]
    if unknown:
        report.add(Issue(fname, f"unknown column(s) {short_text(', '.join(unknown), 500)}", line=1, field=unknown[0],
                         hint="map each to a PDSQI-9 item, or ignore it (on the Data page: \"Columns to ignore\"; "
                              "in a mapping file: 'ignore')"))
        problems = True
    default_group = (mapping.default_rater_group if mapping.default_rater_group != "unknown"
                     else opts.default_rater_group)
    if problems:
        return
    abstraction_col = mapping.items.get("abstraction")
    for row in rows:
        v = row.values
        sid, rid = as_text(v.get(mapping.summary_col)), as_text(v.get(mapping.rater_col))
        if not (check_id(report, fname, row, mapping.summary_col, sid)
                & check_id(report, fname, row, mapping.rater_col, rid)):
            continue
        group = (as_text(v.get(mapping.rater_group_col)) if mapping.rater_group_col else "").lower()
        group_field = mapping.rater_group_col if group else "rater_group (default)"
        group = group or default_group
        if not check_rater(report, fname, row, rid, group, mapping.rater_col, group_field):
            continue
        abstraction_no = False
        if abstraction_col:
            try:
                abstraction_no = parse_value(get_item("abstraction"), as_text(v.get(abstraction_col)) or "1") == 0.0
            except ValueError_:
                pass
        for key, col in mapping.items.items():
            item = get_item(key)
            raw = as_text(v.get(col))
            if not raw:
                if item.allows_na and abstraction_no:
                    c.add_rating(report, fname, row, Rating(sid, rid, key, None, group))
                continue  # blank = not rated
            value = rating_value(report, fname, row, col, item, raw)
            if value is REFUSED_VALUE:
                continue
            c.add_rating(report, fname, row, Rating(sid, rid, key, value, group))


def _case_json_ids(obj: object, stem: str) -> tuple[str, list[str]]:
    """The case id and summary ids a case file means to define, as far as they can be told (for suppressing
    follow-on "unknown case/summary" errors when the file itself is broken)."""
    if not isinstance(obj, dict):
        return stem, [stem]
    cid = obj.get("case_id") if isinstance(obj.get("case_id"), str) and obj.get("case_id").strip() else stem
    cid = cid.strip()
    sids = []
    if "summary" in obj or "summaries" not in obj:
        sid = obj.get("summary_id")
        sids.append(sid.strip() if isinstance(sid, str) and sid.strip() else cid)
    summ = obj.get("summaries")
    if isinstance(summ, list):
        for i, s in enumerate(summ):
            sid = s.get("summary_id") if isinstance(s, dict) else None
            sids.append(sid.strip() if isinstance(sid, str) and sid.strip() else f"{cid}-s{i + 1}")
    return cid, sids


def read_case_json(c: Collector, report: ValidationReport, path: Path, text: str,
                    mapping: Optional[RatingsMapping] = None) -> None:
    before = report.error_count
    obj: object = None
    try:
        obj = loads_strict(text)
    except JsonProblem as exc:
        report.add(Issue(str(path), str(exc), line=exc.line, hint=exc.hint))
    else:
        clash = mapping.problems(list(obj)) if mapping is not None and isinstance(obj, dict) else []
        for fld, msg in clash:
            report.add(Issue(str(path), f"column mapping: {msg}", field=fld,
                             hint="correct the mapping's 'rename' / 'ignore' entries"))
        if not clash:
            if mapping is not None:
                obj = mapping.apply_keys(obj)
            _read_case_obj(c, report, path, obj)
    if report.error_count > before:
        cid, sids = _case_json_ids(obj, path.stem)
        c.rejected_cases.add(cid)
        c.rejected_summaries.update(sids)


def _read_case_obj(c: Collector, report: ValidationReport, path: Path, obj: object) -> None:
    fname = str(path)
    if not isinstance(obj, dict):
        report.add(Issue(fname, f"a case file must hold one JSON object, not {json_type(obj)}",
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
        report.add(Issue(fname, f"unknown key(s) {short_text(', '.join(unknown), 300)}", field=short_text(unknown[0]),
                         hint=f"allowed keys: {', '.join(CASE_JSON_KEYS_REQUIRED + CASE_JSON_KEYS_OPTIONAL)}; "
                              "ignore or rename the others with the column mapping (--mapping with "
                              '{"ignore": [...]} or {"rename": {...}})'))
    if missing or unknown:
        return
    cid = scalar_field(report, fname, None, "case_id", obj.get("case_id"))
    if cid is None:
        return
    cid = cid or path.stem
    if not check_id(report, fname, None, "case_id", cid):
        return
    spec = obj["target_specialty"]
    if not isinstance(spec, str) or not spec.strip():
        report.add(Issue(fname, "target specialty is empty" if isinstance(spec, str) or spec is None
                         else f"target specialty must be text, not {json_type(spec)}", field="target_specialty",
                         hint="name the specialty the summary is written for"))
        return
    c.add_case(report, fname, None, cid, spec.strip())
    if _read_case_notes(c, report, fname, cid, obj["notes"]):
        _read_case_summaries(c, report, fname, cid, obj)


def _read_case_notes(c: Collector, report: ValidationReport, fname: str, cid: str, notes: object) -> bool:
    """The notes of a case file, an object {note id: text or note object} or a list; False when ``notes`` is
    neither (nothing more of the file is read)."""
    entries: list[tuple[Optional[str], str, object]]  # (note id, field name, value)
    if isinstance(notes, dict):
        entries = [(str(k), f"notes.{short_text(str(k))}", v) for k, v in notes.items()]
    elif isinstance(notes, list):
        entries = []
        for i, n in enumerate(notes):
            fld = f"notes[{i}]"
            if isinstance(n, dict) and n.get("note_id") is not None:
                entries.append((scalar_field(report, fname, None, fld + ".note_id", n.get("note_id")), fld, n))
            else:
                entries.append((str(i + 1), fld, n))
    else:
        report.add(Issue(fname, f"'notes' must be an object {{note_id: text}} or a list, not {json_type(notes)}",
                         field="notes"))
        return False
    if not entries:
        report.add(Issue(fname, "the case has no notes", field="notes", hint="add at least one source note"))
    for nid, fld, val in entries:
        if not check_id(report, fname, None, fld, nid):
            continue
        meta: dict = {}
        if isinstance(val, dict):
            bad = [k for k in val if k not in NOTE_OBJ_KEYS + ("note_id",)]
            if bad:
                report.add(Issue(fname, f"unknown key(s) {short_text(', '.join(bad), 300)} in note {nid}", field=fld,
                                 hint=f"allowed: {', '.join(NOTE_OBJ_KEYS)}"))
                continue
            meta, val = val, val.get("text")
        text = text_field(report, fname, None, fld, val, f"note {nid} text")
        extra = [(date_field if k == "date" else opt_text)(report, fname, None, f"{fld}.{k}", meta.get(k))
                 for k in NOTE_OBJ_KEYS[1:]]
        if text is None or REFUSED_VALUE in extra:
            continue
        c.add_note(report, fname, None, cid, Note(nid, text, *extra))
    return True


def _read_case_summaries(c: Collector, report: ValidationReport, fname: str, cid: str, obj: dict) -> None:
    """The summaries of a case file: its list ``summaries`` (when it is not a list nothing more is read), then its
    one ``summary``."""
    if "summaries" in obj:
        summ = obj["summaries"]
        if not isinstance(summ, list):
            report.add(Issue(fname, f"'summaries' must be a list, not {json_type(summ)}", field="summaries"))
            return
        for i, s in enumerate(summ):
            fld = f"summaries[{i}]"
            if not isinstance(s, dict):
                report.add(Issue(fname, "each summary must be an object with 'text'", field=fld))
                continue
            bad = [k for k in s if k not in SUMMARY_OBJ_KEYS]
            if bad:
                report.add(Issue(fname, f"unknown key(s) {short_text(', '.join(bad), 300)}", field=fld,
                                 hint=f"allowed: {', '.join(SUMMARY_OBJ_KEYS)}"))
                continue
            sid = scalar_field(report, fname, None, fld + ".summary_id", s.get("summary_id"))
            if sid is None:
                continue
            sid = sid or f"{cid}-s{i + 1}"
            text = text_field(report, fname, None, fld + ".text", s.get("text"), "summary text")
            meta = [opt_text(report, fname, None, f"{fld}.{k}", s.get(k))
                    for k in ("generator_model", "quality_group", "prompt_variant")]
            if text is not None and REFUSED_VALUE not in meta and check_id(report, fname, None, fld + ".summary_id", sid):
                c.add_summary(report, fname, None, Summary(sid, cid, text, *meta))
    if "summary" in obj:
        sid = scalar_field(report, fname, None, "summary_id", obj.get("summary_id"))
        if sid is None:
            return
        sid = sid or cid
        text = text_field(report, fname, None, "summary", obj.get("summary"), "summary text")
        meta = [opt_text(report, fname, None, k, obj.get(k)) for k in ("generator_model", "quality_group",
                                                                          "prompt_variant")]
        if text is not None and REFUSED_VALUE not in meta and check_id(report, fname, None, "summary_id", sid):
            c.add_summary(report, fname, None, Summary(sid, cid, text, *meta))
