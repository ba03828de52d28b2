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
import math
import os
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from engine.core.models import Case, Dataset, Note, Rating, Summary, reserved_rater_problem
from engine.core.rubric import ITEM_KEYS, ValueError_, get_item, parse_value
from engine.data.validation import DatasetInvalid, Issue, ValidationReport

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
    """The column mapping, one for every loader. Editable by the user (Data page, or ``--mapping file.json``).

    For every file (bundle tables, dialogue CSV, wide ratings CSV, JSONL, and the top-level keys of case JSON):
    ``rename`` maps a column (key) of the file to the name SumCheck expects (``{"transcript": "dialogue"}``) and
    columns in ``ignore`` are dropped before the file is read. For a wide ratings CSV, ``items`` maps a PDSQI-9
    item key to a column name and ``summary_col`` / ``rater_col`` / ``rater_group_col`` name the id columns; any
    other column that is not survey metadata is reported as unknown.
    """

    summary_col: str = ""
    rater_col: str = ""
    rater_group_col: str = ""
    items: dict[str, str] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    default_rater_group: str = "unknown"
    rename: dict[str, str] = field(default_factory=dict)

    def problems(self, header: Optional[Sequence[str]] = None) -> list[tuple[str, str]]:
        """Collisions of the mapping as a whole, as (field, message): two renames onto one name, a column both
        renamed and ignored, one column mapped to two items or to an item and an id, and — given a file's
        ``header`` (or a case JSON object's keys) — a rename onto a column the file already has, which would
        overwrite it. Checked before any row is read."""
        out: list[tuple[str, str]] = []
        targets: dict[str, list[str]] = {}
        for src, dst in self.rename.items():
            targets.setdefault(dst, []).append(src)
        for dst, srcs in targets.items():
            if len(srcs) > 1:
                out.append((dst, f"rename maps {', '.join(repr(x) for x in srcs)} all onto {dst!r}: only one column "
                                 "can become it"))
        for src in self.rename:
            if src in self.ignore:
                out.append((src, f"column {src!r} is both renamed (to {self.rename[src]!r}) and ignored"))
        uses: dict[str, list[str]] = {}
        for key, col in self.items.items():
            uses.setdefault(col, []).append(f"item {key!r}")
        for attr in ("summary_col", "rater_col", "rater_group_col"):
            col = getattr(self, attr)
            if col:
                uses.setdefault(col, []).append(attr)
        for col, what in uses.items():
            if len(what) > 1:
                out.append((col, f"column {col!r} is mapped twice ({' and '.join(what)})"))
        if header is not None:
            present = set(header)
            for src, dst in self.rename.items():
                if src in present and dst in present and dst != src and dst not in self.rename and dst not in self.ignore:
                    out.append((dst, f"rename {src!r} -> {dst!r}: the file already has a column {dst!r}, which would "
                                     "be overwritten"))
        return out

    def apply(self, header: Sequence[str], rows: list["_Row"]) -> tuple[list[str], list["_Row"]]:
        """``header`` and ``rows`` with ignored columns dropped and renamed columns renamed."""
        if not self.ignore and not self.rename:
            return list(header), rows
        drop = set(self.ignore)
        new_header = [self.rename.get(h, h) for h in header if h not in drop]
        if not drop and not self.rename:
            return new_header, rows
        for row in rows:
            row.values = {self.rename.get(k, k): v for k, v in row.values.items() if k not in drop}
        return new_header, rows

    def apply_keys(self, obj: object) -> object:
        """The same for the top-level keys of a case JSON object."""
        if not isinstance(obj, dict) or (not self.ignore and not self.rename):
            return obj
        return {self.rename.get(k, k): v for k, v in obj.items() if k not in set(self.ignore)}

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
        """Read a mapping file. Raises :class:`ValueError` naming the file and the key for any problem (unreadable
        file, invalid JSON, wrong shape, wrong types, unknown keys or items, a reserved rater group)."""
        fname = str(path)
        report = ValidationReport()
        text = read_text_file(Path(path), report)
        if text is None:
            raise ValueError(f"mapping file {report.errors[0].format().split(': ', 1)[1]}")
        try:
            data = loads_strict(text)
        except JsonProblem as exc:
            raise ValueError(f"mapping file {fname}: {exc}") from None
        return cls.from_dict(data, fname)

    @classmethod
    def from_dict(cls, data: object, source: str = "mapping") -> "RatingsMapping":
        """Build a mapping from parsed JSON, checking its shape; :class:`ValueError` names ``source`` and the key."""
        example = '{"summary_col": "record_id", "rater_col": "rater", "items": {"accurate": "q2"}, "ignore": ["notes"]}'
        if not isinstance(data, dict):
            raise ValueError(f"mapping file {source} must hold one JSON object such as {example}, "
                             f"not {json_type(data)}")
        known = ("summary_col", "rater_col", "rater_group_col", "items", "ignore", "default_rater_group", "rename")
        unknown = [k for k in data if k not in known]
        if unknown:
            raise ValueError(f"mapping file {source}: unknown key(s) {', '.join(repr(k) for k in unknown)}; "
                             f"allowed keys: {', '.join(known)}")
        out: dict = {}
        for key in ("summary_col", "rater_col", "rater_group_col", "default_rater_group"):
            v = data.get(key)
            if v is None:
                continue
            if not isinstance(v, str):
                raise ValueError(f"mapping file {source}: key '{key}' must be a column name (text), "
                                 f"not {json_type(v)}")
            out[key] = v.strip()
        items = data.get("items", {})
        if items is None:
            items = {}
        if not isinstance(items, dict):
            raise ValueError(f"mapping file {source}: key 'items' must be an object {{item: column}} such as "
                             f'{{"accurate": "q2"}}, not {json_type(items)}')
        bad = [k for k in items if k not in ITEM_KEYS]
        if bad:
            raise ValueError(f"mapping file {source}: key 'items' names unknown PDSQI-9 item(s) "
                             f"{', '.join(repr(k) for k in bad)}; known: {', '.join(ITEM_KEYS)}")
        for k, v in items.items():
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"mapping file {source}: key 'items.{k}' must be a column name (text), "
                                 f"not {json_type(v)}")
        out["items"] = {k: v.strip() for k, v in items.items()}
        ignore = data.get("ignore", [])
        if ignore is None:
            ignore = []
        if not isinstance(ignore, list):
            raise ValueError(f"mapping file {source}: key 'ignore' must be a list of column names such as "
                             f'["notes"], not {json_type(ignore)}')
        for i, v in enumerate(ignore):
            if not isinstance(v, str):
                raise ValueError(f"mapping file {source}: key 'ignore[{i}]' must be a column name (text), "
                                 f"not {json_type(v)}")
        out["ignore"] = [v.strip() for v in ignore]
        rename = data.get("rename", {})
        if rename is None:
            rename = {}
        if not isinstance(rename, dict):
            raise ValueError(f"mapping file {source}: key 'rename' must be an object {{file column: expected name}} "
                             f'such as {{"transcript": "dialogue"}}, not {json_type(rename)}')
        for k, v in rename.items():
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"mapping file {source}: key 'rename.{k}' must be a column name (text), "
                                 f"not {json_type(v)}")
        out["rename"] = {k.strip(): v.strip() for k, v in rename.items()}
        group = out.get("default_rater_group")
        if group is not None:
            if not group:
                out.pop("default_rater_group")
            else:
                problem = reserved_rater_problem("", group)
                if problem:
                    raise ValueError(f"mapping file {source}: key 'default_rater_group': {problem[1]}; "
                                     "use the raters' own group (e.g. junior, senior)")
                out["default_rater_group"] = group.lower()
        return cls(**out)

    def merged_over(self, guess: "RatingsMapping") -> "RatingsMapping":
        """This mapping, with blanks filled from ``guess`` (an explicit mapping wins)."""
        return RatingsMapping(
            self.summary_col or guess.summary_col,
            self.rater_col or guess.rater_col,
            self.rater_group_col or guess.rater_group_col,
            {**guess.items, **self.items},
            list(self.ignore),
            self.default_rater_group if self.default_rater_group != "unknown" else guess.default_rater_group,
            dict(self.rename),
        )


@dataclass
class LoadOptions:
    mapping: Optional[RatingsMapping] = None
    default_specialty: str = "Unspecified"
    default_rater_group: str = "unknown"
    max_file_mb: Optional[float] = None  # per-file size limit; None = SUMCHECK_MAX_FILE_MB / the setting / 200


# --------------------------------------------------------------------------- strict JSON

MAX_JSON_DEPTH = 32  # no input format nests deeper than a few levels
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonProblem(ValueError):
    """JSON that must not be trusted: malformed, a key twice in one object, too deep, or a lone surrogate."""

    def __init__(self, message: str, line: Optional[int] = None, hint: str = ""):
        super().__init__(message)
        self.line, self.hint = line, hint


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def json_type(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(type(v), "a value")


def loads_strict(text: str) -> object:
    """``json.loads`` that refuses what a lenient reader would silently accept or crash on.

    Raises :class:`JsonProblem` (a ValueError) for malformed JSON, a key that appears twice in one object (JSON
    readers disagree on which one wins), nesting deeper than :data:`MAX_JSON_DEPTH` (or deep enough to exhaust
    the parser's recursion), over-long integer literals, and ``\\ud800``-style escapes that decode to lone
    surrogates (text no file or database can hold)."""
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise JsonProblem(f"key {_short(exc.key)!r} appears twice in one JSON object",
                          hint="keep one of them: JSON readers disagree on which value wins") from None
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", line=exc.lineno,
                          hint="the file is cut off or malformed; export it again") from None
    except RecursionError:
        raise JsonProblem(f"JSON nested far too deeply (more than {MAX_JSON_DEPTH} levels)",
                          hint="no SumCheck format nests deeper than a few levels; export the data again") from None
    except ValueError as exc:  # e.g. an integer literal with more than 4300 digits
        raise JsonProblem(f"invalid JSON ({_short(str(exc), 120)})",
                          hint="the file holds a number or value no export writes; export it again") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH or _SURROGATE_ESCAPE.search(text):
        _check_tree(obj)
    return obj


def _check_tree(obj: object) -> None:
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if _LONE_SURROGATE.search(v):
                raise JsonProblem("text holds an invalid \\u escape (a lone UTF-16 surrogate such as \\ud800)",
                                  hint="the exporting program wrote broken text; export the data again as UTF-8")
            continue
        if not isinstance(v, (dict, list)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise JsonProblem(f"JSON nested more than {MAX_JSON_DEPTH} levels deep",
                              hint="no SumCheck format nests deeper than a few levels; export the data again")
        if isinstance(v, dict):
            stack.extend((k, depth) for k in v)
            stack.extend((x, depth + 1) for x in v.values())
        else:
            stack.extend((x, depth + 1) for x in v)


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# --------------------------------------------------------------------------- reading raw files

_MB = 1_000_000


def _resolve_max_mb(opts: Optional[LoadOptions]) -> float:
    if opts is not None and opts.max_file_mb is not None:
        mb = float(opts.max_file_mb)
        if not 0 < mb <= 1_000_000:
            raise ValueError(f"file size limit {opts.max_file_mb!r} MB is not a positive number of MB")
        return mb
    from engine.data.settings import max_file_mb

    return max_file_mb()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _open_regular(path: Path, report: ValidationReport) -> Optional[tuple[int, os.stat_result]]:
    """(descriptor, stat) of ``path`` opened for reading if it is a regular file; otherwise an issue and None.

    The type is checked with ``stat`` before the file is opened (opening a FIFO blocks, ``/dev/zero`` never
    ends); it is then opened non-blocking and checked again with ``fstat`` (it may have been swapped)."""
    fname = str(path)
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        report.add(Issue(fname, f"cannot read file: {getattr(exc, 'strerror', None) or exc}",
                         hint="check the path and permissions"))
        return None
    not_regular = "SumCheck reads only regular files"
    fix = "copy the data into a regular file (e.g. 'cat SOURCE > data.csv') and import that"
    if not stat.S_ISREG(st.st_mode):
        report.add(Issue(fname, f"is {_kind(st.st_mode)}, not a regular file; {not_regular}", hint=fix))
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        report.add(Issue(fname, f"cannot read file: {exc.strerror or exc}", hint="check the path and permissions"))
        return None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        report.add(Issue(fname, f"cannot read file: {exc.strerror or exc}", hint="check the path and permissions"))
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        report.add(Issue(fname, f"is {_kind(st.st_mode)}, not a regular file; {not_regular}", hint=fix))
        return None
    return fd, st


def _read_fd(fd: int, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes (one more than allowed tells that the file is too long)."""
    chunks, got = [], 0
    while got <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_file_bytes(path: Path, report: ValidationReport, max_mb: Optional[float] = None) -> Optional[bytes]:
    """The bytes of ``path`` if it is a regular file within the size limit (default: SUMCHECK_MAX_FILE_MB, the
    setting, or 200 MB); otherwise an issue in ``report`` and None. Nothing but a regular file is ever opened,
    and the read is bounded, so a file that grows while it is read cannot exceed the limit either."""
    fname = str(path)
    max_mb = _resolve_max_mb(None) if max_mb is None else max_mb
    limit = int(max_mb * _MB)
    how = (f"split the file, or raise the limit: set the environment variable SUMCHECK_MAX_FILE_MB (e.g. "
           f"SUMCHECK_MAX_FILE_MB={max(int(max_mb * 4), 1)}) or 'max_file_mb' in the settings file")
    opened = _open_regular(path, report)
    if opened is None:
        return None
    fd, st = opened
    try:
        if st.st_size > limit:
            report.add(Issue(fname, f"file is {st.st_size / _MB:,.1f} MB, over the limit of {max_mb:g} MB per "
                                    "input file", hint=how))
            return None
        data = _read_fd(fd, limit)
    except OSError as exc:
        report.add(Issue(fname, f"cannot read file: {exc.strerror or exc}", hint="check the path and permissions"))
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        report.add(Issue(fname, f"file grew past the limit of {max_mb:g} MB per input file while it was read",
                         hint=how))
        return None
    return data


_BOMS = ((b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"), (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"),
         (b"\xef\xbb\xbf", "utf-8", "UTF-8"), (b"\xfe\xff", "utf-16-be", "UTF-16"), (b"\xff\xfe", "utf-16-le", "UTF-16"))


def guess_encoding(raw: bytes) -> str:
    """A plain-words guess at the encoding of bytes that are not UTF-8 and have no byte-order mark."""
    head = raw[:4096]
    if head and head.count(b"\x00") > len(head) // 4:
        return "UTF-16 or UTF-32 without a byte-order mark"
    try:
        head.decode("cp1252")
        return "Windows-1252 (cp1252)"
    except UnicodeDecodeError:
        return "Latin-1 (ISO-8859-1) or another 8-bit encoding"


def _decode(path: Path, raw: bytes, report: ValidationReport) -> Optional[str]:
    """Text of a file: UTF-8, or UTF-16 / UTF-32 / UTF-8 with a byte-order mark; anything else gets one message
    that names the encoding it looks like."""
    for bom, codec, label in _BOMS:
        if raw.startswith(bom):
            try:
                return raw[len(bom):].decode(codec)
            except UnicodeDecodeError as exc:
                report.add(Issue(str(path), f"starts with a {label} byte-order mark but is not valid {label} "
                                             f"(bad data at byte {exc.start + len(bom)})",
                                 hint="export the file again, as UTF-8"))
                return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        enc = guess_encoding(raw)
        report.add(Issue(str(path), f"is not UTF-8 text: it looks like {enc} (byte 0x{raw[exc.start]:02x} at offset "
                                     f"{exc.start})", line=line,
                         hint="re-save the file as UTF-8 (in a spreadsheet: 'CSV UTF-8'; or "
                              "'iconv -f cp1252 -t utf-8')"))
        return None


def read_text_file(path: Path, report: ValidationReport, max_mb: Optional[float] = None) -> Optional[str]:
    """A regular file within the size limit, decoded as UTF-8; otherwise an issue in ``report`` and None."""
    raw = read_file_bytes(path, report, max_mb)
    return None if raw is None else _decode(path, raw, report)


def split_lines(text: str) -> list[str]:
    """Physical lines (``\\n`` / ``\\r\\n``). Unlike ``str.splitlines`` this does not split inside JSON strings
    at U+2028, U+0085 and the like, which JSON allows unescaped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [x[:-1] if x.endswith("\r") else x for x in lines]


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
        if not rec or not "".join(rec).strip():
            continue
        number += 1
        if len(rec) != len(header):
            report.add(Issue(fname, f"row has {len(rec)} fields but the header has {len(header)}",
                             row=number, line=start_line,
                             hint="the file may be truncated or a field has an unquoted comma; export it again"))
            continue
        rows.append(_Row(number, start_line, dict(zip(header, rec))))
    if number == 0:
        report.add(Issue(fname, "no rows after the header", line=1,
                         hint="the file holds only its column names: export it again with its data"))
        return None
    return header, rows


def _read_jsonl(path: Path, text: str, report: ValidationReport) -> Optional[tuple[list[str], list[_Row]]]:
    fname = str(path)
    rows: list[_Row] = []
    keys: dict[str, None] = {}
    number = 0
    ok = True
    for lineno, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        number += 1
        try:
            obj = loads_strict(line)
        except JsonProblem as exc:
            msg = str(exc).replace(" at line 1 column", " at column")
            report.add(Issue(fname, msg, row=number, line=lineno,
                             hint=exc.hint or "the line is cut off or malformed; export the file again"))
            ok = False
            continue
        if not isinstance(obj, dict):
            report.add(Issue(fname, f"each line must be a JSON object, not {json_type(obj)}", row=number,
                             line=lineno, hint='write one object per line, e.g. {"case_id": "c1", ...}'))
            ok = False
            continue
        for k in obj:
            keys[k] = None
        rows.append(_Row(number, lineno, obj))
    if number == 0:
        report.add(Issue(fname, "file is empty", hint="export the data again"))
        return None
    return (list(keys), rows) if ok else None


# --------------------------------------------------------------------------- helpers

MAX_ID_CHARS = 200


def _str(v: object) -> str:
    """Text of a CSV cell or a trusted scalar (callers that may see any JSON value use :func:`_scalar`)."""
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def _opt(v: object) -> Optional[str]:
    s = _str(v)
    return s or None


def _scalar(report: ValidationReport, fname: str, row: Optional[_Row], fld: str, v: object) -> Optional[str]:
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


_INVALID = object()  # an optional field whose value was refused (the issue is in the report)


def _opt_text(report: ValidationReport, fname: str, row: Optional[_Row], fld: str, v: object):
    s = _scalar(report, fname, row, fld, v)
    if s is None:
        return _INVALID
    return s or None


def _check_id(report: ValidationReport, fname: str, row: _Row | None, fld: str, value: Optional[str]) -> bool:
    if value is None:  # already reported by _scalar
        return False
    r = row.number if row else None
    ln = row.line if row else None
    if not value:
        report.add(Issue(fname, "an id is required", row=r, line=ln, field=fld, hint=f"fill in '{fld}'"))
        return False
    if len(value) > MAX_ID_CHARS:
        report.add(Issue(fname, f"id {_short(value)!r} is {len(value):,} characters long (at most {MAX_ID_CHARS})",
                         row=r, line=ln, field=fld, hint="use a short identifier"))
        return False
    if not _ID_RE.fullmatch(value):
        report.add(Issue(fname, f"id {_short(value)!r} has characters other than letters, digits, '_', '-', '.', ':'",
                         row=r, line=ln, field=fld, hint="use a simple identifier"))
        return False
    return True


_RATER_OK: dict[tuple[str, str], bool] = {}


def _check_rater(report: ValidationReport, fname: str, row: Optional[_Row], rater_id: str, group: str,
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
                         hint=f"allowed columns: {', '.join(required + optional)}; ignore the others in the column "
                              f'mapping (Data page, or --mapping with {{"ignore": {json.dumps(unknown[:3])}}}) or '
                              'rename them ({"rename": {"old name": "expected name"}})'))
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
    """Accumulates parsed records with their origin, for duplicate and cross-reference checks.

    ``broken`` names tables ("cases", "notes", "summaries"; "*" = any) supplied by a file that failed as a whole,
    and ``rejected_cases`` / ``rejected_summaries`` ids whose own record failed: references to them are not
    reported again as "unknown" (one broken file must not bury the row errors of the others)."""

    def __init__(self) -> None:
        self.cases: dict[str, tuple[str, str, Optional[_Row]]] = {}  # case_id -> (specialty, file, row)
        self.notes: dict[tuple[str, str], tuple[Note, str, Optional[_Row]]] = {}
        self.note_order: list[tuple[str, str]] = []
        self.summaries: dict[str, tuple[Summary, str, Optional[_Row]]] = {}
        self.ratings: dict[tuple[str, str, str], tuple[Rating, str, Optional[_Row]]] = {}
        self.broken: set[str] = set()
        self.rejected_cases: set[str] = set()
        self.rejected_summaries: set[str] = set()

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


def _rating_value(report: ValidationReport, fname: str, row: _Row, fld: str, item, raw: object):
    """A rating value, or _INVALID with an issue naming the field. A JSON true/false is refused for every item."""
    if type(raw) is str:
        hit = _VALUES.get((item.key, raw), _INVALID)
        if hit is not _INVALID:
            return hit
        try:
            value = parse_value(item, raw)
        except ValueError_ as exc:
            report.add(Issue(fname, str(exc), row=row.number, line=row.line, field=fld,
                             hint="correct the score or remove the row (a missing rating is simply absent)"))
            return _INVALID
        if len(_VALUES) < 1_000:
            _VALUES[(item.key, raw)] = value
        return value
    if isinstance(raw, bool):
        report.add(Issue(fname, f"{item.label}: {str(raw).lower()} (a JSON true/false) is not a rating value",
                         row=row.number, line=row.line, field=fld,
                         hint='write 1-5, or "yes"/"no" (1/0) for yes/no items, or "NA"'))
        return _INVALID
    try:
        return parse_value(item, raw)
    except ValueError_ as exc:
        report.add(Issue(fname, str(exc), row=row.number, line=row.line, field=fld,
                         hint="correct the score or remove the row (a missing rating is simply absent)"))
        return _INVALID


def _read_table(c: _Collector, report: ValidationReport, path: Path, table: str, header, rows: list[_Row],
                opts: LoadOptions) -> None:
    fname = str(path)
    if not _check_columns(report, fname, header, table):
        c.broken.add(table)
        return
    valid_ids: set[str] = set()  # ids (already stripped) that passed _check_id in this file
    for row in rows:
        v = row.values
        rn, ln = row.number, row.line
        if table == "cases":
            cid = _scalar(report, fname, row, "case_id", v.get("case_id"))
            spec = _scalar(report, fname, row, "target_specialty", v.get("target_specialty"))
            if not _check_id(report, fname, row, "case_id", cid):
                continue
            if spec is None:
                c.rejected_cases.add(cid)
                continue
            if not spec:
                report.add(Issue(fname, "target specialty is empty", row=rn, line=ln, field="target_specialty",
                                 hint="name the specialty the summary is written for, e.g. 'Cardiology'"))
                c.rejected_cases.add(cid)
                continue
            c.add_case(report, fname, row, cid, spec)
        elif table == "notes":
            cid = _scalar(report, fname, row, "case_id", v.get("case_id"))
            nid = _scalar(report, fname, row, "note_id", v.get("note_id"))
            if not (_check_id(report, fname, row, "case_id", cid) & _check_id(report, fname, row, "note_id", nid)):
                continue
            text = _text_field(report, fname, row, "text", v.get("text"), "note text")
            meta = [_opt_text(report, fname, row, k, v.get(k)) for k in ("date", "note_type", "author_specialty")]
            if text is None or _INVALID in meta:
                continue
            c.add_note(report, fname, row, cid, Note(nid, text, *meta))
        elif table == "summaries":
            sid = _scalar(report, fname, row, "summary_id", v.get("summary_id"))
            cid = _scalar(report, fname, row, "case_id", v.get("case_id"))
            if not (_check_id(report, fname, row, "summary_id", sid) & _check_id(report, fname, row, "case_id", cid)):
                if sid:
                    c.rejected_summaries.add(sid)
                continue
            text = _text_field(report, fname, row, "text", v.get("text"), "summary text")
            meta = [_opt_text(report, fname, row, k, v.get(k))
                    for k in ("generator_model", "quality_group", "prompt_variant")]
            if text is None or _INVALID in meta:
                c.rejected_summaries.add(sid)
                continue
            c.add_summary(report, fname, row, Summary(sid, cid, text, *meta))
        elif table == "ratings":
            sid, rid = v.get("summary_id"), v.get("rater_id")
            item_key, group = v.get("item"), v.get("rater_group")
            if type(sid) is str and type(rid) is str and type(item_key) is str and type(group) in (str, type(None)) \
                    and sid in valid_ids and rid in valid_ids:  # the common case: ids already seen valid
                item_key, group = item_key.strip(), (group or "").strip()
            else:
                sid = _scalar(report, fname, row, "summary_id", sid)
                rid = _scalar(report, fname, row, "rater_id", rid)
                item_key = _scalar(report, fname, row, "item", item_key)
                group = _scalar(report, fname, row, "rater_group", group)
                if not (_check_id(report, fname, row, "summary_id", sid)
                        & _check_id(report, fname, row, "rater_id", rid)):
                    continue
                if len(valid_ids) < 100_000:
                    valid_ids.update((sid, rid))
            if item_key is None or group is None:
                continue
            try:
                item = get_item(item_key)
            except KeyError as exc:
                report.add(Issue(fname, _short(str(exc.args[0]), 300), row=rn, line=ln, field="item",
                                 hint="use one of the PDSQI-9 item keys"))
                continue
            raw = v.get("value")
            if isinstance(raw, str) and not raw.strip():
                raw = None
            value = _rating_value(report, fname, row, "value", item, raw)
            if value is _INVALID:
                continue
            group_field = "rater_group" if group else "rater_group (default)"
            group = group.lower() or opts.default_rater_group
            if not _check_rater(report, fname, row, rid, group, "rater_id", group_field):
                continue
            c.add_rating(report, fname, row, Rating(sid, rid, item.key, value, group))


def _read_dialogue(c: _Collector, report: ValidationReport, path: Path, header, rows: list[_Row],
                   opts: LoadOptions) -> None:
    fname = str(path)
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
        eid = _scalar(report, fname, row, "encounter_id", row.values.get("encounter_id"))
        if not _check_id(report, fname, row, "encounter_id", eid):
            continue
        dialogue = _text_field(report, fname, row, "dialogue", row.values.get("dialogue"), "dialogue")
        note = _text_field(report, fname, row, "note", row.values.get("note"), "note (the summary)")
        if dialogue is None or note is None:
            c.rejected_cases.add(eid)
            c.rejected_summaries.add(eid)
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
    for fld, msg in mapping.problems():
        report.add(Issue(fname, f"column mapping: {msg}", line=1, field=fld, hint="correct the column mapping"))
        problems = True
    for attr, what in (("summary_col", "summary id"), ("rater_col", "rater id")):
        col = getattr(mapping, attr)
        if not col:
            report.add(Issue(fname, f"no column holds the {what}", line=1,
                             hint=f"set '{attr}' in the column mapping (columns are: {_short(', '.join(header), 500)})"))
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
        report.add(Issue(fname, f"unknown column(s) {_short(', '.join(unknown), 500)}", line=1, field=unknown[0],
                         hint="map each to a PDSQI-9 item, or add it to 'ignore' in the column mapping"))
        problems = True
    default_group = (mapping.default_rater_group if mapping.default_rater_group != "unknown"
                     else opts.default_rater_group)
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
        group_field = mapping.rater_group_col if group else "rater_group (default)"
        group = group or default_group
        if not _check_rater(report, fname, row, rid, group, mapping.rater_col, group_field):
            continue
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
            value = _rating_value(report, fname, row, col, item, raw)
            if value is _INVALID:
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


def _read_case_json(c: _Collector, report: ValidationReport, path: Path, text: str,
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


def _read_case_obj(c: _Collector, report: ValidationReport, path: Path, obj: object) -> None:
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
        report.add(Issue(fname, f"unknown key(s) {_short(', '.join(unknown), 300)}", field=_short(unknown[0]),
                         hint=f"allowed keys: {', '.join(CASE_JSON_KEYS_REQUIRED + CASE_JSON_KEYS_OPTIONAL)}; "
                              "ignore or rename the others with the column mapping (--mapping with "
                              '{"ignore": [...]} or {"rename": {...}})'))
    if missing or unknown:
        return
    cid = _scalar(report, fname, None, "case_id", obj.get("case_id"))
    if cid is None:
        return
    cid = cid or path.stem
    if not _check_id(report, fname, None, "case_id", cid):
        return
    spec = obj["target_specialty"]
    if not isinstance(spec, str) or not spec.strip():
        report.add(Issue(fname, "target specialty is empty" if isinstance(spec, str) or spec is None
                         else f"target specialty must be text, not {json_type(spec)}", field="target_specialty",
                         hint="name the specialty the summary is written for"))
        return
    c.add_case(report, fname, None, cid, spec.strip())
    notes = obj["notes"]
    entries: list[tuple[Optional[str], str, object]]  # (note id, field name, value)
    if isinstance(notes, dict):
        entries = [(str(k), f"notes.{_short(str(k))}", v) for k, v in notes.items()]
    elif isinstance(notes, list):
        entries = []
        for i, n in enumerate(notes):
            fld = f"notes[{i}]"
            if isinstance(n, dict) and n.get("note_id") is not None:
                entries.append((_scalar(report, fname, None, fld + ".note_id", n.get("note_id")), fld, n))
            else:
                entries.append((str(i + 1), fld, n))
    else:
        report.add(Issue(fname, f"'notes' must be an object {{note_id: text}} or a list, not {json_type(notes)}",
                         field="notes"))
        return
    if not entries:
        report.add(Issue(fname, "the case has no notes", field="notes", hint="add at least one source note"))
    for nid, fld, val in entries:
        if not _check_id(report, fname, None, fld, nid):
            continue
        meta: dict = {}
        if isinstance(val, dict):
            bad = [k for k in val if k not in NOTE_OBJ_KEYS + ("note_id",)]
            if bad:
                report.add(Issue(fname, f"unknown key(s) {_short(', '.join(bad), 300)} in note {nid}", field=fld,
                                 hint=f"allowed: {', '.join(NOTE_OBJ_KEYS)}"))
                continue
            meta, val = val, val.get("text")
        text = _text_field(report, fname, None, fld, val, f"note {nid} text")
        extra = [_opt_text(report, fname, None, f"{fld}.{k}", meta.get(k)) for k in NOTE_OBJ_KEYS[1:]]
        if text is None or _INVALID in extra:
            continue
        c.add_note(report, fname, None, cid, Note(nid, text, *extra))
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
                report.add(Issue(fname, f"unknown key(s) {_short(', '.join(bad), 300)}", field=fld,
                                 hint=f"allowed: {', '.join(SUMMARY_OBJ_KEYS)}"))
                continue
            sid = _scalar(report, fname, None, fld + ".summary_id", s.get("summary_id"))
            if sid is None:
                continue
            sid = sid or f"{cid}-s{i + 1}"
            text = _text_field(report, fname, None, fld + ".text", s.get("text"), "summary text")
            meta = [_opt_text(report, fname, None, f"{fld}.{k}", s.get(k))
                    for k in ("generator_model", "quality_group", "prompt_variant")]
            if text is not None and _INVALID not in meta and _check_id(report, fname, None, fld + ".summary_id", sid):
                c.add_summary(report, fname, None, Summary(sid, cid, text, *meta))
    if "summary" in obj:
        sid = _scalar(report, fname, None, "summary_id", obj.get("summary_id"))
        if sid is None:
            return
        sid = sid or cid
        text = _text_field(report, fname, None, "summary", obj.get("summary"), "summary text")
        meta = [_opt_text(report, fname, None, k, obj.get(k)) for k in ("generator_model", "quality_group",
                                                                          "prompt_variant")]
        if text is not None and _INVALID not in meta and _check_id(report, fname, None, "summary_id", sid):
            c.add_summary(report, fname, None, Summary(sid, cid, text, *meta))


# --------------------------------------------------------------------------- entry points

DATA_SUFFIXES = (".csv", ".jsonl", ".json")


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
                    names = sorted(e.name for e in it if os.path.splitext(e.name)[1].lower() in DATA_SUFFIXES
                                   and not e.is_dir())
                found = [path / n for n in names]
            except OSError as exc:
                report.add(Issue(str(path), f"cannot list the folder: {exc.strerror or exc}",
                                 hint="check the path and permissions"))
                continue
            if not found:
                report.add(Issue(str(path), "folder holds no .csv, .jsonl or .json file",
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
    if "," not in first:
        return None
    try:
        header = [h.strip() for h in next(csv.reader([first]))]
    except (csv.Error, StopIteration):
        return None
    if _detect_table(path, header) is not None:
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
    max_mb = _resolve_max_mb(opts)
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


def _load(paths, opts: LoadOptions, max_mb: float, context: Optional[Dataset],
          name: Optional[str]) -> tuple[Dataset, ValidationReport]:
    report = ValidationReport()
    c = _Collector()
    if opts.mapping is not None:
        clash = opts.mapping.problems()
        for fld, msg in clash:
            report.add(Issue("column mapping", msg, field=fld, hint="correct the mapping's entries"))
        if clash:
            raise DatasetInvalid(report)
    for path in _expand(paths, report):
        fname = str(path)
        report.files.append(fname)
        stem = path.stem.lower()
        supplies = {stem} if stem in TABLE_COLUMNS else {"*"}
        text = read_text_file(path, report, max_mb)
        if text is None:
            if path.suffix.lower() == ".json":  # one case file: only its own case and summary are unknown
                c.rejected_cases.add(path.stem)
                c.rejected_summaries.add(path.stem)
            else:
                c.broken.update(supplies)
            continue
        suffix = path.suffix.lower()
        fmt = {".json": "json", ".jsonl": "jsonl", ".csv": "csv"}.get(suffix)
        sniffed = ""
        if fmt is None:
            fmt = _sniff(path, text)
            if fmt is None:
                report.add(Issue(fname, f"cannot tell the format of {path.name}",
                                 hint="name it .json (one case), .jsonl (a bundle table) or .csv (a bundle table, "
                                      "a ratings export or a dialogue CSV)"))
                c.broken.update(supplies)
                continue
            sniffed = " (format detected from the content)"
        if fmt == "json":
            report.formats[fname] = "case JSON" + sniffed
            _read_case_json(c, report, path, text, opts.mapping)
            continue
        parsed = _read_jsonl(path, text, report) if fmt == "jsonl" else _read_csv(path, text, report)
        if parsed is None:
            c.broken.update(supplies)
            continue
        header, rows = parsed
        if opts.mapping is not None:
            clash = opts.mapping.problems(header)
            for fld, msg in clash:
                report.add(Issue(fname, f"column mapping: {msg}", line=1, field=fld,
                                 hint="correct the mapping's 'rename' / 'ignore' entries"))
            if clash:
                c.broken.update(supplies)
                continue
            header, rows = opts.mapping.apply(header, rows)
        table = _detect_table(path, header)
        if table == "dialogue":
            report.formats[fname] = "dialogue CSV" + sniffed
            _read_dialogue(c, report, path, header, rows, opts)
        elif table is not None:
            report.formats[fname] = f"bundle table '{table}'" + sniffed
            _read_table(c, report, path, table, header, rows, opts)
        elif fmt == "csv":
            report.formats[fname] = "wide ratings CSV" + sniffed
            _read_wide_ratings(c, report, path, header, rows, opts)
        else:
            report.add(Issue(fname, "cannot tell which table this JSONL file holds", line=1,
                             hint="name it cases/notes/summaries/ratings.jsonl"))
            c.broken.update(supplies)
    _injection_warnings(c, report)
    ds = _assemble(c, report, context, name or _default_name(paths))
    report.counts = {"cases": len(ds.cases), "notes": sum(len(k.notes) for k in ds.cases),
                     "summaries": len(ds.summaries), "ratings": len(ds.ratings)}
    if not report.ok:
        raise DatasetInvalid(report)
    return ds, report


def _injection_warnings(c: "_Collector", report: ValidationReport) -> None:
    """A warning (not an error: the data may be genuine) for every text that addresses an AI grader rather than a
    clinician — chat control strings, our prompt's tag names, an answer object, instructions to the grader."""
    from engine.llm.injection import scan

    def warn(fname, row, fld, what, text):
        found = scan(text)
        if found:
            kinds = ", ".join(sorted({x.rule for x in found}))
            excerpt = " ".join(found[0].excerpt.split())[:120]
            report.add(Issue(fname, f"{what} holds text addressed to an AI grader ({kinds}): \u201c{excerpt}\u201d",
                             row=row.number if row else None, line=row.line if row else None, field=fld,
                             severity="warning",
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
    opened = _open_regular(path, ValidationReport())
    if opened is None:
        return None
    fd, _ = opened
    try:
        head = _read_fd(fd, (1 << 20) - 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    for bom, codec, _ in _BOMS:
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
            return [h.strip() for h in next(csv.reader(io.StringIO(text, newline="")), [])] or None
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
    if not header or _detect_table(p, header) is not None:
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


def _assemble(c: _Collector, report: ValidationReport, context: Optional[Dataset], name: str) -> Dataset:
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
