"""AppTest of the Spot-check & adjudicate page: renders on the sample, blinding, submitting, history, export."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT

TIMEOUT = 60
PAGE = "pages/review.py"


def _run(script: str = PAGE) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _store():
    from engine.sample import ensure_sample
    from engine.settings import workspace_path
    from engine.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    return store


def _seed_judge(store, sid):
    """Store an LLM judge result for one sample summary (fake backend: logic only)."""
    from engine.judge import Judge, JudgeParams, run_batch
    from test_judge_logic import GOOD, FakeBackend

    ds = store.load_dataset("sample")
    list(run_batch(Judge(FakeBackend([GOOD]), "sha", JudgeParams(n_samples=1)), ds, [sid], store=store,
                   dataset_name="sample"))


def _value_box(at, label):
    return next(s for s in at.selectbox if s.label == f"{label} value")


def _comment_box(at, label):
    return next(t for t in at.text_input if t.label == f"{label} comment")


def _reviewer(at, name):
    next(t for t in at.text_input if t.label == "Reviewer").input(name).run()
    assert not at.exception, [e.value for e in at.exception]


def _submit(at):
    next(b for b in at.button if b.label == "Save review").click().run()
    assert not at.exception, [e.value for e in at.exception]


def _shown(at) -> str:
    return " ".join([m.value for m in at.markdown] + [i.value for i in at.info] + [c.value for c in at.caption])


def _tables(at):
    return [d.value for d in at.dataframe]


def test_page_renders_on_sample():
    at = _run()
    assert at.title[0].value == "Spot-check & adjudicate"
    assert at.sidebar.selectbox[0].value == "sample"
    assert len(" ".join(t.value for t in at.text)) > 500  # the notes
    assert "Note 1" in " ".join(m.value for m in at.markdown)  # the summary with citation badges
    assert any("Enter your name" in i.value for i in at.info)
    assert next(c for c in at.checkbox if c.label == "Blinded").value is True
    assert any("Blinded" in i.value for i in at.info)
    assert not at.dataframe  # nothing revealed
    assert at.get("download_button")
    # the form with every item's question, guidance and anchors once a reviewer is named
    _reviewer(at, "Dr Test")
    from engine.rubric import ITEMS
    assert [s.label for s in at.selectbox if s.label.endswith(" value")] == [f"{i.label} value" for i in ITEMS]
    assert len(at.expander) >= len(ITEMS)
    md = " ".join(m.value for m in at.markdown)
    assert all(i.question in md for i in ITEMS)
    assert ITEMS[0].anchors[0] in md and ITEMS[0].anchors[4] in md
    assert _value_box(at, "Synthesized").options[-1].startswith("NA")
    assert not any(o.startswith("NA") for o in _value_box(at, "Cited").options)


def test_app_registers_spot_check_page():
    at = _run("app.py")
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Spot-check & adjudicate"


def test_blinded_hides_scores_until_submit_then_shows_history():
    store = _store()
    ds = store.load_dataset("sample")
    sid = ds.summaries_for(ds.cases[0].case_id)[0].summary_id
    _seed_judge(store, sid)
    at = _run()
    _reviewer(at, "Dr Test")
    assert not at.dataframe and "LLM median" not in _shown(at)
    assert any("Blinded" in i.value for i in at.info)
    assert at.get("download_button")[0].proto.disabled

    _value_box(at, "Cited").set_value("2")
    _value_box(at, "Abstraction needed").set_value("no")
    _value_box(at, "Synthesized").set_value("NA")
    _comment_box(at, "Cited").input("note 3 is cited for a lab it does not contain")
    _submit(at)
    assert any("Saved 3 item(s)" in s.value for s in at.success), [e.value for e in at.error]

    from engine.reviews import current_reviews
    cur = {r.item: r for r in current_reviews(store, "sample", sid)}
    assert set(cur) == {"cited", "abstraction", "synthesized"}
    assert cur["cited"].value == 2.0 and cur["cited"].reviewer == "Dr Test"
    assert cur["cited"].comment.startswith("note 3") and cur["synthesized"].value is None

    tables = _tables(at)
    raters = tables[0]
    assert "Dr Test" in list(raters["rater"]) and "R1" in list(raters["rater"])  # this review and the others'
    assert raters.loc[raters["rater"] == "Dr Test", "Cited"].item() == "2"
    llm = next(t for t in tables if "LLM median" in t.columns)
    assert list(llm["item"])[:2] == ["Cited", "Accurate"] and llm["LLM median"].iloc[0] == "4"
    history = tables[-1]
    assert len(history) == 3 and set(history["reviewer"]) == {"Dr Test"} and (history["status"] == "current").all()
    assert not at.get("download_button")[0].proto.disabled

    # an edit keeps the old value in the history
    _value_box(at, "Cited").set_value("4")
    _submit(at)
    history = _tables(at)[-1]
    assert len(history) == 4
    assert history["status"].str.startswith("replaced by #").sum() == 1
    assert list(history.loc[history["item"] == "Cited", "value"]) == ["4", "2"]  # newest first


def test_invalid_submission_is_reported_and_stays_blinded():
    at = _run()
    _reviewer(at, "Dr Test")
    _value_box(at, "Abstraction needed").set_value("no")
    _value_box(at, "Synthesized").set_value("3")
    _submit(at)
    assert any("Not saved" in e.value and "Synthesized must be NA" in e.value for e in at.error)
    assert not at.dataframe
    # submitting nothing at all is refused too
    _value_box(at, "Abstraction needed").set_value("—")
    _value_box(at, "Synthesized").set_value("—")
    _submit(at)
    assert any("no item was scored" in e.value for e in at.error)
    from engine.reviews import export_reviews_csv
    assert export_reviews_csv(_store(), "sample").count("\n") == 1  # header only


def test_unblinded_shows_scores_without_submitting_and_adjudication_counts_as_one_rater():
    at = _run()
    next(c for c in at.checkbox if c.label == "Blinded").uncheck().run()
    assert not at.exception
    assert at.dataframe and "R1" in list(_tables(at)[0]["rater"])
    # the sample ships with the embedded model's recorded judge results: its medians are shown
    assert any("Status: scored" in c.value for c in at.caption)
    assert any("LLM median" in t.columns for t in _tables(at))
    assert any("No review of this summary yet" in i.value for i in at.info)
    _reviewer(at, "Dr Chair")
    next(r for r in at.radio if r.label == "Kind").set_value("adjudication").run()
    _value_box(at, "Accurate").set_value("5")
    _submit(at)
    raters = _tables(at)[0]
    row = raters[raters["rater"] == "adjudicated"]
    assert len(row) == 1 and row["group"].item() == "adjudicated" and row["Accurate"].item() == "5"
    assert "Dr Chair" not in list(raters["rater"])
    history = _tables(at)[-1]
    assert list(history["kind"]) == ["Adjudicated final score"] and list(history["reviewer"]) == ["Dr Chair"]
