"""AppTest: calibration on the Agreement page, the triage queue on the Spot-check page, calibrated scores on the
Judge page, and the embedded-model choice with its validity figures on the Settings page (sample dataset, 7 raters;
judge results built directly, logic only)."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.judge.calibration import LIKERT_KEYS
from fakes import judge_result

TIMEOUT = 120


def _store_with_results():
    from engine.judge.calibration import LIKERT_KEYS
    from engine.data.ratings import medians
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    ds = store.load_dataset("sample")
    res = []
    for i, s in enumerate(ds.summaries):
        m = medians(r for r in ds.ratings_for(s.summary_id))
        res.append(judge_result(s.summary_id, s.case_id,
                                {k: 4.0 + (m.get(k, 3.0) - 1) / 4 + 0.01 * (i % 3) for k in LIKERT_KEYS},
                                model="app-test.gguf", created_at="2030-01-01T00:00:00+00:00"))
    store.put_judge_results("sample", res)
    return store, ds


def _run(page):
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _text(at):
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.success]
                    + [i.value for i in at.info] + [e.value for e in at.error])


def test_fit_calibration_on_the_agreement_page_and_see_it_on_the_judge_page():
    store, ds = _store_with_results()
    at = _run("pages/agreement.py")
    cfg = next(s for s in at.selectbox if s.key == "agreement_config")
    assert any("app-test.gguf" in o for o in cfg.options)
    if "app-test.gguf" not in cfg.value:  # the sample's shipped configuration covers as many summaries
        cfg.set_value(next(o for o in cfg.options if "app-test.gguf" in o)).run()
    # the picker's line fits the box (it was cut at "judged 20…"); the whole configuration is written below it
    assert all(len(o) <= 100 for o in cfg.options), cfg.options
    assert any("summaries scored" in c.value and "judged" in c.value for c in at.caption)
    assert "No calibration stored" in _text(at)
    next(b for b in at.button if b.key == "cal_fit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _text(at)
    assert "Stored as version 1" in shown and "calibrated on 36 summaries rated by 7 raters" in shown
    table = next(d.value for d in at.dataframe if "ICC after" in d.value.columns)
    assert len(table) == len(LIKERT_KEYS) and set(table["status"]) <= {"fitted", "refused"} and "fitted" in set(table["status"])
    # the Judge page shows the calibrated score of the selected summary with the calibration's label
    jt = _run("pages/judge.py")
    item_table = next(d.value for d in jt.dataframe if "expected score" in d.value.columns)
    assert "calibrated" in item_table.columns
    assert "calibrated on 36 summaries rated by 7 raters" in _text(jt)


def test_triage_queue_on_the_spot_check_page_hides_scores_when_blinded():
    _store_with_results()
    at = _run("pages/review.py")
    queue = next(d.value for d in at.dataframe if "priority" in d.value.columns)
    assert len(queue) == 36 and list(queue["rank"]) == list(range(1, 37))
    assert set(queue["stratum"]) == {"review first", "middle", "lowest risk"}
    assert not queue["why"].str.contains(r"\d\.\d", regex=True).any()  # blinded: no judge scores in the reasons
    next(c for c in at.checkbox if c.key == "review_blinded").uncheck().run()
    queue = next(d.value for d in at.dataframe if "priority" in d.value.columns)
    assert queue["why"].str.contains("lowest judge items").any()
    at.number_input(key="triage_sample_n").set_value(6).run()
    sample = next(d.value for d in at.dataframe if "priority" in d.value.columns)
    assert len(sample) == 6 and sorted(sample["stratum"].value_counts().tolist()) == [2, 2, 2]


def test_settings_offer_both_embedded_models_with_validity_figures():
    at = _run("pages/settings.py")
    radio = next(r for r in at.radio if r.key == "set_embedded")
    assert set(radio.options) >= {"Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
                                  "Gemma 3 270M Q4_K_M — smoke-test model"}
    table = next(d.value for d in at.dataframe if "ρ expected" in d.value.columns)
    assert set(table["model"]) >= {"Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "Gemma 3 270M Q4_K_M — smoke-test model"}
