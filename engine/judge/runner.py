"""PDSQI-9 LLM-as-a-judge: prompt planning, constrained sampling, parsing, self-consistency, expected scores.

Protocol (Croxford et al.'s LLM-as-a-judge study for PDSQI-9): notes + summary + target specialty → JSON with one key per item; the
judge's score is the **median of N samples** (self-consistency, default 7). The prompt is evaluated once and
reused (llama.cpp keeps the prompt's KV cache), so every extra sample only costs its decoding. Sample 0 is
greedy and its score-token log-probabilities give a probability-weighted **expected score** per item
(Σ p(level)·level over the levels, renormalised over the allowed levels).

Rules:
* A reply that does not parse into every item within its scale is an *unscored* sample with its reason and raw
  text; the summary is *unscored* only when no sample parsed. Scores are never guessed.
* The whole prompt is counted with the model's tokenizer first. Too long → *refused* with the numbers, or with
  ``trim=True`` the oldest notes are dropped and the result lists them. Never a silent truncation.
* Few-shot examples come from a training split of *other* cases; their answers are the median human scores.
* Every result carries its provenance and a cache key (model hash + prompt version + parameters + content);
  finished work is never recomputed and an interrupted batch resumes where it stopped.
* Exact early stopping (``JudgeParams.early_stop``, on by default): sampling stops once no further sample could
  change any item's median (:mod:`engine.judge.consistency`), so the medians are those of all N samples and the flag is
  not part of the cache key. ``on_partial`` hands over the medians after every sample (the greedy one first).
* Against a server, :func:`run_batch` keeps several summaries in flight (``concurrency``) and still yields and
  reports in order, from the caller's thread.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Iterator, Optional, Sequence

from engine.core import CACHED_COUNT, Cancelled, Job, check_cancelled, run_cached
from engine.data import recorded
from engine.core import Case, Dataset, ITEMS, Summary, get_item, now_iso
from engine.judge._planning import cache_key, dataset_citation_form, injection_findings, plan_prompt, select_examples
from engine.judge.prompt import DEFAULT_CITATION_FORM, FewShotExample, PROMPT_VERSION, output_schema
from engine.judge.results import (ContextTooLong, ItemScore, JudgeParams, JudgeResult, PartialResult, Provenance,
                                  SampleReply, STATUS_REFUSED, STATUS_SCORED, STATUS_UNSCORED, Timing, aggregate,
                                  expected_scores, parse_reply)
from engine.judge.stored import stored_judge_results
from engine.llm import Backend, BackendError, case_record


# --------------------------------------------------------------------------------------------- parsing


# --------------------------------------------------------------------------------------------- few-shot


# --------------------------------------------------------------------------------------------- planning


# --------------------------------------------------------------------------------------------- judge


@dataclass
class JudgeProgress:
    done: int  # summaries finished
    total: int
    summary_id: str
    sample: int  # samples finished for the current summary
    n_samples: int
    message: str = ""


MAX_IN_FLIGHT = 32  # summaries judged at once against a server (the HTTP backend's connection pool holds 32)


class Judge:
    """Runs the PDSQI-9 judge with one backend. ``model_sha256`` identifies the model in cache keys."""

    def __init__(self, backend: Backend, model_sha256: Optional[str], params: JudgeParams = JudgeParams()):
        params.validate()
        self.backend = backend
        self.params = params
        self.model_sha256 = model_sha256
        d = backend.describe()
        self.model_id = model_sha256 or f"{d.get('backend')}:{d.get('endpoint', '')}:{d.get('model_file')}"
        self._citation_forms: dict[int, tuple[object, str]] = {}  # id(dataset) -> (weak reference, form)
        self._prefix_declared = False

    def _provenance(self, examples, dropped, citation_form: str = DEFAULT_CITATION_FORM) -> Provenance:
        d = self.backend.describe()
        return Provenance(backend=d.get("backend", "?"), model_file=d.get("model_file", "?"),
                          model_sha256=self.model_sha256, quantization=d.get("quantization", "unknown"),
                          backend_params={k: v for k, v in d.items() if k not in ("backend", "model_file",
                                                                                   "quantization")},
                          prompt_version=PROMPT_VERSION, params=asdict(self.params),
                          llama_cpp_python=d.get("llama_cpp_python"),
                          few_shot_examples=[e.summary.summary_id for e in examples], dropped_notes=list(dropped),
                          n_ctx=self.backend.n_ctx, citation_form=citation_form)

    def citation_form(self, ds: Dataset) -> str:
        """The dataset's citation form for the prompt (:func:`dataset_citation_form`), detected once per dataset."""
        import weakref

        hit = self._citation_forms.get(id(ds))
        if hit is not None and hit[0]() is ds:
            return hit[1]
        form = dataset_citation_form(ds)
        try:
            self._citation_forms[id(ds)] = (weakref.ref(ds), form)
        except TypeError:  # not weak-referenceable: detect again next time
            pass
        return form

    def prepare(self, ds: Dataset, summary_id: str) -> tuple[Case, Summary, list[FewShotExample], str]:
        summary = ds.summary(summary_id)
        case = ds.case(summary.case_id)
        examples = select_examples(ds, summary, self.params.shots, self.params.seed, self.params.train_fraction)
        key = cache_key(self.model_id, self.params, self.backend.n_ctx, case, summary, examples,
                        self.citation_form(ds))
        return case, summary, examples, key

    def _declare_prefix(self) -> None:
        """Set up a backend that keeps evaluated state (once): the prefix every case's prompts share and each case's
        record are kept, across cases and processes (:func:`engine.llm.case_record.keep_records`)."""
        if self._prefix_declared:
            return
        self._prefix_declared = True
        case_record.keep_records(self.backend, self.model_sha256)

    @staticmethod
    def _items(samples: Sequence[SampleReply], expected: dict[str, tuple[float, float]]) -> dict[str, ItemScore]:
        items = aggregate(samples)
        for k, (e, mass) in expected.items():
            items[k].expected, items[k].expected_mass = round(e, 4), round(mass, 4)
        return items

    def judge(self, ds: Dataset, summary_id: str, should_stop: Callable[[], bool] = lambda: False,
              on_sample: Callable[[int], None] = lambda i: None, prepared=None,
              on_partial: Optional[Callable[[PartialResult], None]] = None) -> JudgeResult:
        """Judge one summary; ``prepared`` is :meth:`prepare`'s result when the caller already has it.

        ``on_sample(k)`` is called after the k-th sample. ``on_partial(PartialResult)`` is called after every sample
        with the medians so far (the first call carries the greedy sample's grades and expected scores) and which of
        them are decided. With ``params.early_stop`` sampling stops as soon as every item's median is decided
        (:func:`engine.judge.consistency.all_fixed`): the medians are those of all ``n_samples`` by construction."""
        import time

        from engine.judge.consistency import all_fixed, item_fixed

        case, summary, examples, key = prepared or self.prepare(ds, summary_id)
        form = self.citation_form(ds)
        self._declare_prefix()
        t_start = time.perf_counter()
        try:
            plan = plan_prompt(self.backend, case, summary, self.params, examples, form)
        except ContextTooLong as exc:
            return JudgeResult(summary_id, case.case_id, STATUS_REFUSED, str(exc), {}, [],
                               self._provenance(examples, [], form), Timing(), key, now_iso())
        schema = output_schema(self.params.explain)
        n = self.params.n_samples
        samples: list[SampleReply] = []
        timing = Timing(prompt_tokens=plan.prompt_tokens)
        expected: dict[str, tuple[float, float]] = {}
        for i in range(n):
            if should_stop():
                raise Cancelled()
            temp = 0.0 if i == 0 else self.params.temperature
            seed = self.params.seed + i
            gen = self.backend.generate(plan.prompt, schema, self.params.resolved_max_tokens, temp, seed,
                                        want_logprobs=(i == 0))
            if i == 0:
                timing.prompt_seconds = gen.prompt_seconds
                timing.prompt_new_tokens = gen.prompt_new_tokens
            timing.decode_tokens += gen.completion_tokens
            timing.decode_seconds += gen.decode_seconds + (gen.prompt_seconds if i > 0 else 0.0)
            reply = SampleReply(i, temp, seed, gen.text, completion_tokens=gen.completion_tokens,
                                decode_seconds=gen.decode_seconds)
            try:
                if gen.finish_reason == "length":
                    raise ValueError(f"reply cut off at the {self.params.resolved_max_tokens}-token limit")
                reply.values, reply.explanations, reply.warnings = parse_reply(gen.text, self.params.explain)
            except ValueError as exc:
                reply.error = str(exc)
            else:
                if i == 0:
                    expected = expected_scores(gen, reply.values)
            samples.append(reply)
            on_sample(i + 1)
            taken = i + 1
            valid = [s.values for s in samples if s.ok]
            decided = self.params.early_stop and taken < n and all_fixed(valid, taken, n)
            if on_partial is not None:
                fixed = {item.key: item_fixed([v[item.key] for v in valid if item.key in v], n - taken, item)
                         for item in ITEMS}
                on_partial(PartialResult(summary_id, case.case_id, taken, n, self._items(samples, expected), fixed,
                                         decided or taken == n, reply))
            if decided:
                break
        timing.total_seconds = time.perf_counter() - t_start
        items = self._items(samples, expected)
        good = [s for s in samples if s.ok]
        notes: list[str] = []
        if good:
            status = STATUS_SCORED
            if len(good) < len(samples):
                notes.append(f"{len(samples) - len(good)} of {len(samples)} samples unscored")
        else:
            status = STATUS_UNSCORED
            notes.append(f"no sample could be scored; first reason: {samples[0].error}")
        if len(samples) < n:
            notes.append(f"stopped early: every median was decided after {len(samples)} of {n} samples")
        if plan.dropped_notes:
            notes.append(f"oldest notes dropped to fit: {', '.join(plan.dropped_notes)}")
        kept = [x.note_id for x in case.notes if x.note_id not in plan.dropped_notes]
        injection = injection_findings(case, summary, kept, examples)
        if injection:
            notes.append(injection)
        return JudgeResult(summary_id, case.case_id, status, "; ".join(notes), items, samples,
                           self._provenance(examples, plan.dropped_notes, form), timing, key, now_iso())


def run_batch(judge: Judge, ds: Dataset, summary_ids: Sequence[str], store=None, dataset_name: Optional[str] = None,
              progress: Callable[[JudgeProgress], None] = lambda p: None,
              should_stop: Callable[[], bool] = lambda: False,
              on_partial: Optional[Callable[[PartialResult], None]] = None,
              concurrency: int = 1, rerun: bool = False) -> Iterator[JudgeResult]:
    """Judge summaries, skipping those whose cache key is already stored (resume; with ``rerun`` every summary is
    judged again and its stored result replaced), storing each result as soon as it is finished, and yielding the
    results in ``summary_ids`` order. Stops cleanly between samples when ``should_stop()`` is true.

    ``concurrency`` > 1 keeps up to that many summaries in flight (at most :data:`MAX_IN_FLIGHT`) when the backend
    can serve requests at once (``backend.capabilities.concurrent``, an OpenAI-compatible server); in process llama.cpp
    runs one at a time whatever is asked. Either way ``progress``, ``on_partial`` and ``should_stop`` are called
    from the caller's thread only, and the output order is ``summary_ids``'. On cancel no further summary starts
    and the ones in flight stop after their current sample (finished ones are stored)."""
    n = max(1, min(int(concurrency), MAX_IN_FLIGHT))
    if n > 1 and len(summary_ids) > 1 and judge.backend.capabilities.concurrent:
        yield from _run_concurrent(judge, ds, list(summary_ids), store, dataset_name or ds.name, progress,
                                   should_stop, on_partial, n, rerun)
        return
    total = len(summary_ids)
    name = dataset_name or ds.name
    prepared: dict[str, tuple] = {}

    def lookup(sid: str) -> Optional[JudgeResult]:
        prepared[sid] = judge.prepare(ds, sid)
        if store is None or rerun:
            return None
        case, _, _, key = prepared[sid]
        cached = store.get_judge_result(name, key, sid, case.case_id)
        return JudgeResult.from_json(cached, from_cache=True) if cached is not None else None

    def compute(done: int, sid: str) -> JudgeResult:
        return judge.judge(ds, sid, should_stop, prepared=prepared.pop(sid), on_partial=on_partial,
                           on_sample=lambda i: progress(JudgeProgress(done, total, sid, i, judge.params.n_samples,
                                                                      "judging")))

    def keep(sid: str, res: JudgeResult) -> None:
        if store is not None:
            store.put_judge_result(name, res)

    for item in run_cached(summary_ids, lookup=lookup, compute=compute, keep=keep, should_stop=should_stop,
                           on_start=lambda done, sid: progress(JudgeProgress(done, total, sid, 0,
                                                                             judge.params.n_samples, "judging")),
                           on_done=lambda done, sid, res, cached: progress(JudgeProgress(
                               done, total, sid, len(res.samples), judge.params.n_samples,
                               "cached" if cached else res.status))):
        yield item.result


def judge_job(judge: Judge, ds: Dataset, summary_ids: Sequence[str], store=None,
              dataset_name: Optional[str] = None, concurrency: int = 1, rerun: bool = False) -> Job:
    """:func:`run_batch` as a background :class:`~engine.core.jobs.Job` (not started): one step per sample, results
    in ``job.results`` as they finish, the newest :class:`PartialResult` in ``job.latest``. Its cancel stops the
    in-process model within the current call (a server: after the request in flight); finished summaries are
    stored, and counted as "new", "from the workspace" or "unscored". ``rerun``: judge stored summaries again."""
    def work(job: Job) -> None:
        def progress(p: JudgeProgress) -> None:
            if p.message == "judging":
                job.report(done=p.done, item=p.summary_id, step=f"sample {min(p.sample + 1, p.n_samples)}",
                           step_index=p.sample)
            else:
                job.report(done=p.done, item=p.summary_id, step=p.message, cached=p.message == "cached")

        def on_partial(partial: PartialResult) -> None:
            job.latest = partial

        plan_job(job, judge, ds, summary_ids, store, dataset_name or ds.name, rerun)
        for res in run_batch(judge, ds, summary_ids, store=store, dataset_name=dataset_name, progress=progress,
                             should_stop=job.should_stop, on_partial=on_partial, concurrency=concurrency,
                             rerun=rerun):
            job.results.append(res)
            job.count(CACHED_COUNT if res.from_cache else
                      "new" if res.status == STATUS_SCORED else res.status)

    return recorded(Job("Judge", len(summary_ids), work, n_steps=judge.params.n_samples), store,
                    dataset_name or ds.name, summary_ids, f"{judge.model_id}|{judge.params!r}|rerun={rerun}")


def plan_job(job: Job, judge: Judge, ds: Dataset, summary_ids: Sequence[str], store, name: str,
             rerun: bool = False) -> None:
    """Give ``job`` its plan (:mod:`engine.core.run_plan`) when the backend tokenizes in process (llama.cpp): each
    summary's prompt tokens, none for one already stored, and this model's speeds measured on the workspace's
    results. A server gets no plan (counting would cost a request per summary): its estimate extrapolates."""
    from engine.core import expected_samples, measured_speeds, work_tokens

    caps = judge.backend.capabilities
    if not caps.tokenizer:
        return
    prompts: list = []
    for sid in summary_ids:
        check_cancelled()
        case, summary, examples, key = judge.prepare(ds, sid)
        if not rerun and store is not None and store.get_judge_result(name, key, sid, case.case_id) is not None:
            prompts.append(None)
            continue
        try:
            plan = plan_prompt(judge.backend, case, summary, judge.params, examples, judge.citation_form(ds))
        except ContextTooLong:
            prompts.append(None)  # refused at once: no work
            continue
        prompts.append(judge.backend.tokenize(plan.prompt))
    stored = stored_judge_results(store, name) if store else []
    speeds = measured_speeds(stored, judge.model_sha256)
    samples = expected_samples(stored, judge.model_sha256, judge.params.n_samples, judge.params.early_stop)
    job.plan(work_tokens(prompts, samples, speeds, caps.reuse_batch),
             speeds.prompt_tps if speeds else None, speeds.decode_weight if speeds else 5.0)


class _Flight:
    """The bookkeeping of a concurrent batch, kept in the caller's thread: results finished (None: cancelled) and
    errors raised, by index; the next summary to start and to yield; how many are in flight and done; and whether
    no new summary may start (the caller stops, or one failed)."""

    def __init__(self) -> None:
        self.finished: dict[int, Optional[JudgeResult]] = {}
        self.errors: dict[int, BaseException] = {}
        self.next_submit = self.next_yield = self.in_flight = self.done = 0
        self.stopping = self.failed = False


def _run_concurrent(judge: Judge, ds: Dataset, ids: list[str], store, name: str,
                    progress: Callable[[JudgeProgress], None], should_stop: Callable[[], bool],
                    on_partial: Optional[Callable[[PartialResult], None]], n: int,
                    rerun: bool = False) -> Iterator[JudgeResult]:
    """:func:`run_batch` with up to ``n`` summaries in flight on worker threads. Workers judge and store; every
    callback runs here, in the caller's thread, from the events the workers post."""
    import queue
    import threading
    from concurrent.futures import ThreadPoolExecutor

    total, n_samples = len(ids), judge.params.n_samples
    events: "queue.SimpleQueue[tuple]" = queue.SimpleQueue()
    abort = threading.Event()  # cancel: workers stop between samples
    run = _Flight()
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="sumcheck-judge")
    clean = False
    try:
        while run.next_yield < total:
            while run.in_flight < n and run.next_submit < total and not (run.stopping or run.failed):
                if should_stop():
                    run.stopping = True
                    abort.set()
                    break
                idx, sid = run.next_submit, ids[run.next_submit]
                run.next_submit += 1
                prepared = judge.prepare(ds, sid)
                cached = (store.get_judge_result(name, prepared[3], sid, prepared[0].case_id)
                          if store is not None and not rerun else None)
                if cached is not None:
                    res = JudgeResult.from_json(cached, from_cache=True)
                    run.finished[idx] = res
                    run.done += 1
                    progress(JudgeProgress(run.done, total, sid, len(res.samples), n_samples, "cached"))
                    continue
                progress(JudgeProgress(run.done, total, sid, 0, n_samples, "judging"))
                pool.submit(_judge_in_worker, judge, ds, store, name, events, abort, bool(on_partial), idx, sid,
                            prepared)
                run.in_flight += 1
            while run.next_yield < total and (run.next_yield in run.finished or run.next_yield in run.errors):
                if run.next_yield in run.errors:
                    raise run.errors.pop(run.next_yield)
                res = run.finished.pop(run.next_yield)
                run.next_yield += 1
                if res is not None:
                    yield res
            if run.next_yield >= total:
                break
            if run.in_flight == 0 and (run.stopping or run.failed or run.next_submit >= total):
                break  # nothing in flight and nothing more will start
            try:
                event = events.get(timeout=0.1)
            except queue.Empty:
                if not run.stopping and should_stop():
                    run.stopping = True
                    abort.set()
                continue
            _take_event(run, event, ids, total, n_samples, progress, on_partial)
            if not run.stopping and should_stop():
                run.stopping = True
                abort.set()
        clean = True
    finally:
        if not clean:
            abort.set()  # the caller stopped iterating or a callback raised: in-flight work stops between samples
        pool.shutdown(wait=clean, cancel_futures=True)


def _judge_in_worker(judge: Judge, ds: Dataset, store, name: str, events, abort, partials: bool, idx: int,
                     sid: str, prepared) -> None:
    """Judge and store one summary of a concurrent batch on a worker thread, posting its samples, its partial
    results (when ``partials``) and its end (done, cancelled or the error) to ``events``; ``abort`` cancels."""
    try:
        res = judge.judge(ds, sid, abort.is_set, prepared=prepared,
                          on_sample=lambda i: events.put(("sample", idx, i)),
                          on_partial=(lambda p: events.put(("partial", idx, p))) if partials else None)
        if store is not None:
            store.put_judge_result(name, res)
    except Cancelled:
        events.put(("cancelled", idx, None))
    except BaseException as exc:  # handed to the caller's thread, raised there in order
        events.put(("error", idx, exc))
    else:
        events.put(("done", idx, res))


def _take_event(run: _Flight, event: tuple, ids: list[str], total: int, n_samples: int,
                progress: Callable[[JudgeProgress], None],
                on_partial: Optional[Callable[[PartialResult], None]]) -> None:
    """Act on one worker event in the caller's thread: report a sample, hand on a partial result, or count a
    summary done, cancelled or failed (after a failure no new summary starts; those in flight finish)."""
    kind, idx, payload = event
    sid = ids[idx]
    if kind == "sample":
        progress(JudgeProgress(run.done, total, sid, payload, n_samples, "judging"))
    elif kind == "partial":
        on_partial(payload)
    else:
        run.in_flight -= 1
        if kind == "done":
            run.finished[idx] = payload
            run.done += 1
            progress(JudgeProgress(run.done, total, sid, len(payload.samples), n_samples, payload.status))
        elif kind == "cancelled":
            run.finished[idx] = None
        else:
            run.errors[idx] = payload
            run.failed = True  # no new summary starts; those in flight finish


def item_label(key: str) -> str:
    return get_item(key).label


def open_llama_backend(model_path: str = "", n_ctx: int = 8192, n_threads: int = 0, n_gpu_layers: int = -1,
                       store=None, embedded_key: str = "") -> tuple[Backend, str]:
    """Resolve the configured GGUF (empty = the embedded model ``embedded_key``, by default the 1.5B judge), load it,
    and return it with its sha256 (hashed once per file version and remembered in the workspace)."""
    from engine.llm import LlamaCppBackend, ModelError, describe_model, resolve_model_path, sha256_file

    try:
        path = resolve_model_path(model_path, embedded_key)
    except ModelError as exc:
        raise BackendError(str(exc)) from exc
    info = describe_model(path, with_hash=False)
    if info.embedded:
        from engine.llm import embedded_sha256

        digest = embedded_sha256(info.embedded_key) or sha256_file(path)
    elif store is not None:
        digest = store.cached_model_hash(path, sha256_file)
    else:
        digest = sha256_file(path)
    return LlamaCppBackend(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers), digest


def export_results(store, dataset: str) -> list[str]:
    """The dataset's latest judge result per summary, as JSON lines (full provenance and raw outputs)."""
    return store.judge_results(dataset)
