"""AppTest smoke of every page: each renders without exception, on the sample data, and handles bad input."""
import json

from streamlit.testing.v1 import AppTest

from conftest import FORMATS, ROOT
from engine.core.untrusted import md_inline
from fakes import seed_medomit

TIMEOUT = 60


def _run(script: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_app_opens_on_the_start_page_and_links_to_the_case():
    at = _run("app.py")
    assert at.title[0].value == "SumCheck"
    at.switch_page("pages/case.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Case"
    assert at.sidebar.selectbox[0].value == "sample"  # dataset
    texts = " ".join(m.value for m in at.markdown)
    assert len(texts) > 500  # the notes of the first sample case
    md = " ".join(m.value for m in at.markdown)
    assert "Note 1" in md  # citations rendered as badges
    assert at.dataframe  # rater score table


def test_case_page_switches_case():
    at = _run("pages/case.py")
    first = " ".join(m.value for m in at.markdown)
    options = at.sidebar.selectbox[1].options
    at.sidebar.selectbox[1].select(options[-1]).run()
    assert not at.exception
    assert " ".join(m.value for m in at.markdown) != first
    assert md_inline(options[-1]) in at.subheader[0].value  # ids are shown through untrusted.md


def test_data_page_import_valid_and_invalid(tmp_path):
    at = _run("pages/data.py")
    at.radio[0].set_value("Paths on this machine").run()
    at.text_area[0].input(str(FORMATS / "dialogue.csv")).run()
    at.button[1].click().run()  # Import
    assert not at.exception
    assert any("Imported into 'dialogue'" in s.value for s in at.success)
    bad = tmp_path / "bad.csv"
    bad.write_text("encounter_id,dialogue,note\n1,,x\n")
    at.text_area[0].input(str(bad)).run()
    at.button[1].click().run()
    assert not at.exception
    assert any("nothing was imported" in e.value for e in at.error)


def test_data_page_delete_needs_confirmation():
    at = _run("pages/data.py")
    delete = next(b for b in at.button if b.label == "Delete")
    assert delete.disabled
    at.checkbox[-1].check().run()
    next(b for b in at.button if b.label == "Delete").click().run()
    assert not at.exception
    import os

    from engine.data.store import Store

    assert "sample" not in Store(os.environ["SUMCHECK_WORKSPACE"]).dataset_names()  # really gone
    assert any("Deleted 'sample'" in s.value for s in at.success), [s.value for s in at.success]  # and said so


def test_settings_page_rejects_bad_model_and_saves_good(tmp_path):
    at = _run("pages/settings.py")
    assert any("smoke-test" in w.value for w in at.warning)
    at.radio[0].set_value("GGUF file").run()
    at.text_input[0].input(str(tmp_path / "missing.gguf")).run()
    at.button[0].click().run()
    assert any("does not exist" in e.value for e in at.error)
    at.radio[0].set_value("Embedded default").run()
    at.number_input[0].set_value(4096).run()
    at.button[0].click().run()
    assert not at.exception
    assert any("Saved" in s.value for s in at.success)
    from engine.data.settings import config_path
    assert json.loads(config_path().read_text())["n_ctx"] == 4096


def _finish_job(at: AppTest, name: str, timeout: float = 300) -> None:
    """Wait for the page's background job to end, then show the page as the user's next refresh would."""
    job = at.session_state[f"job:{name}"]
    assert job.wait(timeout), job.status()
    at.run(timeout=120)


def test_judge_page_runs_real_model_on_sample_summary():
    at = _run("pages/judge.py")
    assert any("smoke-test" in w.value for w in at.warning)
    # the recorded result of the 1.5B default judge (one greedy pass) is shown first ...
    assert any("Scored" in s.value for s in at.success)
    assert sum(e.label.startswith("Sample ") for e in at.expander) == 1
    assert "expected score" in at.dataframe[0].value.columns
    # ... and a new run with the real (smoke-test) model replaces it on screen
    at.number_input[0].set_value(1)
    at.button[0].click().run(timeout=300)  # the form's "Run judge": the work runs in the background
    _finish_job(at, "judge")
    assert not at.exception, [e.value for e in at.exception]
    assert any("Scored" in s.value for s in at.success), [e.value for e in at.error]
    assert sum(e.label.startswith("Sample ") for e in at.expander) == 1
    assert any("smoke-test" in w.value for w in at.warning)
    table = at.dataframe[0].value
    assert list(table["item"])[:3] == ["Cited", "Accurate", "Thorough"]
    assert table["human median"].astype(str).str.len().gt(0).all()


def test_judge_page_bad_model_path_keeps_running(tmp_path):
    from engine.data.settings import AppSettings, config_path
    import dataclasses
    bad = tmp_path / "corrupt.gguf"
    bad.write_bytes(b"not a model at all")
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps(dataclasses.asdict(AppSettings(model_path=str(bad)))))
    at = _run("pages/judge.py")
    at.button[0].click().run()
    assert not at.exception
    assert any("not a GGUF model" in e.value for e in at.error)


def test_case_page_shows_stored_medomit_result():
    seed_medomit()
    at = _run("pages/case.py")
    labels = [r.options for r in at.radio if r.label.startswith("Omitted facts")]
    assert labels, "the omitted-fact list is shown"
    assert any("MED-OMIT weight" in m.label for m in at.metric)
    assert any("<mark" in m.value for m in at.markdown)  # the fact's span highlighted in its note


def test_case_page_shows_the_scores_used_beside_the_judge():
    """The sample's judged summary: per 1-5 item the judge's expected score, the score triage and the report use,
    and what a combination is made of (Thorough: standard scores over the sample's 36 judged summaries)."""
    at = _run("pages/case.py")
    assert any("Scores used for triage and the report" in m.value for m in at.markdown)
    table = next(t.value for t in at.table if "made of" in t.value.columns)
    rows = {r["item"]: r for r in table.to_dict("records")}
    th = rows["Thorough"]
    assert th["which"] == "combination" and "standard scores over 36 summaries" in th["made of"]
    assert "z " in th["made of"] and rows["Organized"]["which"] == "judge"
    assert float(rows["Organized"]["score used"]) == float(rows["Organized"]["judge's expected score"])


def test_evidence_page_lists_summaries():
    sid = seed_medomit()
    from engine.evidence.support.alignment import alignment_cached
    from engine.evidence.coverage.regions import coverage_cached
    from engine.evidence.embeddings import Embedder
    from engine.data.settings import workspace_path
    from engine.data.store import Store
    store = Store(workspace_path())
    ds = store.load_dataset("sample")
    emb = Embedder()
    coverage_cached(store, "sample", ds.case(ds.summary(sid).case_id), ds.summary(sid), emb)
    alignment_cached(store, "sample", ds.case(ds.summary(sid).case_id), ds.summary(sid), emb)
    at = _run("pages/evidence.py")
    df = at.dataframe[0].value
    assert len(df) == 36 and "MED-OMIT weight" in df.columns
    import json as _json

    from engine.sample import SAMPLE_MEDOMIT

    shipped = {_json.loads(x)["summary_id"] for x in SAMPLE_MEDOMIT.read_text().splitlines() if x.strip()}
    assert (df["status"] != "not run").sum() == len(shipped | {sid})  # the shipped MED-OMIT rows and this one
    emb_df = next(d.value for d in at.dataframe if "omission score" in d.value.columns and "summary" in d.value.columns)
    # shipped with the sample (sample_data/evidence_results.jsonl) for all 36
    assert emb_df["omission score"].notna().sum() == 36 and emb_df["mean support"].notna().sum() == 36


def test_case_page_coverage_and_support_tabs():
    at = _run("pages/case.py")
    assert any(s.label.startswith("Highlight source text") for s in at.slider)
    region_radio = next(r for r in at.radio if r.label == "Region")
    assert region_radio.options  # "possibly omitted" regions listed
    # the ranked list follows the threshold slider and says how many regions pass it
    slider = next(s for s in at.slider if s.label.startswith("Highlight source text"))
    n_default = len(region_radio.options)
    assert any(f"{n_default} region(s) at or above" in m.value or f"{n_default}+ region(s)" in m.value
               for m in at.markdown)
    for value in (slider.min, slider.max):
        next(s for s in at.slider if s.label.startswith("Highlight source text")).set_value(value).run()
        assert not at.exception
        n = len(next((r.options for r in at.radio if r.label == "Region"), []))
        assert any(f"{n} region(s) at or above {value:.2f}" in m.value or f"{n}+ region(s)" in m.value
                   for m in at.markdown), (value, n)
    assert n <= n_default  # the highest threshold keeps only the least covered places
    assert any("omission score" in m.value for m in at.markdown)  # the heat overlay
    support = next(r for r in at.radio if r.label.startswith("Summary sentences"))
    support.set_value(support.options[-1]).run()
    assert not at.exception
    assert any("citation" in m.value and "support" in m.value for m in at.markdown)
    # switching the method to the paper's KDE works too
    next(s for s in at.selectbox if s.label == "Method").set_value("kde").run()
    assert not at.exception


def test_agreement_page_renders_every_tab():
    at = _run("app.py")
    at.switch_page("pages/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Agreement"
    assert not any("No LLM judge results" in i.value for i in at.info)  # the recorded sample judge results
    rel_table = next(d.value for d in at.dataframe if "ICC(3,k)" in d.value.columns)
    assert list(rel_table["item"])[-1] == "overall" and rel_table["ICC(3,k)"].str.len().gt(0).any()
    assert rel_table["ΔICC LLM as extra rater"].iloc[-1].startswith(("+", "-"))
    # numbers in one language: no degenerate κ written as a figure, no bound past the statistic's range, no
    # "1 samples, T=…" for a greedy pass (before: "κ 0.00 (95 % CI −0.00 to 0.00)" beside "AC1 −0.93", a
    # Comprehensible interval from −1.09, "1 samples, T=0.7")
    import re

    words = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption]).replace("\\", "")
    assert not re.search(r"0\.00 \(95\s?% CI -0\.00 to 0\.00\)", words)
    assert not re.search(r"CI -1\.(0[1-9]|[1-9])", words) and "1 samples" not in words
    # the disagreement explorer opens a case
    at.selectbox(key="dis_open").set_value(at.selectbox(key="dis_open").options[0])
    target = at.selectbox(key="dis_open").value
    next(b for b in at.button if b.label == "Open in the Case page").click().run()
    assert not at.exception
    assert at.title[0].value == "Case" and md_inline(target.split("-s")[0]) in at.subheader[0].value


def test_judge_page_on_a_server_streams_partial_scores_and_stops_early(monkeypatch):
    """A saved server setting: the Judge page passes the requests-in-flight setting and a partial-results callback to
    run_batch; the medians decided after 2 of 3 samples stop the run early; when the run then fails, the scores
    shown so far stay on screen with the error (no traceback)."""
    import dataclasses

    import engine.judge.runner as judge_mod
    from engine.llm.backends import BackendError
    from engine.data.settings import SOURCE_SERVER, AppSettings, config_path
    from fakes import DIALECTS, make_server

    calls, partials = [], []
    real = judge_mod.run_batch

    def run_batch(*a, on_partial=None, concurrency=1, **kw):
        calls.append(concurrency)

        def spy(p):
            partials.append((p.taken, p.final))
            on_partial(p)

        list(real(*a, on_partial=spy, concurrency=concurrency, **kw))
        yield from ()  # a generator, like the real one, that fails after the work
        raise BackendError("the server went away")

    monkeypatch.setattr(judge_mod, "run_batch", run_batch)
    srv, seen = make_server(DIALECTS["ollama"])
    try:
        config_path().parent.mkdir(parents=True, exist_ok=True)
        config_path().write_text(json.dumps(dataclasses.asdict(AppSettings(
            judge_source=SOURCE_SERVER, server_url=f"http://127.0.0.1:{srv.server_port}/v1",
            server_model="llama3.1:8b", concurrency=5))))
        at = _run("pages/judge.py")
        early = next(c for c in at.checkbox if c.label.startswith("Stop early when the medians are decided"))
        assert early.value is True
        at.number_input[0].set_value(3)
        at.button[0].click().run()
        _finish_job(at, "judge")
    finally:
        srv.shutdown()
    assert not at.exception, [e.value for e in at.exception]
    assert calls == [5] and partials == [(1, False), (2, True)]  # decided after 2 of 3 samples
    assert sum(p == "/v1/chat/completions" for _, p, _ in seen) == 2
    assert any("the server went away" in e.value for e in at.error)
    assert any("scores so far after 2 of 3 samples" in c.value for c in at.caption)
    table = next(d.value for d in at.dataframe if "median so far" in d.value.columns)
    assert list(table["median so far"])[:2] == ["4", "5"] and set(table["decided"]) == {"yes"}


def test_case_page_regions_follow_the_numbers_they_show_and_a_complete_summary_says_why_it_has_regions():
    """Before: captioned "least covered first" while the numbers ran 0.73, 0.70, 0.85, 0.84 (the hidden tiers), and
    a complete summary listed 19 regions without a word."""
    import re

    at = _run("app.py")
    at.switch_page("pages/case.py").run()
    captions = []
    for sid in ("card-01-s1", "card-01-s2", "card-01-s3"):
        at.radio(key="case_summary").set_value(sid).run()
        assert not at.exception
        options = next((r.options for r in at.radio if r.label == "Region"), [])
        rows = [(m.group(1), float(m.group(2))) for o in options
                if (m := re.match(r"^([★➜]*) ?\\\[([-\d.]+)\\\]", o))]
        assert len(rows) == sum(1 for o in options if not o.startswith("⚑")), options[:3]
        tiers = list(dict.fromkeys(mark for mark, _ in rows))
        assert tiers == sorted(tiers, key=lambda m: ("★" not in m, "➜" not in m)), (sid, tiers)
        for mark in tiers:
            nums = [n for k, n in rows if k == mark]
            assert nums == sorted(nums, reverse=True), (sid, mark, nums)
        captions += [c.value for c in at.caption]
    assert any("not flagged as omitting" in c for c in captions)  # the complete summary says why it has regions


def test_the_summary_marks_its_own_problems_without_a_click():
    """Before: card-01-s3's fabricated amiodarone sentence, its wrong citation and its missing citation showed only
    after clicking each sentence in the Sentence-support tab. Now the summary carries the flags where each sentence
    ends (with the reason on hover) and the unsupported claim is marked in it."""
    import re

    at = _run("app.py")
    at.switch_page("pages/case.py").run()
    at.radio(key="case_summary").set_value("card-01-s3").run()
    assert not at.exception
    html = next(m.value for m in at.markdown if "line-height:1.7" in m.value)  # the summary as drawn
    kinds = re.findall(r'class="sumcheck-flag" data-kind="([^"]+)" title="([^"]*)"', html)
    assert any(k == "citation wrong" for k, _ in kinds), kinds
    assert any(k == "citation missing" for k, _ in kinds), kinds
    cut = html.index("catheterization")  # the wrongly cited sentence's flag follows it, before the next sentence
    assert "citation wrong" in html[cut:cut + 1500]
    i = html.index("amiodarone")
    assert 'title="Unsupported claim' in html[max(0, i - 200):i]  # the fabricated claim is marked in the summary
    assert any("Sentence flags" in m.value for m in at.markdown)
    # the count names its sentences (before: the count alone, e.g. a bare 2, said nothing about which)
    named = [c.value.replace("\\", "") for c in at.caption if c.value.startswith("Citation issues in ")]
    assert named and re.search(r"sentence \d+ \(wrong\)", named[0]) and "(missing)" in named[0], named
