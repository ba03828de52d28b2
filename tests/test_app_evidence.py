"""AppTest of the Evidence page: every column explained, blank (never 'None') empty cells, the chart by group, CSV
downloads, and the empty state that says what to run."""
import json

from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from components.evidence_view import COLUMN_HELP

TIMEOUT = 120
EXPLAINED = ["omission score", "flagged", "mean support", "weak sentences", "coverage", "density", "combined g",
             "citation issues", "MED-OMIT weight", "omitted facts"]


def _run() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages/evidence.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _seed_embeddings(sid: str) -> None:
    from engine.alignment import alignment_cached
    from engine.coverage import coverage_cached
    from engine.embeddings import Embedder
    from engine.settings import workspace_path
    from engine.store import Store

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
    from test_app import _seed_medomit

    sid = _seed_medomit()
    _seed_embeddings(sid)
    at = _run()
    med, emb = at.dataframe[0], at.dataframe[-1]
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
    assert med.value.loc[med.value["summary"] == sid, "status"].item() == "complete"
    assert _shown(med).loc[med.value["summary"] != sid, "MED-OMIT weight"].eq("").all()
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


def _drop_stored_evidence() -> None:
    """A workspace whose sample has no embedding evidence (as after new content or a code-version bump)."""
    from engine.sample import ensure_sample
    from engine.settings import workspace_path
    from engine.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    with store.transaction() as con:
        con.execute("DELETE FROM evidence_results")


def test_evidence_page_empty_state_says_what_to_run():
    _drop_stored_evidence()
    at = _run()
    infos = " ".join(i.value for i in at.info)
    assert "Press 'Compute for every summary'" in infos
    assert "Press 'Run MED-OMIT on every summary'" in infos
    assert "Nothing to chart yet" in infos and not at.get("plotly_chart")
    # the MED-OMIT table still lists every summary, with blanks for what was not run
    shown = _shown(at.dataframe[0]).astype(str)
    assert len(shown) == 36 and not shown.isin(["None", "nan"]).any().any()
