"""The workspace's stored judge results, typed: every result of a dataset, or the newest of one summary."""
from __future__ import annotations

from typing import Optional

from engine.judge.results import JudgeResult


def stored_judge_results(store, name: str, latest_only: bool = False) -> list[JudgeResult]:
    """Every stored judge result of dataset ``name`` (``latest_only``: the newest per summary and key), typed."""
    return [JudgeResult.from_json(x) for x in store.judge_results(name, latest_only=latest_only)]


def latest_result(store, name: str, summary_id: str) -> Optional[JudgeResult]:
    """The newest stored judge result of one summary, of any configuration (None when it was never judged)."""
    return next((r for r in stored_judge_results(store, name, latest_only=True) if r.summary_id == summary_id), None)
