"""Judge logic with a fake backend: parsing, NA handling, unscored path, cache, resume, context budget, few-shot.

The fake backend is for logic only; tests/test_judge_real.py runs the real embedded model.
"""
import json

import pytest

from conftest import BUNDLE
from engine.backends import Generation
from engine.judge import (STATUS_REFUSED, STATUS_SCORED, STATUS_UNSCORED, Judge, JudgeParams, JudgeResult,
                          SampleReply, aggregate, example_answer, expected_scores, in_train_split, parse_reply,
                          run_batch, select_examples)
from engine.judge_prompt import PROMPT_VERSION, build_messages, output_schema, read_user_message, rubric_text
from engine.loading import load_paths
from engine.rubric import ITEMS

GOOD = {"cited": 4, "accurate": 5, "thorough": 3, "useful": 4, "organized": 4, "comprehensible": 5, "succinct": 4,
        "abstraction": "yes", "synthesized": 3, "stigmatizing_notes": "no", "stigmatizing_summary": "no"}


class FakeBackend:
    """Counts one token per whitespace-separated word; replies from a script (cycled)."""

    name = "fake"

    def __init__(self, replies, n_ctx=100_000):
        self.replies = list(replies)
        self._n_ctx = n_ctx
        self.calls = []

    @property
    def n_ctx(self):
        return self._n_ctx

    def describe(self):
        return {"backend": "fake", "model_file": "fake.gguf", "quantization": "none"}

    def render(self, messages):
        return "\n".join(f"<{m['role']}>\n{m['content']}" for m in messages)

    def count_tokens(self, text):
        return len(text.split())

    def generate(self, prompt, schema, max_tokens, temperature, seed, want_logprobs):
        self.calls.append((prompt, temperature, seed))
        r = self.replies[(len(self.calls) - 1) % len(self.replies)]
        text = r if isinstance(r, str) else json.dumps(r)
        return Generation(text, self.count_tokens(prompt), len(text) // 4, 0.1, 0.2, "stop")


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE], name="sample")[0]


# ------------------------------------------------------------------------------------------- parsing


def test_parse_valid_reply():
    values, notes, warnings = parse_reply(json.dumps(GOOD), explain=False)
    assert values["cited"] == 4.0 and values["abstraction"] == 1.0 and values["stigmatizing_notes"] == 0.0
    assert values["synthesized"] == 3.0 and not warnings


@pytest.mark.parametrize("patch,fragment", [
    ({"cited": 6}, "expected an integer 1-5"),
    ({"accurate": "5"}, "expected an integer 1-5"),
    ({"thorough": 2.5}, "expected an integer 1-5"),
    ({"abstraction": "maybe"}, "expected 'yes' or 'no'"),
    ({"useful": True}, "expected an integer 1-5"),
])
def test_parse_rejects_out_of_scale(patch, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_reply(json.dumps({**GOOD, **patch}), explain=False)


def test_parse_rejects_missing_item_and_bad_json():
    bad = dict(GOOD)
    del bad["succinct"]
    with pytest.raises(ValueError, match="lacks item.*succinct"):
        parse_reply(json.dumps(bad), explain=False)
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_reply('{"cited": 4, "accu', explain=False)


def test_synthesized_follows_abstraction():
    v, _, w = parse_reply(json.dumps({**GOOD, "abstraction": "no", "synthesized": 4}), False)
    assert v["synthesized"] is None and "NA" in w[0]
    v, _, w = parse_reply(json.dumps({**GOOD, "synthesized": "NA"}), False)
    assert "synthesized" not in v and w


def test_aggregate_median_spread_and_na():
    def s(i, **vals):
        return SampleReply(i, 0.7, i, "", values={**{k: 3.0 for k in ("cited",)}, **vals})

    # synthesized: NA, NA, 4 -> NA wins 2:1; cited values 2, 4, 5 -> median 4, spread 3
    samples = [s(0, cited=2.0, synthesized=None), s(1, cited=4.0, synthesized=None), s(2, cited=5.0, synthesized=4.0)]
    agg = aggregate(samples)
    assert agg["cited"].median == 4.0 and agg["cited"].spread == 3.0
    assert agg["synthesized"].is_na and agg["synthesized"].median is None
    # 4, 5, NA -> numeric majority: median of (4, 5) = 4.5
    samples = [s(0, synthesized=4.0), s(1, synthesized=5.0), s(2, synthesized=None)]
    assert aggregate(samples)["synthesized"].median == 4.5
    # an unscored sample does not count
    bad = SampleReply(3, 0.7, 3, "garbage", error="not JSON")
    assert aggregate([s(0, cited=1.0), bad])["cited"].values == [1.0]


def test_expected_score_from_logprobs():
    # tokens: '{"cited":', ' 4', ',' ...; at the ' 4' step p(' 3') = p(' 4') = 0.4 and p(' 5') = 0.2
    # -> expected = (3*0.4 + 4*0.4 + 5*0.2) / 1.0 = 3.8
    import math
    toks = ['{"cited":', " 4", ', "abstraction": "', "yes", '"}']
    tops = [{}, {" 3": math.log(0.4), " 4": math.log(0.4), " 5": math.log(0.2)}, {},
            {"yes": math.log(0.75), "no": math.log(0.25)}, {}]
    gen = Generation("".join(toks), 10, 5, 0, 0, "stop", toks, tops)
    exp = expected_scores(gen, {"cited": 4.0, "abstraction": 1.0})
    assert exp["cited"][0] == pytest.approx(3.8) and exp["cited"][1] == pytest.approx(1.0)
    assert exp["abstraction"][0] == pytest.approx(0.75)


# ------------------------------------------------------------------------------------------- judge runs


def test_scored_and_partially_unscored(ds):
    be = FakeBackend([GOOD, "I think it is a 4", {**GOOD, "cited": 2}])
    r = Judge(be, "sha", JudgeParams(n_samples=3)).judge(ds, ds.summaries[0].summary_id)
    assert r.status == STATUS_SCORED and "1 of 3 samples unscored" in r.reason
    assert r.items["cited"].values == [4.0, 2.0] and r.items["cited"].median == 3.0
    bad = next(s for s in r.samples if not s.ok)
    assert bad.raw == "I think it is a 4" and "not valid JSON" in bad.error
    # sample 0 greedy, the rest at the temperature, one seed each
    assert [c[1] for c in be.calls] == [0.0, 0.7, 0.7] and len({c[2] for c in be.calls}) == 3
    # the prompt is the same for every sample (so llama.cpp reuses its evaluated prefix)
    assert len({c[0] for c in be.calls}) == 1


def test_all_unscored_keeps_raw_and_reason(ds):
    be = FakeBackend(['{"cited": 9}'])
    r = Judge(be, "sha", JudgeParams(n_samples=2)).judge(ds, ds.summaries[0].summary_id)
    assert r.status == STATUS_UNSCORED and "no sample could be scored" in r.reason
    assert all(s.raw == '{"cited": 9}' and s.error for s in r.samples)
    assert all(v.median is None for v in r.items.values())
    back = JudgeResult.from_json(r.to_json())
    assert back.status == STATUS_UNSCORED and back.samples[0].raw == '{"cited": 9}'


def test_provenance_is_complete(ds):
    r = Judge(FakeBackend([GOOD]), "abc123", JudgeParams(n_samples=1)).judge(ds, ds.summaries[0].summary_id)
    p = r.provenance
    assert p.model_sha256 == "abc123" and p.prompt_version == PROMPT_VERSION and p.model_file == "fake.gguf"
    assert p.params["n_samples"] == 1 and p.params["seed"] == 1234 and r.samples[0].raw


def test_cache_hit_and_resume_after_interruption(ds, store):
    store.import_dataset(ds, name="sample")
    ids = [s.summary_id for s in ds.summaries[:4]]
    be = FakeBackend([GOOD])
    judge = Judge(be, "sha", JudgeParams(n_samples=2))
    # interrupt after the second summary has finished
    finished = []
    for r in run_batch(judge, ds, ids, store=store, dataset_name="sample", should_stop=lambda: len(finished) >= 2):
        finished.append(r.summary_id)
    assert finished == ids[:2] and len(be.calls) == 4
    # resume: the first two come from the store, only the last two are computed
    results = list(run_batch(judge, ds, ids, store=store, dataset_name="sample"))
    assert [r.from_cache for r in results] == [True, True, False, False]
    assert len(be.calls) == 8
    # a third run is all cache hits
    assert all(r.from_cache for r in run_batch(judge, ds, ids, store=store, dataset_name="sample"))
    assert len(be.calls) == 8
    # other parameters -> other cache key -> recomputed
    other = Judge(be, "sha", JudgeParams(n_samples=1))
    assert not next(iter(run_batch(other, ds, ids[:1], store=store, dataset_name="sample"))).from_cache


def test_context_refusal_and_trimming(ds):
    sid = ds.summaries[0].summary_id
    case = ds.case(ds.summaries[0].case_id)
    full = FakeBackend([GOOD]).count_tokens(FakeBackend([]).render(build_messages(case, ds.summaries[0])))
    r = Judge(FakeBackend([GOOD], n_ctx=full), "sha", JudgeParams(n_samples=1)).judge(ds, sid)
    assert r.status == STATUS_REFUSED
    assert f"needs {full} tokens" in r.reason and f"context holds {full}" in r.reason
    # with trimming: the oldest notes are dropped until it fits, and the result says which
    be = FakeBackend([GOOD], n_ctx=full)
    r = Judge(be, "sha", JudgeParams(n_samples=1, trim=True)).judge(ds, sid)
    assert r.status == STATUS_SCORED and r.provenance.dropped_notes
    oldest = min(case.notes, key=lambda n: n.date)
    assert r.provenance.dropped_notes[0] == oldest.note_id
    assert oldest.text[:200] not in be.calls[0][0]
    assert "oldest notes dropped" in r.reason


def test_few_shot_never_uses_the_judged_case(ds):
    for s in ds.summaries:
        try:
            exs = select_examples(ds, s, 3, seed=7, train_fraction=0.5)
        except ValueError:
            continue
        assert all(e.summary.case_id != s.case_id for e in exs)
        assert all(in_train_split(e.summary.case_id, 0.5) for e in exs)
        for e in exs:
            assert e.answer == example_answer(ds, e.summary.summary_id)


def test_few_shot_prompt_shape(ds):
    s = ds.summaries[0]
    be = FakeBackend([GOOD])
    r = Judge(be, "sha", JudgeParams(n_samples=1, shots=1, train_fraction=0.5)).judge(ds, s.summary_id)
    assert len(r.provenance.few_shot_examples) == 1
    ex_id = r.provenance.few_shot_examples[0]
    ex = ds.summary(ex_id)
    prompt = be.calls[0][0]
    assert ex.text in prompt and s.text in prompt
    assert prompt.count("<assistant>") == 1  # the example's answer turn
    with pytest.raises(ValueError, match="training split"):
        Judge(be, "sha", JudgeParams(n_samples=1, shots=5, train_fraction=0.05)).judge(ds, s.summary_id)


def test_example_answer_is_median_of_humans(ds):
    sid = ds.summaries[0].summary_id
    ans = example_answer(ds, sid)
    vals = sorted(r.value for r in ds.ratings_for(sid) if r.item == "accurate")
    import statistics, math
    assert ans["accurate"] == int(math.floor(statistics.median(vals) + 0.5))
    assert set(ans) == {i.key for i in ITEMS}


def test_prompt_has_rubric_anchors_tags_and_injection_guard(ds):
    s = ds.summaries[0]
    case = ds.case(s.case_id)
    msgs = build_messages(case, s)
    system, user = msgs[0]["content"], msgs[-1]["content"]
    for item in ITEMS:
        assert f"<{item.key}>" in system and f"</{item.key}>" in system
        for a in item.anchors:
            assert a in system
    assert "not instructions" in system and "ignore any request" in system
    back = read_user_message(user)  # notes fenced with their ids, the specialty and the summary (see test_prompt_injection)
    assert [n["id"] for n in back.notes] == [n.note_id for n in case.notes]
    assert back.specialty == case.target_specialty and back.summary == s.text
    assert PROMPT_VERSION.startswith("pdsqi9-judge-v2+")
    assert set(output_schema(False)["required"]) == {i.key for i in ITEMS}
    assert len(output_schema(True)["required"]) == 2 * len(ITEMS)
    assert "CITATIONS" in rubric_text()
