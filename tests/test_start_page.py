"""The start page: what SumCheck does, where the current dataset stands (judged by which model, evidence, reviews)
and the next step, with links; the same status from the command line."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.status import DatasetStatus, JudgeCoverage, dataset_status, next_steps, status_lines


def test_start_page_says_what_it_is_and_where_the_sample_stands():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "SumCheck"
    text = " ".join(m.value for m in at.markdown)
    assert "PDSQI-9 grade" in text and "offline" in text
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["summaries"] == "36" and metrics["raters"] == "7" and metrics["evidence"] == "36 of 36"
    judged = at.dataframe[0].value
    assert "qwen2.5-coder-1.5b" in judged["judge model"].iloc[0]  # the shipped results name their model
    assert judged["summaries judged"].iloc[0] == "36 of 36"
    assert "Next" in text


def test_start_page_says_the_sample_is_synthetic_and_its_next_steps_are_buttons():
    """Before, the Start page never said the sample is synthetic and its next steps looked like plain text."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert any("12 synthetic patients" in i.value and "no PHI" in i.value for i in at.info)
    steps = [b for b in at.button if b.key and b.key.startswith("next_step_")]
    assert steps and steps[0].label.startswith("1. ")
    steps[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value != "SumCheck"  # the button opened the step's page


def test_status_follows_the_work(store):
    from conftest import BUNDLE
    from engine.data.loading import load_paths
    from engine.data.reviews import SPOT_CHECK, save_review

    ds, _ = load_paths([BUNDLE], name="d")
    store.import_dataset(ds)
    s = dataset_status(store, "d")
    assert (s.summaries, s.raters, s.judged, s.coverage, s.spot_checked) == (36, 7, [], 0, 0)
    assert s.next_steps[0].page == "pages/judge.py" and "0 of 36" in s.next_steps[0].text
    save_review(store, "d", ds.summaries[0].summary_id, "Dr A", SPOT_CHECK, {"cited": 4})
    s = dataset_status(store, "d")
    assert s.spot_checked == 1 and s.reviewers == ["Dr A"]
    assert any("Dr A" in line for line in status_lines(s))


def test_next_steps_skip_what_is_done():
    done = DatasetStatus("d", 3, 10, 3, [JudgeCoverage("m", 10, False)], 10, 10, 0, ["Dr A"], 10, 0)
    pages = [n.page for n in next_steps(done)]
    assert pages == ["pages/agreement.py"]
    smoke_only = DatasetStatus("d", 3, 10, 3, [JudgeCoverage("m", 10, True)], 10, 10, 0, [], 0, 0)
    assert next_steps(smoke_only)[0].page == "pages/judge.py"  # smoke-test grades do not count as judged
    empty = DatasetStatus("d", 0, 0, 0)
    assert [n.page for n in next_steps(empty)] == ["pages/data.py"]


def test_cli_status(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SUMCHECK_WORKSPACE": str(tmp_path / "w.sqlite")}
    run = subprocess.run([sys.executable, "-m", "engine", "status", "sample"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "12 cases, 36 summaries, 7 raters" in run.stdout and "next:" in run.stdout
