"""The thread count llama.cpp decodes with follows the measured speeds (engine.llm._threads): it stays at the
configured count on idle cores, drops to fewer when another process holds a core (the speeds measured on 2 cores
with the 1.5B: 10.6 tokens/s with 2 threads idle, 5.9 with 1, 3.3 with 2 while one core is busy), and comes back
when the cores are free again. With the real smoke-test model the count changes no logit."""
import pytest

from engine.llm.llama import LlamaCppBackend
from engine.llm.modelfiles import resolve_model_path
from engine.llm._threads import ThreadGovernor

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


def test_the_thread_count_changes_no_logit_of_the_real_model():
    """The same grammar-constrained greedy reply and the same log-probabilities at every step whether the smoke-test
    model computes with 1 or 2 threads."""
    be = LlamaCppBackend(resolve_model_path(""), n_ctx=1024, n_threads=2)
    prompt = be.render([{"role": "user", "content": "A 67-year-old man has atrial fibrillation at 112 beats per "
                                                    "minute and was started on metoprolol. Is his rhythm regular? "
                                                    "Reply in JSON with the reason."}])
    schema = {"type": "object", "properties": {"regular": {"type": "string", "enum": ["yes", "no"]},
                                               "reason": {"type": "string", "maxLength": 60}},
              "required": ["regular", "reason"], "additionalProperties": False}
    replies = []
    for n in (2, 1):
        be.threads = ThreadGovernor(n)
        be._use_threads(n)
        be._cached_prompt, be._cached_logits = None, None
        be.llm.reset()
        replies.append(be.generate(prompt, schema, 40, 0.0, 1, want_logprobs=True))
    two, one = replies
    assert two.completion_tokens >= 5 and two.text == one.text
    assert two.top_logprobs == one.top_logprobs


def test_a_decode_count_tried_by_the_governor_leaves_prompt_batches_on_the_configured_count():
    """The governor times decoding only: a reply that ends during a one-thread window must not leave the next
    prompt (a case's record, a one-step question) to be read with one thread."""
    import llama_cpp

    be = LlamaCppBackend(resolve_model_path(""), n_ctx=512, n_threads=2)
    be._use_threads(1)
    ctx = be.llm._ctx.ctx
    assert llama_cpp.llama_n_threads(ctx) == 1 and llama_cpp.llama_n_threads_batch(ctx) == 2
