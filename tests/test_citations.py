"""One citations module: every form found in practice, one id grammar; parsing and stripping agree."""
import pytest

from engine.core.citations import DEFAULT_STYLE, cited_ids, detect_style, find, leading_run, strip


@pytest.mark.parametrize("text,ids", [
    ("LVEF 35%. <NoteID:2>", ["2"]),
    ("LVEF 35%. <Note ID:2>", ["2"]),
    ("LVEF 35%. <Note ID: 2>", ["2"]),
    ("LVEF 35% <note_id:2>.", ["2"]),
    ("AF on apixaban <Note ID:1>, <Note ID:3>.", ["1", "3"]),
    ("AF <NoteID:1,3>", ["1", "3"]),
    ("AF [Note 3] and CKD [Notes 1, 4].", ["3", "1", "4"]),
    ("AF [Note ID: n-2]", ["n-2"]),
    ("Dose 5 mg [see plan]. No citation here.", []),
])
def test_forms(text, ids):
    assert cited_ids(text) == ids


def test_bare_numbers_need_a_consistent_dataset():
    text = "Apixaban started [1]. Echo LVEF 35% [2, 3]."
    assert cited_ids(text) == []  # not read by default: [1] may be anything
    style = detect_style([text, "HFrEF [2].", "CKD 3 [3]."], note_ids=["1", "2", "3"])
    assert "bracket_number" in style.forms and style.written == "[n]"
    assert cited_ids(text, style) == ["1", "2", "3"]
    # mixed with another form, or naming notes that do not exist: not a citation style
    assert "bracket_number" not in detect_style([text, "HFrEF <NoteID:2>."], ["1", "2", "3"]).forms
    assert "bracket_number" not in detect_style([text, "x [40]", "y [41]"], ["1", "2"]).forms


def test_detect_written_shape_for_the_prompt():
    style = detect_style(["A <Note ID:1>, <Note ID:3>.", "B <Note ID:2>.", "C <Note ID:2>"])
    assert style.written == "<Note ID:n>"
    assert detect_style(["A <NoteID:1>."]).written == "<NoteID:n>"
    assert detect_style(["no citations at all"]).written == "<NoteID:n>"


def test_strip_removes_runs_with_their_separators():
    assert strip("AF on apixaban <Note ID:1>, <Note ID:3>. Echo done <NoteID:2>.") == "AF on apixaban. Echo done."
    t = "AF <Note ID:1>, <Note ID:3>."
    blank = strip(t, keep_offsets=True)
    assert blank == "AF" + " " * (len(t) - 3) + "."  # offsets kept: the run and its separator blanked


def test_find_and_strip_agree():
    text = "A <Note ID:1>, <Note ID:3>; B [Note 2] and <NoteID:4>."
    cites = find(text)
    assert [c.note_ids for c in cites] == [("1",), ("3",), ("2",), ("4",)]
    stripped = strip(text, keep_offsets=True)
    for c in cites:
        assert stripped[c.start:c.end].strip() == ""


def test_leading_run():
    assert leading_run("<Note ID:2>, <Note ID:3>. Next sentence") == len("<Note ID:2>, <Note ID:3>. ")
    assert leading_run("Next sentence <NoteID:2>") == 0
    assert DEFAULT_STYLE.forms == ("angle", "bracket_note")


def test_case_page_badges_for_the_reference_implementation_form():
    from components.case_view import summary_html
    from engine.core.citations import spans

    text = "AF on apixaban <Note ID:1>, <Note ID:3>. Echo [Note 2]. Unknown <Note ID: 9>."
    html = summary_html(text, spans(text), ["1", "2", "3"])
    assert html.count("Note 1</span>") == 1 and html.count("Note 3</span>") == 1 and "Note 2</span>" in html
    assert "&lt;Note ID" not in html  # every tag became a badge
    assert "which is not in this case" in html and html.count("#cf222e") == 1  # note 9 in red


def test_citation_check_on_reference_form_cases():
    """Sentences citing <Note ID:n> lists are not 'missing' (17 of 17 were, before one citations module)."""
    from engine.core.models import Case, Note, Summary

    case = Case("c", "Cardiology", (Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily."),
                                   Note("2", "Echo: LVEF 35%."), Note("3", "Nephrology referral for CKD 3.")))
    summ = Summary("s", "c", "Atrial fibrillation on apixaban. <Note ID:1>, <Note ID:3> LVEF 35%. <Note ID:2>")
    assert [c.note_id for c in summ.citations] == ["1", "3", "2"]
    from engine.evidence.text.sentences import split_sentences

    assert [s.citations for s in split_sentences(summ.text)] == [("1", "3"), ("2",)]


def test_compact_labels_use_the_same_parser():
    from engine.core.citations import compact

    assert compact("AF on apixaban <Note ID:1>, <Note ID:3>. Echo [Note 2].") == "AF on apixaban [1], [3]. Echo [2]."
    assert compact("LVEF 35%. <NoteID:2,4>") == "LVEF 35%. [2, 4]"
