"""Input read as a stream: a gzip file is decompressed a chunk at a time with the size limit on the decompressed
bytes, and binary content (a NUL byte) is refused with its own message as soon as it is met, compressed or not."""
from __future__ import annotations

import gzip
import tracemalloc

import pytest

from engine.data.files import read_text_file
from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions
from engine.data.validation import DatasetInvalid, ValidationReport

NOTES = "case_id,note_id,text\n"
MB = 1_000_000


def _errors(paths, opts=None) -> list:
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([str(p) for p in paths], opts)
    return [i for i in exc.value.report.issues if i.severity == "error"]


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_gzip_of_nul_bytes_is_refused_before_it_is_inflated(tmp_path):
    size = 32 * MB
    p = tmp_path / "radiology.csv.gz"
    p.write_bytes(gzip.compress(b"\0" * size, compresslevel=9))
    assert p.stat().st_size < 100_000  # a small file under any size limit
    errs: list = []
    peak = _peak_bytes(lambda: errs.extend(_errors([p])))
    assert peak < 8 * MB, f"peak {peak / MB:.1f} MB for a file that decompresses to {size / MB:.0f} MB"
    (e,) = errs
    assert e.file == str(p) and "binary data" in e.message and "NUL byte at offset 0" in e.message
    assert "decompressed content" in e.message and "no rows" not in e.message


def test_nul_deep_inside_a_gzip_is_named_with_its_line(tmp_path):
    body = NOTES + "".join(f"c{i},1,Note {i}.\n" for i in range(200_000))  # ~3 MB: several chunks
    p = tmp_path / "notes.csv.gz"
    p.write_bytes(gzip.compress((body + "c9,1,bad\0byte\n").encode()))
    (e,) = _errors([p])
    assert e.file == str(p) and "NUL byte at offset" in e.message and e.line == 200_002


def test_plain_file_with_a_nul_byte_is_refused(tmp_path):
    p = tmp_path / "notes.csv"
    p.write_bytes((NOTES + "c1,1,BP 120/80.\nc1,2,bad \0 byte\n").encode())
    (e,) = _errors([p])
    assert e.file == str(p) and "binary data" in e.message and e.line == 3 and "NUL" in e.message


def test_utf16_with_a_byte_order_mark_is_still_text(tmp_path):
    p = tmp_path / "cases.csv"
    p.write_bytes(b"\xff\xfe" + "case_id,target_specialty\nc1,Cardiology\n".encode("utf-16-le"))
    rep = ValidationReport()
    assert read_text_file(p, rep) == "case_id,target_specialty\nc1,Cardiology\n" and rep.ok
    p.write_bytes(b"\xff\xfe" + "case_id,target_specialty\nc1,Card\0iology\n".encode("utf-16-le"))
    rep = ValidationReport()
    assert read_text_file(p, rep) is None
    assert "NUL character" in rep.issues[0].message and rep.issues[0].line == 2


def test_gzip_over_the_decompressed_limit_is_refused_within_the_limit(tmp_path):
    p = tmp_path / "notes.csv.gz"
    p.write_bytes(gzip.compress((NOTES + "c1,1," + "x" * (6 * MB) + "\n").encode()))
    errs: list = []
    peak = _peak_bytes(lambda: errs.extend(_errors([p], LoadOptions(max_file_mb=2))))
    (e,) = errs
    assert e.file == str(p) and "decompresses to more than the limit of 2 MB" in e.message
    assert peak < 5 * MB, peak


def test_concatenated_gzip_members_over_several_chunks_read_whole(tmp_path):
    first = NOTES + "".join(f"c1,{i},Note {i} {'y' * 20}.\n" for i in range(60_000))
    second = "".join(f"c1,{i},Note {i} {'z' * 20}.\n" for i in range(60_000, 120_000))
    p = tmp_path / "notes.csv.gz"
    p.write_bytes(gzip.compress(first.encode()) + gzip.compress(second.encode()))
    rep = ValidationReport()
    assert read_text_file(p, rep) == first + second and rep.ok


def test_truncated_gzip_is_refused(tmp_path):
    p = tmp_path / "notes.csv.gz"
    p.write_bytes(gzip.compress((NOTES + "c1,1,x\n" * 100_000).encode())[:-50])
    (e,) = _errors([p])
    assert "not a readable gzip file" in e.message and "ends before" in e.message


def test_a_known_binary_format_is_named(tmp_path):
    p = tmp_path / "export.csv"
    p.write_bytes(b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 100)
    (e,) = _errors([p])
    assert "ZIP archive" in e.message and "xlsx" in e.message and "NUL byte at offset 5" in e.message
