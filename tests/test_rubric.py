"""The PDSQI-9 definition: items, scales, anchors and value parsing."""
import pytest

from engine.core.rubric import ITEM_KEYS, ITEMS, Scale, ValueError_, get_item, parse_value


def test_items_and_scales():
    assert ITEM_KEYS == ("cited", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct",
                         "abstraction", "synthesized", "stigmatizing_notes", "stigmatizing_summary")
    likert = [i for i in ITEMS if i.is_likert]
    assert len(likert) == 8
    assert all(len(i.anchors) == 5 and all(a.strip() for a in i.anchors) for i in likert)
    assert get_item("synthesized").scale is Scale.LIKERT_NA
    assert get_item("abstraction").scale is Scale.BINARY


@pytest.mark.parametrize("key,raw,expected", [
    ("cited", "4", 4.0), ("cited", 5, 5.0), ("cited", "3.0", 3.0),
    ("abstraction", "Yes", 1.0), ("abstraction", "0", 0.0), ("stigmatizing_notes", True, 1.0),
    ("synthesized", "NA", None), ("synthesized", None, None), ("synthesized", "2", 2.0),
])
def test_parse_value_ok(key, raw, expected):
    assert parse_value(get_item(key), raw) == expected


@pytest.mark.parametrize("key,raw", [("cited", "0"), ("cited", "6"), ("cited", "2.5"), ("cited", "NA"),
                                     ("abstraction", "2"), ("accurate", None), ("useful", "x")])
def test_parse_value_bad(key, raw):
    with pytest.raises(ValueError_):
        parse_value(get_item(key), raw)


def test_unknown_item():
    with pytest.raises(KeyError, match="known items"):
        get_item("thoroughness")
