"""The thread count llama.cpp decodes with follows the measured speeds (engine.llm.threads): it stays at the
configured count on idle cores, drops to fewer when another process holds a core (the speeds measured on 2 cores
with the 1.5B: 10.6 tokens/s with 2 threads idle, 5.9 with 1, 3.3 with 2 while one core is busy), and comes back
when the cores are free again. With the real smoke-test model the count changes no logit."""
import pytest

from engine.core.models import Case, Dataset, Note, Summary
from engine.judge.results import STATUS_SCORED, JudgeParams
from engine.judge.runner import Judge, open_llama_backend
from engine.llm.threads import ThreadGovernor

SHORT = Dataset("short", [Case("c1", "Cardiology", (
    Note("1", "67 y/o man with new atrial fibrillation, HR 112. Started metoprolol 25 mg daily.", "2024-01-09",
         "Progress note"),))],
    [Summary("c1-s1", "c1", "New atrial fibrillation on metoprolol. <NoteID:1>")])

IDLE = {2: 10.6, 1: 5.9}
BUSY = {2: 3.3, 1: 5.9}


def run(gov: ThreadGovernor, speeds: dict[int, float], steps: int) -> list[int]:
    """Feed ``steps`` decoding steps at the speed of the count in use; the counts used, step by step."""
    used = []
    for _ in range(steps):
        used.append(gov.now)
        gov.step(1.0 / speeds[gov.now])
    return used


def test_idle_cores_keep_the_configured_count_after_one_window_with_fewer():
    gov = ThreadGovernor(2)
    used = run(gov, IDLE, 400)
    assert used.count(1) == ThreadGovernor.WINDOW  # one window learns the speed with one thread, once
    assert gov.now == 2 and gov.best == {2: pytest.approx(10.6), 1: pytest.approx(5.9)}


def test_a_busy_core_moves_to_fewer_threads_and_free_cores_bring_the_count_back():
    gov = ThreadGovernor(2)
    run(gov, IDLE, 100)
    busy = run(gov, BUSY, 400)
    assert busy[-1] == 1 and busy.count(2) <= ThreadGovernor.WINDOW * (1 + 400 // (ThreadGovernor.WINDOW *
                                                                                     ThreadGovernor.PROBE_EVERY))
    free = run(gov, IDLE, 2 * ThreadGovernor.WINDOW * ThreadGovernor.PROBE_EVERY)
    assert free[-1] == 2 and gov.now == 2


def test_a_run_that_starts_on_a_busy_core_finds_fewer_threads_faster():
    gov = ThreadGovernor(2)
    used = run(gov, BUSY, 200)
    assert used[:ThreadGovernor.WINDOW] == [2] * ThreadGovernor.WINDOW and used[-1] == 1


def test_one_thread_configured_is_never_changed():
    gov = ThreadGovernor(1)
    assert set(run(gov, {1: 5.0}, 100)) == {1} and gov.switches == 0


def test_the_thread_count_changes_no_logit_of_the_real_model(tmp_path, monkeypatch):
    """The same greedy judge reply and expected scores whether every step is decoded with 1 or 2 threads."""
    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(tmp_path))
    be, sha = open_llama_backend("", n_ctx=4096, n_threads=2)
    results = []
    for n in (2, 1):
        be.threads = ThreadGovernor(n)
        be._use_threads(n)
        be._cached_prompt, be._cached_logits = None, None
        be.llm.reset()
        results.append(Judge(be, sha, JudgeParams(n_samples=1)).judge(SHORT, "c1-s1"))
    two, one = results
    assert two.status == one.status == STATUS_SCORED
    assert two.samples[0].raw == one.samples[0].raw
    assert {k: v.expected for k, v in two.items.items()} == {k: v.expected for k, v in one.items.items()}
