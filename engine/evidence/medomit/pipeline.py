"""MED-OMIT: which pertinent facts a summary left out, and how much each matters.

Method (Schumacher et al., MED-OMIT):
 1. atomic facts from the source, each linked back to the note and character span it came from; the passages of
    the notes those facts leave uncovered are taken as facts too (:mod:`engine.evidence.medomit.gaps`: a small
    model's list skips much of a long note), word for word; they are weighed for importance but not clustered;
 2. a differential diagnosis (DDx) from the source: ≤ 10 ranked conditions, probable / possible / unlikely;
 3. per fact: omitted from the summary or not (:mod:`engine.evidence.medomit.decision`: one closed question per
    fact, the summary read once, combined with the fact's coverage by the summary's words);
 4. importance of each fact against the DDx: critical = 1, important = 0.5, other = 0.1;
 5. facts clustered as supporting / refuting each diagnosis, sub-clustered by mechanism;
    a fact's uniqueness in a sub-cluster S is 1/|S|;
 6. fact score = max(importance weight, its uniqueness values); document weight = Σ over omitted facts;
    also the omission count.
Alternative metric: the DDx from the notes vs the DDx from the summary, and their difference.

Step 1 has two sources (:mod:`engine.evidence.medomit.facts`): the model's fact lists and the passages they leave
uncovered (the default), or the notes' statements alone, word for word, with no fact list and so no clusters.

Steps 1, 2, 4, 5 depend only on the case, so the three summaries of a case share them (every LLM step is
cached by its inputs). A step that fails leaves the result *incomplete* with the step and reason; no fact
list, category or cluster is ever invented.

The result keeps to the source: a fact that cannot be linked to a span of the notes (``link == "unlinked"``) is
kept and shown apart as "not found in the notes", but it takes no part in importance, clusters or omissions and
never counts towards the document weight or the omission count. A reply that is schema-valid but empty of
content (echoed instructions, placeholders, a DDx of one repeated name or of likelihood words) fails its step
(:func:`check_facts`, :func:`check_ddx`), so the result is incomplete with the reason.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional, Sequence

from engine.core import CACHED_COUNT, Job, run_cached
from engine.data import recorded
from engine.core import Case, Summary, now_iso
from engine.evidence.medomit._checks import check_ddx, check_facts, distinct_diagnoses
from engine.evidence.medomit.decision import DEFAULT_DECISION, DecisionParams, FactDecision, decide
from engine.evidence.medomit import _importance as imp_read
from engine.evidence.medomit.facts import AUTO, FACT_SOURCES, ONE_STEP_VERSION, fact_source_for
from engine.evidence.medomit.gaps import DEFAULT_GAPS, PASSAGE_LINK, GapParams, passage_facts
from engine.evidence.medomit._prompts import (BATCH, DDX_SCHEMA, DDX_SHORT_SCHEMA, DDX_TASK, FACTS_EXAMPLE,
                                             MAX_FACTS_PER_PART, cluster_schema, ddx_data, ddx_text, fact_data, fact_list, facts_schema,
                                             fenced, importance_schema, msgs, split_in_halves)
from engine.evidence.medomit.result import (Cluster, Diagnosis, Fact, MedOmitResult, METHOD_VERSION, StepRecord,
                                            compare_ddx, merge_facts, score_document)
from engine.evidence.medomit._linking import link_fact
from engine.evidence.medomit.keys import earlier_result_keys, result_key
from engine.evidence.medomit._redecide import stored_or_redecided
from engine.evidence.medomit.statements import statement_facts
from engine.llm import Backend, Fence, StepCache, StepResult, case_record, run_step


@dataclass
class MedOmitOptions:
    max_tokens_facts: int = 1500
    max_tokens_small: int = 700
    cluster_tokens_per_fact: int = 40  # the clusters reply names every fact at least once, with its mechanism

    def cluster_tokens(self, n_facts: int) -> int:
        """The clusters step's reply budget: a case with many facts needs more than one fact list's budget (a
        reply cut off leaves the result incomplete)."""
        return max(self.max_tokens_facts, self.cluster_tokens_per_fact * n_facts)


class MedOmit:
    """Runs the MED-OMIT pipeline with one backend; every LLM step is cached in ``cache`` (the workspace)."""

    def __init__(self, backend: Backend, model_id: str, cache: Optional[StepCache] = None,
                 options: MedOmitOptions = MedOmitOptions(), embedder=None,
                 decision: DecisionParams = DEFAULT_DECISION, gaps: GapParams = DEFAULT_GAPS,
                 facts: str = AUTO):
        facts = fact_source_for(backend, facts)
        self.backend, self.model_id, self.cache, self.opt = backend, model_id, cache, options
        self._embedder, self.decision, self.gaps, self.facts = embedder, decision, gaps, facts
        self.one_step = FACT_SOURCES[facts].one_step  # the one-step pipeline (the notes' claims)
        case_record.keep_records(backend, model_id if re.fullmatch(r"[0-9a-f]{64}", model_id or "") else None)
        self._records: dict[str, Optional[list[dict]]] = {}  # case id -> the record messages (None: too long)

    def _step(self, name, messages, schema, max_tokens, check=None, keep: int = 0) -> StepResult:
        r = run_step(self.backend, self.model_id, name, messages, schema, max_tokens, self.cache, check, keep=keep)
        if r.ok and r.cached and check is not None:  # a reply cached before the check existed is checked too
            try:
                check(r.value)
            except ValueError as exc:
                return StepResult(name, False, None, r.raw, f"{name}: invalid reply ({exc})", cached=True)
        return r

    # -- case-level steps
    def _note_parts(self, case: Case) -> list[tuple[str, str]]:
        """(note id, text part) pieces small enough for one fact-extraction call; long notes split on paragraphs
        (or sentences) so that nothing is left out."""
        budget = self.backend.n_ctx - self.opt.max_tokens_facts - 300
        parts = []
        for n in case.notes:
            if self.backend.count_tokens(n.text) <= budget:
                parts.append((n.note_id, n.text))
                continue
            chunk = ""
            pieces = [p for p in re.split(r"(\n\s*\n)", n.text)]
            pieces = [x for p in pieces for x in (re.split(r"(?<=[.!?])\s+", p)
                                                  if self.backend.count_tokens(p) > budget else [p])]
            for p in pieces:
                if chunk and self.backend.count_tokens(chunk + p) > budget:
                    parts.append((n.note_id, chunk))
                    chunk = ""
                chunk += p if chunk else p.lstrip()
            if chunk.strip():
                parts.append((n.note_id, chunk))
        return parts

    def extract_facts(self, case: Case, records: list[StepRecord]) -> Optional[list[Fact]]:
        """Facts of every note part. A part whose fact list is cut off at the reply budget is split in two halves
        (on paragraphs, else sentences) and each half asked again, so a long, dense note still yields a complete
        list; a part that cannot be split further leaves the result incomplete."""
        raw: list[tuple[str, str, Optional[str]]] = []
        todo = [(nid, text, f"{i}") for i, (nid, text) in enumerate(self._note_parts(case))]
        while todo:
            nid, text, label = todo.pop(0)
            r = self._step(f"facts[{nid}#{label}]", msgs(
                "You extract atomic clinical facts from one clinical note. An atomic fact is a single piece of "
                "medical information (a symptom, finding, test value, diagnosis, medication with dose, plan item, "
                "referral, pending result, social fact) that cannot be split further. For each fact copy a short "
                "exact quote from the note that states it.",
                fenced(lambda fence: f"{FACTS_EXAMPLE}\n\n{fence.block('note', text, {'id': nid})}\n\nList the "
                        f"atomic facts of this note (at most {MAX_FACTS_PER_PART}), as "
                        '{"facts": [{"fact": "...", "quote": "exact words from the note"}]}.', [nid, text])),
                facts_schema(MAX_FACTS_PER_PART), self.opt.max_tokens_facts, check=check_facts)
            halves = split_in_halves(text) if r.cut_off else None
            if halves:
                records.append(StepRecord.of(r, f"{r.error}; the part was split in two and each half asked "
                                             "again"))
                todo[:0] = [(nid, halves[0], f"{label}.1"), (nid, halves[1], f"{label}.2")]
                continue
            records.append(StepRecord.of(r))
            if not r.ok:
                return None
            raw.extend((f["fact"].strip(), f["quote"], nid) for f in r.value["facts"]
                       if len(re.findall(r"[A-Za-z]", f["fact"])) >= 3)  # skip empty or punctuation-only "facts"
        notes = {n.note_id: n.text for n in case.notes}
        facts = []
        for k, (text, quote, nid) in enumerate(merge_facts(raw), start=1):
            lnid, s, e, kind, sc = link_fact(text, quote, notes, nid)
            facts.append(Fact(f"F{k}", text, lnid, s, e, kind, sc))
        return facts

    def ddx(self, name: str, text_block: Callable[[Fence], str], data: Sequence[Optional[str]],
            records: list[StepRecord]) -> Optional[list[Diagnosis]]:
        """``text_block(fence)`` writes the fenced documentation; ``data`` is every data string in it."""
        r = self._step(name, msgs(
            "You are a physician forming a differential diagnosis from clinical documentation.",
            fenced(lambda fence: f"{text_block(fence)}\n\nGive the differential diagnosis for this patient: at most 10 conditions, most likely "
            'first, each "probable", "possible" or "unlikely" with a one-sentence reason, as '
            '{"diagnoses": [{"name": ..., "likelihood": ..., "reason": ...}]}.', data)),
            DDX_SCHEMA, self.opt.max_tokens_small, check=check_ddx)
        return _diagnoses(r, records)

    def record(self, case: Case) -> Optional[list[dict]]:
        """The case's record messages (:func:`engine.llm.case_record.record_messages`) when they fit the context with
        room for the longest reply, else None (steps then read the facts, or each fact its own excerpt)."""
        if case.case_id not in self._records:
            msgs = case_record.record_messages(case)
            n = self.backend.count_tokens(self.backend.render(msgs))
            self._records[case.case_id] = msgs if n + self.opt.max_tokens_small + 400 <= self.backend.n_ctx else None
        return self._records[case.case_id]

    def source_ddx(self, case: Case, facts: Sequence[Fact], records: list[StepRecord]) -> Optional[list[Diagnosis]]:
        """The differential of the notes. In the one-step pipeline it is asked after the record as every check lays
        it out (the record read once for every check) with a short reason per diagnosis; else as the method's own
        step over the notes. A record longer than the context is reasoned over through its facts."""
        rec = self.record(case) if self.one_step else None
        if rec is None:
            return self.ddx("ddx[source]", *self._source_block(case, facts), records)
        r = self._step("ddx[source]", case_record.with_task(rec, DDX_TASK), DDX_SHORT_SCHEMA,
                       self.opt.max_tokens_small, check=check_ddx, keep=case_record.KEEP)
        return _diagnoses(r, records)

    def _batched(self, name: str, facts, records, system: str, user, schema, max_tokens: int
                 ) -> Optional[list[dict]]:
        """Run a step over the facts in batches of BATCH; ``user(part)`` / ``schema(ids)`` build each call.
        Returns the replies, or None at the first failed batch (recorded)."""
        replies = []
        for b in range(0, len(facts), BATCH):
            part = facts[b:b + BATCH]
            r = self._step(f"{name}#{b // BATCH}", msgs(system, user(part)), schema([f.fact_id for f in part]),
                           max_tokens)
            records.append(StepRecord.of(r))
            if not r.ok:
                return None
            replies.append(r.value)
        return replies

    def _source_block(self, case: Case, facts: Sequence[Fact]) -> tuple[Callable[[Fence], str], list[str]]:
        """The fenced source for the method's own DDx step and its data: all notes, or the facts when they do not
        fit."""
        def notes(fence: Fence) -> str:
            return fence.block("notes", "\n".join(fence.block("note", n.text, {"id": n.note_id}) for n in case.notes))

        data = [x for n in case.notes for x in (n.note_id, n.text)]
        probe = notes(Fence.for_data(data))
        if self.backend.count_tokens(probe) + self.opt.max_tokens_small + 400 <= self.backend.n_ctx:
            return notes, data
        return (lambda fence: fact_list(fence, facts)), fact_data(facts)  # reason over the facts

    def importance(self, case: Case, facts, ddx, records) -> Optional[tuple[dict[str, str], dict[str, dict]]]:
        """Each fact's importance label and, in the one-step pipeline on a backend that answers in one step, the
        labels' probabilities (:mod:`engine.evidence.medomit._importance`: read against the record and the DDx, one
        step per fact, the case's readings cached as one step); else the labels a generated reply gives per batch of
        facts."""
        if not self.reads_importance:
            replies = self._batched(
                "importance", facts, records,
                "You rate how important each clinical fact is for the differential diagnosis below.",
                lambda part: fenced(lambda fence: f"{ddx_text(fence, ddx)}\n{fact_list(fence, part)}\n\nRate every "
                                    'fact "critical" (changes the diagnosis or management), "important" (relevant '
                                    'context) or "other", as {"F1": "critical", ...}.',
                                    ddx_data(ddx) + fact_data(part)),
                importance_schema, self.opt.max_tokens_small)
            return None if replies is None else ({k: v for r in replies for k, v in r.items()}, {})
        return self._read_importance(case, facts, ddx, records)

    @property
    def reads_importance(self) -> bool:
        """Whether importance is read in one step (the one-step pipeline on a backend that answers one-step
        questions): then only the facts a summary leaves out are weighed (:meth:`run`)."""
        return self.one_step and self.backend.capabilities.next_token

    @property
    def steps(self) -> tuple[str, ...]:
        """The progress messages of :meth:`run`, in the order this pipeline sends them."""
        return ONE_STEP_STEPS if self.reads_importance else MEDOMIT_STEPS

    def _read_importance(self, case: Case, facts, ddx, records, what: str = "facts"
                         ) -> Optional[tuple[dict[str, str], dict[str, dict]]]:
        """Each fact's importance read in one step (:func:`engine.evidence.medomit._importance.read_cached`: each
        reading cached on its own); None when facts were to be read and none could be (the step is recorded)."""
        reads, record = imp_read.read_cached(self.backend, self.model_id, self.cache, case, self.record(case), ddx,
                                             facts, what)
        records.append(record)
        if not record.ok:
            return None
        return ({k: r.label for k, r in reads.items() if r.label},
                {k: r.probs for k, r in reads.items() if r.probs is not None})

    def clusters(self, facts, ddx, records) -> Optional[list[Cluster]]:
        names = [d.name for d in ddx]
        ids = [f.fact_id for f in facts]
        messages = msgs(
            "You group clinical facts as evidence for and against each diagnosis, and within each group you "
            "sub-cluster the facts that point to the same pathophysiological mechanism.",
            fenced(lambda fence: f"{ddx_text(fence, ddx)}\n{fact_list(fence, facts)}\n\nFor each diagnosis, list "
                    "sub-clusters of supporting facts and of refuting facts; each sub-cluster names its mechanism and "
                    'its fact ids, as {"clusters": [{"diagnosis": ..., "polarity": "supporting" or "refuting", '
                    '"mechanism": ..., "facts": ["F1", ...]}]}.', ddx_data(ddx) + fact_data(facts)))
        schema = cluster_schema(names, ids)
        r = self._step("clusters", messages, schema, self.opt.cluster_tokens(len(facts)))
        if r.cut_off:  # once, with twice the budget (the step refuses a budget the context cannot hold)
            records.append(StepRecord.of(r, f"{r.error}; asked again with twice the budget"))
            r = self._step("clusters[wider]", messages, schema, 2 * self.opt.cluster_tokens(len(facts)))
        records.append(StepRecord.of(r))
        if not r.ok:
            return None
        return [Cluster(c["diagnosis"], c["polarity"], c["mechanism"].strip(), sorted(set(c["facts"])))
                for c in r.value["clusters"] if c["facts"]]

    def earlier_keys(self, case: Case, summary: Summary) -> list[str]:
        """The keys earlier decision versions stored this summary's result under."""
        return earlier_result_keys(self.model_id, case, summary, self.decision, self.gaps, self.facts)

    def embedder(self):
        """The embedding model for the coverage signal: the one given, else the bundled model loaded once."""
        if self._embedder is None:
            from engine.evidence.embeddings import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def omissions(self, summary: Summary, facts: Sequence[Fact], records: list[StepRecord],
                  progress: Callable[[str], None] = lambda s: None) -> list[FactDecision]:
        """Each fact decided present or omitted (:func:`engine.evidence.medomit.decision.decide`): one closed
        question per fact with the summary read once, and the fact's coverage by the summary's words."""
        t0 = time.perf_counter()
        dec = decide([f.fact_id for f in facts], [f.text for f in facts], summary.text, self.embedder(),
                     self.backend, self.decision)
        asked = sum(x.p_stated is not None for d in dec for x in (d.parts or (d,)))
        secs = round(time.perf_counter() - t0, 3)
        records.append(StepRecord(f"omissions[{summary.summary_id}]", True, False,
                                  f"{len(dec)} facts decided ({sum(len(d.parts) > 1 for d in dec)} part by part), "
                                  f"{asked} questions answered by the model, {secs:.1f} s", seconds=secs))
        return dec

    def _scored(self, case: Case, summary: Summary, facts, ddx, clusters,
                importance: Optional[tuple[dict[str, str], dict[str, dict]]], records: list[StepRecord],
                progress: Callable[[str], None], sddx=None, prov: Optional[dict] = None) -> MedOmitResult:
        """The result from the case-level outputs (``importance``: labels and, for facts read in one step, the labels'
        probabilities; None: read now in one step for the facts this summary leaves out, the only facts the document
        score counts): the omission decision for this summary, the scores and, unless given or not part of the fact
        source's pipeline, the summary's differential."""
        linked = [f for f in facts if f.link != "unlinked"]
        progress("omissions")
        dec = {d.fact_id: d for d in self.omissions(summary, linked, records)}
        if importance is None:
            progress("importance")
            importance = self._read_importance(case, [f for f in linked if dec[f.fact_id].omitted], ddx, records,
                                               "omitted facts")
            if importance is None:
                return _incomplete(case, summary, records, prov or self._provenance(), facts, ddx, clusters)
        scores, weight, count = score_document([f.fact_id for f in facts], {k: d.omitted for k, d in dec.items()},
                                               importance[0], clusters, {k: d.explanation for k, d in dec.items()},
                                               unlinked=[f.fact_id for f in facts if f.link == "unlinked"],
                                               probs=importance[1])
        by_id, notes = {f.fact_id: f for f in facts}, {n.note_id: n.text for n in case.notes}
        for s in scores:
            d = dec.get(s.fact_id)
            if d is not None:
                s.p_omitted, s.p_stated, s.coverage = d.p_omitted, d.p_stated, d.coverage
                f = by_id[s.fact_id]
                s.missing = f.placed(notes.get(f.note_id or "", ""), d.missing)
        wanted = not self.one_step
        if sddx is None and wanted:
            progress("summary DDx")
            sddx = self.ddx(f"ddx[summary {summary.summary_id}]", lambda fence: fence.block("summary", summary.text),
                            [summary.text], records)
        comparison = compare_ddx(ddx, sddx) if sddx else None
        prov = {**(prov or self._provenance())}
        return MedOmitResult(summary.summary_id, case.case_id, "complete", "", "" if sddx is not None or not wanted else
                             "the summary DDx step failed; the alternative metric is missing", facts, ddx, clusters,
                             scores, weight, count, sddx or [], comparison, records, prov, now_iso())

    def _provenance(self) -> dict:
        emb = self._embedder.name if self._embedder is not None else "bundled"
        return {"method": METHOD_VERSION, "model": self.model_id, **self.backend.describe(),
                "decision": self.decision.key(), "passages": self.gaps.key(), "embedding": emb, "facts": self.facts,
                **({"one_step": ONE_STEP_VERSION} if self.one_step else {})}

    def decide_again(self, result: MedOmitResult, case: Case, summary: Summary) -> MedOmitResult:
        """A complete result of an earlier method decided again with today's omission decision: its facts,
        differential, importance, clusters and summary differential are kept (no other LLM step runs)."""
        if result.status != "complete":
            raise ValueError("only a complete result can be decided again")
        importance = ({s.fact_id: s.importance for s in result.scores if s.importance},
                      {s.fact_id: s.importance_p for s in result.scores if s.importance_p})
        lazy = self.reads_importance and result.fact_source == self.facts  # weighs only the omitted facts
        records = [r for r in result.steps if not r.step.startswith("omissions[")  # the earlier decision's record
                   and not (lazy and r.step == "importance[read]")]
        prov = {**self._provenance(), "decided_again_from": (result.provenance or {}).get("method"),
                "case_steps_model": (result.provenance or {}).get("model"), "facts": result.fact_source}
        return self._scored(case, summary, result.facts, result.ddx, result.clusters, None if lazy else importance,
                            records, lambda m: None, sddx=result.summary_ddx, prov=prov)

    # -- the whole pipeline
    def run(self, case: Case, summary: Summary, progress: Callable[[str], None] = lambda s: None) -> MedOmitResult:
        records: list[StepRecord] = []
        prov = self._provenance()

        incomplete = partial(_incomplete, case, summary, records, prov)  # (facts, ddx, clusters) kept so far
        progress("extracting facts")
        if FACT_SOURCES[self.facts].uses_model:
            facts = self.extract_facts(case, records)
            if facts is None:
                return incomplete()
            if not facts:
                records.append(StepRecord("facts", False, False, "facts: the model found no fact in the notes"))
                return incomplete()
            linked = [f for f in facts if f.link != "unlinked"]  # only facts found in the notes are weighed
            if not linked:
                records.append(StepRecord("facts", False, False, f"facts: none of the {len(facts)} facts the model "
                                          "stated could be found in the notes"))
                return incomplete(facts)
        else:
            facts, linked = [], []
        t0 = time.perf_counter()
        passages = (statement_facts(case) if self.facts == "claims" else
                    passage_facts(case, linked, self.gaps))  # what the model's facts (if any) leave out of the notes
        if not facts and not passages:
            records.append(StepRecord("passages", False, False, "facts: the notes hold no statement to take as a "
                                      "fact"))
            return incomplete()
        if passages:
            what = ("passages of the notes no extracted fact covers" if facts else
                    "atomic statements of the notes (no model extraction)" if self.facts == "claims" else
                    "statements of the notes (no model extraction)")
            records.append(StepRecord("passages", True, False, f"{len(passages)} {what} taken as facts",
                                      seconds=round(time.perf_counter() - t0, 3)))
        facts, linked = facts + passages, linked + passages
        progress("differential diagnosis")
        ddx = self.source_ddx(case, linked, records)
        if ddx is None:
            return incomplete(facts)
        imp = None  # read in one step for the facts the summary leaves out (_scored)
        if not self.reads_importance:
            progress("importance")
            imp = self.importance(case, linked, ddx, records)
            if imp is None:
                return incomplete(facts, ddx)
        progress("clusters")
        extracted = [f for f in linked if f.link != PASSAGE_LINK]  # passages are weighed, not clustered
        clusters = self.clusters(extracted, ddx, records) if extracted else []
        if clusters is None:
            return incomplete(facts, ddx)
        return self._scored(case, summary, facts, ddx, clusters, imp, records, progress)


def _incomplete(case: Case, summary: Summary, records: list[StepRecord], prov: dict, facts=(), ddx=(),
                clusters=()) -> MedOmitResult:
    """An incomplete result named after the last failed step in ``records``, keeping what the run had."""
    failed = next(r for r in reversed(records) if not r.ok)
    return MedOmitResult(summary.summary_id, case.case_id, "incomplete", failed.step, failed.error, list(facts),
                         list(ddx), list(clusters), [], None, None, steps=records, provenance=prov,
                         created_at=now_iso())


def run_medomit(medomit: "MedOmit", ds, summary_ids: Sequence[str], store=None, dataset_name: Optional[str] = None,
                progress: Callable[[int, int, str, str], None] = lambda done, total, sid, msg: None,
                should_stop: Callable[[], bool] = lambda: False, rerun: bool = False):
    """MED-OMIT over several summaries through the one cached batch loop (:func:`engine.core.batch.run_cached`):
    results are stored per (model, content) and reused (resume; with ``rerun`` every summary runs again and its
    stored result is replaced — give ``medomit`` no step cache to ask every step again); an incomplete result is
    run again, its successful steps coming from the step cache."""
    name = dataset_name or ds.name
    total = len(summary_ids)

    placed: dict[str, tuple] = {}  # summary id -> (case, summary, result key), worked out once

    def place(sid: str) -> tuple:
        if sid not in placed:
            summary = ds.summary(sid)
            case = ds.case(summary.case_id)
            placed[sid] = (case, summary, result_key(medomit.model_id, case, summary, medomit.decision,
                                                  medomit.gaps, medomit.facts))
        return placed[sid]

    def lookup(sid: str) -> Optional[MedOmitResult]:
        if store is None or rerun:
            return None
        case, summary, key = place(sid)
        res = stored_or_redecided(store, name, sid, key, summary.text, medomit.embedder,
                                  medomit.earlier_keys(case, summary))
        return res if res is not None and res.status == "complete" else None

    def compute(done: int, sid: str) -> MedOmitResult:
        case, summary, _ = place(sid)
        return medomit.run(case, summary, progress=lambda m: progress(done, total, sid, m))

    def keep(sid: str, res: MedOmitResult) -> None:
        if store is not None:
            store.put_evidence(name, "medomit", place(sid)[2], sid, res.status, res.to_json())

    for item in run_cached(summary_ids, lookup=lookup, compute=compute, keep=keep, should_stop=should_stop,
                           on_done=lambda done, sid, res, cached: progress(done, total, sid,
                                                                           "cached" if cached else res.status)):
        yield item.result


MEDOMIT_STEPS = ("extracting facts", "differential diagnosis", "importance", "clusters", "omissions",
                 "summary DDx")  # the progress messages of :meth:`MedOmit.run`, in order
ONE_STEP_STEPS = ("extracting facts", "differential diagnosis", "clusters", "omissions", "importance",
                  "summary DDx")  # the same when importance is read in one step, after the omissions


def medomit_job(medomit: "MedOmit", ds, summary_ids: Sequence[str], store=None,
                dataset_name: Optional[str] = None, rerun: bool = False) -> Job:
    """:func:`run_medomit` as a background :class:`~engine.core.jobs.Job` (not started), one step per pipeline step.
    Its cancel stops the in-process model within the current LLM call; summaries finished before are stored and
    every finished step is in the step cache, so a new run resumes where this one stopped."""
    def work(job: Job) -> None:
        last = {"msg": ""}  # the message that came with the result yielded next ("cached" or its status)

        def progress(done: int, total: int, sid: str, msg: str) -> None:
            last["msg"] = msg
            job.report(done=done, item=sid, step=msg, step_index=medomit.steps.index(msg) if msg in medomit.steps
                       else None, cached=msg == "cached")

        for res in run_medomit(medomit, ds, summary_ids, store=store, dataset_name=dataset_name, progress=progress,
                               should_stop=job.should_stop, rerun=rerun):
            job.results.append(res)
            job.count(CACHED_COUNT if last["msg"] == "cached" else res.status)

    return recorded(Job("MED-OMIT", len(summary_ids), work, n_steps=len(medomit.steps)), store, dataset_name or ds.name,
                    summary_ids, repr((medomit.model_id, medomit.opt, medomit.decision, medomit.gaps, medomit.facts,
                                       rerun)))


def _diagnoses(r, records: list[StepRecord]) -> Optional[list[Diagnosis]]:
    """A DDx step's differential, each name once (what was dropped noted in its record); None when it failed."""
    dx, note = distinct_diagnoses(r.value["diagnoses"]) if r.ok else (None, "")
    records.append(StepRecord.of(r, note or None))
    return dx
