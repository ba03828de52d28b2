"""Check a summary: every kind of evidence for it as one job, cheapest first, each result stored as it is done.

:func:`check_summaries` runs, per summary, uncovered source regions and sentence support (the embedding model),
the PDSQI-9 judge, claim verification and MED-OMIT (the language model) through the same cached functions the
single-kind runs use, so what is stored is found again and what is new is stored at once: a cancelled check keeps
every finished part. Summaries are taken case by case. The judge and MED-OMIT lay their prompts out record first
(:mod:`engine.llm.case_record`), so an in-process model reads a case's record once for them and every summary;
claim verification keeps its own record (its prompt, measured on its own, stays); each record is kept on disk for
a reopened case. :class:`PartResult` says how many prompt-head tokens (a record, or the summary the omission
questions share) each part read and how many it loaded from disk.

:func:`check_job` wraps it as one :class:`~engine.core.jobs.Job` with one progress bar (one step per part) and
:func:`on_part` callbacks that hand each result over as soon as it is stored.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from engine.core import Cancelled, Job, check_cancelled
from engine.data import recorded
from engine.core import Dataset


@dataclass(frozen=True)
class CheckPart:
    key: str
    label: str


# cheapest first: the embedding model's evidence, then the model's checks by their cost on a CPU
PARTS: tuple[CheckPart, ...] = (
    CheckPart("coverage", "uncovered regions and sentence support"),
    CheckPart("judge", "PDSQI-9 judge"),
    CheckPart("verification", "claim verification"),
    CheckPart("medomit", "MED-OMIT omitted facts"),
)


@dataclass
class PartResult:
    """One part of one summary's check: what it found, in a line, and what it cost."""

    key: str
    label: str
    status: str  # "done" | "stored before" | "failed" | "skipped"
    line: str  # the result in words
    seconds: float
    head_tokens: int = 0  # tokens of kept prompt heads (the case's record; the summary the omission questions
    # share) the model evaluated for this part
    head_loaded: int = 0  # head tokens loaded from disk instead of evaluated
    prompt_tokens: int = 0  # every prompt token the model evaluated for this part
    result: object = None  # the typed result (None when failed or skipped)


@dataclass
class CheckResult:
    summary_id: str
    case_id: str
    parts: list[PartResult] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return round(sum(p.seconds for p in self.parts), 2)


@dataclass
class CheckSetup:
    """What a check runs with. ``backend`` is called once, only when a model part must compute something."""

    embedder: Callable[[], object]
    backend: Callable[[], object]
    model_sha256: str
    judge_params: object = None  # engine.judge.results.JudgeParams (None: the defaults)
    medomit_facts: str = "auto"
    parts: tuple[str, ...] = tuple(p.key for p in PARTS)


def _counts(backend) -> dict:
    if backend is None or not backend.capabilities.saved_prefix:
        return {"prompt": 0, "head": 0, "head_loaded": 0}
    return backend.token_counts()


class _Checker:
    def __init__(self, store, dataset: str, ds: Dataset, setup: CheckSetup):
        self.store, self.dataset, self.ds, self.setup = store, dataset, ds, setup
        self._backend = None
        self._judge_runner = None
        self._pipeline = None
        self._run = {"coverage": self._coverage, "judge": self._judge, "verification": self._verification,
                     "medomit": self._medomit}

    def backend(self):
        if self._backend is None:
            self._backend = self.setup.backend()
        return self._backend

    def run_part(self, key: str, sid: str) -> PartResult:
        part = next(p for p in PARTS if p.key == key)
        before = _counts(self._backend)
        t0 = time.perf_counter()
        try:
            status, line, result = self._run[key](sid)
        except Cancelled:
            raise
        except Exception as exc:  # one part's failure is reported; the check goes on with the next
            status, line, result = "failed", f"failed: {exc}", None
        after = _counts(self._backend)
        return PartResult(key, part.label, status, line, round(time.perf_counter() - t0, 2),
                          after["head"] - before["head"], after["head_loaded"] - before["head_loaded"],
                          after["prompt"] - before["prompt"], result)

    def _coverage(self, sid: str):
        from engine.evidence import compute_evidence
        from engine.evidence.coverage import CoverageParams
        from engine.evidence import stored_result

        batch = compute_evidence(self.store, self.dataset, self.ds, [sid], self.setup.embedder)
        out = batch.outcomes[0]
        cov = stored_result(self.store, self.dataset, f"coverage:{CoverageParams().method}", sid)
        status = "done" if out.computed else "stored before"
        if out.refused:
            return status, f"coverage refused: {out.refused}", cov
        return status, (f"{len(cov.regions)} uncovered source region(s)" if cov is not None else "stored"), cov

    def _judge(self, sid: str):
        from engine.judge import Judge, JudgeParams, run_batch

        if self._judge_runner is None:
            self._judge_runner = Judge(self.backend(), self.setup.model_sha256,
                                       self.setup.judge_params or JudgeParams())
        res = next(iter(run_batch(self._judge_runner, self.ds, [sid], store=self.store, dataset_name=self.dataset)))
        status = "stored before" if res.from_cache else "done"
        if res.status != "scored":
            return status, f"{res.status}: {res.reason}", res
        grades = ", ".join(f"{k} {'NA' if v.median is None else f'{v.median:g}'}" for k, v in res.items.items())
        return status, grades, res

    def _verification(self, sid: str):
        from engine.evidence.support.verification import compute_verification

        batch = compute_verification(self.store, self.dataset, self.ds, [sid], self.backend, self.setup.model_sha256)
        res = batch.results[sid]
        status = "done" if batch.computed else "stored before"
        if res.reason:
            return status, f"unscored: {res.reason}", res
        uns = [s for s in res.sentences if s.verdict == "unsupported"]
        return status, f"{len(uns)} of {len(res.sentences)} sentence(s) unsupported", res

    def _medomit(self, sid: str):
        from engine.evidence.medomit import MedOmit, run_medomit

        if self._pipeline is None:
            self._pipeline = MedOmit(self.backend(), self.setup.model_sha256, cache=self.store,
                                     embedder=self.setup.embedder(), facts=self.setup.medomit_facts)
        flag = {"cached": False}

        def progress(done, total, s, msg):
            flag["cached"] = flag["cached"] or msg == "cached"

        res = next(iter(run_medomit(self._pipeline, self.ds, [sid], store=self.store, dataset_name=self.dataset,
                                    progress=progress)))
        status = "stored before" if flag["cached"] else "done"
        if res.status != "complete":
            return status, f"incomplete at {res.failed_step}: {res.reason}", res
        weights = [s.importance_weight for s in res.weighed]
        return status, (f"{res.omission_count} of {len(res.scores)} facts omitted, weight {res.document_weight:.2f} "
                        f"({len(set(weights))} distinct importance weights over {len(weights)} weighed facts)"), res


def ordered(ds: Dataset, summary_ids: Sequence[str]) -> list[str]:
    """``summary_ids`` case by case (each case's record is read once), in their order within a case."""
    pos = {sid: i for i, sid in enumerate(summary_ids)}
    first: dict[str, int] = {}
    for sid in summary_ids:
        first.setdefault(ds.summary(sid).case_id, pos[sid])
    return sorted(summary_ids, key=lambda sid: (first[ds.summary(sid).case_id], pos[sid]))


def check_summaries(store, dataset: str, ds: Dataset, summary_ids: Sequence[str], setup: CheckSetup,
                    on_part: Callable[[str, int, PartResult], None] = lambda sid, i, p: None,
                    before_part: Callable[[str, int, str], None] = lambda sid, i, key: None) -> list[CheckResult]:
    """Every part of ``setup.parts`` for every summary (see the module docstring). ``before_part(sid, i, key)`` is
    called before part ``key`` of the ``i``-th summary starts, ``on_part(sid, i, result)`` once it is stored."""
    checker = _Checker(store, dataset, ds, setup)
    keys = [p.key for p in PARTS if p.key in setup.parts]
    out = []
    for i, sid in enumerate(ordered(ds, summary_ids)):
        res = CheckResult(sid, ds.summary(sid).case_id)
        for key in keys:
            check_cancelled()
            before_part(sid, i, key)
            pr = checker.run_part(key, sid)
            res.parts.append(pr)
            on_part(sid, i, pr)
        out.append(res)
    return out


def check_job(store, dataset: str, ds: Dataset, summary_ids: Sequence[str], setup: CheckSetup,
              on_part: Optional[Callable[[str, int, PartResult], None]] = None) -> Job:
    """:func:`check_summaries` as one background job (not started): one item per summary, one step per part;
    ``job.latest`` is every finished part so far as (summary id, :class:`PartResult`) pairs, in order, and
    ``job.results`` the finished summaries' :class:`CheckResult`."""
    keys = [p.key for p in PARTS if p.key in setup.parts]

    def work(job: Job) -> None:
        def before(sid: str, i: int, key: str) -> None:
            job.report(done=i, item=sid, step=next(p.label for p in PARTS if p.key == key),
                       step_index=keys.index(key))

        def done(sid: str, i: int, pr: PartResult) -> None:
            job.latest = (*(job.latest or ()), (sid, pr))
            job.count(pr.status)
            if on_part is not None:
                on_part(sid, i, pr)

        for res in check_summaries(store, dataset, ds, summary_ids, setup, done, before):
            job.results.append(res)
        job.report(done=len(summary_ids))

    return recorded(Job("Check", len(summary_ids), work, n_steps=len(keys)), store, dataset, summary_ids,
                    f"{setup.model_sha256}|{setup.judge_params!r}|{setup.medomit_facts}|{setup.parts}")
