"""Long work on a page: a progress bar per step with counts and an estimate, Cancel, and the outcome after.

The work runs as an :class:`engine.core.jobs.Job` on a worker thread kept in the session, so the page stays usable,
the user may switch pages and come back, and Cancel (a button in a fragment that refreshes every half second)
stops the worker within the current model call. When the job ends the whole page runs once more to show what it
stored; the outcome ("cancelled — N done, kept", "finished — …", or the error) stays until the next run.
"""
from __future__ import annotations

import uuid
from typing import Callable, Optional

import streamlit as st

from engine.core import CANCELLED, DONE, FAILED, Job, JobStatus, untrusted
from engine.data import JobRecord, StoreError, start_or_join

REFRESH_S = 0.5
OTHERS_REFRESH_S = 2.0  # how often a window re-reads the runs of other windows and commands


def _key(name: str) -> str:
    return f"job:{name}"


def window_id() -> str:
    """This browser window's id (a session's), which names it as the owner of the runs it starts."""
    if "_sumcheck_window" not in st.session_state:
        st.session_state["_sumcheck_window"] = uuid.uuid4().hex[:8]
    return st.session_state["_sumcheck_window"]


def start(name: str, job: Job, label: str = "") -> Optional[Job]:
    """Start ``job`` under ``name`` (one per name and session); a previous finished job's outcome is replaced.
    ``label`` (what the run is for: a summary and a model) heads its progress and its outcome. When the same work
    already runs in this server the window attaches to that run; when it runs in another process (a command),
    nothing starts: the page's list of other runs shows it (None is returned)."""
    job.owner = f"browser window {window_id()}"
    mine, other = start_or_join(job)
    if mine is None:
        st.info(f"The same work is already running: {untrusted.md(other.where())}. Its progress is shown below "
                "with the other runs; it can be cancelled there.")
        return None
    st.session_state[_key(name)] = mine
    st.session_state[_key(name) + ":label"] = label
    st.session_state.pop(_key(name) + ":seen", None)
    return mine


def _mine() -> set:
    """The record ids of the runs this window started or attached to."""
    return {v.record_id for k, v in st.session_state.items() if str(k).startswith("job:") and isinstance(v, Job)}


def other_runs(read: Callable[[], list[JobRecord]], cancel: Callable[[str], None], key: str,
               title: str = "Running in other windows or commands", include_mine: bool = False) -> None:
    """The runs ``read()`` gives that this window did not start (``include_mine``: all of them), each with its
    progress, who runs it and a Cancel that reaches it wherever it runs; re-read every :data:`OTHERS_REFRESH_S`
    seconds. When one of them ends, the whole page runs again once to show what it stored."""
    seen_key = f"_others_seen_{key}"

    @st.fragment(run_every=OTHERS_REFRESH_S)
    def _live() -> None:
        try:
            recs = [r for r in read() if include_mine or r.job_id not in _mine()]
        except StoreError:
            return  # a busy or broken workspace: the page says so where it reads its own data
        ids = {r.job_id for r in recs}
        ended = set(st.session_state.get(seen_key, ())) - ids
        st.session_state[seen_key] = sorted(ids)
        if ended:
            st.rerun()  # a run this window watched has ended: the page re-reads what it stored
        if not recs:
            return
        st.markdown(f"**{untrusted.md_inline(title)}**")
        for r in recs:
            st.progress(min(max(r.fraction, 0.0), 1.0),
                        text=untrusted.md_inline(f"{r.kind} — {r.where()}, started {r.started_at} · {r.text}", 500))
            if r.cancel_requested:
                st.caption("Cancel asked — it stops within its current model call; what is finished is kept.")
            elif st.button("Cancel this run", key=f"{key}_cancel_{r.job_id}",
                           help="Asks the run to stop, wherever it runs (another window, the command line); it "
                                "stops within its current model call and keeps what it finished."):
                cancel(r.job_id)
                st.caption("Cancel asked — it stops within its current model call; what is finished is kept.")

    _live()


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
