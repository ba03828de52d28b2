"""Long work in the background: progress per step with counts and an estimate, and a Cancel that stops it.

A :class:`Job` runs a function on a worker thread. The function reports where it is (item *k* of *n*, step *j*
of *m* within the item) through :meth:`Job.report`; any reader (a page refreshing every half second, a CLI
printing a line) takes a consistent :class:`JobStatus` snapshot with :meth:`Job.status`.

Cancel
------
:meth:`Job.cancel` sets the job's :class:`CancelToken`. The worker runs inside :func:`cancel_scope`, so code far
below it — the llama.cpp token loop, a MED-OMIT step, an HTTP call about to be sent — calls
:func:`check_cancelled`, which raises :class:`Cancelled` once the token is set. The in-process llama.cpp backend
checks between prompt batches and after every generated token, so a cancelled job stops *inside* the current
LLM call; an HTTP backend checks before each request, so it stops after at most the call in flight. Whatever the
work stored before the cancel (finished summaries, cached LLM steps) is kept, and a new run resumes from it.

The estimate
------------
Without a plan, ``eta_s`` extrapolates the time spent on work actually done in this run: items served from the
workspace cache are finished at once and would make a naive rate far too optimistic, so the clock and the
fraction restart after every cached item (:meth:`Job.report` with ``cached=True``). No estimate is given before
2 % of the work or 1 second has passed.

With a plan (:meth:`Job.plan`: the work of every item in *work tokens* — prompt tokens the model must read, plus
the tokens it will write weighted by how much slower writing is — and the speed measured for this model on this
machine, when there is one) the estimate is the work left divided by the speed: from the first second when a
speed was measured before, else as soon as this run has read its first tokens. Code deep in a model call reports
tokens as they are read and written with :func:`report_tokens`; the status line shows them.
"""
from __future__ import annotations

import contextvars
import os
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

RUNNING, DONE, CANCELLED, FAILED = "running", "done", "cancelled", "failed"
CACHED_COUNT = "from the workspace"  # the count of items a run found already finished (cached, or resumed)


class Cancelled(Exception):
    """The work was cancelled; what it stored before is kept."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


_current: contextvars.ContextVar[Optional[CancelToken]] = contextvars.ContextVar("sumcheck_cancel", default=None)
_current_job: contextvars.ContextVar[Optional["Job"]] = contextvars.ContextVar("sumcheck_job", default=None)
PROMPT_SHARE = 0.5  # an unplanned job's step counts its prompt read as this share of the step
LIVE_RATE_MIN_WORK = 256.0  # work tokens this run must have done before its own speed replaces the stored one


def report_tokens(kind: str, done: int, total: int, reused: int = 0) -> None:
    """Called from inside a model call: ``kind`` "prompt" (``done`` of ``total`` new prompt tokens read,
    ``reused`` taken from the cache) or "decode" (``done`` tokens written). A no-op outside a planned job."""
    job = _current_job.get()
    if job is not None:
        job._tokens(kind, int(done), int(total), int(reused))


@contextmanager
def cancel_scope(token: CancelToken) -> Iterator[CancelToken]:
    """Make ``token`` the one :func:`check_cancelled` consults in this thread (and contexts copied from it)."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def check_cancelled() -> None:
    """Raise :class:`Cancelled` when the current scope's token is set; a no-op outside any scope."""
    token = _current.get()
    if token is not None and token.cancelled:
        raise Cancelled("cancelled")


def current_cancel_token() -> Optional[CancelToken]:
    """The token of the job this code runs in (None outside any job)."""
    return _current.get()


def is_cancelled() -> bool:
    token = _current.get()
    return token is not None and token.cancelled


def format_duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "estimating…"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _singular(unit: str) -> str:
    return unit[:-3] + "y" if unit.endswith("ies") else unit[:-1] if unit.endswith("s") else unit


@dataclass(frozen=True)
class JobStatus:
    """A consistent snapshot of a job."""
    kind: str  # what runs, in words: "MED-OMIT", "judge", "embedding evidence"
    state: str  # running | done | cancelled | failed
    total: int  # items (summaries) in the run
    done: int  # items finished (fresh or from the workspace)
    item: str  # the item being worked on ("" when none)
    step: str  # the step being run within the item
    step_index: int  # 0-based index of that step
    n_steps: int  # steps per item (1 when the work has no steps)
    elapsed_s: float
    eta_s: Optional[float]  # seconds left, None while there is not enough to extrapolate from
    counts: dict = field(default_factory=dict)  # e.g. {"new": 3, "from the workspace": 5, "incomplete": 1}
    error: str = ""  # why it failed (state failed)
    unit: str = "summaries"
    detail: str = ""  # tokens as they are read and written ("reading the prompt: 1,024 of 3,210 new tokens")
    speed_from: str = ""  # where the estimate's speed comes from ("measured before" | "this run")
    work_fraction: Optional[float] = None  # planned jobs: the share of the planned tokens read and written so far

    @property
    def fraction(self) -> float:
        if self.total <= 0:
            return 1.0 if self.state != RUNNING else 0.0
        if self.state == DONE:
            return 1.0
        if self.work_fraction is not None and self.state == RUNNING:
            return self.work_fraction  # moves with the counted tokens, not only when an item or a sample ends
        within = self.step_index / self.n_steps if self.n_steps > 0 and self.done < self.total else 0.0
        return min((self.done + within) / self.total, 1.0)

    @property
    def finished(self) -> bool:
        return self.state != RUNNING

    @property
    def units(self) -> str:
        """The unit, singular for one item ("1 of 1 summary")."""
        return _singular(self.unit) if self.total == 1 else self.unit

    def _counts_text(self) -> str:
        parts = [f"{v} {k}" for k, v in self.counts.items() if v]
        return f" ({', '.join(parts)})" if parts else ""

    def progress_text(self) -> str:
        """One line for a progress bar: counts, step, estimate."""
        if self.state == RUNNING:
            where = f"{_singular(self.unit)} {min(self.done + 1, self.total)}/{self.total}"
            step = (f" · step {self.step_index + 1}/{self.n_steps}: {self.step}" if self.n_steps > 1 and self.step
                    else f" · {self.step}" if self.step else "")
            item = f" · {self.item}" if self.item else ""
            detail = f" · {self.detail}" if self.detail else ""
            return (f"{self.kind}: {where}{item}{step}{detail} · {self.done} done · elapsed "
                    f"{format_duration(self.elapsed_s)} · about {format_duration(self.eta_s)} left"
                    if self.eta_s is not None else
                    f"{self.kind}: {where}{item}{step}{detail} · {self.done} done · elapsed "
                    f"{format_duration(self.elapsed_s)} · estimating time left…")
        return self.final_text()

    def final_text(self) -> str:
        """What happened, in the words the pages and the CLI use."""
        if self.state == CANCELLED:
            return (f"{self.kind} cancelled — {self.done} of {self.total} {self.units} done, kept"
                    f"{self._counts_text()}. A new run resumes from them.")
        if self.state == FAILED:
            return (f"{self.kind} stopped with an error after {self.done} of {self.total} {self.units} (those are "
                    f"kept): {self.error}")
        if self.state == DONE:
            cached = self.counts.get(CACHED_COUNT, 0)
            resumed = (" A resumed run: the ones finished before were kept." if cached and self.done > cached
                       else "")
            return (f"{self.kind} finished — {self.done} of {self.total} {self.units}{self._counts_text()} in "
                    f"{format_duration(self.elapsed_s)}.{resumed}")
        return self.progress_text()


Work = Callable[["Job"], None]


class Job:
    """``work(job)`` on a daemon thread, inside a :func:`cancel_scope` of the job's token.

    ``work`` reports with :meth:`report`, counts outcomes with :meth:`count` and may poll :meth:`should_stop`;
    raising :class:`Cancelled` (directly or from :func:`check_cancelled` below it) ends the job as cancelled, any
    other exception as failed (with its message; the traceback is kept in :attr:`traceback` for the log)."""

    def __init__(self, kind: str, total: int, work: Work, n_steps: int = 1, unit: str = "summaries") -> None:
        self.kind, self.total, self.n_steps, self.unit = kind, int(total), max(int(n_steps), 1), unit
        self._fn = work
        self.token = CancelToken()
        self._lock = threading.Lock()
        self._state = RUNNING
        self._done = 0
        self._item = ""
        self._step = ""
        self._step_index = 0
        self._counts: dict[str, int] = {}
        self._error = ""
        self.traceback = ""
        self._t0 = time.monotonic()
        self._t_end: Optional[float] = None
        self._base_t = self._t0  # the estimate's clock and fraction restart after cached items
        self._base_f = 0.0
        self._thread: Optional[threading.Thread] = None
        self.results: list = []  # what the work produced, appended by it as it goes (read after it ended)
        self.latest: Any = None  # the newest intermediate result the work published (e.g. the judge's partial)
        # the plan (see the module doc): work tokens per item, the stored speed, and what this run has done
        self._work: Optional[list[float]] = None
        self._decode_weight = 1.0
        self._rate: Optional[float] = None
        self._in_item = 0.0  # work tokens done on the current item
        self._live_work = 0.0  # work tokens done in this run (fresh items only)
        self._live_t: Optional[float] = None  # when this run's first token was reported
        self._live_last: Optional[float] = None  # when work was last reported done
        self._last_counts: dict[str, int] = {}  # the current prompt's and reply's counts so far
        self._prompt_frac = 0.0  # the share of the current prompt read (an unplanned job's bar moves with it)
        self._detail = ""
        self.owner = ""  # who runs it, in words ("browser session 3f2a…", "python -m engine verify sample")
        self.record_id = ""  # the workspace's row of this run, once recorded (engine.data.job_log)
        self.record_spec: Optional[dict] = None  # what the row records (set by engine.data.job_log.recorded)
        self._on_start: list[Callable[["Job"], None]] = []
        self._on_end: list[Callable[["Job"], None]] = []

    # -- control
    def on_start(self, fn: Callable[["Job"], None]) -> None:
        """Call ``fn(job)`` in :meth:`start`, before the worker starts (an exception there stops the start)."""
        self._on_start.append(fn)

    def on_end(self, fn: Callable[["Job"], None]) -> None:
        """Call ``fn(job)`` on the worker once the job has ended, before :meth:`wait` returns (errors are
        ignored: the job's own outcome stands)."""
        self._on_end.append(fn)

    def start(self) -> "Job":
        ctx = contextvars.copy_context()
        self._thread = threading.Thread(target=ctx.run, args=(self._run,), name=f"sumcheck-{self.kind}",
                                        daemon=True)
        self._t0 = self._base_t = time.monotonic()
        for fn in self._on_start:
            fn(self)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            reset = _current_job.set(self)
            try:
                with cancel_scope(self.token):
                    self._fn(self)
            finally:
                _current_job.reset(reset)
            state = CANCELLED if self.token.cancelled else DONE
        except Cancelled:
            state = CANCELLED
        except Exception as exc:  # the job reports it; the caller decides how to show it
            state = FAILED
            with self._lock:
                self._error = str(exc) or type(exc).__name__
            self.traceback = traceback.format_exc()
        with self._lock:
            self._state = state
            self._t_end = time.monotonic()
        for fn in self._on_end:
            try:
                fn(self)
            except Exception:  # a recorder's failure never changes how the work ended
                self.traceback += traceback.format_exc()

    def cancel(self) -> None:
        self.token.cancel()

    def should_stop(self) -> bool:
        return self.token.cancelled

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True when the worker has ended within ``timeout`` seconds."""
        if self._thread is None:
            return True
        if self._thread.ident is None:  # made, its start hooks running: not started yet
            time.sleep(timeout or 0.0)
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the plan
    def plan(self, work: list[float], rate: Optional[float] = None, decode_weight: float = 1.0) -> None:
        """Work tokens per item (0 for an item already stored), the speed in work tokens per second measured for
        this model before (None: none yet), and how many prompt tokens one written token is worth."""
        with self._lock:
            self._work = [max(0.0, float(w)) for w in work]
            self._rate = rate if rate and rate > 0 else None
            self._decode_weight = max(1.0, float(decode_weight))

    def _tokens(self, kind: str, done: int, total: int, reused: int) -> None:
        with self._lock:
            now = time.monotonic()
            if self._live_t is None:
                self._live_t = now
            # an item may read and write several times (samples, one question per claim): counts that fall
            # back are a new prompt or reply, and its tokens add to what the item has done
            last = self._last_counts.get(kind, 0)
            delta = float(done - last if done >= last else done)
            self._last_counts[kind] = done
            if kind == "prompt":
                self._last_counts["decode"] = 0
                self._prompt_frac = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
                self._detail = (f"reading the prompt: {done:,} of {total:,} new tokens"
                                + (f" ({reused:,} reused)" if reused else ""))
            else:
                delta *= self._decode_weight
                self._detail = f"writing the answer: {done} tokens"
            if delta > 0:
                self._in_item += delta
                self._live_work += delta
                self._live_last = now

    # -- reporting (from the worker)
    def report(self, done: Optional[int] = None, item: Optional[str] = None, step: Optional[str] = None,
               step_index: Optional[int] = None, cached: bool = False) -> None:
        with self._lock:
            if done is not None:
                if int(done) != self._done:
                    self._in_item = self._prompt_frac = 0.0
                    self._last_counts = {}
                    self._detail = ""
                self._done = int(done)
                if step_index is None:
                    self._step_index = 0
            if item is not None:
                self._item = item
            if step is not None:
                self._step = step
            if step_index is not None:
                new = min(max(int(step_index), 0), self.n_steps - 1)
                if new != self._step_index:
                    self._prompt_frac = 0.0
                self._step_index = new
            if cached:
                self._base_t, self._base_f = time.monotonic(), self._fraction()

    def count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self._counts[what] = self._counts.get(what, 0) + n

    def _fraction(self) -> float:
        """Items and steps done; without a plan, half of the current step is its prompt, read as the model
        reports it (a long record read moves the bar before the first step ends)."""
        if self.total <= 0:
            return 0.0
        reading = PROMPT_SHARE * self._prompt_frac if self._work is None else 0.0
        within = (self._step_index + reading) / self.n_steps if self._done < self.total else 0.0
        return min((self._done + within) / self.total, 1.0)

    # -- reading (from anywhere)
    def status(self) -> JobStatus:
        with self._lock:
            now = self._t_end if self._t_end is not None else time.monotonic()
            f = self._fraction()
            span_t, span_f = now - self._base_t, f - self._base_f
            eta, speed_from = None, ""
            if self._state == RUNNING and self._work is not None:
                eta, speed_from = self._planned_eta(now)
            elif self._state == RUNNING and span_f >= 0.02 and span_t >= 1.0:
                eta = span_t / span_f * (1.0 - f)
            return JobStatus(self.kind, self._state, self.total, self._done, self._item, self._step,
                             self._step_index, self.n_steps, now - self._t0, eta, dict(self._counts), self._error,
                             self.unit, self._detail if self._state == RUNNING else "", speed_from,
                             self._work_fraction() if self._work is not None else
                             (f if self._prompt_frac > 0 else None))

    def _work_fraction(self) -> Optional[float]:
        """The share of the planned work tokens done (None without a plan or with nothing to do)."""
        work = self._work or []
        total = sum(work)
        if not work or total <= 0:
            return None
        current = work[self._done] if self._done < len(work) else 0.0
        return min((sum(work[:self._done]) + min(self._in_item, current)) / total, 1.0)

    def _planned_eta(self, now: float) -> tuple[Optional[float], str]:
        """Seconds left from the plan: the work left over this run's own speed once it has read enough, else the
        speed measured before (None when neither is known yet).

        The speed is the work done over the time up to its last report, and the estimate counts down from that
        report: tokens are reported a batch at a time (seconds apart for a large model), and a speed measured up to
        *now* would sink between reports and make the estimate climb and drop with every batch. So the estimate
        grows only when a report shows the run slower than before (never below one second while work is left)."""
        work = self._work or []
        current = work[self._done] if self._done < len(work) else 0.0
        left = max(0.0, current - self._in_item) + sum(work[self._done + 1:])
        last = self._live_last
        if (self._live_t is not None and last is not None and self._live_work >= LIVE_RATE_MIN_WORK
                and last - self._live_t >= 1.0):
            live = self._live_work / (last - self._live_t)
            return _count_down(left / live, now - last, left), "this run"
        if self._rate is not None:
            return _count_down(left / self._rate, now - last if last is not None else 0.0, left), "measured before"
        return None, ""


def _count_down(eta: float, since: float, left: float) -> float:
    """``eta`` as of the last report, ``since`` seconds ago; at least a second while work is left."""
    return max(eta - since, 1.0 if left > 0 else 0.0)


def run_in_foreground(job: Job, out=None, every_s: float = 2.0) -> JobStatus:
    """Start ``job`` (unless it was started) and print its progress line to ``out`` (stderr) whenever the item or step changes, at most
    every ``every_s`` seconds; Ctrl-C cancels it (and waits for the worker to stop). Returns the final status."""
    import sys

    out = out or sys.stderr
    if job._thread is None:
        job.start()
    last, last_t = None, 0.0
    try:
        while not job.wait(0.2):
            st = job.status()
            now = time.monotonic()
            key = (st.done, st.item, st.step)
            if key != last and now - last_t >= every_s:
                print(st.progress_text(), file=out, flush=True)
                last, last_t = key, now
    except KeyboardInterrupt:
        print(f"{job.kind}: cancelling (stops within the current model call) …", file=out, flush=True)
        job.cancel()
        job.wait()
    if job.traceback and os.environ.get("SUMCHECK_DEBUG"):
        print(job.traceback, file=out, flush=True)
    return job.status()
