"""AppTest of the Evidence page: every column explained, blank (never 'None') empty cells, the chart by group, CSV
downloads, and the empty state that says what to run."""
import html as html_lib
import json
import re

from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from components.evidence_view import COLUMN_HELP
from engine.core.untrusted import html
from fakes import drop_stored_evidence

TIMEOUT = 120
EXPLAINED = ["omission score", "flagged", "note flags", "mean support", "weak sentences", "coverage", "density", "combined g",
             "citation issues", "MED-OMIT weight", "omitted facts", "left out, all other summaries state"]


def _run() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages/evidence.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _seed_embeddings(sid: str) -> None:
    from engine.evidence.support.alignment import alignment_cached
    from engine.evidence.coverage.regions import coverage_cached
    from engine.evidence.embeddings import Embedder
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ds = store.load_dataset("sample")
    s = ds.summary(sid)
    emb = Embedder()
    coverage_cached(store, "sample", ds.case(s.case_id), s, emb)
    alignment_cached(store, "sample", ds.case(s.case_id), s, emb)


def _shown(df_element):
    """The cells as the reader sees them (the Styler's display values)."""
    return dataframe_util.convert_arrow_bytes_to_pandas_df(df_element.proto.arrow_data.styler.display_values)


def test_evidence_page_is_readable_on_the_sample():
    from fakes import seed_medomit

    sid = seed_medomit()
    _seed_embeddings(sid)
    at = _run()
    med = at.dataframe[0]
    emb = next(d for d in at.dataframe if "omission score" in d.value.columns and "summary" in d.value.columns)
    assert "omission score" in emb.value.columns and "MED-OMIT weight" in med.value.columns
    # every column of both tables carries its plain explanation (column help) ...
    for table in (med, emb):
        config = json.loads(table.proto.columns)
        for col in table.value.columns:
            assert config[col]["help"] == COLUMN_HELP[col], col
    # ... and the page explains them in words too
    expl = next(e for e in at.expander if e.label == "What the columns mean")
    text = " ".join(m.value for m in expl.markdown)
    assert all(f"**{c}**" in text for c in EXPLAINED)
    # empty cells are blank: no 'None' / 'nan' anywhere the reader looks
    for table in at.dataframe:
        shown = _shown(table).astype(str)
        assert not shown.isin(["None", "nan", "NaN", "<NA>"]).any().any(), shown.head()
        assert not table.value.astype(object).isin(["None"]).any().any()
    shown = _shown(emb)  # the sample ships its embedding evidence: every summary has it
    assert (shown["mean support"] != "").all() and (shown["omission score"] != "").all()
    flags = dict(zip(emb.value["summary"], shown["note flags"]))
    assert flags["endo-02-s2"] == "note 4 never cited" and flags["neph-01-s2"] == "2 pending items not carried"
    assert flags["pulm-01-s3"] == "notes 2, 4 never cited; 1 pending item not carried"
    assert sum(v != "" for v in flags.values()) == 6 and all(flags[f"{c}-s1"] == "" for c in ("card-01", "neph-01"))
    assert med.value.loc[med.value["summary"] == sid, "status"].item() == "complete"
    import json as _json

    from engine.sample import SAMPLE_MEDOMIT

    have = {sid} | {_json.loads(x)["summary_id"] for x in SAMPLE_MEDOMIT.read_text().splitlines() if x.strip()}
    assert _shown(med).loc[~med.value["summary"].isin(have), "MED-OMIT weight"].eq("").all()
    # the chart of omission score, mean support and MED-OMIT weight per group
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    fig = json.loads(charts[0].proto.spec)
    assert {t["name"] for t in fig["data"]} == {"omission score", "mean support", "MED-OMIT weight"}
    at.radio(key="evidence_chart_by").set_value("quality group").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    # the tables and the chart's data download as CSV
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("Download table (CSV)") >= 4 and "Download chart data (CSV)" in labels


def test_evidence_page_empty_state_says_what_to_run():
    drop_stored_evidence()
    at = _run()
    infos = " ".join(i.value for i in at.info)
    assert "Press 'Compute for every summary'" in infos
    assert "Press 'Run MED-OMIT on every summary'" in infos
    assert "Nothing to chart yet" in infos and not at.get("plotly_chart")
    # the MED-OMIT table still lists every summary, with blanks for what was not run
    shown = _shown(at.dataframe[0]).astype(str)
    assert len(shown) == 36 and not shown.isin(["None", "nan"]).any().any()


def _focus_html(at: AppTest, fid: str) -> str:
    bodies = [h.proto.body for h in at.html if f'id="{fid}"' in h.proto.body]
    assert len(bodies) == 1, [h.proto.body[:200] for h in at.html]
    assert next(h for h in at.html if f'id="{fid}"' in h.proto.body).proto.unsafe_allow_javascript
    return bodies[0]


def _assert_only_our_script(body: str, fid: str) -> None:
    """One script, ours, at the end: the constant text with nothing but the hex id in it; no other markup."""
    from components.evidence_view import focus_script

    assert body.count("<script") == 1 and body.endswith(focus_script(fid)), body[-300:]
    assert re.fullmatch(r"sc-focus-[0-9a-f]{16}", fid)
    html_part = body[: -len(focus_script(fid))]
    assert set(re.findall(r"<(\w+)", html_part)) <= {"div", "mark"}, set(re.findall(r"<(\w+)", html_part))


def test_case_page_focuses_the_picked_region_and_sentence():
    """Picking a possibly omitted region (or a summary sentence) renders its note with that passage outlined, under
    a hex id that our constant script scrolls into view: in the window only right after the pick."""
    from components.evidence_view import aligned_passages, focus_id

    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    from engine.evidence.support.alignment import alignment_cached
    from engine.evidence.coverage.regions import DEFAULT_METHOD, DEFAULT_THRESHOLDS, coverage_cached, merge_regions
    from engine.evidence.coverage.results import CoverageParams
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ds = store.load_dataset("sample")
    case = ds.cases[0]
    summary = ds.summaries_for(case.case_id)[0]
    cov = coverage_cached(store, "sample", case, summary, None, CoverageParams(method=DEFAULT_METHOD))
    hi = max(u.score for u in cov.units)
    regions = merge_regions(case, cov.units, min(DEFAULT_THRESHOLDS[DEFAULT_METHOD], hi), top=30)
    radio = next(r for r in at.radio if r.label == "Region")
    assert len(radio.options) == len(regions)
    # the default (first) region is focused in its box, without moving the window
    first = regions[0]
    fid0 = focus_id("coverage", case.note(first.note_id).text, (first.start, first.end))
    assert 'data-scroll="box"' in _focus_html(at, fid0)
    region = regions[-1]
    radio.set_value(radio.options[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    note = case.note(region.note_id).text
    fid = focus_id("coverage", note, (region.start, region.end))
    body = _focus_html(at, fid)
    mark = re.search(r'<mark id="%s" data-scroll="page" title="selected passage" style="([^"]*)">([^<]*)</mark>'
                     % fid, body)
    assert mark and "outline:2px solid #1f6feb" in mark.group(1), body[:500]
    assert mark.group(2) == html(note[region.start:region.end])
    assert html(note) == re.sub(r"<[^>]*>", "", body[: body.index("<script")])  # the note, escaped, in full
    _assert_only_our_script(body, fid)
    assert not any(fid0 in h.proto.body for h in at.html)
    at.run()  # a later run that is not a pick: the passage stays focused, but only inside its box
    assert 'data-scroll="box"' in _focus_html(at, fid)
    # Sentence support: the picked sentence's best aligned passage is outlined among the other aligned ones
    al = alignment_cached(store, "sample", case, summary, None)
    support = next(r for r in at.radio if r.label.startswith("Summary sentences"))
    support.set_value(support.options[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    refs, best = aligned_passages(al.sentences[-1])
    note = case.note(best.note_id).text
    fid = focus_id("support", note, (best.start, best.end))
    body = _focus_html(at, fid)
    assert re.search(r'<mark id="%s" data-scroll="page" title="aligned, score [0-9.]+" style="[^"]*outline:2px '
                     r'solid #1f6feb[^"]*">%s</mark>' % (fid, re.escape(html(note[best.start:best.end]))), body)
    assert body.count("<mark") == sum(r.note_id == best.note_id for r in refs)  # the others stay highlighted
    _assert_only_our_script(body, fid)


def test_case_page_focus_escapes_hostile_notes():
    """On the payload dataset the focused note's text (with its <script>, <img> and links) is escaped; the only
    script in the element is our constant one."""
    import payload
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    payload.seed(store)
    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
    at.session_state["dataset"] = payload.DATASET
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    radio = next(r for r in at.radio if r.label == "Region")
    picks = [o for o in radio.options[1:] if "Note 1" in o]  # note 1 holds every payload
    radio.set_value(picks[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    note = store.load_dataset(payload.DATASET).case("pay-01").note("1").text
    focused = [h.proto.body for h in at.html if 'data-scroll="page"' in h.proto.body]
    assert len(focused) == 1
    body = focused[0]
    fid = re.search(r'<mark id="(sc-focus-[0-9a-f]{16})"', body).group(1)
    _assert_only_our_script(body, fid)
    for raw in (payload.SCRIPT, payload.RAWIMG, payload.ANCHOR):
        assert raw in note and raw not in body and html(raw) in body
    assert html_lib.unescape(re.sub(r"<[^>]*>", "", body[: body.index("<script")])) == note


def test_case_page_lists_note_level_flags_first_and_focuses_their_passage():
    """endo-02-s2 never cites note 4 (a telephone encounter about a severe low); neph-01-s2 drops what its latest
    note says is still pending. Each flag is listed above the ranked regions and picking it outlines its passage."""
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    for case_id, sid, label, words in (("endo-02", "endo-02-s2", "⚑ Note never cited: note 4", "38 mg/dL"),
                                       ("neph-01", "neph-01-s2", "⚑ Pending in the latest note: note 4",
                                        "electron microscopy")):
        at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
        at.query_params["dataset"] = "sample"
        at.query_params["case"] = case_id
        at.query_params["summary"] = sid
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.radio(key="case_summary").value == sid
        radio = next(r for r in at.radio if r.label == "Region")
        assert radio.options[0].startswith(label), radio.options[:3]
        flagged = [o.startswith("⚑") for o in radio.options]
        assert flagged == sorted(flagged, reverse=True)  # every flag above every ranked region
        assert any("Note-level flags come first" in c.value for c in at.caption)
        radio.set_value(radio.options[1]).run()  # away and back: a pick scrolls the page to the passage
        radio = next(r for r in at.radio if r.label == "Region")
        radio.set_value(radio.options[0]).run()
        assert not at.exception, [e.value for e in at.exception]
        focused = [h.proto.body for h in at.html if 'data-scroll="page"' in h.proto.body]
        assert len(focused) == 1
        assert words in re.search(r'<mark [^>]*data-scroll="page"[^>]*>([^<]*)</mark>', focused[0]).group(1)
        note = Store(workspace_path()).load_dataset("sample").case(case_id).note("4").text
        assert html(note) == re.sub(r"<[^>]*>", "", focused[0][: focused[0].index("<script")])
