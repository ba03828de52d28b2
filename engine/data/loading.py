"""Loaders for every supported input format, all-or-nothing.

Formats (detected from file name, header or keys):

* **case JSON** – one file per case ``{"target_specialty", "notes": {"1": text, ...}, "summary"}``; a single
  file or a folder of them. The case id is the file stem unless the file has ``case_id``.
* **tidy bundle** – tables ``cases``, ``notes``, ``summaries``, ``ratings`` (long form) as CSV or JSONL.
* **wide ratings CSV** – one row per summary x rater, one column per PDSQI-9 item, as exported by
  REDCap and similar survey tools; the column mapping (:class:`RatingsMapping`) is editable.
* **dialogue CSV** – ``encounter_id, dialogue, note``: the dialogue is the source, the note the summary.

:func:`load_paths` reads everything, validates it as one unit (cross references included) and either
returns a :class:`~engine.core.models.Dataset` or raises :class:`~engine.data.validation.DatasetInvalid` with a report
that names file, row and field of every problem. Nothing is written by this module.

Hostile input is data, never a crash: only regular files are read (a FIFO or a device is refused before it is
opened), each file is read with a bounded read under the size limit (``SUMCHECK_MAX_FILE_MB``, default 200 MB),
JSON with duplicate keys, excessive nesting or lone surrogate escapes is refused with its file and row, files
without a known extension are sniffed (or refused with a hint), and imported ratings may not claim the rater ids
and groups SumCheck reserves for itself (:data:`engine.core.models.RESERVED_RATER_GROUPS`).
"""
from __future__ import annotations

import csv
import gc
import io
import json
import os
import stat
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from engine.core import Case, Dataset, Note
from engine.data._fields import detect_table, table_reason
from engine.data._ehr_notes import PendingNote, add_in_order
from engine.data.fhir import (Export, ResourceRow, is_fhir_json, read_bundle, read_export, read_ndjson_file,
                              unparsed_fhir)
from engine.data.files import (BOMS, csv_delimiter, data_suffix, open_regular, read_csv, read_fd, read_jsonl,
                               resolve_max_mb, read_text_file, split_lines)
from engine.data._keyed_summaries import add_keyed_summaries, read_keyed_summaries
from engine.data._mimic import read_mimic
from engine.data.mapping import DIALOGUE_COLUMNS, LoadOptions, RatingsMapping, TABLE_COLUMNS
from engine.data.strict_json import short_text
from engine.data._readers import Collector, read_case_json, read_dialogue, read_table, read_wide_ratings
from engine.data.strict_json import JsonProblem, loads_strict
from engine.data.validation import DatasetInvalid, Issue, ValidationReport

csv.field_size_limit(2**31 - 1)


# --------------------------------------------------------------------------- entry points

DATA_SUFFIXES = (".csv", ".jsonl", ".json", ".ndjson")
FORMATS_NEED = ("each format needs: " + "; ".join(
    f"a {t} file: {', '.join(cols)}" for t, (cols, _opt) in TABLE_COLUMNS.items())
    + f"; a dialogue CSV: {', '.join(DIALOGUE_COLUMNS)}; a wide ratings export: a summary id column, a rater id "
      "column and one column per PDSQI-9 item; a MIMIC-IV-Note file: note_id, subject_id, hadm_id, charttime, text "
      "(docs/data.md describes each)")


def _mapped(mapping: Optional[RatingsMapping]) -> bool:
    """A column mapping that says the file is a wide ratings export (it names items or id columns)."""
    return bool(mapping and (mapping.items or mapping.summary_col or mapping.rater_col))


def _expand(paths: Sequence[str | os.PathLike], report: ValidationReport) -> list[Path]:
    """Files to read. A folder contributes its entries named .csv/.jsonl/.json (non-regular ones too, so that a
    FIFO named data.csv is reported rather than skipped); nothing is opened here."""
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            report.add(Issue(str(path), "no such file or folder", hint="check the path"))
            continue
        except (OSError, ValueError) as exc:
            report.add(Issue(str(path), f"cannot read this path: {getattr(exc, 'strerror', None) or exc}",
                             hint="check the path and permissions"))
            continue
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(path) as it:
                    names = sorted(e.name for e in it if data_suffix(Path(e.name)) in DATA_SUFFIXES
                                   and not e.is_dir())
                found = [path / n for n in names]
            except OSError as exc:
                report.add(Issue(str(path), f"cannot list the folder: {exc.strerror or exc}",
                                 hint="check the path and permissions"))
                continue
            if not found:
                report.add(Issue(str(path), "folder holds no .csv, .jsonl, .json or .ndjson file",
                                 hint="point to the folder with the case files or the bundle tables"))
            files.extend(found)
        else:
            files.append(path)
    return files


def _sniff(path: Path, text: str) -> Optional[str]:
    """The format of a file whose name does not say it: "json" (one case object), "jsonl" or "csv"; None when
    it cannot be told."""
    body = text.lstrip()
    if body.startswith("{"):
        try:
            obj = loads_strict(text)
        except JsonProblem:
            obj = None
        first = next((ln for ln in split_lines(text) if ln.strip()), "")
        if isinstance(obj, dict):
            if any(k in obj for k in ("notes", "summary", "summaries")):
                return "json"
            return "jsonl" if "\n" not in body.strip() else "json"
        try:
            if isinstance(loads_strict(first), dict):
                return "jsonl"
        except JsonProblem:
            pass
        return "json"  # an object that does not parse: the case JSON reader says where and why
    if body.startswith("["):
        return None
    first = next((ln for ln in split_lines(text) if ln.strip()), "")
    delimiter = csv_delimiter(text)
    if delimiter not in first:
        return None
    try:
        header = [h.strip() for h in next(csv.reader([first], delimiter=delimiter))]
    except (csv.Error, StopIteration):
        return None
    if detect_table(path, header) is not None:
        return "csv"
    guess = RatingsMapping.guess(header)
    return "csv" if guess.summary_col and guess.items else None


def load_paths(paths: Sequence[str | os.PathLike], options: Optional[LoadOptions] = None,
               context: Optional[Dataset] = None, name: Optional[str] = None) -> tuple[Dataset, ValidationReport]:
    """Read and validate ``paths`` as one unit.

    ``context`` is an existing dataset that the new records may refer to (e.g. a ratings file imported
    into a dataset that already holds the summaries). Returns the new records as a :class:`Dataset`
    and the report; raises :class:`DatasetInvalid` when any error was found. Raises
    :class:`~engine.data.settings.SettingsError` (a ValueError) when the file size limit is set to nonsense.
    """
    opts = options or LoadOptions()
    max_mb = resolve_max_mb(opts.max_file_mb)
    with _gc_paused():
        return _load(paths, opts, max_mb, context, name)


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector during a bulk load: the loader allocates millions of acyclic objects,
    and the collector's repeated passes over them cost about a third of the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class _Deferred:
    """What the files of one import hand on to be read after all of them: the FHIR export and its files, the MIMIC
    notes (put in order across files) and the summaries files keyed by admission, encounter or patient."""
    export: Export = field(default_factory=Export)
    fhir_files: list = field(default_factory=list)
    mimic_notes: list[PendingNote] = field(default_factory=list)
    mimic_counts: Counter = field(default_factory=Counter)
    mimic_patients: dict = field(default_factory=dict)  # admission -> its patient, across the MIMIC files
    keyed: list = field(default_factory=list)


def _load(paths, opts: LoadOptions, max_mb: float, context: Optional[Dataset],
          name: Optional[str]) -> tuple[Dataset, ValidationReport]:
    report = ValidationReport()
    c = Collector()
    if opts.mapping is not None:
        clash = opts.mapping.problems()
        for fld, msg in clash:
            report.add(Issue("column mapping", msg, field=fld, hint="correct the mapping's entries"))
        if clash:
            raise DatasetInvalid(report)
    later = _Deferred()
    for path in _expand(paths, report):
        _read_file(c, report, path, opts, max_mb, later)
    _read_deferred(c, report, opts, max_mb, later)
    _injection_warnings(c, report)
    ds = _assemble(c, report, context, name or _default_name(paths))
    report.counts = {"cases": len(ds.cases), "notes": sum(len(k.notes) for k in ds.cases),
                     "summaries": len(ds.summaries), "ratings": len(ds.ratings)}
    if not report.ok:
        raise DatasetInvalid(report)
    return ds, report


def _read_file(c: Collector, report: ValidationReport, path: Path, opts: LoadOptions, max_mb: float,
               later: _Deferred) -> None:
    """Read one file: its format into the report, its records into the collector (FHIR, MIMIC and keyed summaries
    into ``later``). A file that fails as a whole marks the tables it would supply as broken."""
    fname = str(path)
    report.files.append(fname)
    suffix = data_suffix(path)
    stem = (Path(path.stem) if path.suffix.lower() == ".gz" else path).stem.lower()
    supplies = {stem} if stem in TABLE_COLUMNS else {"*"}
    text = read_text_file(path, report, max_mb)
    if text is None:
        if suffix == ".json":  # one case file: only its own case and summary are unknown
            c.rejected_cases.add(path.stem)
            c.rejected_summaries.add(path.stem)
        else:
            c.broken.update(supplies)
        return
    if suffix == ".ndjson":
        later.fhir_files.append(fname)
        report.formats[fname] = "FHIR Bulk Data NDJSON"
        if not read_ndjson_file(path, text, report, later.export):
            c.broken.update(("cases", "notes", "summaries"))
        return
    if suffix in (".json", "") and text.lstrip().startswith("{") and _read_fhir_json(c, report, path, text, later):
        return
    fmt = {".json": "json", ".jsonl": "jsonl", ".csv": "csv"}.get(suffix)
    sniffed = ""
    if fmt is None:
        fmt = _sniff(path, text)
        if fmt is None:
            report.add(Issue(fname, f"cannot tell the format of {path.name}",
                             hint="name it .json (one case), .jsonl (a bundle table) or .csv (a bundle table, "
                                  "a ratings export or a dialogue CSV)"))
            c.broken.update(supplies)
            return
        sniffed = " (format detected from the content)"
    if fmt == "json":
        report.formats[fname] = "case JSON" + sniffed
        read_case_json(c, report, path, text, opts.mapping)
        return
    parsed = read_jsonl(path, text, report) if fmt == "jsonl" else read_csv(path, text, report)
    if parsed is None:
        c.broken.update(supplies)
        return
    header, rows = parsed
    if opts.mapping is not None:
        clash = opts.mapping.problems(header)
        for fld, msg in clash:
            report.add(Issue(fname, f"column mapping: {msg}", line=1, field=fld,
                             hint="correct the mapping's 'rename' / 'ignore' entries"))
        if clash:
            c.broken.update(supplies)
            return
        header, rows = opts.mapping.apply(header, rows)
    _read_rows(c, report, path, fmt, sniffed, header, rows, supplies, opts, later)


def _read_fhir_json(c: Collector, report: ValidationReport, path: Path, text: str, later: _Deferred) -> bool:
    """Read a JSON object file if it is FHIR (a Bundle or one resource; one too deep or malformed to parse is
    reported as FHIR, not as a case file). False when it is not FHIR: a case file, read as one."""
    fname = str(path)
    try:
        obj = loads_strict(text)
    except JsonProblem as exc:
        obj = None
        fhir_label = unparsed_fhir(path, text, exc, report)
        if fhir_label:  # a FHIR file too deep or malformed to parse: reported as FHIR, not as a case file
            report.formats[fname] = fhir_label
            c.broken.update(("cases", "notes", "summaries"))
            return True
    if is_fhir_json(obj):
        later.fhir_files.append(fname)
        report.formats[fname] = (f"FHIR Bundle ({obj.get('type')})" if obj["resourceType"] == "Bundle"
                                 else f"FHIR {obj['resourceType']}")
        if not read_bundle(path, obj, report, later.export):
            c.broken.update(("cases", "notes", "summaries"))
        return True
    return False


def _read_rows(c: Collector, report: ValidationReport, path: Path, fmt: str, sniffed: str, header, rows,
               supplies: set, opts: LoadOptions, later: _Deferred) -> None:
    """Read the rows of a CSV or JSONL file as the table its columns (or name) say it is: keyed summaries (kept for
    later), MIMIC-IV-Note, a dialogue CSV, a bundle table or a wide ratings export; else report no match."""
    fname = str(path)
    table = detect_table(path, header)
    why = f" ({table_reason(path, header, table)})"
    if table == "keyed_summaries":
        later.keyed.append((path, header, rows))
    elif table == "mimic":
        report.formats[fname] = "MIMIC-IV-Note" + why + sniffed
        found, counts = read_mimic(report, path, header, rows, later.mimic_patients)
        later.mimic_notes.extend(found)
        later.mimic_counts.update(counts)
    elif table == "dialogue":
        report.formats[fname] = "dialogue CSV" + why + sniffed
        read_dialogue(c, report, path, header, rows, opts)
    elif table is not None:
        report.formats[fname] = f"bundle table '{table}'" + why + sniffed
        read_table(c, report, path, table, header, rows, opts)
    elif fmt == "csv" and (_mapped(opts.mapping) or RatingsMapping.guess(header).items):
        report.formats[fname] = "wide ratings CSV" + why + sniffed
        read_wide_ratings(c, report, path, header, rows, opts)
    elif fmt == "csv":
        report.formats[fname] = "no format matches" + sniffed
        report.add(Issue(fname, "no SumCheck format matches its columns "
                                f"({short_text(', '.join(header), 300)})", line=1, hint=FORMATS_NEED))
        c.broken.update(supplies)
    else:
        report.add(Issue(fname, "cannot tell which table this JSONL file holds", line=1,
                         hint="name it cases/notes/summaries/ratings.jsonl"))
        c.broken.update(supplies)


def _read_deferred(c: Collector, report: ValidationReport, opts: LoadOptions, max_mb: float,
                   later: _Deferred) -> None:
    """After every file: the FHIR export, the MIMIC notes in order (some held out as reference summaries), the
    keyed summaries files and the options' summaries file, each export's counts added to its file's format."""
    if later.fhir_files:
        counts = read_export(later.export, report, opts, c)
        docs = later.export.of_type("DocumentReference") or later.export.of_type("Composition")
        where = docs[0].file if docs and docs[0].file in report.formats else later.fhir_files[0]
        report.formats[where] += " — the export: " + _counted(counts)
    if later.mimic_notes or later.mimic_counts:
        later.mimic_counts["held out as reference summaries"] = add_in_order(
            c, report, later.mimic_notes, {}, opts.default_specialty, opts.hold_out_types)
        later.mimic_counts["notes"] -= later.mimic_counts["held out as reference summaries"]
        first = next(f for f, v in report.formats.items() if v.startswith("MIMIC"))
        report.formats[first] += " — all MIMIC files: " + _counted(+later.mimic_counts)
    for path, header, rows in later.keyed:
        add_keyed_summaries(c, report, path, header, rows)
    if opts.summaries_file:
        read_keyed_summaries(c, report, Path(opts.summaries_file), max_mb)


def _counted(counts: Counter) -> str:
    """"12 notes, 3 summaries, 2 skipped (content application/pdf)" for the import report."""
    return ", ".join(f"{n:,} {what}" for what, n in counts.items() if n) or "nothing read"


def _injection_warnings(c: "Collector", report: ValidationReport) -> None:
    """A warning (not an error: the data may be genuine) for every text that addresses an AI grader rather than a
    clinician — chat control strings, our prompt's tag names, an answer object, instructions to the grader."""
    from engine.llm import injection

    def warn(fname, row, fld, what, text):
        found = injection.scan(text)
        if found:
            kinds = ", ".join(sorted({x.rule for x in found}))
            excerpt = " ".join(found[0].excerpt.split())[:120]
            report.add(Issue(fname, f"{what} holds text addressed to an AI grader ({kinds}): \u201c{excerpt}\u201d",
                             row=row.number if row else None, line=row.line if row else None,
                             field=row.field_for(fld) if isinstance(row, ResourceRow) else fld, severity="warning",
                             hint="possible prompt injection; the prompt's structure is safe, but an LLM grade of "
                                  "this summary may be steered: check it by hand"))

    for cid, (spec, fname, row) in c.cases.items():
        warn(fname, row, "target_specialty", f"the target specialty of case {cid!r}", spec)
    for (cid, nid), (note, fname, row) in c.notes.items():
        warn(fname, row, "text", f"note {nid!r} of case {cid!r}", note.text)
        for fld in ("date", "note_type", "author_specialty"):
            warn(fname, row, fld, f"the {fld} of note {nid!r} of case {cid!r}", getattr(note, fld) or "")
    for sid, (summ, fname, row) in c.summaries.items():
        warn(fname, row, "text", f"summary {sid!r}", summ.text)


def _read_head(path: Path) -> Optional[str]:
    """The first megabyte of a regular file as text (None when it is not a regular file or cannot be read)."""
    opened = open_regular(path, ValidationReport())
    if opened is None:
        return None
    fd, _ = opened
    try:
        head = read_fd(fd, (1 << 20) - 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    for bom, codec, _ in BOMS:
        if head.startswith(bom):
            return head[len(bom):].decode(codec, errors="ignore")
    return head.decode("utf-8", errors="ignore")


def sniff_header(path: str | os.PathLike) -> Optional[list[str]]:
    """The column names of a CSV (its header) or JSONL file (the first object's keys), from its first megabyte;
    None for anything else or an unreadable file. For offering columns to ignore or rename."""
    p = Path(path)
    if p.suffix.lower() not in (".csv", ".jsonl"):
        return None
    text = _read_head(p)
    if text is None:
        return None
    try:
        if p.suffix.lower() == ".csv":
            rows = csv.reader(io.StringIO(text, newline=""), delimiter=csv_delimiter(text))
            return [h.strip() for h in next(rows, [])] or None
        first = next((ln for ln in text.split("\n") if ln.strip()), "")
        obj = json.loads(first)
        return [str(k) for k in obj] if isinstance(obj, dict) else None
    except (csv.Error, ValueError, RecursionError):
        return None


def sniff_wide_ratings(path: str | os.PathLike) -> Optional[tuple[list[str], RatingsMapping]]:
    """If ``path`` is a CSV that would be read as a wide ratings export, return its header and the guessed
    column mapping (for the user to edit); otherwise None. Only regular files are opened, and only their
    first megabyte is read."""
    p = Path(path)
    header = sniff_header(p) if p.suffix.lower() == ".csv" else None
    if not header or detect_table(p, header) is not None:
        return None
    return header, RatingsMapping.guess(header)


def _default_name(paths: Sequence[str | os.PathLike]) -> str:
    if not paths:
        return "dataset"
    p = Path(paths[0])
    try:
        return p.stem if p.is_file() else p.name or "dataset"
    except (OSError, ValueError):
        return p.name or "dataset"


def _assemble(c: Collector, report: ValidationReport, context: Optional[Dataset], name: str) -> Dataset:
    """Cross-reference checks and the dataset, in time linear in the number of records."""
    ctx_cases = {k.case_id for k in context.cases} if context else set()
    ctx_summaries = {s.summary_id for s in context.summaries} if context else set()
    ctx_ratings = {(r.summary_id, r.rater_id, r.item) for r in context.ratings} if context else set()
    skipped = 0
    cases_broken = bool(c.broken & {"cases", "*"})
    notes_broken = bool(c.broken & {"notes", "*"})
    summaries_broken = bool(c.broken & {"summaries", "*"})
    notes_by_case: dict[str, list[Note]] = {}
    for key in c.note_order:
        notes_by_case.setdefault(key[0], []).append(c.notes[key][0])
    for cid, (_, f, row) in c.cases.items():
        if cid in ctx_cases:
            report.add(Issue(f, f"case {cid!r} already exists in dataset {context.name!r}",
                             row=row.number if row else None, field="case_id",
                             hint="import into a new dataset, or replace the dataset"))
    for (cid, nid), (_, f, row) in c.notes.items():
        if cid not in c.cases:
            if cases_broken or cid in c.rejected_cases:
                skipped += 1
                continue
            report.add(Issue(f, f"note {nid!r} belongs to unknown case {cid!r}", row=row.number if row else None,
                             line=row.line if row else None, field="case_id",
                             hint="add the case to the cases table or correct the case id"))
    for cid, (_, f, row) in c.cases.items():
        if cid not in notes_by_case:
            if notes_broken:
                skipped += 1
                continue
            report.add(Issue(f, f"case {cid!r} has no notes", row=row.number if row else None, field="case_id",
                             hint="add its source notes"))
    for sid, (s, f, row) in c.summaries.items():
        if sid in ctx_summaries:
            report.add(Issue(f, f"summary {sid!r} already exists in dataset {context.name!r}",
                             row=row.number if row else None, field="summary_id"))
        if s.case_id not in c.cases and s.case_id not in ctx_cases:
            if cases_broken or s.case_id in c.rejected_cases:
                skipped += 1
                continue
            report.add(Issue(f, f"summary {sid!r} refers to unknown case {s.case_id!r}",
                             row=row.number if row else None, line=row.line if row else None, field="case_id",
                             hint="add the case or correct the case id"))
    for key, (r, f, row) in c.ratings.items():
        if r.summary_id not in c.summaries and r.summary_id not in ctx_summaries:
            if summaries_broken or r.summary_id in c.rejected_summaries:
                skipped += 1
                continue
            report.add(Issue(f, f"rating for unknown summary {r.summary_id!r}", row=row.number if row else None,
                             line=row.line if row else None, field="summary_id",
                             hint="import the summaries first, or correct the summary id"))
        elif key in ctx_ratings:
            report.add(Issue(f, f"rater {r.rater_id!r} already rated {r.item!r} of {r.summary_id!r} in this dataset",
                             row=row.number if row else None, field="item"))
    if skipped:
        report.add(Issue("(cross references)", f"{skipped:,} reference(s) to cases, notes or summaries that failed "
                         "validation above were not checked", severity="warning",
                         hint="fix the errors above and validate again"))
    cases = [Case(cid, spec, tuple(notes_by_case.get(cid, ()))) for cid, (spec, _, _) in c.cases.items()]
    return Dataset(name=name, cases=cases, summaries=[v[0] for v in c.summaries.values()],
                   ratings=[v[0] for v in c.ratings.values()])
