"""Long work on a page: a progress bar per step with counts and an estimate, Cancel, and the outcome after.

The work runs as an :class:`engine.core.jobs.Job` on a worker thread kept in the session, so the page stays usable,
the user may switch pages and come back, and Cancel (a button in a fragment that refreshes every half second)
stops the worker within the current model call. When the job ends the whole page runs once more to show what it
stored; the outcome ("cancelled — N done, kept", "finished — …", or the error) stays until the next run.
"""
from __future__ import annotations

from typing import Callable, Optional

import streamlit as st

from engine.core import untrusted
from engine.core.jobs import CANCELLED, DONE, FAILED, Job, JobStatus

REFRESH_S = 0.5


def _key(name: str) -> str:
    return f"job:{name}"


def start(name: str, job: Job, label: str = "") -> Job:
    """Start ``job`` under ``name`` (one per name and session); a previous finished job's outcome is replaced.
    ``label`` (what the run is for: a summary and a model) heads its progress and its outcome."""
    st.session_state[_key(name)] = job.start()
    st.session_state[_key(name) + ":label"] = label
    st.session_state.pop(_key(name) + ":seen", None)
    return job


def forget(name: str) -> None:
    """Drop a finished job's outcome (a new run is about to start under ``name``); a running job is kept."""
    job = get(name)
    if job is not None and not job.alive:
        st.session_state.pop(_key(name), None)
        st.session_state.pop(_key(name) + ":seen", None)


def get(name: str) -> Optional[Job]:
    return st.session_state.get(_key(name))


def running(name: str) -> bool:
    job = get(name)
    return job is not None and job.alive


def outcome(status: JobStatus, label: str = "") -> None:
    """The finished job's outcome in one line, coloured by how it ended; ``label`` says what the run was for."""
    text = (f"{untrusted.md(label)} — " if label else "") + untrusted.md(status.final_text())
    if status.state == DONE:
        st.success(text)
    elif status.state == CANCELLED:
        st.warning(text)
    elif status.state == FAILED:
        st.error(text)


def panel(name: str, live: Optional[Callable[[Job], None]] = None,
          on_finish: Optional[Callable[[Job], None]] = None) -> Optional[JobStatus]:
    """Progress, Cancel and outcome of the job ``name`` (nothing when none ran in this session).

    ``live(job)`` renders extra live content under the bar while it runs (e.g. the judge's first scores), and
    under the outcome of a run that was cancelled or failed;
    ``on_finish(job)`` runs once, in the run that first sees the job ended, before the page is run again."""
    job = get(name)
    if job is None:
        return None
    seen_key = _key(name) + ":seen"
    label = st.session_state.get(_key(name) + ":label", "")

    @st.fragment(run_every=REFRESH_S if job.alive else None)
    def _live() -> None:
        status = job.status()
        if not status.finished:
            st.progress(status.fraction, text=untrusted.md_inline((f"{label} — " if label else "")
                                                                  + status.progress_text(), 400))
            if job.token.cancelled:
                st.caption("Cancelling — the worker stops within the current model call; what is finished is kept.")
            elif st.button("Cancel", key=f"cancel_{name}", help="Stops within the current model call. Finished "
                           "summaries and steps are kept; a new run resumes from them."):
                job.cancel()
                st.caption("Cancelling — the worker stops within the current model call; what is finished is kept.")
            if live is not None:
                live(job)
            return
        if not st.session_state.get(seen_key):
            st.session_state[seen_key] = True
            if on_finish is not None:
                on_finish(job)
            st.rerun()  # the whole page, once: it re-reads what the job stored
        outcome(status, label)
        if live is not None and status.state != DONE:
            live(job)  # a cancelled or failed run: what it showed so far stays on screen

    _live()
    return job.status()
