"""Background jobs: progress with counts and an estimate, Cancel within one LLM call, work kept.

The first tests check the Job bookkeeping with plain Python work (logic only). The rest run the real embedded
model (Gemma 3 270M through llama.cpp): MED-OMIT and the judge are cancelled while the model is generating, and
the worker must end within a fraction of one call, keep what it finished, and leave the model in a state that
gives the same output afterwards as a freshly loaded one.
"""
import threading
import time

import pytest

from engine.core.jobs import (CANCELLED, DONE, FAILED, Cancelled, CancelToken, Job, cancel_scope, check_cancelled,
                              format_duration)


def _wait_for(pred, timeout=60.0, every=0.01):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(every)
    return False


# ------------------------------------------------------------------------------------------------- logic


def test_progress_counts_steps_and_items():
    gate = threading.Event()

    def work(job):
        job.report(done=0, item="s1", step="facts", step_index=0)
        job.report(done=0, item="s1", step="ddx", step_index=1)
        gate.wait(5)
        job.report(done=1, item="s1", step="complete")
        job.count("complete")

    job = Job("MED-OMIT", 2, work, n_steps=4).start()
    assert _wait_for(lambda: job.status().step == "ddx")
    st = job.status()
    # item 1 of 2, step 2 of 4 → (0 + 1/4) / 2
    assert st.fraction == pytest.approx(0.125)
    assert "summary 1/2" in st.progress_text() and "step 2/4: ddx" in st.progress_text()
    gate.set()
    assert job.wait(5)
    st = job.status()
    assert st.state == DONE and st.fraction == 1.0 and st.counts == {"complete": 1}
    assert st.final_text().startswith("MED-OMIT finished — 1 of 2 summaries (1 complete) in ")


def test_estimate_ignores_items_served_from_the_workspace():
    clock = {"t": 0.0}
    job = Job("Judge", 10, lambda job: None)
    import engine.core.jobs as jobs

    real = jobs.time.monotonic
    jobs.time.monotonic = lambda: clock["t"]
    try:
        job._t0 = job._base_t = 0.0
        # five cached items come back at once at t = 0.5 s: they say nothing about the speed of real work
        clock["t"] = 0.5
        job.report(done=5, cached=True)
        assert job.status().eta_s is None  # nothing done since the restart
        # one real item takes 10 s: 4 left → 40 s
        clock["t"] = 10.5
        job.report(done=6)
        assert job.status().eta_s == pytest.approx(40.0)
        # a naive rate over the whole run (6 items in 10.5 s) would have said 7 s
    finally:
        jobs.time.monotonic = real


def test_cancel_between_items_keeps_what_was_done():
    started = threading.Event()

    def work(job):
        for i in range(100):
            check_cancelled()  # what the LLM backends and steps call
            job.report(done=i, item=f"s{i}")
            started.set()
            time.sleep(0.02)
            job.results.append(i)
            job.count("new")

    job = Job("Judge", 100, work).start()
    assert started.wait(5)
    job.cancel()
    assert job.wait(2)
    st = job.status()
    assert st.state == CANCELLED and 0 < len(job.results) < 100 and st.counts["new"] == len(job.results)
    assert st.final_text().startswith(f"Judge cancelled — {st.done} of 100 summaries done, kept")


def test_failure_keeps_the_reason():
    def work(job):
        job.report(done=1)
        raise ValueError("the workspace is read-only")

    job = Job("Embedding evidence", 3, work).start()
    assert job.wait(5)
    st = job.status()
    assert st.state == FAILED and "the workspace is read-only" in st.final_text() and "ValueError" in job.traceback


def test_check_cancelled_is_scoped():
    token = CancelToken()
    token.cancel()
    check_cancelled()  # outside any scope: a no-op
    with cancel_scope(token), pytest.raises(Cancelled):
        check_cancelled()
    check_cancelled()


def test_durations_read_well():
    assert format_duration(None) == "estimating…"
    assert format_duration(42.4) == "42 s"
    assert format_duration(125) == "2 min 05 s"
    assert format_duration(3 * 3600 + 61) == "3 h 01 min"


# ------------------------------------------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def real_backend():
    from engine.judge.runner import open_llama_backend

    return open_llama_backend("", n_ctx=8192, n_threads=2)


def _one_case():
    from engine.core.models import Case, Dataset, Note, Summary

    notes = (Note("1", "58 y/o woman with exertional chest pain for 3 weeks. BP 152/94, HR 88. ECG: 1 mm ST "
                       "depression V4-V6 on exertion. Started aspirin 81 mg daily and atorvastatin 80 mg daily. "
                       "Stress test ordered.", "2024-03-01", "Progress note"),
             Note("2", "Coronary angiography: 80% mid-RCA stenosis, FFR 0.86, managed medically. Metoprolol "
                       "succinate 25 mg daily added. Cardiac rehab referral. Follow-up in 6 weeks.", "2024-03-20",
                  "Procedure note"))
    return Dataset(name="one", cases=[Case("c1", "Cardiology", notes)],
                   summaries=[Summary("c1-s1", "c1", "Exertional angina; started aspirin and atorvastatin. "
                                                     "<NoteID:1> Angiography showed RCA disease managed "
                                                     "medically. <NoteID:2>")])


def _cancel_mid_call(be, start_job, settle_s: float):
    """Start the job ``start_job()`` returns, cancel it ``settle_s`` after the model's first call began (inside
    that call: prompt evaluation or the first tokens), and return (job, model calls made, seconds to stop)."""
    calls = {"n": 0}
    in_call = threading.Event()
    real_generate = be._generate

    def spy(*a, **k):
        calls["n"] += 1
        in_call.set()
        return real_generate(*a, **k)

    be._generate = spy
    try:
        job = start_job()
        assert in_call.wait(60), job.status()
        time.sleep(settle_s)
        t0 = time.monotonic()
        job.cancel()
        assert job.wait(10)
        return job, calls["n"], time.monotonic() - t0
    finally:
        be._generate = real_generate


def test_medomit_cancel_stops_inside_the_running_llm_call(real_backend):
    """Cancel while MED-OMIT's first step (fact extraction) is generating: the worker stops within a fraction of a
    second although that single call alone takes several seconds; nothing half-done is stored."""
    from engine.evidence.medomit.pipeline import MedOmit, medomit_job

    be, sha = real_backend
    ds = _one_case()
    job, _, stop_s = _cancel_mid_call(
        be, lambda: medomit_job(MedOmit(be, sha), ds, ["c1-s1"], dataset_name="one").start(), 0.5)
    st = job.status()
    assert st.state == CANCELLED, st
    assert st.final_text().startswith("MED-OMIT cancelled — 0 of 1 summary done, kept")
    assert stop_s < 1.0, f"the worker took {stop_s:.2f} s to stop after Cancel"
    assert job.results == []


def test_judge_cancel_mid_call_leaves_the_model_exact(real_backend):
    """A judge run cancelled in the middle of generating; afterwards the same prompt gives exactly the reply a
    freshly loaded model gives (the cancelled call left nothing behind in the llama.cpp context)."""
    from engine.judge.runner import Judge, judge_job, open_llama_backend
    from engine.judge.results import JudgeParams

    be, sha = real_backend
    ds = _one_case()
    job, calls, stop_s = _cancel_mid_call(
        be, lambda: judge_job(Judge(be, sha, JudgeParams(n_samples=3, early_stop=False)), ds, ["c1-s1"],
                              store=None, dataset_name="one").start(), 0.3)
    st = job.status()
    assert st.state == CANCELLED and calls == 1 and stop_s < 1.0, (st, calls, stop_s)
    assert st.final_text().startswith("Judge cancelled — 0 of 1 summary done, kept")

    # the model is still exact: the same greedy sample as a fresh model
    j = Judge(be, sha, JudgeParams(n_samples=1))
    after = j.judge(ds, "c1-s1").samples[0].raw
    fresh_be, _ = open_llama_backend("", n_ctx=8192, n_threads=2)
    fresh = Judge(fresh_be, sha, JudgeParams(n_samples=1)).judge(ds, "c1-s1").samples[0].raw
    assert after == fresh
