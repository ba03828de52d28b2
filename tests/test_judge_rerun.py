"""Runs that say what they do: a stored result is used or judged again as the user chose, and settings that make a
new judge configuration say so before the run. (Before, "Run judge" on a judged summary only showed the stored
result, and ticking "explanation" silently made a second configuration.)"""
from streamlit.testing.v1 import AppTest

from conftest import BUNDLE, ROOT
from engine.data.loading import load_paths
from engine.judge.configs import configurations
from engine.judge.results import JudgeParams
from engine.judge.runner import Judge, run_batch
from engine.judge.stored import stored_judge_results
from engine.views.judge import configuration_note
from fakes import GOOD_REPLY, FakeBackend

SHA = "ab" * 32


def test_rerun_judges_a_stored_summary_again_and_replaces_it(store):
    ds, _ = load_paths([BUNDLE], name="d")
    store.import_dataset(ds)
    be = FakeBackend([GOOD_REPLY])
    judge = Judge(be, SHA, JudgeParams())
    first = list(run_batch(judge, ds, ["card-01-s1"], store=store, dataset_name="d"))
    again = list(run_batch(judge, ds, ["card-01-s1"], store=store, dataset_name="d"))
    assert not first[0].from_cache and again[0].from_cache and len(be.calls) == 1
    rerun = list(run_batch(judge, ds, ["card-01-s1"], store=store, dataset_name="d", rerun=True))
    assert not rerun[0].from_cache and len(be.calls) == 2
    assert len(stored_judge_results(store, "d")) == 1  # replaced, not added


def test_settings_that_make_a_new_configuration_say_so(store):
    ds, _ = load_paths([BUNDLE], name="d")
    store.import_dataset(ds)
    list(run_batch(Judge(FakeBackend([GOOD_REPLY]), SHA, JudgeParams()), ds, ["card-01-s1"], store=store,
                   dataset_name="d"))
    assert configuration_note(store, "d", JudgeParams(), SHA).text == ""
    assert configuration_note(store, "d", JudgeParams(early_stop=False), SHA).text == ""  # cannot change a grade
    note = configuration_note(store, "d", JudgeParams(explain=True), SHA)
    assert note.text.startswith("These settings make a new judge configuration (they differ in explain)")
    assert note.options_changed
    other = configuration_note(store, "d", JudgeParams(), "cd" * 32)
    assert "another model" in other.text and not other.options_changed
    (cfg,) = configurations(stored_judge_results(store, "d"))
    assert "1 greedy sample" in cfg.label and "T=" not in cfg.label  # one sample ran greedy, at no temperature


def test_judge_page_offers_stored_or_again_and_warns_before_a_new_configuration(monkeypatch):
    monkeypatch.setenv("SUMCHECK_EMBEDDED_MODEL", "qwen2.5-coder-1.5b")  # the model of the shipped results (not loaded)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/judge.py").run()
    assert not at.exception, [e.value for e in at.exception]
    choice = next(r for r in at.radio if r.label.startswith("A summary that already has a result"))
    assert choice.options == ["Use the stored result", "Run it again (replaces the stored result)"]
    assert not any("new judge configuration" in w.value for w in at.warning)
    next(c for c in at.checkbox if c.label.startswith("One-sentence explanation")).check()
    next(b for b in at.button if b.label == "Run judge").click().run()  # the first press: says so, runs nothing
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(w.value for w in at.warning)
    assert "These settings make a new judge configuration (they differ in explain)" in said
    assert "Press **Run judge** again" in said and not any("Judge run on" in str(x.value) for x in at.caption)


def test_judge_page_shows_validity_and_marks_verdicts_the_evidence_contradicts():
    """Before: card-01-s3 (a fabricated amiodarone claim, a wrong and a missing citation) showed its item scores
    with nothing about the judge's measured validity and nothing where the stored evidence disagrees."""
    from conftest import _run

    at = _run("pages/judge.py")
    at.selectbox(key="judge_summary").set_value("card-01-s3").run() if any(
        s.key == "judge_summary" for s in at.selectbox) else at.radio(key="judge_summary").set_value("card-01-s3").run()
    assert not at.exception and any("card-01-s3" in m.value.replace("\\", "") for m in at.markdown)
    table = next(d.value for d in at.dataframe if "expected score" in d.value.columns)
    assert "validity (ρ, own set)" in table.columns
    assert any(str(v).startswith("ρ") for v in table["validity (ρ, own set)"]), table["validity (ρ, own set)"]
    warned = " ".join(w.value for w in at.warning)
    assert "contradicts the evidence" in warned and "Accurate" in warned, warned
