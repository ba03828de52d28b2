"""Verify summaries: every claim of every sentence asked of the model, the record read once per case.

:func:`verify_summary` checks one summary; :func:`verify_cached` keeps its result in the workspace under a key of
method version, prompt version, model, parameters, notes and summary; :func:`compute_verification` runs many
(grouped by case, so each record is read once) through :func:`engine.core.batch.run_cached`, and
:func:`verification_job` wraps that as a cancellable background job with progress.

The model is asked about each whole sentence once (P(yes), :mod:`.ask`); the sentence's claims
(:mod:`.claims`) share that answer. Each claim's own signals — words and numbers the record never uses, an age it
never gives, a fact-level finding (:mod:`.signals`) — join the answer in the shipped monotone combination
(:mod:`.combination`, :attr:`VerifyParams.combine`), which gives the claim's P(supported) and its verdict:
*unsupported*, *uncertain* (near the line: shown apart, never as unsupported) or *supported*; the claim keeps what
drove its probability down, in words (:attr:`~.result.ClaimCheck.drivers`). A sentence is as supported as its least
supported claim. Without the combination (``verify-v1``), a fact-level finding (:func:`fact_findings`) caps the
model's probability at :attr:`VerifyParams.finding_cap` and below :attr:`VerifyParams.threshold` a claim is
unsupported. The defaults were chosen on the development split of ``bench/verify_bench.py`` (real conversations):
whole sentences ranked better than per-claim questions (AUROC 0.81 vs 0.78) and the best-matching lines in the
question did not help (0.75); per-claim questions remain a parameter.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Optional, Sequence

from engine.core import (CACHED_COUNT, Case, DEFAULT_DECODE_WEIGHT, Dataset, Job, Summary, check_cancelled,
                         citations as cit, is_cancelled, json_key, run_cached)
from engine.data import recorded
from engine.evidence.support import specifics
from engine.evidence.support.alignment import is_heading
from engine.evidence.text import split_sentences
from engine.evidence.support.verification.ask import (KEEP, PROMPT_VERSION, Answer, messages, question_message, read_yes,
                                              record_message)
from engine.evidence.support.verification.claims import split_claims
from engine.evidence.support.verification.combination import Combination, shipped_combination
from engine.evidence.support.verification.passages import LineIndex, record_lines
from engine.evidence.support.verification._plan import measured_rate, verification_work
from engine.evidence.support.verification.signals import (AGE_TALK, RecordWords, Signals, checked, claim_signals,
                                                          described, novel_words)
from engine.evidence.support.verification.result import ClaimCheck, SentenceCheck, VerificationResult
from engine.llm import Backend, BackendError, is_smoke_test_model

METHOD_VERSION = "verify-v2"  # v2: the monotone combination of every signal, with an uncertain band
METHOD_KEY = "verification"  # the evidence kind's key
QUESTION_BUDGET = 384  # tokens kept free in the context for one question and its answer


@dataclass(frozen=True)
class VerifyParams:
    claims: bool = False  # ask the model about each claim (False: the whole sentence once, shared by its claims)
    excerpt: bool = False  # add the best-matching lines of the record to each question
    finding_cap: Optional[float] = 0.05  # a fact-level finding caps the claim's probability here (None: ignored)
    threshold: float = 0.65  # below it a claim is unsupported
    citations: bool = True  # also ask whether a cited sentence's notes alone support each of its claims
    combine: bool = True  # the shipped combination of every signal gives P(supported) and the verdict (False: v1)


DEFAULT_PARAMS = VerifyParams()


def fact_findings(claim: str, case: Case, record_numbers: frozenset) -> list[str]:
    """What the record contradicts or never gives in ``claim``: the fact-level checks of
    :func:`engine.evidence.support.specifics.check_sentence`, an age when the record mentions none, and a number the
    record never states (digits or words; never a list number, a date or a unit's number:
    :func:`engine.evidence.text.lexical.claimed_numbers`) — :func:`.signals.checked`, in words."""
    notes = [(n.note_id, n.text) for n in case.notes]
    return described(*checked(claim, notes, record_numbers, any(AGE_TALK.search(t) for _, t in notes)))


def _method(params: VerifyParams) -> tuple[Optional[Combination], dict]:
    """The combination ``params`` decide with (None: ``verify-v1``) and the provenance fields of a result."""
    comb = shipped_combination() if params.combine else None
    extra = {"combination": comb.to_dict()} if comb is not None else {}
    return comb, dict(method_version=METHOD_VERSION if comb else "verify-v1",
                      threshold=comb.unsupported_below if comb else params.threshold,
                      params={**asdict(params), "prompt": PROMPT_VERSION, "checks": specifics.CHECKS_VERSION,
                              **extra})


def _sentence_verdict(checks: Sequence[ClaimCheck], comb: Optional[Combination], params: VerifyParams
                      ) -> tuple[Optional[float], str]:
    """A sentence's P(supported) (its least supported scored claim's) and verdict."""
    scored = [c.p_supported for c in checks if c.p_supported is not None]
    p = min(scored) if scored else None
    return p, ("unscored" if p is None else comb.verdict(p) if comb is not None else
               "unsupported" if p < params.threshold else "supported")


def summary_sentences(summary: Summary, style: cit.CitationStyle = cit.DEFAULT_STYLE):
    """The sentences a verification asks about: every sentence but section headings."""
    return [s for s in split_sentences(summary.text, style) if not is_heading(s.clean)]


class RecordReader:
    """One case's record as the model reads it: whole when it fits the context, else as excerpts per sentence."""

    def __init__(self, case: Case, backend: Backend):
        self.case, self.backend = case, backend
        self.index = LineIndex(record_lines(case))
        self.words = RecordWords(case)  # its words and numbers, read once
        whole = record_message(case)
        room = backend.n_ctx - QUESTION_BUDGET
        self.tokens = (backend.count_tokens(whole) if backend.capabilities.tokenizer else len(whole) // 3 + 1)
        self.whole = whole if self.tokens <= room else None
        self.room = room

    def record_for(self, claims: Sequence[str]) -> tuple[Optional[str], str]:
        """The record message for a sentence's claims, or None and the reason when not even excerpts fit."""
        if self.whole is not None:
            return self.whole, ""
        idx = sorted({i for c in claims for i in self.index.passage(c)})
        while idx:
            msg = record_message(self.case, self.index.refs(idx))
            n = self.backend.count_tokens(msg) if self.backend.capabilities.tokenizer else len(msg) // 3 + 1
            if n <= self.room:
                return msg, ""
            idx = idx[: len(idx) * 2 // 3]
        return None, (f"the record ({self.tokens} tokens) is longer than the model's context ({self.backend.n_ctx}) "
                      "and no line of it matches this sentence")


def _ask(backend: Backend, record: str, question: str) -> Answer:
    try:
        nt = backend.next_token(messages(record, question), KEEP)
    except BackendError as exc:
        return Answer(None, f"the backend failed: {exc}")
    return read_yes(nt)


def verify_summary(case: Case, summary: Summary, backend: Backend, model_sha256: str = "",
                   params: VerifyParams = DEFAULT_PARAMS, style: cit.CitationStyle = cit.DEFAULT_STYLE,
                   reader: Optional[RecordReader] = None) -> VerificationResult:
    """Every claim of every sentence of ``summary`` checked against ``case``'s record."""
    t0 = time.perf_counter()
    desc = backend.describe()
    model = str(desc.get("model_file") or desc.get("model") or backend.name)
    comb, method = _method(params)
    base = dict(summary_id=summary.summary_id, model=model, model_sha256=model_sha256,
                smoke_test=is_smoke_test_model(model, model_sha256), **method)
    if not backend.capabilities.next_token:
        return VerificationResult(**base, reason=f"the backend {backend.name} cannot answer in one step with "
                                                 "log-probabilities")
    sents = summary_sentences(summary, style)
    if not sents:
        return VerificationResult(**base, reason="the summary has no sentence to verify")
    reader = reader or RecordReader(case, backend)
    out, asked = [], 0
    for s in sents:
        check_cancelled()
        parts = split_claims(s.clean)
        record, why = reader.record_for([c.text for c in parts])
        checks: list[ClaimCheck] = []
        whole = None  # the sentence's own answer, shared by its claims (params.claims False)
        for c in parts:
            passage = tuple(reader.index.refs(reader.index.passage(c.text, notes=cited_ids(s.citations, case))))
            if record is None:
                checks.append(ClaimCheck(c.text, c.start, c.end, None, "unscored", reason=why, passage=passage))
                continue
            if params.claims or whole is None:
                text = c.text if params.claims else s.clean
                ans = _ask(backend, record, question_message(text, s.clean,
                                                             passage if params.excerpt else ()))
                asked += 1
                whole = ans if not params.claims else None
            else:
                ans = whole
            checks.append(_claim_check(c, ans, case, passage, params, comb, reader.words))
        if cited_known(s.citations, case) and params.citations and reader.whole is not None:
            checks, n = _check_citations(backend, record, s, checks, params)
            asked += n
        p, verdict = _sentence_verdict(checks, comb, params)
        cv, detail = citation_verdict(s.citations, checks, case, params.threshold)
        out.append(SentenceCheck(s.index, s.start, s.end, s.clean, p, verdict, tuple(checks), tuple(s.citations),
                                 cv, detail))
    return VerificationResult(**base, sentences=tuple(out), questions=asked, seconds=time.perf_counter() - t0,
                              record_tokens=reader.tokens if reader.whole is not None else 0)


def rescored(case: Case, summary: Summary, stored: VerificationResult,
             params: VerifyParams = DEFAULT_PARAMS) -> VerificationResult:
    """``stored`` decided again under ``params`` from its own model answers (each claim's P(yes), each cited
    sentence's P(cited)): no question is asked again. The claims stay as they were; their passages are found
    again (they are what the page shows, not what the model read)."""
    comb, method = _method(params)
    words = RecordWords(case)
    index = LineIndex(record_lines(case))
    sents = []
    for s in stored.sentences:
        checks = []
        for c in s.claims:
            if c.p_model is None:
                checks.append(c)
                continue
            passage = tuple(index.refs(index.passage(c.text, notes=cited_ids(s.cited, case))))
            new = _claim_check(c, Answer(c.p_model, "", c.top), case, passage, params, comb, words)
            checks.append(replace(new, p_cited=c.p_cited))
        p, verdict = _sentence_verdict(checks, comb, params)
        cv, detail = citation_verdict(s.cited, checks, case, params.threshold)
        sents.append(replace(s, p_supported=p, verdict=verdict, claims=tuple(checks), citation_verdict=cv,
                             citation_detail=detail))
    return replace(stored, sentences=tuple(sents), **method)


def _check_citations(backend: Backend, record: str, s, checks: list[ClaimCheck], params: VerifyParams
                      ) -> tuple[list[ClaimCheck], int]:
    """Ask whether the cited notes alone support what the record supports: per claim, or once for the whole
    sentence (``params.claims`` False)."""
    if params.claims:
        out, n = [], 0
        for c in checks:
            if c.p_supported is None:
                out.append(c)
                continue
            a = _ask(backend, record, question_message(c.text, s.clean, c.passage if params.excerpt else (),
                                                       cited=s.citations))
            out.append(replace(c, p_cited=a.p_yes))
            n += 1
        return out, n
    if not any(c.p_supported is not None for c in checks):
        return checks, 0
    a = _ask(backend, record, question_message(s.clean, s.clean, cited=s.citations))
    return [replace(c, p_cited=a.p_yes) if c.p_supported is not None else c for c in checks], 1


def cited_ids(cited: Sequence[str], case: Case) -> tuple[str, ...]:
    """The cited note ids the case has."""
    ids = {n.note_id for n in case.notes}
    return tuple(c for c in cited if c in ids)


def cited_known(cited: Sequence[str], case: Case) -> bool:
    ids = {n.note_id for n in case.notes}
    return bool(cited) and all(c in ids for c in cited)


def citation_verdict(cited: Sequence[str], checks: Sequence[ClaimCheck], case: Case, threshold: float
                     ) -> tuple[str, str]:
    """A cited sentence's citation: *unknown* when it names a note the case lacks; *wrong* when a claim the record
    supports is not supported by the cited notes alone (naming the note of its best-matching lines when that is
    another one); *right* when every such claim is; "" when the sentence cites nothing or nothing was asked."""
    if not cited:
        return "", ""
    ids = {n.note_id for n in case.notes}
    missing = [c for c in cited if c not in ids]
    if missing:
        return "unknown", f"cites note {', '.join(missing)}, which is not in this case"
    asked = [c for c in checks if c.p_cited is not None and c.verdict == "supported"]
    if not asked:
        return "", ""
    bad = [c for c in asked if c.p_cited < threshold]
    if not bad:
        return "right", f"the cited note(s) support every claim (lowest P {min(c.p_cited for c in asked):.2f})"
    c = min(bad, key=lambda x: x.p_cited)
    elsewhere = [p.note_id for p in c.passage if p.note_id not in cited]
    where = f"; its best-matching lines are in note {elsewhere[0]}" if elsewhere else ""
    return "wrong", (f"note {', '.join(cited)} alone does not support \u201c{c.text}\u201d "
                     f"(P {c.p_cited:.2f}){where}")


def _claim_check(c, ans: Answer, case: Case, passage, params: VerifyParams, comb: Optional[Combination],
                 words: RecordWords) -> ClaimCheck:
    """One claim's check from the model's answer: with ``comb``, the claim's signals in the combination; else
    (``verify-v1``) the answer capped by a fact-level finding against ``params.threshold``."""
    sig = claim_signals(c.text, words, ans.p_yes) if comb is not None else None
    found = tuple(sig.findings()) if sig is not None else tuple(fact_findings(c.text, case, words.numbers))
    if ans.p_yes is None:
        return ClaimCheck(c.text, c.start, c.end, None, "unscored", None, ans.reason, passage, found, ans.top)
    if sig is not None:
        p = comb.p_supported(sig)
        verdict = comb.verdict(p)
        why = drivers(comb, sig, c.text, words) if verdict != "supported" else ()
        return ClaimCheck(c.text, c.start, c.end, round(p, 4), verdict, ans.p_yes, "; ".join(why), passage, found,
                          ans.top, drivers=why)
    p, reason = ans.p_yes, ""
    if found and params.finding_cap is not None and p > params.finding_cap:
        p, reason = params.finding_cap, "a fact-level check: " + "; ".join(found)
    verdict = "unsupported" if p < params.threshold else "supported"
    return ClaimCheck(c.text, c.start, c.end, p, verdict, ans.p_yes, reason, passage, found, ans.top)


def drivers(comb: Combination, sig: Signals, claim: str, words: RecordWords) -> tuple[str, ...]:
    """What lowered a claim's P(supported), in words: the findings that cap the model's answer first (a number or
    an age the record never gives, a fact check), then the words the record never uses, then the model's answer
    when no finding capped it."""
    out = []
    if sig.new_numbers:
        out.append("a number the record never states: " + ", ".join(sig.new_numbers[:4]))
    if sig.no_age:
        out.append("an age, and the record gives none")
    if sig.facts:
        out.append("a fact check: " + "; ".join(sig.facts))
    parts = dict(comb.drivers(sig))
    if parts.get("novel_words"):
        new = novel_words(claim, words)
        if new:
            out.append("words the record never uses: " + ", ".join(new[:6]))
    if parts.get("model") and not sig.capped:
        out.append(f"the model's answer (P(yes) {1 - sig.model:.2f})")
    return tuple(out)


def verification_key(case: Case, summary: Summary, model_sha256: str, params: VerifyParams = DEFAULT_PARAMS) -> str:
    comb = shipped_combination().to_dict() if params.combine else None
    return json_key({"v": METHOD_VERSION if comb else "verify-v1", "prompt": PROMPT_VERSION, "model": model_sha256,
                     "params": asdict(params), "combination": comb, "checks": specifics.CHECKS_VERSION,
                     "notes": [asdict(n) for n in case.notes], "summary": summary.text})


def earlier_keys(case: Case, summary: Summary, model_sha256: str, params: VerifyParams = DEFAULT_PARAMS
                 ) -> list[str]:
    """The keys earlier methods stored their results of the same questions under, newest first: ``verify-v2``
    before the fact checks were versioned (they had no allergy check), and ``verify-v1`` (no combination)."""
    notes, text = [asdict(n) for n in case.notes], summary.text
    old = {k: v for k, v in asdict(params).items() if k != "combine"}
    comb = shipped_combination().to_dict() if params.combine else None
    return [json_key({"v": METHOD_VERSION if comb else "verify-v1", "prompt": PROMPT_VERSION, "model": model_sha256,
                      "params": asdict(params), "combination": comb, "notes": notes, "summary": text}),
            json_key({"v": "verify-v1", "prompt": PROMPT_VERSION, "model": model_sha256, "params": old,
                      "notes": notes, "summary": text})]


def stored_verification(store, dataset: str, case: Case, summary: Summary, model_sha256: str,
                        params: VerifyParams = DEFAULT_PARAMS) -> Optional[VerificationResult]:
    """The stored result under ``params``; else a result an earlier method stored for the same questions
    (:func:`earlier_keys`) decided again (:func:`rescored`, no question asked) and stored under the current key."""
    if store is None:
        return None
    key = verification_key(case, summary, model_sha256, params)
    hit = store.get_evidence(dataset, METHOD_KEY, key, summary.summary_id)
    if hit is not None:
        return VerificationResult.from_dict(json.loads(hit))
    for old_key in earlier_keys(case, summary, model_sha256, params):
        old = store.get_evidence(dataset, METHOD_KEY, old_key, summary.summary_id)
        if old is None:
            continue
        res = rescored(case, summary, VerificationResult.from_dict(json.loads(old)), params)
        store.put_evidence(dataset, METHOD_KEY, key, summary.summary_id, "complete", json.dumps(res.to_dict()))
        return res
    return None


@dataclass
class VerifyBatch:
    results: dict  # summary id -> VerificationResult
    computed: int = 0


def compute_verification(store, dataset: str, ds: Dataset, summary_ids: Sequence[str],
                         backend: Callable[[], Backend], model_sha256: str, params: VerifyParams = DEFAULT_PARAMS,
                         report: Callable[..., None] = lambda **kw: None, rerun: bool = False,
                         known: Optional[dict] = None) -> VerifyBatch:
    """Verification of ``summary_ids`` (ordered by case so each record is read once), each computed once and kept
    in the workspace. ``backend`` is called only when something must be computed. ``report`` gets keyword
    arguments ``done, item, cached`` (the shape of :meth:`Job.report`). ``known``: the stored results a caller
    already looked up (summary id -> result or None), not looked up again."""
    order = verification_order(ds, summary_ids)
    opened: dict = {}
    readers: dict = {}

    def lookup(sid: str) -> Optional[VerificationResult]:
        if rerun:  # asked again: the stored result is replaced
            return None
        if known is not None and sid in known:
            return known[sid]
        s = ds.summary(sid)
        return stored_verification(store, dataset, ds.case(s.case_id), s, model_sha256, params)

    def compute(done: int, sid: str) -> VerificationResult:
        s = ds.summary(sid)
        case = ds.case(s.case_id)
        report(done=done, item=sid, cached=False)
        if "backend" not in opened:
            opened["backend"] = backend()
            if opened["backend"].capabilities.saved_prefix and model_sha256:
                opened["backend"].keep_on_disk(model_sha256)  # each record read is kept: a new process loads it
        be = opened["backend"]
        if s.case_id not in readers and be.capabilities.next_token:
            readers.clear()
            readers[s.case_id] = RecordReader(case, be)
        res = verify_summary(case, s, be, model_sha256, params, ds.citation_style(), readers.get(s.case_id))
        if store is not None:
            store.put_evidence(dataset, METHOD_KEY, verification_key(case, s, model_sha256, params), sid,
                               "complete", json.dumps(res.to_dict()))
        return res

    batch = VerifyBatch({})
    for item in run_cached(order, lookup=lookup, compute=compute, should_stop=is_cancelled,
                           on_done=lambda done, sid, out, cached: report(done=done, item=sid, cached=cached)):
        batch.results[item.item_id] = item.result
        batch.computed += not item.from_cache
    return batch


def verification_order(ds: Dataset, summary_ids: Sequence[str]) -> list[str]:
    """The order a run verifies in: by case (each record is read once), else as given."""
    position = {sid: i for i, sid in enumerate(summary_ids)}
    return sorted(summary_ids, key=lambda sid: (ds.summary(sid).case_id, position[sid]))


def plan_verification(job: Job, store, dataset: str, ds: Dataset, summary_ids: Sequence[str], model_sha256: str,
                      params: VerifyParams, rerun: bool = False) -> dict:
    """Give ``job`` its plan (:mod:`.plan`): work tokens per summary without a current result (every summary with
    ``rerun``), and the speed measured on this model's stored verifications. Returns the stored results it looked
    up (summary id -> result or None; empty with ``rerun``), for the run to use."""
    order = verification_order(ds, summary_ids)
    found = {} if rerun else {
        sid: stored_verification(store, dataset, ds.case(ds.summary(sid).case_id), ds.summary(sid), model_sha256,
                                 params) for sid in order}
    style = ds.citation_style()
    work = verification_work(ds, order, {sid for sid, r in found.items() if r is not None}, params.citations,
                             lambda sid: summary_sentences(ds.summary(sid), style))
    rate = measured_rate(store.evidence_results(dataset, METHOD_KEY).values(), model_sha256) if store else None
    job.plan(work, rate, DEFAULT_DECODE_WEIGHT)
    return found


def verification_job(store, dataset: str, ds: Dataset, summary_ids: Sequence[str], backend: Callable[[], Backend],
                     model_sha256: str, params: VerifyParams = DEFAULT_PARAMS, rerun: bool = False) -> Job:
    """:func:`compute_verification` as a background job (not started), planned (:func:`plan_verification`) so
    its bar moves with the tokens read and written; ``job.results`` holds the results. ``rerun``: ask again and
    replace what is stored."""
    def work(job: Job) -> None:
        found = plan_verification(job, store, dataset, ds, summary_ids, model_sha256, params, rerun)

        def report(done: Optional[int] = None, item: Optional[str] = None, cached: bool = False) -> None:
            job.report(done=done, item=item, step="verifying claims", cached=cached)
            if cached:
                job.count(CACHED_COUNT)

        batch = compute_verification(store, dataset, ds, summary_ids, backend, model_sha256, params, report, rerun,
                                     found)
        job.results.extend(batch.results.values())

    return recorded(Job("Claim verification", len(summary_ids), work), store, dataset, summary_ids,
                    json.dumps([model_sha256, asdict(params), rerun]))
