"""Reading input files safely: regular files only, a size limit, the encoding from the byte-order mark (else
UTF-8), and CSV / JSON-lines rows with their line numbers.

A file is read as a stream of bounded chunks (a ``.gz`` file decompressed chunk by chunk), the size limit applying
to the bytes as they arrive (decompressed bytes for a ``.gz``): a small file that expands to gigabytes is stopped at
the limit, and binary content (a NUL byte) is refused where it is met, before the rest is read.
"""
from __future__ import annotations

import csv
import io
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from engine.data.strict_json import JsonProblem, json_type, loads_strict
from engine.data.validation import Issue, ValidationReport


_MB = 1_000_000


def resolve_max_mb(asked: Optional[float]) -> float:
    """The per-file size limit in MB: ``asked`` (a load option) when given, else the setting."""
    if asked is not None:
        mb = float(asked)
        if not 0 < mb <= 1_000_000:
            raise ValueError(f"file size limit {asked!r} MB is not a positive number of MB")
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


def open_regular(path: Path, report: ValidationReport) -> Optional[tuple[int, os.stat_result]]:
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


def read_fd(fd: int, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes (one more than allowed tells that the file is too long)."""
    chunks, got = [], 0
    while got <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _limit_hint(max_mb: float) -> str:
    return (f"split the file, or raise the limit: set the environment variable SUMCHECK_MAX_FILE_MB (e.g. "
            f"SUMCHECK_MAX_FILE_MB={max(int(max_mb * 4), 1)}) or 'max_file_mb' in the settings file")


def _too_large(path: Path, st: os.stat_result, limit: int, max_mb: float, report: ValidationReport) -> bool:
    """Whether the file is over the limit by its size (then an issue)."""
    if st.st_size > limit:
        report.add(Issue(str(path), f"file is {st.st_size / _MB:,.1f} MB, over the limit of {max_mb:g} MB per "
                                    "input file", hint=_limit_hint(max_mb)))
        return True
    return False


BOMS = ((b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"), (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"),
         (b"\xef\xbb\xbf", "utf-8", "UTF-8"), (b"\xfe\xff", "utf-16-be", "UTF-16"), (b"\xff\xfe", "utf-16-le", "UTF-16"))


_PLAIN_NAMES = {"cp1252": "Windows-1252 (cp1252)", "latin_1": "Latin-1 (ISO-8859-1)", "cp1250": "Windows-1250 (cp1250)",
                "cp1251": "Windows-1251 (cp1251)", "mac_roman": "Mac Roman", "shift_jis": "Shift JIS",
                "utf_16": "UTF-16 without a byte-order mark", "utf_16_le": "UTF-16 without a byte-order mark",
                "utf_16_be": "UTF-16 without a byte-order mark", "utf_32": "UTF-32 without a byte-order mark"}


def guess_encoding(raw: bytes) -> tuple[str, str]:
    """(plain-words name, Python codec) of the encoding that bytes which are not UTF-8 look like, by
    ``charset-normalizer``. When Windows-1252 is among the encodings it finds plausible (a match or one that
    decodes the bytes to the same text), that one is named (its
    best guess for Western text is often a neighbouring code page such as cp1250, which reads "ï" as "ď"):
    it is what US hospital exports use."""
    from charset_normalizer import from_bytes

    matches = from_bytes(raw[:262144])
    best = matches.best()
    if best is None:
        return "binary data or an unknown encoding", ""
    plausible = {e for m in matches for e in (m.encoding, *m.could_be_from_charset)}
    codec = "cp1252" if "cp1252" in plausible else best.encoding
    return _PLAIN_NAMES.get(codec, codec), codec


def _decode(path: Path, raw: bytes, report: ValidationReport) -> Optional[str]:
    """Text of a file: UTF-8, or UTF-16 / UTF-32 / UTF-8 with a byte-order mark; anything else gets one message
    that names the encoding it looks like."""
    for bom, codec, label in BOMS:
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
        enc, codec = guess_encoding(raw)
        iconv = codec.replace("_", "-") if codec and not codec.startswith("utf") else "cp1252"
        report.add(Issue(str(path), f"is not UTF-8 text: it looks like {enc} (byte 0x{raw[exc.start]:02x} at offset "
                                     f"{exc.start})", line=line,
                         hint="re-save the file as UTF-8 (in a spreadsheet: 'CSV UTF-8'; or "
                              f"'iconv -f {iconv} -t utf-8')"))
        return None


CHUNK = 1 << 20  # bytes read, or decompressed, at a time


def _file_chunks(fd: int):
    """The bytes of an open file, a chunk at a time."""
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return
        yield chunk


def gunzip_chunks(chunks):
    """The content of gzip data given in chunks, decompressed a chunk (at most :data:`CHUNK` bytes) at a time, so
    that a small file that expands to gigabytes is never inflated at once; concatenated members are read one after
    the other. Raises ``zlib.error`` for data that is not gzip or ends before its compressed stream does."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    started = False  # the current member has had input
    for data in chunks:
        while data:
            started = True
            out = d.decompress(data, CHUNK)
            if out:
                yield out
            if d.eof:
                data = d.unused_data
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                started = False
            else:
                data = d.unconsumed_tail
    while started:  # output still held back by the chunk bound
        out = d.decompress(b"", CHUNK)
        if not out:
            break
        yield out
    if started and not d.eof:
        raise zlib.error("the file ends before the compressed data does")


_WIDE_BOMS = tuple(bom for bom, codec, _ in BOMS if not codec.startswith("utf-8"))


_MAGIC = ((b"PK\x03\x04", "a ZIP archive (an Excel .xlsx or Word .docx file is one)"),
          (b"\xd0\xcf\x11\xe0", "an old Office file (Excel .xls, Word .doc)"), (b"%PDF", "a PDF"),
          (b"SQLite format 3\0", "an SQLite database"), (b"BZh", "a bzip2-compressed file"),
          (b"\xfd7zXZ\0", "an xz-compressed file"), (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
          (b"\x1f\x8b", "a gzip-compressed file (name it .gz)"), (b"PAR1", "a Parquet file"))


def _nul_issue(path: Path, what: str, line: int, compressed: bool, head: bytes = b"") -> Issue:
    where = "decompressed content" if compressed else "file"
    kind = next((f" (it looks like {name})" for magic, name in _MAGIC if head.startswith(magic)), "")
    return Issue(str(path), f"holds binary data, not UTF-8 text{kind}: {what} of the {where}",
                 line=line, hint="SumCheck reads text exports (CSV, JSON, JSON lines, NDJSON; UTF-8, or UTF-16/32 with "
                                 "a byte-order mark): check that this is the right file, or export the data again "
                                 "as UTF-8 text")


def read_capped(path: Path, chunks, report: ValidationReport, max_mb: float, compressed: bool) -> Optional[bytes]:
    """The bytes of a stream of chunks, stopped (an issue, None) as soon as they pass the size limit or hold a NUL
    byte (binary data: a file in UTF-16 or UTF-32 with a byte-order mark is checked after decoding instead)."""
    limit = int(max_mb * _MB)
    out: list[bytes] = []
    got = checked = n_checked = 0  # bytes read; bytes and chunks checked for NUL
    wide: Optional[bool] = None
    try:
        for chunk in chunks:
            got += len(chunk)
            if got > limit:
                report.add(Issue(str(path), (f"decompresses to more than the limit of {max_mb:g} MB per input file"
                                             if compressed else f"file grew past the limit of {max_mb:g} MB per "
                                                                "input file while it was read"),
                                 hint=_limit_hint(max_mb)))
                return None
            out.append(chunk)
            if wide is None and got >= 4:
                wide = b"".join(out[:4])[:4].startswith(_WIDE_BOMS)
            while wide is False and n_checked < len(out):
                part = out[n_checked]
                at = part.find(b"\0")
                if at >= 0:
                    line = sum(c.count(b"\n") for c in out[:n_checked]) + part.count(b"\n", 0, at) + 1
                    report.add(_nul_issue(path, f"a NUL byte at offset {checked + at:,}", line, compressed,
                                          out[0][:16]))
                    return None
                checked += len(part)
                n_checked += 1
    except zlib.error as exc:
        report.add(Issue(str(path), f"is not a readable gzip file ({exc})",
                         hint="the file is truncated or not compressed; export it again"))
        return None
    data = b"".join(out)
    if wide is None and not data.startswith(_WIDE_BOMS) and b"\0" in data:
        at = data.index(b"\0")
        report.add(_nul_issue(path, f"a NUL byte at offset {at:,}", data.count(b"\n", 0, at) + 1, compressed,
                              data[:16]))
        return None
    return data


def read_text_file(path: Path, report: ValidationReport, max_mb: Optional[float] = None) -> Optional[str]:
    """A regular text file within the size limit, decoded (UTF-8, or by its byte-order mark). A ``.gz`` file is
    decompressed as it is read, the limit applying to the decompressed bytes; binary content (a NUL) is refused
    as soon as it is met. Otherwise an issue in ``report`` and None."""
    max_mb = resolve_max_mb(None) if max_mb is None else max_mb
    opened = open_regular(path, report)
    if opened is None:
        return None
    fd, st = opened
    compressed = path.name.lower().endswith(".gz")
    try:
        if _too_large(path, st, int(max_mb * _MB), max_mb, report):
            return None
        chunks = _file_chunks(fd)
        raw = read_capped(path, gunzip_chunks(chunks) if compressed else chunks, report, max_mb, compressed)
    except OSError as exc:
        report.add(Issue(str(path), f"cannot read file: {exc.strerror or exc}", hint="check the path and permissions"))
        return None
    finally:
        os.close(fd)
    if raw is None:
        return None
    text = _decode(path, raw, report)
    del raw
    if text is not None and "\0" in text:  # UTF-16 or UTF-32: a NUL character
        at = text.index("\0")
        report.add(_nul_issue(path, f"a NUL character at character {at:,}", text.count("\n", 0, at) + 1,
                              compressed))
        return None
    return text


def data_suffix(path: Path) -> str:
    """The suffix that names a file's format, under a ``.gz`` ("notes.csv.gz" -> ".csv")."""
    p = Path(path.stem) if path.suffix.lower() == ".gz" else path
    return p.suffix.lower()


def split_lines(text: str) -> list[str]:
    """Physical lines (``\\n`` / ``\\r\\n``). Unlike ``str.splitlines`` this does not split inside JSON strings
    at U+2028, U+0085 and the like, which JSON allows unescaped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [x[:-1] if x.endswith("\r") else x for x in lines]


@dataclass
class InputRow:
    number: int  # 1-based data row
    line: int
    values: dict[str, object]


CSV_DELIMITERS = ",;\t|"


def csv_delimiter(text: str) -> str:
    """The delimiter of a CSV text, by ``csv.Sniffer`` on its header line (comma, semicolon — what spreadsheets
    write where the comma is the decimal mark —, tab or bar); a comma when the header has one column."""
    first = next((ln for ln in split_lines(text[:65536]) if ln.strip()), "")
    try:
        return csv.Sniffer().sniff(first, delimiters=CSV_DELIMITERS).delimiter
    except csv.Error:
        return ","


def read_csv(path: Path, text: str, report: ValidationReport) -> Optional[tuple[list[str], list[InputRow]]]:
    fname = str(path)
    if not text.strip():
        report.add(Issue(fname, "file is empty", hint="export the data again"))
        return None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=csv_delimiter(text), strict=True)
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
    rows: list[InputRow] = []
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
        rows.append(InputRow(number, start_line, dict(zip(header, rec))))
    if number == 0:
        report.add(Issue(fname, "no rows after the header", line=1,
                         hint="the file holds only its column names: export it again with its data"))
        return None
    return header, rows


UNREADABLE = object()  # what json_lines yields for a line that is not JSON (already reported)


def json_lines(fname: str, lines, report: ValidationReport, again: str = "export the file again"):
    """(record number, line number, object) for each non-blank line of a JSON-lines text, parsed strictly; a line
    that does not parse is reported (file, record, line, why) and yields :data:`UNREADABLE`."""
    number = 0
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        number += 1
        try:
            obj = loads_strict(line)
        except JsonProblem as exc:
            report.add(Issue(fname, str(exc).replace(" at line 1 column", " at column"), row=number, line=lineno,
                             hint=exc.hint or f"the line is cut off or malformed; {again}"))
            obj = UNREADABLE
        yield number, lineno, obj


def read_jsonl(path: Path, text: str, report: ValidationReport) -> Optional[tuple[list[str], list[InputRow]]]:
    fname = str(path)
    rows: list[InputRow] = []
    keys: dict[str, None] = {}
    number = 0
    ok = True
    for number, lineno, obj in json_lines(fname, split_lines(text), report):
        if obj is UNREADABLE:
            ok = False
            continue
        if not isinstance(obj, dict):
            report.add(Issue(fname, f"each line must be a JSON object, not {json_type(obj)}", row=number,
                             line=lineno, hint='write one object per line, e.g. {"case_id": "c1", ...}'))
            ok = False
            continue
        for k in obj:
            keys[k] = None
        rows.append(InputRow(number, lineno, obj))
    if number == 0:
        report.add(Issue(fname, "file is empty", hint="export the data again"))
        return None
    return (list(keys), rows) if ok else None
