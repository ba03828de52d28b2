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
