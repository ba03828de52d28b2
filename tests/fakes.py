"""Shared builders for logic tests: judge results made directly (no model), for calibration, triage and export.

Fakes are for logic only; the real models are exercised by the tests that load them.
"""
from __future__ import annotations

import hashlib

from engine.judge import ItemScore, JudgeParams, JudgeResult, Provenance, SampleReply, Timing
from engine.judge_prompt import PROMPT_VERSION
from engine.rubric import ITEMS, Scale


def judge_result(summary_id: str, case_id: str, expected: dict, model: str = "fake-a.gguf",
                 created_at: str = "2026-01-01T00:00:00+00:00", n_samples: int = 1) -> JudgeResult:
    """A scored result whose 1-5 items have these expected scores (median = the rounded value); yes/no items "no",
    synthesized NA. ``model`` names the configuration (another name = another configuration)."""
    items = {}
    for item in ITEMS:
        if item.scale is Scale.BINARY:
            items[item.key] = ItemScore(item.key, 0.0, False, [0.0], 0.0, 0.1, 1.0)
        elif item.allows_na:
            items[item.key] = ItemScore(item.key, None, True, [None], None)
        else:
            e = float(expected.get(item.key, 4.0))
            items[item.key] = ItemScore(item.key, float(round(e)), False, [float(round(e))], 0.0, e, 1.0)
    sha = hashlib.sha256(model.encode()).hexdigest()
    prov = Provenance("fake", model, sha, "Q4_K_M", {}, PROMPT_VERSION,
                      {**JudgeParams(n_samples=n_samples).__dict__}, None, [], [], 8192)
    key = hashlib.sha256(f"{model}|{n_samples}|{summary_id}".encode()).hexdigest()  # like a cache key: params too
    return JudgeResult(summary_id, case_id, "scored", "", items, [SampleReply(0, 0.0, 1234, "{}")], prov, Timing(),
                       key, created_at)


class EchoBackend:
    """Answers every judge call with one fixed reply (a dict) and counts the calls; logic tests only."""

    name = "fake"
    n_ctx = 100_000

    def __init__(self, reply: dict):
        self.reply = reply
        self.calls = 0

    def describe(self):
        return {"backend": "fake", "model_file": "fake.gguf", "quantization": "none"}

    def render(self, messages):
        return "\n".join(m["content"] for m in messages)

    def count_tokens(self, text):
        return len(text.split())

    def generate(self, prompt, schema, max_tokens, temperature, seed, want_logprobs):
        import json

        from engine.backends import Generation

        self.calls += 1
        return Generation(json.dumps(self.reply), 10, 10, 0.0, 0.0, "stop")


SMOKE_FILE = "gemma-3-270m-q4_k_m.gguf"


def sample_results_as_smoke_test(store, dataset: str = "sample") -> int:
    """Replace the dataset's stored judge results by the same results relabelled as the embedded smoke-test model's
    (file name and hash), for tests of the smoke-test marks; returns how many."""
    import json

    from engine.modelfiles import GEMMA_KEY, embedded_sha256

    rows = store.judge_results(dataset, latest_only=False)
    out = []
    for text in rows:
        d = json.loads(text)
        d["provenance"]["model_file"] = SMOKE_FILE
        d["provenance"]["model_sha256"] = embedded_sha256(GEMMA_KEY)
        d["cache_key"] = hashlib.sha256(("smoke|" + d["cache_key"]).encode()).hexdigest()
        out.append(JudgeResult.from_json(json.dumps(d), from_cache=False))
    with store.transaction() as con:
        con.execute("DELETE FROM judge_results WHERE dataset_id = (SELECT dataset_id FROM datasets WHERE name = ?)",
                    (dataset,))
    return store.put_judge_results(dataset, out)
