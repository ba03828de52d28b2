"""Typed judge results and how a reply becomes scores: parameters, samples, per-item scores (median and
expected score), provenance, timing; parsing a reply and aggregating samples.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from engine.core import ITEMS, Scale, get_item
from engine.judge.prompt import DEFAULT_CITATION_FORM
from engine.llm import Generation

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
