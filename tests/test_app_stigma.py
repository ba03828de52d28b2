"""AppTest of stigmatizing language on the pages: highlighted in the notes and the summary with the
category on hover and a legend, carried forward vs introduced on the Case page, the detector's answer beside the
raters' and the LLM's for the two PDSQI-9 items, per-group rates on the Evidence page, and agreement on the
Agreement page."""
import html as html_lib
import re

from streamlit.testing.v1 import AppTest

from conftest import _run


def _marks(at: AppTest) -> list[tuple[str, str]]:
    """(title, marked text) of every highlight in the page's Markdown."""
    out = []
    for m in at.markdown:
        for title, text in re.findall(r'<mark title="([^"]*)"[^>]*>(.*?)</mark>', m.value, re.S):
            out.append((html_lib.unescape(title), html_lib.unescape(re.sub(r"<br>", "\n", text))))
    return out


def _pick_summary(at: AppTest, sid: str) -> AppTest:
    radio = next(r for r in at.radio if sid in [o.replace("\\", "") for o in r.options])
    radio.set_value(sid)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_case_page_highlights_carried_and_introduced_language():
    at = _run("pages/case.py", case_id="gi-01")
    # the notes: "alcoholic" and "noncompliant" in a note, with the legend
    marks = _marks(at)
    assert any(t.lower() == "alcoholic" and title.startswith("stereotyping") for title, t in marks), marks
    assert any("Stigmatizing language (hover a mark for its category)" in m.value for m in at.markdown)
    # gi-01-s3 copies "noncompliant" from the notes: carried forward, with its note
    at = _pick_summary(at, "gi-01-s3")
    carried = [title for title, t in _marks(at) if t == "noncompliant" and "carried forward from note" in title]
    assert carried, _marks(at)
    assert any("1 carried forward from the notes" in c.value for c in at.caption)
    # the two PDSQI-9 items: the detector's row beside the raters'
    table = next(d.value for d in at.dataframe if "Stigmatizing (notes)" in d.value.columns)
    det = table[table["rater"] == "Stigma detector (lexicon, no LLM)"].iloc[0]
    assert det["Stigmatizing (notes)"] == "yes" and det["Stigmatizing (summary)"] == "yes"
    # the Evidence tab lists it with where it came from
    hits = next(d.value for d in at.dataframe if "carried / introduced" in d.value.columns)
    assert "carried forward from note" in " ".join(hits["carried / introduced"])


def test_case_page_marks_introduced_language():
    at = _run("pages/case.py", case_id="endo-02")
    at = _pick_summary(at, "endo-02-s3")  # "he claims he ran out of insulin" — the notes say "claims" too
    titles = [title for title, t in _marks(at) if t.lower() == "claims"]
    assert titles and all(title.startswith("credibility") for title in titles), _marks(at)


def test_case_page_without_stigma_has_no_marks_and_says_no():
    at = _run("pages/case.py", case_id="card-01")
    assert not [m for m in _marks(at) if m[0] != "omitted fact"]  # MED-OMIT's omitted facts are marked too
    table = next(d.value for d in at.dataframe if "Stigmatizing (notes)" in d.value.columns)
    det = table[table["rater"] == "Stigma detector (lexicon, no LLM)"].iloc[0]
    assert det["Stigmatizing (notes)"] == "no" and det["Stigmatizing (summary)"] == "no"


def test_evidence_page_rates_per_group():
    at = _run("pages/evidence.py")
    per = next(d.value for d in at.dataframe if "summary stigmatizing" in d.value.columns)
    assert len(per) == 36 and (per["summary stigmatizing"] == "yes").sum() == 6
    by_q = next(d.value for d in at.dataframe if "quality group" in d.value.columns
                and "with stigmatizing language" in d.value.columns)
    assert set(by_q["quality group"]) == {"high", "medium", "low"}
    assert by_q["summaries"].sum() == 36


def test_agreement_page_reports_the_detector_beside_the_raters():
    at = _run("pages/agreement.py")
    t = next(d.value for d in at.dataframe if "detector κ (95% CI)" in d.value.columns)
    assert list(t["item"]) == ["Stigmatizing (notes)", "Stigmatizing (summary)"]
    assert list(t["summaries"]) == [36, 36] and list(t["detector agrees"]) == ["36 of 36", "36 of 36"]
