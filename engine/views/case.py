"""The Case page's view: one summary of one case with everything the page draws — the notes' and the summary's
stigmatizing-language marks, stored claim verification, injection signals, the rater and judge score table, the
stored MED-OMIT result — and, per evidence tab, the coverage regions and the sentence support.

Every function here takes the workspace store and returns a typed result; a store failure raises
:class:`engine.data.store.StoreError` for the page to show. Stigma scans of a case's notes are kept per case content
and lexicon version, so a rerun that changes nothing rescans nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.core import Case, Dataset, ITEMS, Summary, citations, get_item, json_key
from engine.data import display_table, judge_cell
from engine.evidence import stigma
from engine.evidence.support import NO_CITATION_ISSUE, alignment_cached
from engine.evidence.coverage import (CoverageError, CoverageParams, DEFAULT_THRESHOLDS, coverage_cached,
                                      merge_regions, region_marks, region_rank_score)
from engine.evidence import stored_result
from engine.evidence.medomit import (Consensus, MedOmitResult, consensus, not_found_rows, omitted_fact_rows,
                                     read_stored, same_weight_note, stored_case_results)
from engine.evidence.coverage import omission_flags
from engine.evidence.stigma import workspace_entries
from engine.views.verification import VerificationView, summary_view
from engine.judge import config_key_of, is_smoke_test, latest_result, used_scores
from engine.llm import injection

from engine.evidence.coverage import DEFAULT_METHOD, FLAG_KINDS as OMISSION_FLAG_KINDS, METHODS

__all__ = ["CasePage", "CaseView", "CoverageView", "DEFAULT_METHOD", "MAX_REGIONS", "METHODS",
           "OMISSION_FLAG_KINDS", "SupportView", "case_page"]

JUDGE_ROW = "LLM judge"
DETECTOR_ROW = "Stigma detector (lexicon, no LLM)"
MAX_REGIONS = 30  # regions listed at most (the heat overlay shows every unit above the threshold)


@dataclass(frozen=True)
class Mark:
    """A span to highlight: ``category`` names what it is (a stigma category), ``title`` the hover text."""

    start: int
    end: int
    category: str
    title: str


@dataclass
class CaseView:
    case: Case
    summaries: list[Summary]
    summary: Optional[Summary]
    note_marks: dict[str, list[Mark]] = field(default_factory=dict)
    summary_marks: list[Mark] = field(default_factory=list)
    stigma: Optional[stigma.SummaryStigma] = None
    stigma_error: str = ""  # why the lexicon could not be loaded
    verification: Optional[VerificationView] = None
    injection: list[tuple[str, str]] = field(default_factory=list)  # (where, excerpt)
    score_rows: list[dict] = field(default_factory=list)
    likert_labels: list[str] = field(default_factory=list)
    judged: object = None  # the newest JudgeResult of the summary, any configuration
    judge_configuration: str = ""
    judge_smoke_test: bool = False
    medomit: Optional[MedOmitResult] = None
    omitted_rows: list[dict] = field(default_factory=list)
    medomit_consensus: Optional[Consensus] = None  # the comparable other summaries of the case (None: none)
    not_found_rows: list[dict] = field(default_factory=list)
    medomit_cost: str = ""  # the model's time for the MED-OMIT result by step ("" when its steps were not timed)
    medomit_same_weight: str = ""  # said when the weights do not rank the omitted facts ("" when they do)
    # per 1-5 item: the judge's expected score beside the score triage and the report use, and what it is made of
    used_rows: list[dict] = field(default_factory=list)
    sentence_flags: list["SentenceFlag"] = field(default_factory=list)  # from the stored sentence support


@dataclass(frozen=True)
class SentenceFlag:
    """A problem of one summary sentence, shown where the sentence ends: ``kind`` one of :data:`FLAG_KINDS`,
    ``title`` the reason in words (hover), ``sentence`` its 1-based number."""

    end: int
    kind: str
    title: str
    sentence: int


# what the summary marks at a sentence's end, from its stored sentence support (engine.evidence.support.alignment)
FLAG_KINDS = ("citation wrong", "citation missing", "false specific", "restatement", "weak support")


def sentence_flags(alignment) -> list[SentenceFlag]:
    """The flags of every sentence of a stored alignment result: wrong or unknown citation, missing citation, false
    specifics, restatement of an earlier sentence, weak support by the notes."""
    out = []
    for a in alignment.sentences:
        n = a.index + 1
        if a.citation_verdict in ("wrong", "unknown"):
            out.append(SentenceFlag(a.end, "citation wrong", f"sentence {n}: citation {a.citation_verdict} — "
                                                             f"{a.citation_detail}", n))
        elif a.citation_verdict == "missing":
            out.append(SentenceFlag(a.end, "citation missing", f"sentence {n}: {a.citation_detail}", n))
        for finding in a.specifics:
            out.append(SentenceFlag(a.end, "false specific", f"sentence {n}: {finding}", n))
        if a.restates is not None:
            why = a.restates_detail or f"says again what sentence {a.restates + 1} said"
            out.append(SentenceFlag(a.end, "restatement", f"sentence {n}: {why}", n))
        if a.weak and not a.specifics:
            out.append(SentenceFlag(a.end, "weak support", f"sentence {n}: weakly supported by the notes — "
                                                           f"{a.weak_reason}", n))
    return out


def _stigma_title(hit, extra: str = "") -> str:
    return (f"{hit.category}: “{hit.text}”{extra}" + (f" · suggested: {hit.suggest}" if hit.suggest else "")
            + (f" · source: {hit.source}" if hit.source else ""))


_SCANS: dict[tuple[str, str], list] = {}  # (case content key, lexicon version) -> the notes' scans


def _note_scans(case: Case, lexicon) -> list:
    """The stigma scans of a case's notes, kept per case content and lexicon version (a few dozen cases)."""
    key = (json_key({"case": case.case_id, "notes": [(n.note_id, n.text) for n in case.notes]}), lexicon.version)
    if key not in _SCANS:
        if len(_SCANS) >= 64:
            _SCANS.pop(next(iter(_SCANS)))
        _SCANS[key] = stigma.scan_notes(case, lexicon)
    return _SCANS[key]


def _judge_shown(item, score) -> str:
    """The judge's cell: the expected score for 1-5 items, its answers for yes/no items."""
    if item.is_likert and not score.is_na and score.expected is not None:
        return f"{score.expected:.2f}"
    return judge_cell(item, score)


def case_view(store, name: str, ds: Dataset, case_id: str, summary_id: Optional[str]) -> CaseView:
    """What the Case page shows of case ``case_id`` and its summary ``summary_id`` (None: the case alone)."""
    case = ds.case(case_id)
    view = CaseView(case, ds.summaries_for(case_id), ds.summary(summary_id) if summary_id else None,
                    likert_labels=[it.label for it in ITEMS if it.is_likert])
    try:
        lexicon = stigma.load_lexicon(workspace_entries(store))
    except (ValueError, OSError) as exc:
        lexicon, view.stigma_error = None, str(exc)
    scans = _note_scans(case, lexicon) if lexicon is not None else []
    view.note_marks = {nid: [Mark(h.start, h.end, h.category, _stigma_title(h)) for h in scan.hits]
                       for nid, scan in scans}
    s = view.summary
    if s is None:
        return view
    if lexicon is not None:
        view.stigma = stigma.assess(case, s, lexicon=lexicon, note_scans=scans)
        view.summary_marks = [
            Mark(h.hit.start, h.hit.end, h.hit.category,
                 _stigma_title(h.hit, f" — carried forward from note {h.source.note_id}" if h.source is not None
                               else " — introduced by the summary")) for h in view.stigma.summary_hits]
    view.verification = summary_view(stored_result(store, name, "verification", s.summary_id), s.text)
    view.injection = [(where, sig[0].excerpt) for where, sig in injection.scan_case(case, s)]
    view.score_rows = display_table(ds.ratings_for(s.summary_id))
    judged = latest_result(store, name, s.summary_id)
    view.judged = judged
    if judged is not None:
        view.judge_configuration = config_key_of(judged)
        view.judge_smoke_test = judged.status == "scored" and is_smoke_test(judged)
    if judged is not None and judged.status == "scored":
        view.score_rows.append({"rater": JUDGE_ROW, "group": "llm",
                                **{it.label: _judge_shown(it, judged.items[it.key]) for it in ITEMS
                                   if it.key in judged.items}})
        used = used_scores.for_dataset(store, name, view.judge_configuration, ds=ds)
        view.used_rows = used.breakdown(s.summary_id) if used is not None else []
    if view.stigma is not None:  # the two stigmatizing-language items: the detector beside raters and judge
        view.score_rows.append({"rater": DETECTOR_ROW, "group": "detector",
                                **{get_item(k).label: ("yes" if v else "no")
                                   for k, v in view.stigma.item_answers.items()}})
    aligned = stored_result(store, name, "alignment", s.summary_id)  # read only: the evidence runs compute it
    if aligned is not None:
        view.sentence_flags = sentence_flags(aligned)
    medomit = store.evidence_results(name, "medomit")
    stored = medomit.get(s.summary_id)
    if stored:
        view.medomit = read_stored(stored, case)  # a fact the notes write is never "not found in the notes"
        view.medomit_consensus = consensus(view.medomit,
                                           stored_case_results(ds, s.case_id, medomit, known=[view.medomit]))
        view.omitted_rows = omitted_fact_rows(view.medomit, view.medomit_consensus, s.text,
                                             {n.note_id: n.text for n in case.notes})
        view.not_found_rows = not_found_rows(view.medomit)
        view.medomit_same_weight = same_weight_note(view.medomit, compared=view.medomit_consensus is not None)
        view.medomit_cost = cost_line(view.medomit.seconds_by_step())
    return view


def cost_line(seconds: dict[str, float]) -> str:
    """"Model time for this result from scratch: 9.4 min (facts 6.1, …)" from
    :meth:`MedOmitResult.seconds_by_step`; "" when no step was timed. The case's steps are shared by its summaries,
    so the figure is what this result cost from scratch; steps run before steps were timed are named, not counted."""
    timed = {k: v for k, v in seconds.items() if v > 0}
    if not timed:
        return ""
    untimed = [k for k, v in seconds.items() if v <= 0 and k != "passages"]
    parts = ", ".join(f"{k} {v / 60:.1f}" for k, v in timed.items())
    if untimed:
        return (f"Model time of the timed steps: {sum(timed.values()) / 60:.1f} min ({parts}); not timed (run "
                f"before steps were timed): {', '.join(untimed)}.")
    return (f"Model time for this result from scratch: {sum(timed.values()) / 60:.1f} min ({parts}); steps shared "
            "by the case's summaries are counted in full, and a step served from the cache counts the time it took "
            "when it ran.")


@dataclass
class CoverageView:
    """One coverage method on one summary: its scored units, the slider's range, and at ``threshold`` the
    note-level flags and the merged regions in rank order (tier marks, then score x salience)."""

    coverage: object = None  # engine.evidence.coverage.results.CoverageResult
    error: str = ""
    low: float = 0.0
    high: float = 0.0
    default_threshold: float = 0.0
    threshold: float = 0.0
    regions: list = field(default_factory=list)
    flags: list = field(default_factory=list)
    marks: list[str] = field(default_factory=list)  # per region: its rank tier (★ / ➜, see region_marks)
    rank_scores: list[float] = field(default_factory=list)  # per region: the number its tier is ranked by


def coverage_view(store, name: str, ds: Dataset, summary_id: str, embedder, method: str,
                  threshold: Optional[float] = None) -> CoverageView:
    """Coverage by ``method`` (computed once, then read from the workspace) with regions and flags at
    ``threshold`` (None: the method's default threshold, within the summary's range)."""
    s = ds.summary(summary_id)
    case = ds.case(s.case_id)
    try:
        cov = coverage_cached(store, name, case, s, embedder, CoverageParams(method=method))
    except CoverageError as exc:
        return CoverageView(error=str(exc))
    hi = max(u.score for u in cov.units)
    lo = min(u.score for u in cov.units)
    default = min(DEFAULT_THRESHOLDS[method], hi)
    thr = default if threshold is None else threshold
    regions = merge_regions(case, cov.units, thr, top=MAX_REGIONS, summary_text=citations.strip(s.text))
    flags = omission_flags(case, s.text, cov.units, thr, ds.citation_style())
    return CoverageView(cov, "", lo, hi, default, thr, regions, flags, [region_marks(r) for r in regions],
                        [region_rank_score(r) for r in regions])


@dataclass
class SupportView:
    """Sentence support of one summary: the alignment and, per sentence, its citation verdict (the judge model's
    own check beside the word rule where the summary was verified)."""

    alignment: object = None  # engine.evidence.support.alignment.AlignmentResult
    error: str = ""
    citations: list[tuple[str, str, str]] = field(default_factory=list)  # (verdict, detail, by)

    @property
    def citation_issues(self) -> int:
        """Sentences whose citation is wrong, missing or unknown ("n/a": none expected, is no issue)."""
        return sum(v not in NO_CITATION_ISSUE for v, _, _ in self.citations)

    @property
    def citation_issue_sentences(self) -> str:
        """Which sentences the citation issues are in, e.g. "sentence 3 (wrong), sentence 5 (missing)"; "" when
        there are none."""
        return ", ".join(f"sentence {k + 1} ({v})" for k, (v, _, _) in enumerate(self.citations)
                         if v not in NO_CITATION_ISSUE)


def support_view(store, name: str, ds: Dataset, summary_id: str, embedder,
                 verification: Optional[VerificationView]) -> SupportView:
    s = ds.summary(summary_id)
    try:
        al = alignment_cached(store, name, ds.case(s.case_id), s, embedder, ds.cites_notes())
    except CoverageError as exc:
        return SupportView(error=str(exc))
    cites = [verification.citation_for(a.start, (a.citation_verdict, a.citation_detail)) if verification
             else (a.citation_verdict, a.citation_detail, "word rule") for a in al.sentences]
    return SupportView(al, "", cites)


def summary_check(store, name: str, ds, summary_id: str, backend, model_sha256: str, embedder,
                  medomit_facts: str):
    """The Case page's *Check this summary*: every kind of evidence for the summary as one job (not started;
    :func:`engine.analysis.check.check_job`), with the loaded ``backend`` and ``embedder`` (a function returning
    the embedding model)."""
    from engine.analysis import CheckSetup, check_job

    setup = CheckSetup(embedder, lambda: backend, model_sha256, medomit_facts=medomit_facts)
    return check_job(store, name, ds, [summary_id], setup)


class CasePage:
    """Everything the Case page shows and starts for one summary of one case: :attr:`view` (:func:`case_view`),
    each evidence tab's view when the tab asks for it, the summary's citations, the runs on it from other windows,
    and its jobs (not started) with the loaded judge model ``loaded`` = (backend, model sha256)."""

    def __init__(self, store, name: str, ds: Dataset, case_id: str, summary_id: Optional[str]):
        self.store, self.name, self.ds, self.case_id, self.summary_id = store, name, ds, case_id, summary_id
        self.view = case_view(store, name, ds, case_id, summary_id)

    def coverage(self, embedder, method: str, threshold: Optional[float] = None) -> CoverageView:
        return coverage_view(self.store, self.name, self.ds, self.summary_id, embedder, method, threshold)

    def support(self, embedder) -> SupportView:
        return support_view(self.store, self.name, self.ds, self.summary_id, embedder, self.view.verification)

    def summary_spans(self) -> list:
        """The citation spans of the summary, in the dataset's citation style."""
        return citations.spans(self.view.summary.text, self.ds.citation_style())

    def compact(self, text: str) -> str:
        """``text`` with its citation tags written short."""
        return citations.compact(text, self.ds.citation_style())

    def runs(self) -> list:
        """The runs going on now on this summary, from any window or command (engine.views.runs)."""
        from engine.views.runs import running_runs

        return running_runs(self.store, self.name, self.summary_id)

    def cancel(self, job_id: str) -> None:
        from engine.views.runs import cancel_run

        cancel_run(self.store, job_id)

    @staticmethod
    def _sha(loaded) -> str:
        backend, sha = loaded
        return sha or backend.describe().get("model_file", "endpoint")

    def check_job(self, loaded, embedder, medomit_facts: str):
        """*Check this summary*: every kind of evidence as one job (:func:`summary_check`)."""
        return summary_check(self.store, self.name, self.ds, self.summary_id, loaded[0], self._sha(loaded), embedder,
                             medomit_facts)

    def verification_job(self, loaded, rerun: bool):
        from engine.evidence.support.verification import verification_job

        backend = loaded[0]
        return verification_job(self.store, self.name, self.ds, [self.summary_id], lambda: backend,
                                self._sha(loaded), rerun=rerun)

    def medomit_job(self, loaded, embedder, medomit_facts: str, rerun: bool):
        from engine.evidence.medomit import MedOmit, medomit_job

        mo = MedOmit(loaded[0], loaded[1], cache=self.store, embedder=embedder, facts=medomit_facts)
        return medomit_job(mo, self.ds, [self.summary_id], store=self.store, dataset_name=self.name, rerun=rerun)


def case_page(store, name: str, ds: Dataset, case_id: str, summary_id: Optional[str]) -> CasePage:
    """The Case page's one entry (:class:`CasePage`)."""
    return CasePage(store, name, ds, case_id, summary_id)
