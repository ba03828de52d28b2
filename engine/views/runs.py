"""The runs a window shows: long work recorded in the workspace (:mod:`engine.data.job_log`), from this
window, another one or the command line."""
from __future__ import annotations

from typing import Optional

from engine.data import JobRecord, request_cancel, running_for


def running_runs(store, dataset: Optional[str] = None, summary_id: Optional[str] = None) -> list[JobRecord]:
    """The runs going on now (of one dataset, and working on one summary, when given), newest first; a run whose
    process is gone is marked stopped and left out."""
    return running_for(store, dataset, summary_id)


def cancel_run(store, job_id: str) -> None:
    """Ask a run to cancel, wherever it runs (it stops within its current model call)."""
    request_cancel(store, job_id)
