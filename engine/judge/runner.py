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

import hashlib
import json
import math
import random
import statistics
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Callable, Iterator, Optional, Sequence

from engine.core.stamps import json_key, now_iso
from engine.llm.backends import Backend, BackendError, Generation
from engine.core.jobs import CACHED_COUNT, Cancelled, Job, check_cancelled
from engine.judge.prompt import DEFAULT_CITATION_FORM, PROMPT_VERSION, FewShotExample, build_messages, output_schema
from engine.core.models import Case, Dataset, Note, Summary
from engine.data.ratings import medians
from engine.core.rubric import ITEMS, Scale, get_item

STATUS_SCORED, STATUS_UNSCORED, STATUS_REFUSED = "scored", "unscored", "refused"


class ContextTooLong(Exception):
    def __init__(self, needed: int, available: int, detail: str):
        self.needed, self.available = needed, available
        super().__init__(detail)


@dataclass(frozen=True)
class JudgeParams:
    # one greedy pass: it already yields the expected scores (the primary number); more samples only when asked
    n_samples: int = 1
    temperature: float = 0.7  # for samples 1..N-1; sample 0 is greedy
    shots: int = 0  # few-shot examples: 0, 1, 3 or 5
    explain: bool = False
    seed: int = 1234
    trim: bool = False  # drop the oldest notes when the prompt does not fit (else refuse)
    max_tokens: int = 0  # 0 = automatic (enough for the schema)
    train_fraction: float = 0.3
    # stop sampling once no further sample could change any item's median (engine.judge.consistency): the medians are
    # those of all n_samples by construction, so this is not part of the cache key
    early_stop: bool = True

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


def primary_score(item_key: str, score: Optional["ItemScore"]) -> Optional[float]:
    """The judge's main number for one item, used for ranking, triage, charts, calibration and agreement.

    1-5 items: the **expected score** (probability-weighted over the levels the grammar allows, from the greedy
    sample), which moves with the model's confidence where the median of a small model hardly moves at all; the
    median when no expected score could be read (a server without log-probs, a split value token). Yes/no items:
    the median answer (1.0 / 0.0), so that chance-corrected agreement (κ) stays defined. None: NA or not scored."""
    if score is None or score.is_na:
        return None
    item = get_item(item_key)
    if item.is_likert and score.expected is not None:
        return float(score.expected)
    return score.median


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
    citation_form: str = DEFAULT_CITATION_FORM  # how the prompt said the summaries cite notes


@dataclass
class Timing:
    prompt_tokens: int = 0
    decode_tokens: int = 0
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    total_seconds: float = 0.0
    prompt_new_tokens: Optional[int] = None  # of prompt_tokens, those read now (the rest reused); None: unknown

    @property
    def prompt_tps(self) -> Optional[float]:
        """Prompt tokens read per second (the tokens actually read, when the backend says which)."""
        n = self.prompt_new_tokens if self.prompt_new_tokens is not None else self.prompt_tokens
        return n / self.prompt_seconds if self.prompt_seconds > 0 and n > 0 else None

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

    @property
    def samples_taken(self) -> int:
        return len(self.samples)

    @property
    def stopped_early(self) -> bool:
        """True when sampling stopped before n_samples because every median was already decided."""
        n = self.provenance.params.get("n_samples") if isinstance(self.provenance.params, dict) else None
        return self.status != STATUS_REFUSED and isinstance(n, int) and 0 < len(self.samples) < n


@dataclass
class PartialResult:
    """The judge's view of one summary after each sample (for showing the greedy sample's grades at once and
    refining them): per-item medians over the samples so far, the greedy sample's expected scores, and which
    items' medians are already those of the full run."""

    summary_id: str
    case_id: str
    taken: int  # samples finished so far
    n_samples: int  # samples asked for
    items: dict[str, ItemScore]
    decided: dict[str, bool]  # item -> its median can no longer change (engine.judge.consistency)
    final: bool  # no further sample will be taken for this summary
    sample: SampleReply  # the sample that just finished

    @property
    def all_decided(self) -> bool:
        return all(self.decided.values())


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
                examples: Sequence[FewShotExample], citation_form: str = DEFAULT_CITATION_FORM) -> PromptPlan:
    """Build the prompt and check it against the context window (refuse, or drop the oldest notes).
    ``citation_form``: how the dataset's summaries cite notes (:func:`dataset_citation_form`)."""
    budget = backend.n_ctx - params.resolved_max_tokens
    order = sorted(case.notes, key=lambda n: (n.date or "", case.notes.index(n)))  # oldest first
    kept = [n.note_id for n in case.notes]
    dropped: list[str] = []
    while True:
        msgs = build_messages(case, summary, params.explain, examples, note_ids=kept, citation_form=citation_form)
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
    return json_key({"specialty": case.target_specialty, "notes": [asdict(n) for n in case.notes],
                     "summary": summary.text,
                     "examples": [[e.summary.summary_id, e.summary.text, e.answer] for e in examples]})


# Parameters that never change a result's medians (exact early stopping) stay out of the cache key, so results
# computed with and without them are the same work.
_KEY_EXCLUDED_PARAMS = ("early_stop",)


def cache_key(model_id: str, params: JudgeParams, n_ctx: int, case: Case, summary: Summary,
              examples: Sequence[FewShotExample], citation_form: str = DEFAULT_CITATION_FORM) -> str:
    key_params = {k: v for k, v in asdict(params).items() if k not in _KEY_EXCLUDED_PARAMS}
    payload = {"model": model_id, "prompt": PROMPT_VERSION, "params": key_params, "n_ctx": n_ctx,
               "max_tokens": params.resolved_max_tokens, "content": content_key(case, summary, examples)}
    if citation_form != DEFAULT_CITATION_FORM:  # the prompt names the dataset's citation form (default: unchanged)
        payload["citation_form"] = citation_form
    return json_key(payload)


def dataset_citation_form(ds: Dataset) -> str:
    """How ``ds``'s summaries cite notes, with n for the id (e.g. ``<Note ID:n>``), for the judge prompt."""
    from engine.core.citations import detect_style

    return detect_style([s.text for s in ds.summaries], [n.note_id for c in ds.cases for n in c.notes]).written


def injection_findings(case: Case, summary: Summary, note_ids: Optional[Sequence[str]] = None,
                       examples: Sequence[FewShotExample] = ()) -> Optional[str]:
    """One line naming where text addressed to an AI grader (:mod:`engine.llm.injection`) sits in what goes into the
    prompt — the target specialty, each kept note (text and metadata), the summary, a few-shot example — or None."""
    from engine.llm.injection import describe, scan

    def note_texts(c: Case, ids: Optional[Sequence[str]]) -> list[tuple[str, list[str]]]:
        keep = None if ids is None else set(ids)
        return [(f"note {n.note_id}", [n.text, n.date or "", n.note_type or "", n.author_specialty or ""])
                for n in c.notes if keep is None or n.note_id in keep]

    places = [("target specialty", [case.target_specialty]), *note_texts(case, note_ids), ("summary", [summary.text])]
    for ex in examples:  # an example's texts are in the prompt as well; name the example, not its parts
        places.append((f"few-shot example {ex.summary.summary_id}",
                       [ex.case.target_specialty, ex.summary.text]
                       + [t for _, texts in note_texts(ex.case, None) for t in texts]))
    found, where = [], []
    for label, texts in places:
        signals = [x for t in texts if t for x in scan(t)]
        if signals:
            found.extend(signals)
            where.append(label)
    if not found:
        return None
    shown = ", ".join(where[:12]) + (f" and {len(where) - 12} more" if len(where) > 12 else "")
    return f"{describe(found)} (in {shown[:600]})"


# --------------------------------------------------------------------------------------------- judge


@dataclass
class JudgeProgress:
    done: int  # summaries finished
    total: int
    summary_id: str
    sample: int  # samples finished for the current summary
    n_samples: int
    message: str = ""




# Two stand-in cases that differ in every field. Their prompts share exactly what every judge prompt shares — the
# system turn with the rubric and the constant start of the user turn, up to the fence code — which a backend that
# can keep evaluated state (LlamaCppBackend.use_shared_prefix) evaluates once and keeps, across cases and processes.
_PREFIX_PROBES = (
    (Case("probe-a", "Cardiology", (Note("1", "Alpha."),)), Summary("probe-a", "probe-a", "Alpha.")),
    (Case("probe-b", "Neurology", (Note("2", "Beta."),)), Summary("probe-b", "probe-b", "Beta.")),
)
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
        """Tell a backend that keeps evaluated state which prompt prefix every judge prompt shares (once)."""
        if self._prefix_declared:
            return
        self._prefix_declared = True
        if not self.backend.capabilities.saved_prefix:
            return
        prompts = [self.backend.render(build_messages(c, s, self.params.explain)) for c, s in _PREFIX_PROBES]
        self.backend.use_shared_prefix(prompts, f"{self.model_sha256}|{PROMPT_VERSION}" if self.model_sha256 else None)

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
              concurrency: int = 1) -> Iterator[JudgeResult]:
    """Judge summaries, skipping those whose cache key is already stored (resume), storing each result as soon as
    it is finished, and yielding the results in ``summary_ids`` order. Stops cleanly between samples when
    ``should_stop()`` is true.

    ``concurrency`` > 1 keeps up to that many summaries in flight (at most :data:`MAX_IN_FLIGHT`) when the backend
    can serve requests at once (``backend.capabilities.concurrent``, an OpenAI-compatible server); in process llama.cpp
    runs one at a time whatever is asked. Either way ``progress``, ``on_partial`` and ``should_stop`` are called
    from the caller's thread only, and the output order is ``summary_ids``'. On cancel no further summary starts
    and the ones in flight stop after their current sample (finished ones are stored)."""
    n = max(1, min(int(concurrency), MAX_IN_FLIGHT))
    if n > 1 and len(summary_ids) > 1 and judge.backend.capabilities.concurrent:
        yield from _run_concurrent(judge, ds, list(summary_ids), store, dataset_name or ds.name, progress,
                                   should_stop, on_partial, n)
        return
    total = len(summary_ids)
    for done, sid in enumerate(summary_ids):
        if should_stop():
            return
        prepared = judge.prepare(ds, sid)
        key = prepared[3]
        if store is not None:
            cached = store.get_judge_result(dataset_name or ds.name, key, sid, prepared[0].case_id)
            if cached is not None:
                res = JudgeResult.from_json(cached, from_cache=True)
                progress(JudgeProgress(done + 1, total, sid, len(res.samples), judge.params.n_samples, "cached"))
                yield res
                continue
        progress(JudgeProgress(done, total, sid, 0, judge.params.n_samples, "judging"))
        try:
            res = judge.judge(ds, sid, should_stop, prepared=prepared, on_partial=on_partial,
                              on_sample=lambda i: progress(JudgeProgress(done, total, sid, i,
                                                                         judge.params.n_samples, "judging")))
        except Cancelled:
            return
        if store is not None:
            store.put_judge_result(dataset_name or ds.name, res)
        progress(JudgeProgress(done + 1, total, sid, len(res.samples), judge.params.n_samples, res.status))
        yield res


def judge_job(judge: Judge, ds: Dataset, summary_ids: Sequence[str], store=None,
              dataset_name: Optional[str] = None, concurrency: int = 1) -> Job:
    """:func:`run_batch` as a background :class:`~engine.core.jobs.Job` (not started): one step per sample, results
    in ``job.results`` as they finish, the newest :class:`PartialResult` in ``job.latest``. Its cancel stops the
    in-process model within the current call (a server: after the request in flight); finished summaries are
    stored, and counted as "new", "from the workspace" or "unscored"."""
    def work(job: Job) -> None:
        def progress(p: JudgeProgress) -> None:
            if p.message == "judging":
                job.report(done=p.done, item=p.summary_id, step=f"sample {min(p.sample + 1, p.n_samples)}",
                           step_index=p.sample)
            else:
                job.report(done=p.done, item=p.summary_id, step=p.message, cached=p.message == "cached")

        def on_partial(partial: PartialResult) -> None:
            job.latest = partial

        _plan_job(job, judge, ds, summary_ids, store, dataset_name or ds.name)
        for res in run_batch(judge, ds, summary_ids, store=store, dataset_name=dataset_name, progress=progress,
                             should_stop=job.should_stop, on_partial=on_partial, concurrency=concurrency):
            job.results.append(res)
            job.count(CACHED_COUNT if res.from_cache else
                      "new" if res.status == STATUS_SCORED else res.status)

    return Job("Judge", len(summary_ids), work, n_steps=judge.params.n_samples)


def _plan_job(job: Job, judge: Judge, ds: Dataset, summary_ids: Sequence[str], store, name: str) -> None:
    """Give ``job`` its plan (:mod:`engine.core.run_plan`) when the backend tokenizes in process (llama.cpp): each
    summary's prompt tokens, none for one already stored, and this model's speeds measured on the workspace's
    results. A server gets no plan (counting would cost a request per summary): its estimate extrapolates."""
    from engine.core.run_plan import measured_speeds, work_tokens

    caps = judge.backend.capabilities
    if not caps.tokenizer:
        return
    prompts: list = []
    for sid in summary_ids:
        check_cancelled()
        case, summary, examples, key = judge.prepare(ds, sid)
        if store is not None and store.get_judge_result(name, key, sid, case.case_id) is not None:
            prompts.append(None)
            continue
        try:
            plan = plan_prompt(judge.backend, case, summary, judge.params, examples, judge.citation_form(ds))
        except ContextTooLong:
            prompts.append(None)  # refused at once: no work
            continue
        prompts.append(judge.backend.tokenize(plan.prompt))
    stored = [JudgeResult.from_json(x) for x in store.judge_results(name, latest_only=False)] if store else []
    speeds = measured_speeds(stored, judge.model_sha256)
    job.plan(work_tokens(prompts, judge.params.n_samples, speeds, caps.reuse_batch),
             speeds.prompt_tps if speeds else None, speeds.decode_weight if speeds else 5.0)


def _run_concurrent(judge: Judge, ds: Dataset, ids: list[str], store, name: str,
                    progress: Callable[[JudgeProgress], None], should_stop: Callable[[], bool],
                    on_partial: Optional[Callable[[PartialResult], None]], n: int) -> Iterator[JudgeResult]:
    """:func:`run_batch` with up to ``n`` summaries in flight on worker threads. Workers judge and store; every
    callback runs here, in the caller's thread, from the events the workers post."""
    import queue
    import threading
    from concurrent.futures import ThreadPoolExecutor

    total, n_samples = len(ids), judge.params.n_samples
    events: "queue.SimpleQueue[tuple]" = queue.SimpleQueue()
    abort = threading.Event()  # cancel: workers stop between samples

    def work(idx: int, sid: str, prepared) -> None:
        try:
            res = judge.judge(ds, sid, abort.is_set, prepared=prepared,
                              on_sample=lambda i: events.put(("sample", idx, i)),
                              on_partial=(lambda p: events.put(("partial", idx, p))) if on_partial else None)
            if store is not None:
                store.put_judge_result(name, res)
        except Cancelled:
            events.put(("cancelled", idx, None))
        except BaseException as exc:  # handed to the caller's thread, raised there in order
            events.put(("error", idx, exc))
        else:
            events.put(("done", idx, res))

    finished: dict[int, Optional[JudgeResult]] = {}  # index -> result (None: cancelled)
    errors: dict[int, BaseException] = {}
    next_submit = next_yield = in_flight = done = 0
    stopping = failed = False
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="sumcheck-judge")
    clean = False
    try:
        while next_yield < total:
            while in_flight < n and next_submit < total and not (stopping or failed):
                if should_stop():
                    stopping = True
                    abort.set()
                    break
                idx, sid = next_submit, ids[next_submit]
                next_submit += 1
                prepared = judge.prepare(ds, sid)
                cached = (store.get_judge_result(name, prepared[3], sid, prepared[0].case_id) if store is not None
                          else None)
                if cached is not None:
                    res = JudgeResult.from_json(cached, from_cache=True)
                    finished[idx] = res
                    done += 1
                    progress(JudgeProgress(done, total, sid, len(res.samples), n_samples, "cached"))
                    continue
                progress(JudgeProgress(done, total, sid, 0, n_samples, "judging"))
                pool.submit(work, idx, sid, prepared)
                in_flight += 1
            while next_yield < total and (next_yield in finished or next_yield in errors):
                if next_yield in errors:
                    raise errors.pop(next_yield)
                res = finished.pop(next_yield)
                next_yield += 1
                if res is not None:
                    yield res
            if next_yield >= total:
                break
            if in_flight == 0 and (stopping or failed or next_submit >= total):
                break  # nothing in flight and nothing more will start
            try:
                kind, idx, payload = events.get(timeout=0.1)
            except queue.Empty:
                if not stopping and should_stop():
                    stopping = True
                    abort.set()
                continue
            sid = ids[idx]
            if kind == "sample":
                progress(JudgeProgress(done, total, sid, payload, n_samples, "judging"))
            elif kind == "partial":
                on_partial(payload)
            else:
                in_flight -= 1
                if kind == "done":
                    finished[idx] = payload
                    done += 1
                    progress(JudgeProgress(done, total, sid, len(payload.samples), n_samples, payload.status))
                elif kind == "cancelled":
                    finished[idx] = None
                else:
                    errors[idx] = payload
                    failed = True  # no new summary starts; those in flight finish
            if not stopping and should_stop():
                stopping = True
                abort.set()
        clean = True
    finally:
        if not clean:
            abort.set()  # the caller stopped iterating or a callback raised: in-flight work stops between samples
        pool.shutdown(wait=clean, cancel_futures=True)


def item_label(key: str) -> str:
    return get_item(key).label


def open_llama_backend(model_path: str = "", n_ctx: int = 8192, n_threads: int = 0, n_gpu_layers: int = -1,
                       store=None, embedded_key: str = "") -> tuple[Backend, str]:
    """Resolve the configured GGUF (empty = the embedded model ``embedded_key``, by default the 1.5B judge), load it,
    and return it with its sha256 (hashed once per file version and remembered in the workspace)."""
    from engine.llm.backends import LlamaCppBackend
    from engine.llm.modelfiles import ModelError, describe_model, resolve_model_path, sha256_file

    try:
        path = resolve_model_path(model_path, embedded_key)
    except ModelError as exc:
        raise BackendError(str(exc)) from exc
    info = describe_model(path, with_hash=False)
    if info.embedded:
        from engine.llm.modelfiles import embedded_sha256

        digest = embedded_sha256(info.embedded_key) or sha256_file(path)
    elif store is not None:
        digest = store.cached_model_hash(path, sha256_file)
    else:
        digest = sha256_file(path)
    return LlamaCppBackend(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers), digest


def export_results(store, dataset: str) -> list[str]:
    """The dataset's latest judge result per summary, as JSON lines (full provenance and raw outputs)."""
    return store.judge_results(dataset)


# --------------------------------------------------------------------------------------------- import
# A judge-results file is input like any other: nothing in it is trusted. Every line must be one JSON object
# (no duplicate keys, bounded nesting) whose every field has its type and range; medians must be the medians
# of the samples, every scored sample's values must be what its raw reply says, the summary must be in the
# dataset with exactly the content the result was computed on (its cache key is recomputed from the result's own
# provenance), and the prompt version must be the current one. All or nothing: one bad line, nothing written.

import re as _re  # noqa: E402  (this section's own imports)
from pathlib import Path as _Path  # noqa: E402

from engine.data.loading import JsonProblem, loads_strict, read_text_file, split_lines  # noqa: E402
from engine.data.loading import json_type as _jtype  # noqa: E402 - one namer of JSON value types for every report
from engine.data.validation import DatasetInvalid, Issue, ValidationReport  # noqa: E402

MAX_IMPORT_TEXT_CHARS = 4_000  # reason, a sample's error or warning
MAX_IMPORT_EXPLANATION_CHARS = 2_000  # one item's explanation (the prompt asks for 160)
MAX_IMPORT_RAW_CHARS = 100_000  # one sample's raw reply
_HEX64 = _re.compile(r"[0-9a-f]{64}")
_BAD = object()  # a field that failed its check (the issue is in the report)
_ITEM_KEYS_SET = frozenset(i.key for i in ITEMS)


@dataclass(frozen=True)
class JudgeImportResult:
    imported: int  # results written (a result with a cache key already stored replaces it: same content)
    report: ValidationReport


def _dc_keys(cls) -> tuple[set[str], set[str]]:
    """(required, allowed) keys of a dataclass as written by ``asdict``."""
    from dataclasses import MISSING, fields

    allowed = {f.name for f in fields(cls)} - {"from_cache"}
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return required & allowed, allowed


class _LineCheck:
    """Type and range checks for one line; every failure is an issue naming the line and the field."""

    def __init__(self, report, source: str, row: int, line: int):
        self.report, self.source, self.row, self.line = report, source, row, line
        self.errors = 0

    def bad(self, fld: Optional[str], message: str, hint: str = "") -> object:
        self.report.add(Issue(self.source, message, row=self.row, line=self.line, field=fld,
                              hint=hint or "export the results again with 'judge-export'; do not edit them"))
        self.errors += 1
        return _BAD

    def obj(self, v: object, fld: Optional[str], cls, what: str) -> object:
        if not isinstance(v, dict):
            return self.bad(fld, f"{what} must be a JSON object, not {_jtype(v)}")
        required, allowed = _dc_keys(cls)
        missing = sorted(required - set(v))
        unknown = sorted(set(v) - allowed)
        if missing:
            return self.bad(fld, f"{what} lacks key(s) {', '.join(missing)}")
        if unknown:
            return self.bad(fld, f"{what} has unknown key(s) {', '.join(repr(k[:40]) for k in unknown[:5])}")
        return v

    def text(self, v: object, fld: str, cap: int, optional: bool = False) -> object:
        if v is None and optional:
            return None
        if not isinstance(v, str):
            return self.bad(fld, f"must be text, not {_jtype(v)}")
        if len(v) > cap:
            return self.bad(fld, f"is {len(v):,} characters long; at most {cap:,} are accepted")
        return v

    def integer(self, v: object, fld: str, lo: int, hi: int) -> object:
        if isinstance(v, bool) or not isinstance(v, int):
            return self.bad(fld, f"must be a whole number, not {_jtype(v)}")
        if not lo <= v <= hi:
            return self.bad(fld, f"{v if abs(v) < 10 ** 12 else 'the number'} is outside {lo}..{hi}")
        return v

    def number(self, v: object, fld: str, lo: float, hi: float, optional: bool = False) -> object:
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return self.bad(fld, f"must be a number, not {_jtype(v)}")
        if not (math.isfinite(v) and lo <= v <= hi):
            return self.bad(fld, f"{v!r} is outside {lo:g}..{hi:g}" if math.isfinite(v) else
                            f"{v!r} is not a finite number")
        return float(v)

    def boolean(self, v: object, fld: str) -> object:
        if not isinstance(v, bool):
            return self.bad(fld, f"must be true or false, not {_jtype(v)}")
        return v

    def text_list(self, v: object, fld: str, cap: int, max_len: int) -> object:
        if not isinstance(v, list):
            return self.bad(fld, f"must be a list of text, not {_jtype(v)}")
        if len(v) > max_len:
            return self.bad(fld, f"has {len(v):,} entries; at most {max_len} are accepted")
        out = [self.text(x, f"{fld}[{i}]", cap) for i, x in enumerate(v)]
        return _BAD if _BAD in out else out

    def score(self, item, v: object, fld: str, allow_na: bool, median: bool = False) -> object:
        """A value on the item's scale (None = NA where allowed); a median may fall half-way between levels."""
        if v is None:
            return None if allow_na else self.bad(fld, f"{item.label}: NA (null) is not allowed here")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return self.bad(fld, f"{item.label}: {_jtype(v) if not isinstance(v, float) else repr(v)} is not a "
                                 "score")
        lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
        step = 0.5 if median else 1.0
        if not lo <= v <= hi or (v / step) != int(v / step):
            return self.bad(fld, f"{item.label}: {v!r} is outside the scale ({'0/1' if lo == 0 else '1-5'}"
                                 + (", in steps of 0.5 for a median" if median else "") + ")")
        return float(v)


class _ImportContext:
    """The target dataset, indexed once (an import of N results stays linear in N)."""

    def __init__(self, ds: Dataset):
        self.ds = ds
        self.summaries = {s.summary_id: s for s in ds.summaries}
        self.cases = {c.case_id: c for c in ds.cases}
        self.ratings: dict[str, list] = {}
        for r in ds.ratings:
            self.ratings.setdefault(r.summary_id, []).append(r)
        self._answers: dict[str, Optional[dict]] = {}
        self._citation_form: Optional[str] = None

    @property
    def citation_form(self) -> str:
        """The dataset's citation form as the judge puts it in the prompt (part of a non-default cache key)."""
        if self._citation_form is None:
            self._citation_form = dataset_citation_form(self.ds)
        return self._citation_form

    def answer(self, summary_id: str) -> Optional[dict]:
        if summary_id not in self._answers:
            sub = Dataset(self.ds.name, ratings=self.ratings.get(summary_id, []))
            self._answers[summary_id] = example_answer(sub, summary_id)
        return self._answers[summary_id]


_OPTIONAL_PARAMS = ("early_stop",)  # JudgeParams fields newer than some exported results (never in the cache key)


def _check_params(chk: _LineCheck, v: object) -> object:
    if not isinstance(v, dict):
        return chk.bad("provenance.params", f"must be a JSON object, not {_jtype(v)}")
    from dataclasses import fields

    names = [f.name for f in fields(JudgeParams)]
    missing = [k for k in names if k not in v and k not in _OPTIONAL_PARAMS]  # results written before they existed
    unknown = [k for k in v if k not in names]
    if missing or unknown:
        return chk.bad("provenance.params", (f"lacks {', '.join(missing)}" if missing else "")
                       + ("; " if missing and unknown else "")
                       + (f"has unknown key(s) {', '.join(repr(k[:40]) for k in unknown[:5])}" if unknown else ""))
    f = "provenance.params."
    got = {
        "n_samples": chk.integer(v["n_samples"], f + "n_samples", 1, 50),
        "temperature": chk.number(v["temperature"], f + "temperature", 0.0, 2.0),
        "shots": chk.integer(v["shots"], f + "shots", 0, 5),
        "explain": chk.boolean(v["explain"], f + "explain"),
        "seed": chk.integer(v["seed"], f + "seed", -(2 ** 63), 2 ** 63 - 1),
        "trim": chk.boolean(v["trim"], f + "trim"),
        "max_tokens": chk.integer(v["max_tokens"], f + "max_tokens", 0, 1_000_000),
        "train_fraction": chk.number(v["train_fraction"], f + "train_fraction", 0.0, 1.0),
    }
    if "early_stop" in v:
        got["early_stop"] = chk.boolean(v["early_stop"], f + "early_stop")
    if _BAD in got.values():
        return _BAD
    # the cache key hashes the parameters exactly as written: keep the JSON numbers' own types
    params = JudgeParams(**{k: v[k] for k in names if k in v})
    try:
        params.validate()
    except ValueError as exc:
        return chk.bad("provenance.params", str(exc))
    return params


def _check_sample(chk: _LineCheck, v: object, i: int, params: JudgeParams) -> object:
    fld = f"samples[{i}]"
    d = chk.obj(v, fld, SampleReply, f"sample {i}")
    if d is _BAD:
        return _BAD
    errors = chk.errors
    chk.integer(d["index"], fld + ".index", i, i)
    temp = chk.number(d["temperature"], fld + ".temperature", 0.0, 2.0)
    expected_temp = 0.0 if i == 0 else params.temperature
    if temp is not _BAD and temp != expected_temp:
        chk.bad(fld + ".temperature", f"sample {i} ran at temperature {temp:g}, but the parameters say "
                                      f"{expected_temp:g}")
    seed = chk.integer(d["seed"], fld + ".seed", -(2 ** 63), 2 ** 63 - 1)
    if seed is not _BAD and seed != params.seed + i:
        chk.bad(fld + ".seed", f"sample {i} has seed {seed}, but the parameters give {params.seed + i}")
    raw = chk.text(d["raw"], fld + ".raw", MAX_IMPORT_RAW_CHARS)
    error = chk.text(d.get("error"), fld + ".error", MAX_IMPORT_TEXT_CHARS, optional=True)
    warnings = chk.text_list(d.get("warnings", []), fld + ".warnings", MAX_IMPORT_TEXT_CHARS, 20)
    chk.integer(d.get("completion_tokens", 0), fld + ".completion_tokens", 0, 10 ** 9)
    chk.number(d.get("decode_seconds", 0.0), fld + ".decode_seconds", 0.0, 1e7)
    values_in = d.get("values", {})
    values: dict[str, Optional[float]] = {}
    if not isinstance(values_in, dict):
        chk.bad(fld + ".values", f"must be an object {{item: value}}, not {_jtype(values_in)}")
    else:
        for k, x in values_in.items():
            try:
                item = get_item(k)
            except KeyError:
                chk.bad(fld + ".values", f"unknown PDSQI-9 item {k[:40]!r}")
                continue
            val = chk.score(item, x, f"{fld}.values.{k}", item.allows_na)
            if val is not _BAD:
                values[k] = val
    expl_in = d.get("explanations", {})
    explanations: dict[str, str] = {}
    if not isinstance(expl_in, dict):
        chk.bad(fld + ".explanations", f"must be an object {{item: text}}, not {_jtype(expl_in)}")
    else:
        for k, x in expl_in.items():
            if k not in _ITEM_KEYS_SET:
                chk.bad(fld + ".explanations", f"unknown PDSQI-9 item {k[:40]!r}")
                continue
            t = chk.text(x, f"{fld}.explanations.{k}", MAX_IMPORT_EXPLANATION_CHARS)
            if t is not _BAD:
                explanations[k] = t
    if chk.errors > errors:
        return _BAD
    sample = SampleReply(i, temp, seed, raw, values, explanations, error, warnings,
                         d.get("completion_tokens", 0), float(d.get("decode_seconds", 0.0)))
    if error is None:
        # a scored sample's values are exactly what its raw reply says (parse_reply is the judge's own parser)
        try:
            parsed, notes, warns = parse_reply(raw, params.explain)
        except ValueError as exc:
            return chk.bad(fld + ".raw", f"sample {i} is marked scored but its raw reply does not parse: {exc}")
        if parsed != values or notes != explanations or warns != warnings:
            which = ("values" if parsed != values else "explanations" if notes != explanations else "warnings")
            return chk.bad(fld + "." + which, f"sample {i}'s {which} are not what its raw reply says")
    elif values or explanations:
        return chk.bad(fld + ".values", f"sample {i} is unscored ({error[:80]}) but carries values")
    return sample


def _stopped_early(samples: Sequence[SampleReply], n_samples: int) -> bool:
    """Fewer samples than asked for is genuine only when the medians were already decided (exact early stop)."""
    from engine.judge.consistency import all_fixed

    return 0 < len(samples) < n_samples and all_fixed([x.values for x in samples if x.ok], len(samples), n_samples)


def _check_result(chk: _LineCheck, obj: object, ctx: _ImportContext, dataset: str) -> object:
    d = chk.obj(obj, None, JudgeResult, "a judge result")
    if d is _BAD:
        return _BAD
    sid = chk.text(d["summary_id"], "summary_id", 200)
    cid = chk.text(d["case_id"], "case_id", 200)
    status = chk.text(d["status"], "status", 20)
    if status is not _BAD and status not in (STATUS_SCORED, STATUS_UNSCORED, STATUS_REFUSED):
        status = chk.bad("status", f"status {status!r} is not one of scored, unscored, refused")
    reason = chk.text(d["reason"], "reason", MAX_IMPORT_TEXT_CHARS)
    cache = chk.text(d["cache_key"], "cache_key", 64)
    if cache is not _BAD and not _HEX64.fullmatch(cache):
        cache = chk.bad("cache_key", "the cache key is not a 64-digit lowercase hex sha256")
    created = chk.text(d["created_at"], "created_at", 64)
    if created is not _BAD:
        try:
            datetime.fromisoformat(created)
        except ValueError:
            created = chk.bad("created_at", f"{created!r} is not an ISO 8601 date and time")
    summary = case = None
    if sid is not _BAD:
        summary = ctx.summaries.get(sid)
        if summary is None:
            chk.bad("summary_id", f"summary {sid[:80]!r} is not in dataset {dataset!r}",
                    hint="import the results into the dataset they were made for")
        elif cid is not _BAD and cid != summary.case_id:
            chk.bad("case_id", f"summary {sid!r} belongs to case {summary.case_id!r}, not {cid[:80]!r}")
        else:
            case = ctx.cases.get(summary.case_id)
    t = chk.obj(d["timing"], "timing", Timing, "timing")
    if t is not _BAD:
        for k in ("prompt_tokens", "decode_tokens"):
            if k in t:
                chk.integer(t[k], f"timing.{k}", 0, 10 ** 12)
        if t.get("prompt_new_tokens") is not None:
            chk.integer(t["prompt_new_tokens"], "timing.prompt_new_tokens", 0, 10 ** 12)
        for k in ("prompt_seconds", "decode_seconds", "total_seconds"):
            if k in t:
                chk.number(t[k], f"timing.{k}", 0.0, 1e9)
    p = chk.obj(d["provenance"], "provenance", Provenance, "provenance")
    params = _BAD
    if p is not _BAD:
        pv = chk.text(p["prompt_version"], "provenance.prompt_version", 200)
        if pv is not _BAD and pv != PROMPT_VERSION:
            chk.bad("provenance.prompt_version", f"prompt version {pv[:80]} is not the current {PROMPT_VERSION}",
                    hint="re-run the judge with this program (results of another prompt are not comparable)")
        chk.text(p["backend"], "provenance.backend", 100)
        chk.text(p["model_file"], "provenance.model_file", 1000)
        sha = chk.text(p["model_sha256"], "provenance.model_sha256", 64, optional=True)
        if sha not in (None, _BAD) and not _HEX64.fullmatch(sha):
            chk.bad("provenance.model_sha256", "the model hash is not a 64-digit lowercase hex sha256")
        chk.text(p["quantization"], "provenance.quantization", 100)
        if not isinstance(p["backend_params"], dict):
            chk.bad("provenance.backend_params", f"must be a JSON object, not {_jtype(p['backend_params'])}")
        chk.text(p["llama_cpp_python"], "provenance.llama_cpp_python", 100, optional=True)
        chk.integer(p["n_ctx"], "provenance.n_ctx", 1, 100_000_000)
        form = chk.text(p.get("citation_form", DEFAULT_CITATION_FORM), "provenance.citation_form", 100)
        if form not in (_BAD, ctx.citation_form):
            chk.bad("provenance.citation_form", f"the prompt said summaries cite notes as {form!r}, but this dataset's "
                                                f"summaries cite them as {ctx.citation_form!r}")
        params = _check_params(chk, p["params"])
        shots = chk.text_list(p["few_shot_examples"], "provenance.few_shot_examples", 200, 5)
        if shots is not _BAD:
            for i, x in enumerate(shots):
                if x not in ctx.summaries:
                    chk.bad(f"provenance.few_shot_examples[{i}]", f"few-shot example {x[:80]!r} is not a summary of "
                                                                  f"dataset {dataset!r}")
                elif summary is not None and ctx.summaries[x].case_id == summary.case_id:
                    chk.bad(f"provenance.few_shot_examples[{i}]", f"few-shot example {x!r} is from the judged case")
            if params is not _BAD and len(shots) != params.shots:
                chk.bad("provenance.few_shot_examples", f"{len(shots)} few-shot examples, but shots = {params.shots}")
        dropped = chk.text_list(p["dropped_notes"], "provenance.dropped_notes", 200, 100_000)
        if dropped is not _BAD and case is not None:
            ids = {n.note_id for n in case.notes}
            for i, x in enumerate(dropped):
                if x not in ids:
                    chk.bad(f"provenance.dropped_notes[{i}]", f"note {x[:80]!r} is not a note of case {case.case_id!r}")
    samples: list[SampleReply] = []
    if not isinstance(d["samples"], list):
        chk.bad("samples", f"must be a list, not {_jtype(d['samples'])}")
    elif params is not _BAD:
        if len(d["samples"]) > params.n_samples:
            chk.bad("samples", f"{len(d['samples'])} samples, but n_samples = {params.n_samples}")
        else:
            for i, x in enumerate(d["samples"]):
                smp = _check_sample(chk, x, i, params)
                if smp is not _BAD:
                    samples.append(smp)
    items_in = d["items"]
    if not isinstance(items_in, dict):
        chk.bad("items", f"must be an object {{item: score}}, not {_jtype(items_in)}")
    if chk.errors:
        return _BAD
    # consistency: status, samples, medians
    good = [x for x in samples if x.ok]
    if status == STATUS_REFUSED:
        if samples or items_in:
            return chk.bad("status", "a refused result has no samples and no item scores")
    else:
        if len(samples) != params.n_samples and not _stopped_early(samples, params.n_samples):
            return chk.bad("samples", f"{len(samples)} samples, but n_samples = {params.n_samples} (a run may stop "
                                      "early only once no further sample could change any median)")
        if len(samples) != params.n_samples and not params.early_stop:
            return chk.bad("samples", f"{len(samples)} samples, but n_samples = {params.n_samples} and early "
                                      "stopping was off")
        if (status == STATUS_SCORED) != bool(good):
            return chk.bad("status", f"status {status!r} but {len(good)} of {len(samples)} samples were scored")
        expected = aggregate(samples)
        if set(items_in) != _ITEM_KEYS_SET:
            return chk.bad("items", "items must hold exactly the PDSQI-9 items "
                                    f"({', '.join(i.key for i in ITEMS)})")
        for item in ITEMS:
            fld = f"items.{item.key}"
            v = chk.obj(items_in[item.key], fld, ItemScore, f"item {item.key}")
            if v is _BAD:
                continue
            exp = expected[item.key]
            if v["item"] != item.key:
                chk.bad(fld + ".item", f"names item {str(v['item'])[:40]!r}")
            med = chk.score(item, v["median"], fld + ".median", True, median=True)
            if med is not _BAD and med != exp.median:
                chk.bad(fld + ".median", f"median {med!r} is not the median of the samples ({exp.median!r})",
                        hint="the medians must come from the samples; export the results again")
            if v["is_na"] is not exp.is_na:
                chk.bad(fld + ".is_na", f"is_na {v['is_na']!r} does not match the samples ({exp.is_na!r})")
            if v["values"] != exp.values:
                chk.bad(fld + ".values", "the item's values are not the samples' values")
            if v["spread"] != exp.spread:
                chk.bad(fld + ".spread", f"spread {str(v['spread'])[:20]} does not match the samples ({exp.spread!r})")
            lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
            chk.number(v.get("expected"), fld + ".expected", lo, hi, optional=True)
            chk.number(v.get("expected_mass"), fld + ".expected_mass", 0.0, 1.0 + 1e-6, optional=True)
            expl = chk.text(v.get("explanation", ""), fld + ".explanation", MAX_IMPORT_EXPLANATION_CHARS)
            if expl is not _BAD and expl != exp.explanation:
                chk.bad(fld + ".explanation", "the explanation is not the samples' explanation")
        if chk.errors:
            return _BAD
    # content: the cache key recomputed from the result's own provenance and the dataset's content
    backend_params = p["backend_params"]
    model_id = p["model_sha256"] or f"{p['backend']}:{backend_params.get('endpoint', '')}:{p['model_file']}"
    examples = []
    for x in p["few_shot_examples"]:
        ans = ctx.answer(x)
        if ans is None:
            return chk.bad("provenance.few_shot_examples", f"few-shot example {x!r} has no complete human median "
                           f"in dataset {dataset!r}, so the result's content cannot be checked",
                           hint="import the results into the dataset (with its ratings) they were made with")
        ex_summary = ctx.summaries[x]
        examples.append(FewShotExample(ctx.cases[ex_summary.case_id], ex_summary, ans))
    if cache_key(model_id, params, p["n_ctx"], case, summary, examples, ctx.citation_form) != cache:
        return chk.bad("cache_key", f"the result does not belong to summary {sid!r} of dataset {dataset!r} as it "
                       "is now: its notes, summary text, specialty or few-shot examples differ from what was judged, "
                       "or the provenance was altered",
                       hint="re-run the judge on this dataset")
    return JudgeResult(sid, cid, status, reason, {k: ItemScore(**{**v, "median": (None if v["median"] is None
                                                                              else float(v["median"]))})
                                                  for k, v in items_in.items()},
                       samples, Provenance(**p), Timing(**d["timing"]), cache, created, from_cache=True)


def import_results(store, dataset: str, lines: Sequence[str], source: str = "judge results") -> JudgeImportResult:
    """Validate exported judge results (one JSON object per line) against ``dataset`` and store them, all or
    nothing. Raises :class:`~engine.data.validation.DatasetInvalid` with a report naming line and field of every
    problem (nothing is written then); :class:`~engine.data.store.StoreError` when the dataset does not exist."""
    ds = store.load_dataset(dataset)
    ctx = _ImportContext(ds)
    report = ValidationReport(files=[source], formats={source: "judge results (JSONL)"})
    results: list[JudgeResult] = []
    seen: dict[str, int] = {}
    number = 0
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        number += 1
        try:
            obj = loads_strict(line)
        except JsonProblem as exc:
            report.add(Issue(source, str(exc).replace(" at line 1 column", " at column"), row=number, line=lineno,
                             hint=exc.hint or "the line is cut off or malformed; export the results again"))
            continue
        chk = _LineCheck(report, source, number, lineno)
        r = _check_result(chk, obj, ctx, dataset)
        if r is _BAD:
            continue
        if r.cache_key in seen:
            chk.bad("cache_key", f"the same result (cache key) is also on line {seen[r.cache_key]}",
                    hint="keep one of them")
            continue
        seen[r.cache_key] = lineno
        results.append(r)
    if number == 0:
        report.add(Issue(source, "holds no judge results", hint="export them with 'python -m engine judge-export'"))
    report.counts = {"judge results": number}
    if not report.ok:
        raise DatasetInvalid(report)
    store.put_judge_results(dataset, results)
    return JudgeImportResult(len(results), report)


def import_results_file(store, dataset: str, path, max_file_mb: Optional[float] = None) -> JudgeImportResult:
    """:func:`import_results` for a file: only a regular file within the size limit is read."""
    path = _Path(path)
    report = ValidationReport(files=[str(path)])
    text = read_text_file(path, report, max_file_mb)
    if text is None:
        raise DatasetInvalid(report)
    return import_results(store, dataset, split_lines(text), source=str(path))
