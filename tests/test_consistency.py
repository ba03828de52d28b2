"""Exact early stopping: the medians after stopping equal the full run's, proven on recorded real results."""
from pathlib import Path


from engine.judge.consistency import all_fixed, possible_outcomes
from engine.judge.results import JudgeResult, SampleReply, aggregate
from engine.core.rubric import get_item
from fakes import ReplayBackend


def test_likert_median_fixed_once_a_majority_agrees():
    item = get_item("accurate")
    # 7 samples: four 3s fix the median whatever the other three are
    assert possible_outcomes([3, 3, 3, 3], 3, item) == {(False, 3.0)}
    # three 3s and one 5: a 1 and a... could still move it
    assert len(possible_outcomes([3, 3, 3, 5], 3, item)) > 1
    # no sample yet: anything can happen
    assert len(possible_outcomes([], 7, item)) > 1


def test_na_rule_is_respected_for_synthesized():
    item = get_item("synthesized")
    # 4 NA of 7: NA outnumbers the values whatever comes
    assert possible_outcomes([None, None, None, None], 3, item) == {(True, None)}
    # 3 NA and 1 value: 3 more could be NA (NA) or values (a median)
    assert (True, None) in possible_outcomes([None, None, None, 4.0], 3, item)
    assert any(not na for na, _ in possible_outcomes([None, None, None, 4.0], 3, item))


def test_even_totals_average_the_middle_pair():
    item = get_item("cited")
    # N = 4, after [2, 2, 2]: completions 2,2,2,x give median 2 for any x
    assert possible_outcomes([2, 2, 2], 1, item) == {(False, 2.0)}
    # after [2, 2, 4]: x = 1 gives 2, x = 5 gives 3, missing gives 2
    assert possible_outcomes([2, 2, 4], 1, item) == {(False, 2.0), (False, 3.0)}


def _replay(result: JudgeResult):
    n = len(result.samples)
    for k in range(1, n + 1):
        taken = result.samples[:k]
        if all_fixed([s.values for s in taken if s.ok], k, n):
            return k
    return n


# The smoke-test model's 7-sample results for the 36 sample summaries (an earlier prompt version), kept as recorded
# replies of a real model for the early-stopping logic.
RECORDED = Path(__file__).resolve().parent / "data" / "judge_results_gemma_7samples.jsonl"


def recorded():
    return [JudgeResult.from_json(line) for line in RECORDED.read_text().splitlines() if line.strip()]


def test_replaying_the_recorded_sample_results_gives_identical_medians():
    results = recorded()
    assert len(results) == 36
    used = []
    for r in results:
        k = _replay(r)
        used.append(k)
        early = aggregate(r.samples[:k])
        full = aggregate(r.samples)
        assert {i: (s.median, s.is_na) for i, s in early.items()} == \
               {i: (s.median, s.is_na) for i, s in full.items()}, r.summary_id
    mean_used = sum(used) / len(used)
    print(f"mean samples used: {mean_used:.2f} of 7")
    assert mean_used < 7  # the point of it: fewer samples, same medians


def test_never_stops_while_a_median_could_still_move():
    # brute force on the recorded samples: whenever all_fixed says "fixed" after k samples, every way of
    # replacing the remaining samples by other recorded samples' values gives the same medians
    results = recorded()[:12]
    pool = [s for r in results for s in r.samples if s.ok][:40]
    stopped_early = 0
    for r in results:
        k = _replay(r)
        if k >= len(r.samples):
            continue
        stopped_early += 1
        base = {i: (s.median, s.is_na) for i, s in aggregate(r.samples).items()}
        for j in range(0, len(pool) - 7):
            swapped = list(r.samples[:k]) + [SampleReply(**{**s.__dict__}) for s in pool[j:j + len(r.samples) - k]]
            got = {i: (s.median, s.is_na) for i, s in aggregate(swapped).items()}
            assert got == base, (r.summary_id, k)
    assert stopped_early, "no recorded result stopped early: the check above checked nothing"


def test_the_judge_stops_where_the_replay_says_with_the_recorded_medians():
    from engine.judge.runner import Judge
    from engine.judge.results import JudgeParams
    from engine.data.loading import load_paths
    from engine.sample import SAMPLE_BUNDLE

    ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
    used = []
    for r in recorded():
        params = JudgeParams(**{**r.provenance.params, "early_stop": True})
        be = ReplayBackend(r, params.seed)
        got = Judge(be, None, params).judge(ds, r.summary_id)
        k = _replay(r)
        assert be.calls == got.samples_taken == k, r.summary_id
        assert got.stopped_early == (k < len(r.samples))
        assert {i: (s.median, s.is_na) for i, s in got.items.items()} == \
               {i: (s.median, s.is_na) for i, s in r.items.items()}, r.summary_id
        used.append(k)
    assert sum(used) < 7 * len(used)
