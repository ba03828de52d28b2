"""Progress from measurements: a run's estimate comes from the work left in tokens and the speeds measured for the
model on this machine; tokens show as they are read; no "estimating" once a speed is known."""
import math
import threading
import time

import pytest

from engine.core.jobs import Job, report_tokens
from engine.core.run_plan import DEFAULT_DECODE_WEIGHT, Speeds, measured_speeds, work_tokens
from fakes import judge_result


def test_work_counts_only_what_is_read_again():
    notes = list(range(1000))
    a, b = notes + [1, 2, 3], notes + [7, 8]
    speeds = Speeds(prompt_tps=100.0, decode_tps=20.0, tokens_per_sample=50.0, n_results=3)
    work = work_tokens([a, None, b], n_samples=2, speeds=speeds, batch=256)
    assert work[1] == 0.0  # already stored
    assert work[0] == pytest.approx(1003 + 2 * 50 * 5)
    assert work[2] == pytest.approx(1002 - 768 + 2 * 50 * 5)  # reuse cut to a whole number of batches
    default = work_tokens([a], 1, None)
    assert default[0] > 1003 and DEFAULT_DECODE_WEIGHT > 1


def test_speeds_are_measured_per_model_from_stored_results():
    rs = []
    for i, (new, ps, dt, ds_) in enumerate([(1000, 10.0, 100, 5.0), (2000, 20.0, 120, 6.0), (500, 5.0, 80, 4.0)]):
        r = judge_result(f"s{i}", "c", {"cited": 4.0}, model="m.gguf", created_at=f"2030-01-0{i + 1}T00:00:00+00:00")
        r.timing.prompt_new_tokens, r.timing.prompt_seconds = new, ps
        r.timing.decode_tokens, r.timing.decode_seconds = dt, ds_
        rs.append(r)
    sha = rs[0].provenance.model_sha256
    sp = measured_speeds(rs, sha)
    assert sp.prompt_tps == pytest.approx(100.0) and sp.decode_tps == pytest.approx(20.0) and sp.n_results == 3
    assert measured_speeds(rs, "0" * 64) is None and measured_speeds(rs, None) is None


def _planned_job(rate, work):
    gate = {"go": False}

    def run(job):
        job.report(done=0, item="s1", step="sample 1", step_index=0)
        report_tokens("prompt", 0, 1000)
        while not gate["go"]:
            time.sleep(0.01)
        for k in range(1, 5):
            time.sleep(0.3)
            report_tokens("prompt", 250 * k, 1000, 512)

    job = Job("Judge", len(work), run)
    job.plan(work, rate, 5.0)
    return job.start(), gate


def test_a_measured_speed_gives_an_estimate_from_the_first_second():
    job, gate = _planned_job(100.0, [1500.0, 1500.0])
    time.sleep(0.1)
    st = job.status()
    assert st.eta_s == pytest.approx(30.0) and st.speed_from == "measured before"
    assert "reading the prompt: 0 of 1,000 new tokens" in st.progress_text()  # tokens show as they are read
    gate["go"] = True
    job.wait(5)


def test_tokens_show_as_read_and_this_runs_speed_takes_over():
    job, gate = _planned_job(None, [1500.0, 1500.0])
    time.sleep(0.1)
    assert job.status().eta_s is None  # nothing measured before, nothing read yet
    gate["go"] = True
    deadline = time.time() + 5
    st = job.status()
    while time.time() < deadline and st.speed_from != "this run":
        time.sleep(0.05)
        st = job.status()
    assert st.speed_from == "this run" and st.eta_s is not None and st.eta_s > 0
    assert "reading the prompt:" in st.progress_text() and "of 1,000 new tokens (512 reused)" in st.progress_text()
    job.wait(5)


def test_the_bar_moves_with_the_counted_tokens():
    """Before, a one-summary, one-sample run's bar stayed at 0 % while the text counted "3,072 of 3,224 tokens"."""
    job, gate = _planned_job(100.0, [1000.0])
    time.sleep(0.1)
    assert job.status().fraction == 0.0
    gate["go"] = True
    deadline, seen = time.time() + 5, []
    while time.time() < deadline and not job.status().finished:
        seen.append(job.status().fraction)
        time.sleep(0.05)
    moving = sorted(set(f for f in seen if 0 < f < 1))
    assert len(moving) >= 2 and moving == sorted(moving)  # 0.25, 0.5, 0.75, ... while the prompt is read
    assert job.status().fraction == 1.0


def test_without_a_plan_the_old_extrapolation_stays():
    job = Job("x", 10, lambda j: time.sleep(0.2)).start()
    assert job.status().speed_from == ""
    job.wait(2)


def test_a_real_run_plans_its_work_and_the_next_run_knows_the_speed(tmp_path):
    """The smoke-test model on two summaries of one sample case: the second summary's plan reads only what differs
    from the first (the case's notes are reused); once the first run is stored, a new run's estimate uses the
    measured speed from its first second."""
    from engine.judge.runner import Judge, judge_job, open_llama_backend
    from engine.judge.results import JudgeParams, JudgeResult
    from engine.sample import ensure_sample
    from engine.data.store import Store

    store = Store(tmp_path / "ws.sqlite")  # the rubric prefix comes from the run's shared cache (tests/conftest.py)
    ensure_sample(store)
    ds = store.load_dataset("sample")
    be, sha = open_llama_backend("", n_ctx=8192, n_threads=2)
    judge = Judge(be, sha, JudgeParams(n_samples=1, seed=11))  # a seed the shipped results do not use
    ids = ["card-01-s1", "card-01-s2"]
    job = judge_job(judge, ds, ids, store=store, dataset_name="sample")
    job.start()
    seen = []
    while not job.wait(0.2):
        seen.append(job.status())
    assert job.status().state == "done", job.status().error
    assert job._work is not None and job._work[1] < job._work[0] / 2  # the notes are read once
    assert any("reading the prompt:" in s.progress_text() for s in seen)
    results = [JudgeResult.from_json(x) for x in store.judge_results("sample", latest_only=False)]
    mine = [r for r in results if r.summary_id in ids and r.provenance.params.get("seed") == 11]
    assert all(r.timing.prompt_new_tokens for r in mine)
    assert mine[0].timing.prompt_new_tokens != mine[1].timing.prompt_new_tokens
    again = judge_job(Judge(be, sha, JudgeParams(n_samples=1, seed=12)), ds, ["card-01-s3"], store=store,
                      dataset_name="sample")
    again.start()
    deadline, first = time.time() + 20, again.status()
    while time.time() < deadline and not first.speed_from:
        time.sleep(0.05)
        first = again.status()
    again.cancel()
    again.wait(60)
    assert first.speed_from in ("measured before", "this run") and first.eta_s is not None


def test_the_estimate_counts_down_between_batches_and_grows_only_when_the_run_slows(monkeypatch):
    """Tokens are reported a batch at a time; the estimate used to be the work left over the speed measured up to
    *now*, which sank between reports, so the estimate climbed until each batch landed (7 → 20 minutes seen)."""
    import engine.core.jobs as jobs

    clock = {"t": 100.0}
    monkeypatch.setattr(jobs.time, "monotonic", lambda: clock["t"])
    job = Job("Judge", 1, lambda j: None)
    job._state = jobs.RUNNING
    job.plan([10_000.0], None, 1.0)
    job._tokens("prompt", 0, 10_000, 0)
    etas = []
    for batch in range(1, 8):  # 512 tokens every 10 s: a steady 51.2 tokens/s
        for step in range(10):
            clock["t"] += 1.0
            if step == 9:
                job._tokens("prompt", 512 * batch, 10_000, 0)
            etas.append(job.status().eta_s)
    steady = [e for e in etas if e is not None]
    assert len(steady) >= 60
    assert all(b <= a + 1e-6 for a, b in zip(steady, steady[1:])), steady  # never climbs at a steady speed
    assert steady[-1] == pytest.approx((10_000 - 7 * 512) / 51.2)
    clock["t"] += 30.0  # the next batch takes 40 s: the run is slower now, and only then the estimate grows
    job._tokens("prompt", 512 * 8, 10_000, 0)
    assert job.status().eta_s > steady[-1]


def test_an_unplanned_step_moves_with_its_prompt_read():
    """Before, a MED-OMIT run sat at 0 % while its first step read a long record."""
    gate = threading.Event()
    seen = []

    def work(job: Job) -> None:
        job.report(done=0, item="s1", step="extracting facts", step_index=0)
        for k in range(5):
            report_tokens("prompt", 512 * k, 2048)
            seen.append(job.status().fraction)
        gate.wait(5)

    job = Job("MED-OMIT", 1, work, n_steps=6).start()
    time.sleep(0.3)
    assert seen[0] == 0.0 and seen == sorted(seen) and seen[-1] > 0
    assert abs(seen[-1] - 0.5 / 6) < 1e-9  # the prompt is half of its step, the step one of six
    gate.set()
    job.wait(5)


def test_a_claim_verification_run_is_planned_and_its_tokens_add_up_across_questions():
    from fakes import AnswerBackend
    from engine.core.models import Case, Dataset, Note, Summary
    from engine.evidence.support.verification._plan import summary_work
    from engine.evidence.support.verification.run import verification_job

    case = Case("c1", "Cardiology", (Note("1", "Atrial fibrillation on apixaban. " * 40),))
    s = Summary("c1-s1", "c1", "Atrial fibrillation. <NoteID:1> On apixaban.")
    ds = Dataset(name="d", cases=[case], summaries=[s])
    be = AnswerBackend(lambda m: {"Yes": math.log(0.9), "No": math.log(0.1)})
    job = verification_job(None, "d", ds, ["c1-s1"], lambda: be, "sha").start()
    assert job.wait(30) and job.status().state == "done"
    assert job.status().work_fraction == 1.0  # planned: the bar is the share of the planned tokens
    assert summary_work(1000, ["a" * 40], 0, record_read=True) < summary_work(1000, ["a" * 40], 0, False)
    planned = Job("x", 1, lambda j: None)
    planned.plan([300.0])
    planned._tokens("prompt", 100, 100, 0)  # two questions of 100 prompt tokens each: they add up in the item
    planned._tokens("prompt", 0, 100, 0)
    planned._tokens("prompt", 100, 100, 0)
    assert abs(planned._work_fraction() - 200 / 300) < 1e-9


def test_a_run_that_stops_early_is_planned_with_the_samples_such_runs_took():
    """Before: 5 samples planned while early stopping took 2, and the estimate read 11 min for a run of 1 min 41 s."""
    from engine.core.run_plan import expected_samples

    def took(n):
        r = judge_result("s", "c", {}, n_samples=5)
        r.samples = r.samples[:1] * n
        return r

    mine = [took(2), took(2), took(3)]
    sha = mine[0].provenance.model_sha256
    assert expected_samples(mine, sha, 5, early_stop=True) == 2.0
    assert expected_samples(mine, sha, 5, early_stop=False) == 5.0
    assert expected_samples(mine, sha, 3, early_stop=True) == 3.0  # no stored run asked for 3: as asked
    assert expected_samples([], sha, 5, early_stop=True) == 5.0
