"""Input that used to import wrong data without an error: colliding column mappings, lenient rating values, a
header-only file, UTF-16 files with a byte-order mark and files in another encoding."""
import json

import pytest

from conftest import BUNDLE, FORMATS
from engine.data.mapping import LoadOptions, RatingsMapping
from engine.data.loading import load_paths
from engine.data.validation import DatasetInvalid


def _fail(paths, mapping=None) -> str:
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([str(p) for p in paths], LoadOptions(mapping=mapping))
    return exc.value.report.format_text()


def _bundle_copy(tmp_path, **tables):
    d = tmp_path / "b"
    d.mkdir()
    for p in BUNDLE.glob("*.csv"):
        (d / p.name).write_text(tables.get(p.stem, p.read_text(encoding="utf-8")), encoding="utf-8")
    return d


def test_two_renames_onto_one_name_are_refused_before_reading(tmp_path):
    m = RatingsMapping.from_dict({"rename": {"a": "text", "b": "text"}})
    out = _fail([BUNDLE], m)
    assert "'a', 'b' all onto 'text'" in out and "column mapping" in out


def test_rename_onto_a_column_the_file_already_has_is_refused(tmp_path):
    import csv
    import io

    rows = list(csv.reader(io.StringIO((BUNDLE / "notes.csv").read_text(encoding="utf-8"), newline="")))
    buf = io.StringIO()
    csv.writer(buf).writerows([rows[0] + ["draft"]] + [r + ["a draft"] for r in rows[1:] if r])
    d = _bundle_copy(tmp_path, notes=buf.getvalue())
    m = RatingsMapping.from_dict({"rename": {"draft": "text"}})
    out = _fail([d], m)
    assert "rename 'draft' -> 'text'" in out and "would be overwritten" in out


def test_case_json_rename_cannot_replace_the_real_summary(tmp_path):
    f = tmp_path / "case1.json"
    f.write_text(json.dumps({"target_specialty": "Cardiology", "notes": {"1": "Note text."},
                             "summary": "The real summary.", "draft": "A draft."}))
    out = _fail([f], RatingsMapping.from_dict({"rename": {"draft": "summary"}}))
    assert "rename 'draft' -> 'summary'" in out


def test_one_wide_column_mapped_to_two_items_is_refused():
    m = RatingsMapping.from_dict({"summary_col": "record_id", "rater_col": "rater",
                                  "items": {"accurate": "q_acc", "thorough": "q_acc"}})
    out = _fail([FORMATS / "redcap_ratings.csv"], m)
    assert "column 'q_acc' is mapped twice" in out


@pytest.mark.parametrize("bad", ["4e0", "\u0664", "\uff14", "+4", "4,0"])
def test_rating_values_must_be_ascii_integers(tmp_path, bad):
    ratings = (BUNDLE / "ratings.csv").read_text(encoding="utf-8").split("\n")
    header, first = ratings[0], ratings[1].split(",")
    cols = header.split(",")
    first[cols.index("value")] = f'"{bad}"'
    d = _bundle_copy(tmp_path, ratings="\n".join([header, ",".join(first), *ratings[2:]]))
    out = _fail([d])
    assert "row 1" in out and "field 'value'" in out


def test_surrounding_spaces_are_trimmed(tmp_path):
    """Spaces around the fields of a rating row (ids, item, group, value) are dropped: the rows load as the same
    ratings as without them. The second row's ids are left as they are, so it is read by the path for ids
    already seen."""
    ratings = (BUNDLE / "ratings.csv").read_text(encoding="utf-8").split("\n")
    header, cols = ratings[0], ratings[0].split(",")
    rows = [dict(zip(cols, ln.split(","))) for ln in ratings[1:3]]
    assert (rows[0]["summary_id"], rows[0]["rater_id"]) == (rows[1]["summary_id"], rows[1]["rater_id"])
    padded = [",".join(f'"  {v} "' for v in rows[0].values()),
              ",".join(v if c in ("summary_id", "rater_id") else f'" {v}  "' for c, v in rows[1].items())]
    d = _bundle_copy(tmp_path, ratings="\n".join([header, *padded, *ratings[3:]]))
    plain, _ = load_paths([str(BUNDLE)])
    spaced, _ = load_paths([str(d)])
    for row in rows:
        key = (row["summary_id"], row["rater_id"], row["item"])
        want = [r for r in plain.ratings if (r.summary_id, r.rater_id, r.item) == key]
        assert len(want) == 1 and want[0].rater_group == row["rater_group"]
        assert [r for r in spaced.ratings if (r.summary_id, r.rater_id, r.item) == key] == want
    assert spaced.ratings == plain.ratings


def test_a_header_only_file_is_an_error(tmp_path):
    header = (BUNDLE / "ratings.csv").read_text(encoding="utf-8").split("\n")[0]
    d = _bundle_copy(tmp_path, ratings=header + "\n")
    assert "no rows after the header" in _fail([d])


@pytest.mark.parametrize("codec,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
                                       ("utf-32-le", b"\xff\xfe\x00\x00")])
def test_utf16_and_utf32_with_a_bom_are_read(tmp_path, codec, bom):
    d = tmp_path / "u"
    d.mkdir()
    for p in BUNDLE.glob("*.csv"):
        (d / p.name).write_bytes(bom + p.read_text(encoding="utf-8").encode(codec))
    ds, rep = load_paths([str(d)])
    ref, _ = load_paths([str(BUNDLE)])
    assert rep.ok and ds.content_hash() == ref.content_hash()


def test_another_encoding_without_bom_gets_one_clear_message(tmp_path):
    d = _bundle_copy(tmp_path)
    notes = (d / "notes.csv").read_text(encoding="utf-8").replace("approx.", "approx. caf\u00e9", 1)
    (d / "notes.csv").write_bytes(notes.encode("cp1252"))
    out = _fail([d])
    assert "is not UTF-8 text: it looks like Windows-1252 (cp1252)" in out
    assert out.count("notes.csv") >= 1 and "unknown column" not in out and "missing column" not in out


@pytest.mark.parametrize("text, codec, named", [
    ("Пациент жалуется на боль в груди, одышку и слабость в течение трёх дней. " * 20, "cp1251", "cp1251"),
    ("Patient reports café-au-lait spots; naïve to therapy; “quoted” remark. " * 20, "cp1252", "cp1252"),
])
def test_the_encoding_named_is_charset_normalizers_guess(text, codec, named):
    from engine.data.files import guess_encoding

    plain, got = guess_encoding(text.encode(codec))
    assert got == named and named in plain
