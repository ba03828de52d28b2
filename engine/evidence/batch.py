"""Embedding evidence for many summaries at once: uncovered source regions (coverage) and sentence support.

One function computes (or reads back from the workspace) both results for each summary; the Evidence page runs
it as a background :class:`~engine.core.jobs.Job` with progress, an estimate and Cancel, and ``python -m engine
sample --precompute`` runs it in the foreground printing the same progress.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from engine.core import CACHED_COUNT, Job, check_cancelled, is_cancelled, run_cached
from engine.data import recorded
from engine.core import Dataset
from engine.evidence.support import alignment_cached, alignment_key
from engine.evidence.coverage import CoverageError, CoverageParams, coverage_cached, coverage_key
from engine.evidence.embeddings import EMBEDDING_NAME

EVIDENCE_STEPS = ("coverage", "sentence support")


@dataclass
class EvidenceOutcome:
    summary_id: str
    computed: bool  # False: both results were already in the workspace
    refused: str = ""  # why coverage could not score this summary ("" when it could)


@dataclass
class EvidenceBatch:
    outcomes: list[EvidenceOutcome] = field(default_factory=list)

    @property
    def computed(self) -> int:
        return sum(o.computed for o in self.outcomes)


def _stored(store, name: str, method: str, key: str, summary_id: str) -> bool:
    return store is not None and store.get_evidence(name, method, key, summary_id) is not None


def compute_evidence(store, name: str, ds: Dataset, summary_ids: Sequence[str], emb,
                     params: CoverageParams = CoverageParams(),
                     report: Callable[..., None] = lambda **kw: None) -> EvidenceBatch:
    """Coverage and sentence support for ``summary_ids``, each computed once and kept in the workspace.

    ``emb`` is an Embedder or a function returning one (called only when something must be computed). ``report``
    gets keyword arguments ``done, item, step, step_index, cached`` (the shape of :meth:`Job.report`). Between
    summaries and steps a cancelled job stops (:func:`check_cancelled`); what was stored is kept."""
    cites = ds.cites_notes()

    def stored(sid: str) -> Optional[EvidenceOutcome]:
        s = ds.summary(sid)
        case = ds.case(s.case_id)
        have = (_stored(store, name, f"coverage:{params.method}", coverage_key(case, s, params, EMBEDDING_NAME), sid)
                and _stored(store, name, "alignment", alignment_key(case, s, cites), sid))
        return EvidenceOutcome(sid, False) if have else None

    def compute(done: int, sid: str) -> EvidenceOutcome:
        s = ds.summary(sid)
        case = ds.case(s.case_id)
        refused = ""
        report(done=done, item=sid, step=EVIDENCE_STEPS[0], step_index=0)
        try:
            coverage_cached(store, name, case, s, emb, params)
        except CoverageError as exc:
            refused = str(exc)
        check_cancelled()
        report(done=done, item=sid, step=EVIDENCE_STEPS[1], step_index=1)
        alignment_cached(store, name, case, s, emb, cites)
        return EvidenceOutcome(sid, True, refused)

    batch = EvidenceBatch()
    for item in run_cached(summary_ids, lookup=stored, compute=compute, should_stop=is_cancelled,
                           on_done=lambda done, sid, out, cached: report(
                               done=done, item=sid, step=CACHED_COUNT if cached else "computed", cached=cached)):
        batch.outcomes.append(item.result)
    return batch


def evidence_job(store, name: str, ds: Dataset, summary_ids: Sequence[str], emb,
                 params: CoverageParams = CoverageParams()) -> Job:
    """:func:`compute_evidence` as a background job (not started); ``job.results`` holds the outcomes."""
    def work(job: Job) -> None:
        def report(done: Optional[int] = None, item: Optional[str] = None, step: Optional[str] = None,
                   step_index: Optional[int] = None, cached: bool = False) -> None:
            job.report(done=done, item=item, step=step, step_index=step_index, cached=cached)
            if step in ("computed", CACHED_COUNT):
                job.count("new" if step == "computed" else CACHED_COUNT)

        batch = compute_evidence(store, name, ds, summary_ids, emb, params, report)
        job.results.extend(batch.outcomes)
        refused = sum(bool(o.refused) for o in batch.outcomes)
        if refused:
            job.count("refused by coverage", refused)

    return recorded(Job("Embedding evidence", len(summary_ids), work, n_steps=len(EVIDENCE_STEPS)), store, name,
                    summary_ids, repr(params))
