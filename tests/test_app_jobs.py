"""AppTest of long work on the pages, with the real components: the judge and MED-OMIT run the embedded Gemma 3
270M model, the evidence batch runs the bundled embedding model. Each shows a progress bar with counts, the step
and an estimate; Cancel stops the worker within the current model call; the page then says "cancelled — N done,
kept" and no Cancel button is left; a new run resumes from what was kept."""
import time

from streamlit.testing.v1 import AppTest

from conftest import ROOT

TIMEOUT = 180


def _run(script: str, at: AppTest | None = None) -> AppTest:
    at = at or AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _job(at: AppTest, name: str):
    return at.session_state[f"job:{name}"]


def _wait(pred, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _plain(text: str) -> str:
    """Markdown as read: without the escaping backslashes and word joiners engine.core.untrusted adds to data."""
    return text.replace("\\", "").replace("\u2060", "")


def _bar_texts(at: AppTest) -> list[str]:
    return [_plain(p.proto.text) for p in at.get("progress")]


def _warnings(at: AppTest) -> list[str]:
    return [_plain(w.value) for w in at.warning]


def _cancel(at: AppTest, name: str) -> AppTest:
    button = next(b for b in at.button if b.key == f"cancel_{name}")
    t0 = time.monotonic()
    button.click()
    at.run()
    job = _job(at, name)
    assert job.wait(10)
    stop_s = time.monotonic() - t0
    assert stop_s < 10, stop_s
    return _run("", at)


def _n_judged() -> int:
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    return len(Store(workspace_path()).judge_results("sample"))


def test_judge_page_progress_and_cancel_mid_call():
    at = _run("pages/judge.py")
    before = _n_judged()  # the sample's recorded results
    at.number_input[0].set_value(3)  # samples: not the recorded results' setting (those come from the workspace)
    next(b for b in at.button if b.label == "Run judge").click()
    at.run()
    job = _job(at, "judge")
    assert _wait(lambda: job.status().step.startswith("sample"))
    at.run()
    texts = _bar_texts(at)
    assert texts and "Judge: summary 1/1" in texts[0] and "sample" in texts[0], texts
    assert texts[0].startswith("Judge run on summary card-01-s1 · ")  # the bar says which summary and model
    assert any(b.key == "cancel_judge" for b in at.button)
    assert any("Previous result" in w for w in _warnings(at))  # the stored result is marked, not current
    at = _cancel(at, "judge")
    warnings = _warnings(at)
    assert any(w.startswith("Judge run on summary card-01-s1 · ") and "3 sample(s) — Judge cancelled — 0 of 1 "
               "summary done, kept" in w for w in warnings), warnings
    assert not any(b.key == "cancel_judge" for b in at.button)  # no Cancel left after the run
    assert not _bar_texts(at)
    assert _n_judged() == before  # nothing half-done was stored


def test_case_page_medomit_progress_and_cancel():
    at = _run("pages/case.py")
    next(b for b in at.button if b.label == "Run MED-OMIT on this summary").click()
    at.run()
    name = "medomit_sample_card-01-s1"  # the job of the first case's first summary
    job = _job(at, name)
    # on a CPU the notes' claims are the facts (no model call): the first model call is the differential
    assert _wait(lambda: job.status().step == "differential diagnosis")
    at.run()
    texts = _bar_texts(at)
    assert texts and "MED-OMIT: summary 1/1" in texts[0] and "step 2/6: differential diagnosis" in texts[0], texts
    at = _cancel(at, name)
    warnings = _warnings(at)
    assert any(w.startswith("MED-OMIT cancelled — 0 of 1 summary done, kept") for w in warnings), warnings
    assert not any(b.key == f"cancel_{name}" for b in at.button)


def test_evidence_page_batch_cancel_keeps_and_resumes():
    from fakes import drop_stored_evidence

    drop_stored_evidence()
    at = _run("pages/evidence.py")
    next(b for b in at.button if b.label == "Compute for every summary").click()
    at.run()
    job = _job(at, "evidence_all")
    assert _wait(lambda: job.status().done >= 2, 300), job.status()
    at.run()
    texts = _bar_texts(at)
    assert texts and "Embedding evidence: summary" in texts[0] and "/36" in texts[0], texts
    at = _cancel(at, "evidence_all")
    kept = job.status().counts.get("new", 0)
    assert kept >= 2
    warnings = _warnings(at)
    assert any(w.startswith(f"Embedding evidence cancelled — {job.status().done} of 36 summaries done, kept")
               for w in warnings), warnings
    # a new run resumes: the kept summaries come from the workspace, and the estimate ignores them
    next(b for b in at.button if b.label == "Compute for every summary").click()
    at.run()
    job2 = _job(at, "evidence_all")
    assert job2 is not job
    assert _wait(lambda: job2.status().done >= kept + 1, 300), job2.status()
    assert job2.status().counts.get("from the workspace", 0) == kept
    job2.cancel()
    assert job2.wait(10)
