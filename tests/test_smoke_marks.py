"""Results of the embedded smoke-test model are marked wherever they appear: Case (LLM judge row, MED-OMIT tab),
Judge (result status, results table), Evidence (MED-OMIT table column and badge), Agreement's Disagreements tab
(which can exclude them), and the CSV exports of those tables."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.core.untrusted import md_inline
from conftest import _run

SMOKE_FILE = "gemma-3-270m-q4_k_m.gguf"  # the sample's recorded judge results, relabelled as the smoke-test model's


def _smoke_sample():
    """The sample in the test workspace, its recorded judge results relabelled as the smoke-test model's."""
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store
    from fakes import sample_results_as_smoke_test

    store = Store(workspace_path())
    ensure_sample(store)
    assert sample_results_as_smoke_test(store) == 36
    return store


def _seed_medomit(model_file: str):
    from engine.evidence.medomit.pipeline import MedOmit, run_medomit
    from fakes import ScriptedBackend

    store = _smoke_sample()
    ds = store.load_dataset("sample")
    sid = ds.summaries[0].summary_id
    res = list(run_medomit(MedOmit(ScriptedBackend(model_file=model_file), "scripted"), ds, [sid], store=store,
                           dataset_name="sample"))
    assert res[0].status == "complete"
    return sid


def _badges(at, what: str) -> list[str]:
    return [w.value for w in at.warning if "Smoke-test model" in w.value and what in w.value
            and "not clinically meaningful" in w.value]


def test_detection_is_one_engine_function():
    from engine.llm.modelfiles import is_smoke_test_model
    from engine.llm.modelfiles import embedded_sha256

    assert is_smoke_test_model(SMOKE_FILE) and is_smoke_test_model(None, "/x/Gemma-3-270M-it.gguf")
    assert not is_smoke_test_model("llama-3.1-8b-instruct.Q4_K_M.gguf", "", None)
    if embedded_sha256():
        assert is_smoke_test_model(embedded_sha256())


def test_case_page_marks_smoke_test_judge_and_medomit():
    _seed_medomit(SMOKE_FILE)
    at = _run("pages/case.py")
    judge = _badges(at, "LLM judge scores")
    assert judge and md_inline(SMOKE_FILE) in judge[0]
    assert _badges(at, "MED-OMIT figures")


def test_case_page_no_medomit_badge_for_a_real_model():
    _seed_medomit("llama-3.1-8b-instruct.Q4_K_M.gguf")
    at = _run("pages/case.py")
    assert not _badges(at, "MED-OMIT figures")


def test_judge_page_status_and_badge():
    _smoke_sample()
    at = _run("pages/judge.py")
    scored = [s.value for s in at.success if s.value.startswith("Scored")]
    assert scored and md_inline("from the workspace cache (judged on") in scored[0]
    assert _badges(at, "LLM judge scores")
    table = at.dataframe[-1].value
    assert "smoke-test model" in table.columns and (table["smoke-test model"] == "yes").all()
    assert any(b.proto.label == "Download table (CSV)" for b in at.get("download_button"))


def test_judge_page_says_judged_now_for_this_runs_results():
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    ds = store.load_dataset("sample")
    sid = ds.summaries_for(ds.cases[0].case_id)[0].summary_id
    at = _run("pages/judge.py", judged_now={("sample", sid)})
    assert any(s.value.startswith("Scored") and "judged now" in s.value for s in at.success)


def test_batch_status_counts_cached_and_new():
    from components.judge_view import when_text
    from engine.core.jobs import DONE, JobStatus

    def done(counts):
        n = sum(counts.values())
        return JobStatus("Judge", DONE, n, n, "", "", 0, 7, 65.0, None, counts).final_text()

    # a resumed run: 3 came from the workspace, 2 were judged now
    assert done({"from the workspace": 3, "new": 2}) == (
        "Judge finished — 5 of 5 summaries (3 from the workspace, 2 new) in 1 min 05 s. A resumed run: the ones "
        "finished before were kept.")
    assert done({"new": 1}) == "Judge finished — 1 of 1 summary (1 new) in 1 min 05 s."
    assert when_text(True, "2026-01-02T03:04:05+00:00") == "judged now"
    assert when_text(False, "2026-01-02T03:04:05+00:00") == "from the workspace cache (judged on 2026-01-02 03:04 UTC)"


def test_evidence_page_marks_smoke_test_medomit():
    sid = _seed_medomit(SMOKE_FILE)
    at = _run("pages/evidence.py")
    assert _badges(at, "MED-OMIT figures")
    df = at.dataframe[0].value
    assert "smoke-test model" in df.columns
    assert df.loc[df["summary"] == sid, "smoke-test model"].item() == "yes"
    assert (df.loc[df["summary"] != sid, "smoke-test model"] == "").all()
    assert any("smoke-test model" in c.value and "not clinically meaningful" in c.value for c in at.caption)


def test_evidence_csv_export_has_the_column():
    import io

    import pandas as pd

    from engine.evidence.medomit.result import MedOmitResult
    from engine.evidence.medomit.rows import dataset_rows
    from engine.data.settings import workspace_path
    from engine.data.store import Store
    from engine.core.untrusted import dataframe_csv

    sid = _seed_medomit(SMOKE_FILE)
    store = Store(workspace_path())
    ds = store.load_dataset("sample")
    results = {k: MedOmitResult.from_json(v) for k, v in store.evidence_results("sample", "medomit").items()}
    csv = pd.read_csv(io.BytesIO(dataframe_csv(pd.DataFrame([r.display() for r in dataset_rows(ds, results)]))))
    assert csv.loc[csv["summary"] == sid, "smoke-test model"].item() == "yes"


def test_disagreements_exclude_argument():
    from engine.analysis.agreement import disagreements
    from engine.views.agreement import agreement_report
    from engine.judge.results import JudgeResult
    from engine.judge.configs import configurations
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    key = configurations([JudgeResult.from_json(x) for x in store.judge_results("sample")])[0].key
    rep = agreement_report(store, "sample", key, 50)
    rows = disagreements(rep)
    drop = {rows[0]["summary_id"], rows[1]["summary_id"]}
    kept = disagreements(rep, exclude=drop)
    assert len(kept) == len(rows) - 2 and not drop & {r["summary_id"] for r in kept}
    assert disagreements(rep, exclude=[r["summary_id"] for r in rep.per_summary]) == []


def test_disagreements_tab_excludes_smoke_test_results():
    _smoke_sample()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("pages/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.checkbox(key="dis_exclude_smoke")
    assert box.value is False
    assert any("Smoke-test model" in w.value and "disagreements are not clinically meaningful" in w.value
               for w in at.warning)
    n_tables = len(at.dataframe)
    box.check().run()
    assert not at.exception
    assert any("comes from the smoke-test model" in i.value and "excluded" in i.value for i in at.info)
    assert any("all are excluded as smoke-test results" in i.value for i in at.info)
    assert len(at.dataframe) == n_tables - 1  # the disagreement table is gone
    assert not any(s.label == "Open a summary" for s in at.selectbox)
