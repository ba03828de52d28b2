"""Summaries from a file of their own, keyed to the cases of an export by whatever id the team has at hand.

The file (CSV or JSONL) has a ``text`` column and one key column: ``case_id``, ``hadm_id`` (MIMIC admission),
``encounter_id`` / ``encounter``, ``patient_id`` / ``patient`` / ``subject_id`` (the case id when cases are made per
encounter or per patient), or ``note_id`` (the case that holds that note). ``summary_id``, ``generator_model``,
``quality_group`` and ``prompt_variant`` are optional; without ``summary_id`` a summary is named
``<case>-summary-<n>``.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from engine.core import Summary
from engine.data._fields import REFUSED_VALUE, check_id, is_missing, opt_text, plain_id, scalar_field, text_field
from engine.data.files import data_suffix, read_csv, read_jsonl, read_text_file
from engine.data._readers import Collector
from engine.data.validation import Issue, ValidationReport

KEY_COLUMNS = ("case_id", "hadm_id", "encounter_id", "encounter", "patient_id", "patient", "subject_id", "note_id")
OPTIONAL = ("summary_id", "generator_model", "quality_group", "prompt_variant")


def read_keyed_summaries(c: Collector, report: ValidationReport, path: Path, max_mb: float) -> int:
    """Add the summaries of the file ``path`` to ``c`` (after the notes were read). Returns how many were added."""
    fname = str(path)
    report.files.append(fname)
    text = read_text_file(path, report, max_mb)
    if text is None:
        c.broken.add("summaries")
        return 0
    parsed = read_jsonl(path, text, report) if data_suffix(path) == ".jsonl" else read_csv(path, text, report)
    if parsed is None:
        c.broken.add("summaries")
        return 0
    return add_keyed_summaries(c, report, path, *parsed)


def add_keyed_summaries(c: Collector, report: ValidationReport, path: Path, header, rows) -> int:
    """Add summaries from rows already read (see the module docstring for the columns)."""
    fname = str(path)
    keys = [k for k in KEY_COLUMNS if k in header]
    if "text" not in header or len(keys) != 1:
        report.add(Issue(fname, "a summaries file needs a 'text' column and exactly one key column "
                                f"(found {', '.join(keys) or 'none'})", line=1, field="text" if "text" not in header
                         else (keys[0] if keys else None),
                         hint=f"key each summary by one of {', '.join(KEY_COLUMNS)}"))
        c.broken.add("summaries")
        return 0
    key = keys[0]
    report.formats[fname] = f"summaries keyed by {key}"
    case_of_note: dict[str, set[str]] = {}
    for cid, nid in c.notes:
        case_of_note.setdefault(nid, set()).add(cid)
    per_case: Counter = Counter()
    added = 0
    for row in rows:
        v = row.values
        raw_key = plain_id(scalar_field(report, fname, row, key, v.get(key)))
        if is_missing(raw_key):
            report.add(Issue(fname, f"the summary's {key} is missing ({raw_key!r} is how exports write a missing "
                                    "value)", row=row.number, line=row.line, field=key,
                             hint=f"give each summary the {key} of the case it summarises"))
            continue
        if not check_id(report, fname, row, key, raw_key):
            continue
        if key == "note_id":
            cases = case_of_note.get(raw_key, set())
            if len(cases) != 1:
                report.add(Issue(fname, f"note {raw_key!r} is " + ("in no case of the import" if not cases else
                                                                   f"in {len(cases)} cases"),
                                 row=row.number, line=row.line, field=key,
                                 hint="key the summary by a note id that names one note of the export"))
                continue
            cid = next(iter(cases))
        else:
            cid = raw_key
        text = text_field(report, fname, row, "text", v.get("text"), "summary text")
        meta = [opt_text(report, fname, row, k, v.get(k)) for k in OPTIONAL]
        if text is None or REFUSED_VALUE in meta:
            continue
        per_case[cid] += 1
        sid = meta[0] or f"{cid}-summary-{per_case[cid]}"
        if not check_id(report, fname, row, "summary_id", sid):
            continue
        c.add_summary(report, fname, row, Summary(sid, cid, text, *meta[1:]))
        added += 1
    return added
