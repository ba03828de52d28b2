"""AppTest of the Spot-check & adjudicate page: renders on the sample, blinding, submitting, history, export."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.analysis.formatting import format_score

TIMEOUT = 60
PAGE = "pages/review.py"


def _run(script: str = PAGE) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _store():
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    return store


def _seed_judge(store, sid):
    """Store an LLM judge result for one sample summary (fake backend: logic only)."""
    from engine.judge.runner import Judge, run_batch
    from engine.judge.results import JudgeParams
    from fakes import GOOD, FakeBackend

    ds = store.load_dataset("sample")
    list(run_batch(Judge(FakeBackend([GOOD]), "sha", JudgeParams(n_samples=1)), ds, [sid], store=store,
                   dataset_name="sample"))


def _value_box(at, label):
    return next(s for s in at.radio if s.label == f"{label} value")


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
    """The page's tables but the triage queue (ranks and reasons only: shown blinded too)."""
    return [d.value for d in at.dataframe if "priority" not in d.value.columns]


def _raters(at):
    """The rater table's two parts (1-5 items, yes/no items) as one frame, one row per rater, in page order."""
    parts = [t for t in _tables(at) if "rater" in t.columns]
    assert parts, "no rater table shown"
    out = parts[0]
    for t in parts[1:]:
        out = out.merge(t, on=["rater", "group"], how="outer", sort=False)
    return out.fillna("")


def test_page_renders_on_sample():
    at = _run()
    assert at.title[0].value == "Spot-check & adjudicate"
    assert at.sidebar.selectbox[0].value == "sample"
    assert len(" ".join(m.value for m in at.markdown)) > 500  # the notes
    assert "Note 1" in " ".join(m.value for m in at.markdown)  # the summary with citation badges
    assert any("Enter your name" in i.value for i in at.info)
    assert next(c for c in at.checkbox if c.label == "Blinded").value is True
    assert any("Blinded" in i.value for i in at.info)
    assert not _tables(at)  # nothing revealed
    assert at.get("download_button")
    # the form with every item's question, guidance and anchors once a reviewer is named
    _reviewer(at, "Dr Test")
    from engine.core.rubric import ITEMS
    assert [s.label for s in at.radio if s.label.endswith(" value")] == [f"{i.label} value" for i in ITEMS]
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
    assert not _tables(at) and "LLM median" not in _shown(at)
    assert any("Blinded" in i.value for i in at.info)
    assert at.get("download_button")[0].proto.disabled

    _value_box(at, "Cited").set_value("2")
    _value_box(at, "Abstraction needed").set_value("no")
    _value_box(at, "Synthesized").set_value("NA")
    _comment_box(at, "Cited").input("note 3 is cited for a lab it does not contain")
    _submit(at)
    assert any("Saved 3 item(s)" in s.value for s in at.success), [e.value for e in at.error]

    from engine.data.reviews import current_reviews
    cur = {r.item: r for r in current_reviews(store, "sample", sid)}
    assert set(cur) == {"cited", "abstraction", "synthesized"}
    assert cur["cited"].value == 2.0 and cur["cited"].reviewer == "Dr Test"
    assert cur["cited"].comment.startswith("note 3") and cur["synthesized"].value is None

    tables = _tables(at)
    raters = _raters(at)
    assert "Dr Test" in list(raters["rater"]) and "R1" in list(raters["rater"])  # this review and the others'
    assert raters.loc[raters["rater"] == "Dr Test", "Cited"].item() == "2"
    llm = next(t for t in tables if "LLM median" in t.columns)
    assert list(llm["item"])[:2] == ["Cited", "Accurate"] and llm["LLM median"].iloc[0] == "4"
    # the judge's main number, as every other page shows it, beside the median (only the median was shown)
    from engine.judge.results import primary_score
    from engine.judge.stored import latest_result
    main = primary_score("cited", latest_result(store, "sample", sid).items["cited"])
    assert llm["LLM score"].iloc[0] == format_score(main) and main is not None
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
    assert not _tables(at)
    # submitting nothing at all is refused too
    _value_box(at, "Abstraction needed").set_value("—")
    _value_box(at, "Synthesized").set_value("—")
    _submit(at)
    assert any("no item was scored" in e.value for e in at.error)
    from engine.data.reviews import export_reviews_csv
    assert export_reviews_csv(_store(), "sample").count("\n") == 1  # header only


def test_unblinded_shows_scores_and_adjudication_replaces_the_median_not_one_more_rater():
    """The issue's rule (this test used to assert the old one, that the adjudicated score is "one rater"): the
    adjudicated final score is shown in its own row, and in the median row it *replaces* the raters' median of
    that item, marked "(adjudicated)"; it is never averaged in as one more rater. Other items keep the median."""
    at = _run()
    next(c for c in at.checkbox if c.label == "Blinded").uncheck().run()
    assert not at.exception
    assert "R1" in list(_raters(at)["rater"])
    # the sample ships with the embedded model's recorded judge results: its medians are shown
    assert any("Status: scored" in c.value for c in at.caption)
    assert any("LLM median" in t.columns for t in _tables(at))
    assert any("No review of this summary yet" in i.value for i in at.info)
    _reviewer(at, "Dr Chair")
    next(r for r in at.radio if r.label == "Kind").set_value("adjudication").run()
    _value_box(at, "Accurate").set_value("5")
    before = _raters(at)
    median_before = before[before["rater"] == "median"].iloc[0]
    _submit(at)
    raters = _raters(at)
    row = raters[raters["rater"] == "adjudicated"]
    assert len(row) == 1 and row["group"].item() == "adjudicated" and row["Accurate"].item() == "5"
    assert "Dr Chair" not in list(raters["rater"])
    median = raters[raters["rater"] == "median"].iloc[0]
    assert median["group"] == "reference"
    assert median["Accurate"] == "5 (adjudicated)"  # the reference, whatever the raters said
    assert median["Cited"] == median_before["Cited"] and "adjudicated" not in median["Cited"]
    # the other raters' accurate scores are unchanged and the adjudicated row is not counted among them
    humans = raters[~raters["rater"].isin(["median", "adjudicated"])]
    assert len(humans) == len(before) - 1
    history = _tables(at)[-1]
    assert list(history["kind"]) == ["Adjudicated final score"] and list(history["reviewer"]) == ["Dr Chair"]


def _block_with_two_columns(at):
    from streamlit.testing.v1.element_tree import Column

    for block in at.main.children.values():
        cols = [c for c in getattr(block, "children", {}).values() if isinstance(c, Column)]
        if len(cols) == 2 and len(" ".join(m.value for m in cols[0].markdown)) > 500:
            return cols
    raise AssertionError("no two-column block with the notes")


def test_one_screen_notes_left_form_right_with_shortcuts():
    at = _run()
    _reviewer(at, "Dr Test")
    left, right = _block_with_two_columns(at)
    assert len(" ".join(m.value for m in left.markdown)) > 500  # the notes, in the left column
    assert "Note 1" in " ".join(m.value for m in left.markdown)  # the summary with its citation badges
    from engine.core.rubric import ITEMS
    assert [r.label for r in right.radio] == [f"{i.label} value" for i in ITEMS]  # the whole form on the right
    assert any(b.label == "Save review" for b in right.button)
    # the notes and the summary scroll in fixed-height boxes, and so does the form: it stays in view
    from components.review_form import FORM_MARKER
    heights = [b.proto.height_config.pixel_height for col in (left, right) for b in col.children.values()
               if getattr(b, "type", "") == "flex_container"]
    assert len(heights) == 3 and all(h > 0 for h in heights)
    assert any(FORM_MARKER in m.value and "position:sticky" in m.value for m in at.markdown)
    # the shortcut help and the listener (inline only: nothing from the network)
    help_text = " ".join(c.value for c in right.caption)
    assert "Keyboard shortcuts" in help_text and "Ctrl+Enter" in help_text and "**y** / **n**" in help_text
    frames = right.get("iframe")
    assert len(frames) == 1
    doc = frames[0].proto.srcdoc
    assert "addEventListener('keydown'" in doc and "window.parent" in doc and not frames[0].proto.src
    assert "http" not in doc and "src=" not in doc and "fetch" not in doc and "import" not in doc


def test_next_and_previous_buttons_walk_every_summary_across_cases():
    at = _run()
    ds = _store().load_dataset("sample")
    order = [s.summary_id for c in ds.cases for s in ds.summaries_for(c.case_id)]
    prev = next(b for b in at.button if "Previous summary" in b.label)
    assert prev.disabled and at.sidebar.radio[0].value == order[0]
    per_case = len(ds.summaries_for(ds.cases[0].case_id))
    for i in range(1, per_case + 1):  # past the last summary of the first case, into the second case
        next(b for b in at.button if "Next summary" in b.label).click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.sidebar.radio[0].value == order[i]
        assert any(f"Summary {i + 1} of {len(order)}" in c.value for c in at.caption)
    assert at.sidebar.selectbox[1].value == ds.cases[1].case_id
    next(b for b in at.button if "Previous summary" in b.label).click().run()
    assert at.sidebar.radio[0].value == order[per_case - 1] and at.sidebar.selectbox[1].value == ds.cases[0].case_id


def test_yes_no_items_show_yes_no_and_shares_never_fractions():
    at = _run()
    next(c for c in at.checkbox if c.label == "Blinded").uncheck().run()
    raters = _raters(at)
    for label in ("Abstraction needed", "Stigmatizing (notes)", "Stigmatizing (summary)"):
        cells = list(raters.loc[~raters["rater"].isin(["median"]), label])
        assert set(cells) <= {"yes", "no", ""}, cells
        med = raters.loc[raters["rater"] == "median", label].item()
        assert med == "" or (" yes (" in med and med.endswith("%)")), med  # "2 of 3 yes (67%)"
    assert raters.loc[raters["rater"] == "median", "Abstraction needed"].item() == "3 of 6 yes (50%)"  # not 0.5
    llm = next(t for t in _tables(at) if "LLM median" in t.columns)
    for label in ("Abstraction needed", "Stigmatizing (notes)", "Stigmatizing (summary)"):
        cell = llm.loc[llm["item"] == label, "LLM median"].item()
        assert cell in ("0 of 1 yes (0%)", "1 of 1 yes (100%)"), cell  # the share over the judge's one pass


@pytest.mark.requires_chromium
def test_keyboard_shortcuts_in_a_real_browser(tmp_path):
    """Headless Chromium: 1-5 / y / n set the highlighted item and move on, Ctrl+Enter saves, ] and [ move between
    summaries, the form column is sticky, and the page makes no request outside the app."""
    from conftest import CHROMIUM as chromium
    from playwright.sync_api import sync_playwright
    from conftest import LAUNCH_ARGS, _start, _stop

    proc, url = _start(tmp_path)
    outside: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.on("request", lambda r: outside.append(r.url)
                    if not r.url.startswith((url, "data:", "blob:", "about:", url.replace("http", "ws"))) else None)
            page.goto(url + "/review", wait_until="domcontentloaded")
            page.get_by_text("Keyboard shortcuts").first.wait_for(timeout=90_000)
            page.get_by_label("Reviewer").fill("Dr Key")
            page.keyboard.press("Enter")
            page.get_by_text("Save review").first.wait_for(timeout=60_000)
            page.wait_for_function("() => !!window.__sumcheckKeyHandler && document.querySelectorAll("
                                   "'[data-testid=stForm] [data-testid=stRadio]').length === 11", timeout=60_000)
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            for i, key in enumerate(["4", "5", "3", "4", "4", "5", "4", "y", "3", "n", "n"]):
                page.keyboard.press(key)
                want = {"y": "yes", "n": "no"}.get(key, key)
                page.wait_for_function("([i, want]) => { const g = document.querySelectorAll("
                                       "'[data-testid=stForm] [data-testid=stRadio]')[i]; const c = g && "
                                       "g.querySelector('input:checked'); return !!c && c.closest('label')"
                                       ".innerText.trim().split(' ')[0] === want; }", arg=[i, want], timeout=30_000)
            checked = page.evaluate("""() => Array.from(document.querySelectorAll(
                '[data-testid=stForm] [data-testid=stRadio]')).map(g => {
                const i = g.querySelector('input:checked'); return i ? i.closest('label').innerText.trim() : null; })""")
            sticky = page.evaluate("""() => { const m = document.querySelector('.sumcheck-review-form-col');
                const c = m && m.closest('[data-testid=stColumn]'); return c ? getComputedStyle(c).position : null; }""")
            page.set_viewport_size({"width": 1280, "height": 1000})  # before: the summary sat below the notes, off screen
            summary_top, notes_top = page.evaluate("""() => { window.scrollTo(0, 0);
                const top = t => { const h = Array.from(document.querySelectorAll('h4')).find(
                    x => x.innerText.trim() === t); return h ? h.getBoundingClientRect().top : null; };
                return [top('Summary'), top('Source notes')]; }""")
            page.set_viewport_size({"width": 1600, "height": 1000})
            page.keyboard.press("Control+Enter")
            page.get_by_text("Saved 11 item(s)").first.wait_for(timeout=60_000)
            idle = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # the script run has ended
            page.wait_for_function(idle, timeout=60_000)
            page.keyboard.press("]")
            page.get_by_text("Summary 2 of").first.wait_for(timeout=60_000)
            page.wait_for_function("() => Array.from(document.querySelectorAll('button')).some("
                                   "b => b.innerText.includes('Previous summary') && !b.disabled)", timeout=60_000)
            page.wait_for_function(idle, timeout=60_000)
            page.keyboard.press("[")
            page.get_by_text("Summary 1 of").first.wait_for(timeout=60_000)
            browser.close()
    finally:
        _stop(proc)
    assert [c.split(" ")[0] if c else c for c in checked] == ["4", "5", "3", "4", "4", "5", "4", "yes", "3", "no",
                                                              "no"]
    assert sticky == "sticky"
    # the summary under review comes first and its whole box is in view; the notes scroll below it
    assert summary_top is not None and notes_top is not None and summary_top < notes_top, (summary_top, notes_top)
    assert summary_top + 260 < 1000, summary_top
    assert not outside, outside
