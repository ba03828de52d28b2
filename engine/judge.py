"""PDSQI-9 LLM-as-a-judge: prompt planning, constrained sampling, parsing, self-consistency, expected scores.

Protocol (``shared/seeds/001_*``): notes + summary + target specialty → JSON with one key per item; the
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
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterator, Optional, Sequence

from .backends import Backend, BackendError, Generation
from .judge_prompt import PROMPT_VERSION, FewShotExample, build_messages, output_schema
from .models import Case, Dataset, Summary
from .ratings import medians
from .rubric import ITEMS, Scale, get_item

STATUS_SCORED, STATUS_UNSCORED, STATUS_REFUSED = "scored", "unscored", "refused"


class ContextTooLong(Exception):
    def __init__(self, needed: int, available: int, detail: str):
        self.needed, self.available = needed, available
        super().__init__(detail)


@dataclass(frozen=True)
class JudgeParams:
    n_samples: int = 7
    temperature: float = 0.7  # for samples 1..N-1; sample 0 is greedy
    shots: int = 0  # few-shot examples: 0, 1, 3 or 5
    explain: bool = False
    seed: int = 1234
    trim: bool = False  # drop the oldest notes when the prompt does not fit (else refuse)
    max_tokens: int = 0  # 0 = automatic (enough for the schema)
    train_fraction: float = 0.3

    def validate(self) -> None:
        if not 1 <= self.n_samples <= 50:
            raise ValueError("samples must be between 1 and 50")
        if self.shots not in (0, 1, 3, 5):
            raise ValueError("shots must be 0, 1, 3 or 5")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError("temperature must be between 0 and 2")
        if not 0.0 < self.train_fraction < 1.0:
            raise ValueError("train fraction must be between 0 and 1")

    @property
    def resolved_max_tokens(self) -> int:
        return self.max_tokens or (1024 if self.explain else 256)


@dataclass
class SampleReply:
    index: int
    temperature: float
    seed: int
    raw: str
    values: dict[str, Optional[float]] = field(default_factory=dict)  # item -> value, None = NA
    explanations: dict[str, str] = field(default_factory=dict)
    error: Optional[str] = None  # set when the reply is unscored
    warnings: list[str] = field(default_factory=list)
    completion_tokens: int = 0
    decode_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ItemScore:
    item: str
    median: Optional[float]  # None when NA or nothing valid
    is_na: bool
    values: list[Optional[float]]
    spread: Optional[float]  # max - min of the numeric sample values
    expected: Optional[float] = None  # probability-weighted score from the greedy sample
    expected_mass: Optional[float] = None  # probability mass on the allowed levels (diagnostic)
    explanation: str = ""


@dataclass
class Provenance:
    backend: str
    model_file: str
    model_sha256: Optional[str]
    quantization: str
    backend_params: dict
    prompt_version: str
    params: dict
    llama_cpp_python: Optional[str]
    few_shot_examples: list[str]
    dropped_notes: list[str]
    n_ctx: int


@dataclass
class Timing:
    prompt_tokens: int = 0
    decode_tokens: int = 0
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def prompt_tps(self) -> Optional[float]:
        return self.prompt_tokens / self.prompt_seconds if self.prompt_seconds > 0 else None

    @property
    def decode_tps(self) -> Optional[float]:
        return self.decode_tokens / self.decode_seconds if self.decode_seconds > 0 else None


@dataclass
class JudgeResult:
    summary_id: str
    case_id: str
    status: str
    reason: str
    items: dict[str, ItemScore]
    samples: list[SampleReply]
    provenance: Provenance
    timing: Timing
    cache_key: str
    created_at: str
    from_cache: bool = False

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("from_cache")
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str, from_cache: bool = True) -> "JudgeResult":
        d = json.loads(text)
        return cls(summary_id=d["summary_id"], case_id=d["case_id"], status=d["status"], reason=d["reason"],
                   items={k: ItemScore(**v) for k, v in d["items"].items()},
                   samples=[SampleReply(**s) for s in d["samples"]], provenance=Provenance(**d["provenance"]),
                   timing=Timing(**d["timing"]), cache_key=d["cache_key"], created_at=d["created_at"],
                   from_cache=from_cache)

    def medians(self) -> dict[str, Optional[float]]:
        return {k: v.median for k, v in self.items.items()}


# --------------------------------------------------------------------------------------------- parsing


def parse_reply(text: str, explain: bool) -> tuple[dict[str, Optional[float]], dict[str, str], list[str]]:
    """Validate one reply. Returns (values, explanations, warnings); raises ValueError with the reason."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        snippet = text[-60:] if text else "(empty reply)"
        raise ValueError(f"reply is not valid JSON ({exc.msg} at char {exc.pos}); it ends with {snippet!r}") from None
    if not isinstance(obj, dict):
        raise ValueError("reply is not a JSON object")
    values: dict[str, Optional[float]] = {}
    notes: dict[str, str] = {}
    warnings: list[str] = []
    missing = [i.key for i in ITEMS if i.key not in obj]
    if missing:
        raise ValueError(f"reply lacks item(s) {', '.join(missing)}")
    for item in ITEMS:
        v = obj[item.key]
        if item.scale is Scale.BINARY:
            if v not in ("yes", "no"):
                raise ValueError(f"{item.key} = {v!r}; expected 'yes' or 'no'")
            values[item.key] = 1.0 if v == "yes" else 0.0
        elif item.scale is Scale.LIKERT_NA and v == "NA":
            values[item.key] = None
        else:
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 5:
                raise ValueError(f"{item.key} = {v!r}; expected an integer 1-5" +
                                 (" or 'NA'" if item.allows_na else ""))
            values[item.key] = float(v)
        if explain:
            why = obj.get(f"{item.key}_why")
            if isinstance(why, str):
                notes[item.key] = why.strip()
    if values["abstraction"] == 0.0 and values["synthesized"] is not None:
        warnings.append("synthesized was graded although abstraction = no; the rubric makes it NA, so it is NA")
        values["synthesized"] = None
    elif values["abstraction"] == 1.0 and values["synthesized"] is None:
        warnings.append("synthesized = NA although abstraction = yes; synthesized is left unscored in this sample")
        values.pop("synthesized")
    return values, notes, warnings


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def aggregate(samples: Sequence[SampleReply]) -> dict[str, ItemScore]:
    """Per-item median and spread over the valid samples (NA-aware for *synthesized*)."""
    good = [s for s in samples if s.ok]
    out: dict[str, ItemScore] = {}
    for item in ITEMS:
        vals = [s.values[item.key] for s in good if item.key in s.values]
        nums = [v for v in vals if v is not None]
        n_na = len(vals) - len(nums)
        is_na = bool(vals) and n_na > len(nums)
        med = None if is_na or not nums else _median(nums)
        spread = (max(nums) - min(nums)) if nums else None
        expl = next((s.explanations.get(item.key, "") for s in good if s.explanations.get(item.key)), "")
        out[item.key] = ItemScore(item.key, med, is_na, vals, spread, explanation=expl)
    return out


def expected_scores(gen: Generation, values: dict[str, Optional[float]]) -> dict[str, tuple[float, float]]:
    """item -> (expected score, probability mass on the allowed levels) from the greedy sample's log-probs.

    For each item, find the generated token that holds the first character of its value; the alternatives
    are the same token with the value replaced by each allowed level (e.g. ' 4' → ' 1'…' 5'). Their
    probabilities, renormalised, weight the levels. Binary items give P(yes). Items whose token cannot be
    located (e.g. a split token) are left out."""
    import re

    if not gen.token_texts or not gen.top_logprobs:
        return {}
    starts, pos = [], 0
    for t in gen.token_texts:
        starts.append(pos)
        pos += len(t)
    text = "".join(gen.token_texts)
    out: dict[str, tuple[float, float]] = {}
    for item in ITEMS:
        m = re.search(r'"%s"\s*:\s*' % re.escape(item.key), text)
        if not m or item.key not in values or values[item.key] is None:
            continue
        if item.scale is Scale.BINARY:
            pos, chosen = m.end() + 1, ("yes" if values[item.key] == 1.0 else "no")
            options = {"yes": 1.0, "no": 0.0}
        else:
            pos, chosen = m.end(), str(int(values[item.key]))
            options = {str(k): float(k) for k in range(1, 6)}
        idx = max(i for i, s in enumerate(starts) if s <= pos)
        if idx >= len(gen.top_logprobs):
            continue
        tok, off = gen.token_texts[idx], pos - starts[idx]
        if not tok[off:].startswith(chosen):
            continue  # the value is split over several tokens
        prefix, suffix = tok[:off], tok[off + len(chosen):]
        lp = gen.top_logprobs[idx]
        probs = {o: math.exp(lp[prefix + o + suffix]) for o in options if (prefix + o + suffix) in lp}
        mass = sum(probs.values())
        if mass <= 0:
            continue
        out[item.key] = (sum(options[o] * p for o, p in probs.items()) / mass, mass)
    return out


# --------------------------------------------------------------------------------------------- few-shot


def in_train_split(case_id: str, fraction: float) -> bool:
    h = int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return h < fraction


def example_answer(ds: Dataset, summary_id: str) -> Optional[dict]:
    """Median human answer for a summary, or None when an item has no human rating."""
    med = medians(r for r in ds.ratings_for(summary_id) if r.rater_group != "llm")
    answer: dict = {}
    for item in ITEMS:
        if item.key not in med:
            return None
        v = med[item.key]
        if item.scale is Scale.BINARY:
            answer[item.key] = "yes" if v is not None and v >= 0.5 else "no"
        elif item.allows_na:
            continue
        else:
            if v is None:
                return None
            answer[item.key] = int(math.floor(v + 0.5))
    syn = med.get("synthesized")
    if answer["abstraction"] == "no":
        answer["synthesized"] = "NA"
    elif syn is None:
        return None
    else:
        answer["synthesized"] = int(math.floor(syn + 0.5))
    return {i.key: answer[i.key] for i in ITEMS}


def select_examples(ds: Dataset, summary: Summary, k: int, seed: int, train_fraction: float) -> list[FewShotExample]:
    """k rated examples from the training split, never from the case being judged."""
    if k == 0:
        return []
    pool = []
    for s in ds.summaries:
        if s.case_id == summary.case_id or not in_train_split(s.case_id, train_fraction):
            continue
        ans = example_answer(ds, s.summary_id)
        if ans is not None:
            pool.append(FewShotExample(ds.case(s.case_id), s, ans))
    if len(pool) < k:
        raise ValueError(f"only {len(pool)} rated summaries in the training split ({train_fraction:.0%} of cases) "
                         f"outside case {summary.case_id!r}; {k} examples were asked for. Use fewer shots, a larger "
                         "training fraction, or import human ratings.")
    rng = random.Random(f"{seed}:{summary.summary_id}")
    pool.sort(key=lambda e: e.summary.summary_id)
    return rng.sample(pool, k)


# --------------------------------------------------------------------------------------------- planning


@dataclass
class PromptPlan:
    prompt: str
    messages: list[dict]
    prompt_tokens: int
    dropped_notes: list[str]


def plan_prompt(backend: Backend, case: Case, summary: Summary, params: JudgeParams,
                examples: Sequence[FewShotExample]) -> PromptPlan:
    """Build the prompt and check it against the context window (refuse, or drop the oldest notes)."""
    budget = backend.n_ctx - params.resolved_max_tokens
    order = sorted(case.notes, key=lambda n: (n.date or "", case.notes.index(n)))  # oldest first
    kept = [n.note_id for n in case.notes]
    dropped: list[str] = []
    while True:
        msgs = build_messages(case, summary, params.explain, examples, note_ids=kept)
        prompt = backend.render(msgs)
        n = backend.count_tokens(prompt)
        if n <= budget:
            return PromptPlan(prompt, msgs, n, dropped)
        if not params.trim or len(kept) == 1:
            what = (f"even with only note {kept[0]} kept" if dropped else "with all notes")
            raise ContextTooLong(
                n + params.resolved_max_tokens, backend.n_ctx,
                f"the prompt needs {n} tokens {what} plus {params.resolved_max_tokens} for the reply = "
                f"{n + params.resolved_max_tokens}, but the context holds {backend.n_ctx}. Raise the context size "
                "in Settings, use fewer few-shot examples"
                + (", or allow trimming the oldest notes." if not params.trim else "."))
        oldest = next(x.note_id for x in order if x.note_id in kept)
        kept.remove(oldest)
        dropped.append(oldest)


def content_key(case: Case, summary: Summary, examples: Sequence[FewShotExample]) -> str:
    payload = {"specialty": case.target_specialty, "notes": [asdict(n) for n in case.notes], "summary": summary.text,
               "examples": [[e.summary.summary_id, e.summary.text, e.answer] for e in examples]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def cache_key(model_id: str, params: JudgeParams, n_ctx: int, case: Case, summary: Summary,
              examples: Sequence[FewShotExample]) -> str:
    payload = {"model": model_id, "prompt": PROMPT_VERSION, "params": asdict(params), "n_ctx": n_ctx,
               "max_tokens": params.resolved_max_tokens, "content": content_key(case, summary, examples)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------------------------- judge


@dataclass
class JudgeProgress:
    done: int  # summaries finished
    total: int
    summary_id: str
    sample: int  # samples finished for the current summary
    n_samples: int
    message: str = ""


class Cancelled(Exception):
    pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Judge:
    """Runs the PDSQI-9 judge with one backend. ``model_sha256`` identifies the model in cache keys."""

    def __init__(self, backend: Backend, model_sha256: Optional[str], params: JudgeParams = JudgeParams()):
        params.validate()
        self.backend = backend
        self.params = params
        self.model_sha256 = model_sha256
        d = backend.describe()
        self.model_id = model_sha256 or f"{d.get('backend')}:{d.get('endpoint', '')}:{d.get('model_file')}"

    def _provenance(self, examples, dropped) -> Provenance:
        d = self.backend.describe()
        return Provenance(backend=d.get("backend", "?"), model_file=d.get("model_file", "?"),
                          model_sha256=self.model_sha256, quantization=d.get("quantization", "unknown"),
                          backend_params={k: v for k, v in d.items() if k not in ("backend", "model_file",
                                                                                   "quantization")},
                          prompt_version=PROMPT_VERSION, params=asdict(self.params),
                          llama_cpp_python=d.get("llama_cpp_python"),
                          few_shot_examples=[e.summary.summary_id for e in examples], dropped_notes=list(dropped),
                          n_ctx=self.backend.n_ctx)

    def prepare(self, ds: Dataset, summary_id: str) -> tuple[Case, Summary, list[FewShotExample], str]:
        summary = ds.summary(summary_id)
        case = ds.case(summary.case_id)
        examples = select_examples(ds, summary, self.params.shots, self.params.seed, self.params.train_fraction)
        key = cache_key(self.model_id, self.params, self.backend.n_ctx, case, summary, examples)
        return case, summary, examples, key

    def judge(self, ds: Dataset, summary_id: str, should_stop: Callable[[], bool] = lambda: False,
              on_sample: Callable[[int], None] = lambda i: None, prepared=None) -> JudgeResult:
        """Judge one summary; ``prepared`` is :meth:`prepare`'s result when the caller already has it."""
        import time

        case, summary, examples, key = prepared or self.prepare(ds, summary_id)
        t_start = time.perf_counter()
        try:
            plan = plan_prompt(self.backend, case, summary, self.params, examples)
        except ContextTooLong as exc:
            return JudgeResult(summary_id, case.case_id, STATUS_REFUSED, str(exc), {}, [],
                               self._provenance(examples, []), Timing(), key, _now())
        schema = output_schema(self.params.explain)
        samples: list[SampleReply] = []
        timing = Timing(prompt_tokens=plan.prompt_tokens)
        expected: dict[str, tuple[float, float]] = {}
        for i in range(self.params.n_samples):
            if should_stop():
                raise Cancelled()
            temp = 0.0 if i == 0 else self.params.temperature
            seed = self.params.seed + i
            gen = self.backend.generate(plan.prompt, schema, self.params.resolved_max_tokens, temp, seed,
                                        want_logprobs=(i == 0))
            if i == 0:
                timing.prompt_seconds = gen.prompt_seconds
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
        timing.total_seconds = time.perf_counter() - t_start
        items = aggregate(samples)
        for k, (e, mass) in expected.items():
            items[k].expected, items[k].expected_mass = round(e, 4), round(mass, 4)
        good = [s for s in samples if s.ok]
        if good:
            status, reason = STATUS_SCORED, (f"{len(samples) - len(good)} of {len(samples)} samples unscored"
                                             if len(good) < len(samples) else "")
        else:
            status, reason = STATUS_UNSCORED, f"no sample could be scored; first reason: {samples[0].error}"
        if plan.dropped_notes:
            reason = (reason + "; " if reason else "") + f"oldest notes dropped to fit: {', '.join(plan.dropped_notes)}"
        return JudgeResult(summary_id, case.case_id, status, reason, items, samples,
                           self._provenance(examples, plan.dropped_notes), timing, key, _now())


def run_batch(judge: Judge, ds: Dataset, summary_ids: Sequence[str], store=None, dataset_name: Optional[str] = None,
              progress: Callable[[JudgeProgress], None] = lambda p: None,
              should_stop: Callable[[], bool] = lambda: False) -> Iterator[JudgeResult]:
    """Judge summaries in order, skipping those whose cache key is already stored (resume), storing each
    result as soon as it is finished. Stops cleanly between samples when ``should_stop()`` is true."""
    total = len(summary_ids)
    for done, sid in enumerate(summary_ids):
        if should_stop():
            return
        prepared = judge.prepare(ds, sid)
        key = prepared[3]
        if store is not None:
            cached = store.get_judge_result(dataset_name or ds.name, key)
            if cached is not None:
                res = JudgeResult.from_json(cached, from_cache=True)
                progress(JudgeProgress(done + 1, total, sid, judge.params.n_samples, judge.params.n_samples,
                                       "cached"))
                yield res
                continue
        progress(JudgeProgress(done, total, sid, 0, judge.params.n_samples, "judging"))
        try:
            res = judge.judge(ds, sid, should_stop, prepared=prepared,
                              on_sample=lambda i: progress(JudgeProgress(done, total, sid, i,
                                                                         judge.params.n_samples, "judging")))
        except Cancelled:
            return
        if store is not None:
            store.put_judge_result(dataset_name or ds.name, res)
        progress(JudgeProgress(done + 1, total, sid, judge.params.n_samples, judge.params.n_samples, res.status))
        yield res


def item_label(key: str) -> str:
    return get_item(key).label


def open_llama_backend(model_path: str = "", n_ctx: int = 8192, n_threads: int = 0, n_gpu_layers: int = 0,
                       store=None) -> tuple[Backend, str]:
    """Resolve the configured GGUF (empty = embedded model), load it, and return it with its sha256
    (hashed once per file version and remembered in the workspace)."""
    from .backends import LlamaCppBackend
    from .modelfiles import ModelError, describe_model, resolve_model_path, sha256_file

    try:
        path = resolve_model_path(model_path)
    except ModelError as exc:
        raise BackendError(str(exc)) from exc
    info = describe_model(path, with_hash=False)
    if info.embedded:
        from .modelfiles import embedded_sha256

        digest = embedded_sha256() or sha256_file(path)
    elif store is not None:
        digest = store.cached_model_hash(path, sha256_file)
    else:
        digest = sha256_file(path)
    return LlamaCppBackend(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers), digest


def export_results(store, dataset: str) -> list[str]:
    """The dataset's latest judge result per summary, as JSON lines (full provenance and raw outputs)."""
    return store.judge_results(dataset)


def import_results(store, dataset: str, lines: Sequence[str]) -> tuple[int, list[str]]:
    """Store exported judge results into ``dataset``. Results made with another prompt version, or for summaries
    the dataset does not have, are skipped with a reason; returns (imported, skipped reasons)."""
    ds_ids = {s.summary_id for s in store.load_dataset(dataset).summaries}
    n, skipped = 0, []
    for k, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            r = JudgeResult.from_json(line, from_cache=True)
        except (ValueError, KeyError, TypeError) as exc:
            skipped.append(f"line {k}: not a judge result ({exc})")
            continue
        if r.provenance.prompt_version != PROMPT_VERSION:
            skipped.append(f"line {k} ({r.summary_id}): prompt version {r.provenance.prompt_version} is not the "
                           f"current {PROMPT_VERSION}; re-run the judge")
            continue
        if r.summary_id not in ds_ids:
            skipped.append(f"line {k}: summary {r.summary_id!r} is not in dataset {dataset!r}")
            continue
        store.put_judge_result(dataset, r)
        n += 1
    return n, skipped
