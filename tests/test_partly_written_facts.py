"""An omitted list fact that the summary writes in part names what it writes and what it leaves out.

A reviewer read card-01-s3's MED-OMIT list: "CXR: cardiomegaly, bilateral interstitial edema, small bilateral pleural
effusions" was listed omitted although the summary writes "interstitial edema on chest radiograph". The decision is
right (the cardiomegaly and the effusions are not in the summary), but the fact was decided whole, so the list showed
the whole line as if the summary said nothing of it. The rows now read the list's items against the summary's words
(engine.evidence.medomit._partly) and head the fact by the items left out.
"""
import json

from conftest import ROOT, TIMEOUT
from engine.evidence.medomit._partly import list_items, written_items
from engine.evidence.medomit.result import MedOmitResult
from engine.evidence.medomit.rows import omitted_fact_rows
from engine.sample import SAMPLE_MEDOMIT

CXR = "CXR: cardiomegaly, bilateral interstitial edema, small bilateral pleural effusions."


def test_list_items_follow_the_heading_and_keep_offsets():
    items = list_items(CXR)
    assert [i.text for i in items] == ["cardiomegaly", "bilateral interstitial edema",
                                       "small bilateral pleural effusions"]
    assert all(CXR[i.start:i.end] == i.text for i in items)
    assert [i.text for i in list_items("2. Persistent AF, rate controlled.")] == ["Persistent AF", "rate controlled"]
    assert [i.text for i in list_items("Labs: NT-proBNP 2,140 pg/mL, Cr 1.1 (baseline 0.9, stable)")] == \
        ["NT-proBNP 2,140 pg/mL", "Cr 1.1 (baseline 0.9, stable)"]  # no cut in a number or in brackets
    assert list_items("Apixaban 5 mg p.o. b.i.d.") == []  # one item is no list


def test_an_item_is_written_only_with_its_numbers_and_more_than_one_common_word():
    said = "Admitted with interstitial edema; K 4.6 mEq/L at discharge; seen the day before."
    got = written_items("CXR: cardiomegaly, bilateral interstitial edema, small bilateral pleural effusions", said)
    assert [i.text for i in got.written] == ["bilateral interstitial edema"] and got.partly
    got = written_items("Discharge labs: Cr 1.2 mg/dL, K 4.2 mEq/L", said)
    assert got.written == ()  # the unit is written, the value is not
    got = written_items("Premedicate the day before, day of, and day after", said)
    assert "day of" not in [i.text for i in got.written]


def _card01_s3_row(summary_text):
    from engine.sample import SAMPLE_NAME  # noqa: F401  (the shipped rows are the sample's)
    from engine.data.loading import load_paths
    from conftest import BUNDLE

    ds, _ = load_paths([BUNDLE])
    case = ds.case("card-01")
    line = next(x for x in SAMPLE_MEDOMIT.read_text(encoding="utf-8").splitlines()
                if json.loads(x)["summary_id"] == "card-01-s3")
    res = MedOmitResult.from_json(json.loads(line)["result"])
    rows = omitted_fact_rows(res, None, summary_text(ds), {n.note_id: n.text for n in case.notes})
    note2 = next(n.text for n in case.notes if n.note_id == "2")
    return next(r for r in rows if r["text"] == CXR), note2


def test_the_shipped_cxr_fact_is_headed_by_what_card_01_s3_leaves_out():
    row, note2 = _card01_s3_row(lambda ds: ds.summary("card-01-s3").text)
    assert row["parts from"] == "words" and row["written"] == ["bilateral interstitial edema"]
    assert row["left out"] == ["cardiomegaly", "small bilateral pleural effusions"]
    assert row["headline"] == "in part — left out: cardiomegaly … small bilateral pleural effusions"
    assert [note2[a:b] for a, b in row["regions"]] == row["left out"]  # the note is marked at the items left out


def test_without_the_summary_the_row_is_the_whole_fact():
    row, _ = _card01_s3_row(lambda ds: "")
    assert row["headline"] == CXR and row["left out"] == [] and row["written"] == []


def test_case_page_shows_what_the_summary_writes_of_the_cxr_fact():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
    at.query_params["dataset"], at.query_params["case"], at.query_params["summary"] = "sample", "card-01", \
        "card-01-s3"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    radio = next(r for r in at.radio if r.label.startswith("Omitted facts, "))
    shown = {o: o.replace("\\", "").replace("\u2060", "") for o in radio.options}  # markdown escapes, word joiners
    pick = next(o for o, text in shown.items() if "left out: cardiomegaly … small bilateral pleural effusions" in text)
    radio.set_value(pick).run()
    assert not at.exception, [e.value for e in at.exception]
    detail = next(m.value for m in at.markdown if "only in part" in m.value)
    assert "Written:" in detail and "bilateral interstitial edema" in detail and "decided whole" in detail
