"""Long work any window or command can see: each run recorded in the workspace while it runs.

A :class:`engine.core.jobs.Job` made by a job factory is :func:`recorded` with what it works on (dataset,
summaries, a key of its configuration). When it starts, a row is written (:class:`engine.data._store_jobs.JobStore`)
naming who runs it (:attr:`Job.owner`: a browser session or the command line), on which host and process; a
heartbeat thread then writes its progress about once a second and reads whether someone asked it to cancel (from
any window, or ``python -m engine status DATASET --cancel ID``), and cancels the job when so. When the job ends
its row says how (done, cancelled, failed with the error).

A row still *running* whose process is gone — the same host and no such process, or no heartbeat for
:data:`STALE_S` seconds on any host — is marked *stopped* with that reason the first time anyone lists it, so a run
is never shown as running forever. :func:`start_or_join` starts a job unless the same work (same kind, dataset,
summaries and key) is already running: in this process it returns that job (the page attaches to it); in another
it returns the other run's record (the page shows it; the command line follows it).
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

from engine.core import FAILED, Job, JobStatus, RUNNING, format_duration, pid_alive
from engine.data.schema import StoreError

STOPPED = "stopped"  # a run whose process ended without saying how
HEARTBEAT_S = 1.0
STALE_S = 45.0  # no heartbeat for this long: the run's process is gone (any host)
HOST = socket.gethostname()
_LOCAL: dict[str, Job] = {}  # record id -> the job, for runs of this process
_LOCAL_LOCK = threading.Lock()


@dataclass(frozen=True)
class JobRecord:
    """One recorded run, as any window or command sees it."""

    job_id: str
    dataset: str
    kind: str
    work_key: str
    summary_ids: tuple[str, ...]
    label: str
    owner: str
    host: str
    pid: int
    started_at: str
    heartbeat: float
    state: str  # running | done | cancelled | failed | stopped
    progress: dict = field(default_factory=dict)  # fraction, text, eta_s, done, total
    reason: str = ""
    cancel_requested: bool = False
    ended_at: str = ""

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    @property
    def fraction(self) -> float:
        return float(self.progress.get("fraction") or 0.0)

    @property
    def text(self) -> str:
        """The progress line while it runs, how it ended after."""
        return str(self.progress.get("text") or "")

    def where(self) -> str:
        """Who runs it: "python -m engine verify sample (process 1234 on host)"."""
        return f"{self.owner} (process {self.pid} on {self.host})"

    def describe(self) -> str:
        """One line: kind, what, who, since when, and how it stands or ended."""
        what = ", ".join(self.summary_ids[:3]) + (f" and {len(self.summary_ids) - 3} more"
                                                  if len(self.summary_ids) > 3 else "")
        head = f"{self.kind} of {what} in {self.dataset} — {self.where()}, started {self.started_at}"
        if self.running:
            return head + (" · cancel asked" if self.cancel_requested else "") + f" · {self.text}"
        return head + f" · {self.state}" + (f": {self.reason}" if self.reason else "")

    @classmethod
    def from_row(cls, row: dict) -> "JobRecord":
        return cls(row["job_id"], row["dataset"], row["kind"], row["work_key"], tuple(row["summary_ids"]),
                   row["label"], row["owner"], row["host"], int(row["pid"]), row["started_at"],
                   float(row["heartbeat"]), row["state"], dict(row["progress"]), row["reason"],
                   bool(row["cancel_requested"]), row["ended_at"] or "")


def work_key(kind: str, dataset: str, summary_ids: Sequence[str], config: str = "") -> str:
    """What identifies the same work: kind, dataset, the summaries (in any order) and the configuration."""
    text = json.dumps([kind, dataset, sorted(summary_ids), config])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def default_owner() -> str:
    """The command line of this process ("python -m engine verify sample …"), for a run started from it."""
    args = [a for a in sys.argv[1:] if a]
    return ("python -m engine " + " ".join(args))[:200] if args else "python"


def progress_of(status: JobStatus) -> dict:
    return {"fraction": round(status.fraction, 4), "text": status.progress_text(),
            "eta_s": None if status.eta_s is None else round(status.eta_s, 1), "done": status.done,
            "total": status.total}


def recorded(job: Job, store, dataset: str, summary_ids: Sequence[str], config: str = "", label: str = "") -> Job:
    """``job`` recorded in ``store`` when it starts (see the module docstring); returns it. Without a store the
    job runs unrecorded."""
    if store is None:
        return job
    ids = tuple(summary_ids)
    job.record_spec = {"store": store, "dataset": dataset, "summary_ids": ids, "label": label,
                       "key": work_key(job.kind, dataset, ids, config)}

    def register(j: Job) -> None:
        j.record_id = uuid.uuid4().hex
        now = time.time()
        store.add_job({"job_id": j.record_id, "dataset": dataset, "kind": j.kind,
                       "work_key": j.record_spec["key"], "summary_ids": list(ids), "label": label,
                       "owner": j.owner or default_owner(), "host": HOST, "pid": os.getpid(),
                       "started_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now)), "heartbeat": now,
                       "state": RUNNING, "progress": {"fraction": 0.0, "text": f"{j.kind}: starting"},
                       "reason": "", "cancel_requested": 0, "ended_at": ""})
        with _LOCAL_LOCK:
            _LOCAL[j.record_id] = j
        threading.Thread(target=_beat, args=(store, j), name=f"sumcheck-beat-{j.kind}", daemon=True).start()

    def finish(j: Job) -> None:
        st = j.status()
        reason = st.error if st.state == FAILED else ""
        for _ in range(3):  # a busy workspace: try again, the final state matters
            try:
                store.beat_job(j.record_id, time.time(), {**progress_of(st), "text": st.final_text()}, st.state,
                               reason)
                break
            except StoreError:
                time.sleep(1.0)
        with _LOCAL_LOCK:
            _LOCAL.pop(j.record_id, None)  # ended: nothing left to join or cancel here

    job.on_start(register)
    job.on_end(finish)
    return job


def _beat(store, job: Job) -> None:
    while not job.wait(HEARTBEAT_S):
        try:
            if store.beat_job(job.record_id, time.time(), progress_of(job.status())):
                job.cancel()
        except StoreError:
            continue  # busy: the next beat writes


def _gone(rec: JobRecord, now: float) -> str:
    """Why a running row's process is gone ("" when it may still run)."""
    if rec.host == HOST and rec.pid != os.getpid() and not pid_alive(rec.pid):
        return f"its process ({rec.pid}) ended before the run finished"
    if now - rec.heartbeat > STALE_S:
        return f"no sign of life for {format_duration(now - rec.heartbeat)}"
    return ""


def job_records(store, dataset: Optional[str] = None, running_only: bool = False, limit: int = 20
                ) -> list[JobRecord]:
    """Recorded runs, newest first (running ones only with ``running_only``); a running row whose process is gone
    is marked stopped, with the reason, first."""
    now = time.time()
    out = []
    for row in store.job_rows(dataset, (RUNNING,) if running_only else (), limit):
        rec = JobRecord.from_row(row)
        if rec.running:
            why = _gone(rec, now)
            if why:
                try:
                    store.end_job(rec.job_id, STOPPED, why)
                except StoreError:
                    pass  # a read-only or busy workspace: shown stopped all the same, written by a later reader
                rec = replace(rec, state=STOPPED, reason=why)
        if rec.running or not running_only:
            out.append(rec)
    return out


def running_for(store, dataset: Optional[str] = None, summary_id: Optional[str] = None) -> list[JobRecord]:
    """The runs going on now (of one dataset, and working on one summary, when given)."""
    return [r for r in job_records(store, dataset, running_only=True)
            if summary_id is None or summary_id in r.summary_ids]


def local_job(job_id: str) -> Optional[Job]:
    """The job of this process behind a record, while it is known here."""
    with _LOCAL_LOCK:
        return _LOCAL.get(job_id)


def request_cancel(store, job_id: str) -> None:
    """Ask a run to cancel: its process reads it at its next heartbeat (at once for a run of this process)."""
    store.ask_job_cancel(job_id)
    job = local_job(job_id)
    if job is not None:
        job.cancel()


def start_or_join(job: Job) -> tuple[Optional[Job], Optional[JobRecord]]:
    """Start ``job``, unless the same work is running: (the job of this process that runs it, its record) or
    (None, the record of the run in another process); else (``job`` started, None)."""
    spec = job.record_spec
    if spec is not None:
        for rec in job_records(spec["store"], spec["dataset"], running_only=True):
            if rec.work_key == spec["key"] and rec.kind == job.kind:
                mine = local_job(rec.job_id)
                if mine is not None and mine.alive:
                    return mine, rec
                if mine is None:
                    return None, rec
    return job.start(), None


def follow(store, job_id: str, out=None, every_s: float = 2.0, cancel_on_interrupt: bool = False,
           quiet: bool = False) -> JobRecord:
    """Print a recorded run's progress line to ``out`` (stderr) whenever it changes until it ends (``quiet``: only
    how it ended); Ctrl-C stops following (and, with ``cancel_on_interrupt``, asks the run to cancel). Returns the
    last record."""
    out = out or sys.stderr
    last = ""
    try:
        while True:
            recs = [r for r in job_records(store, None, limit=200) if r.job_id == job_id]
            if not recs:
                raise StoreError(f"no recorded run {job_id!r} in this workspace")
            rec = recs[0]
            if (rec.text != last and not quiet) or not rec.running:
                print(rec.text if rec.running else rec.describe(), file=out, flush=True)
                last = rec.text
            if not rec.running:
                return rec
            time.sleep(every_s)
    except KeyboardInterrupt:
        if cancel_on_interrupt:
            request_cancel(store, job_id)
            print("asked the run to cancel; it stops within its current model call", file=out, flush=True)
        return rec
