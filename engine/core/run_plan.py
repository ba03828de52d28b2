"""How long a judge run will take: the work of each summary in tokens, and this model's measured speeds.

The work of a summary is the prompt tokens the model must read — the whole prompt for the first summary of a
case, only what differs from the previous prompt for the next ones (llama.cpp reuses the evaluated prefix, here
the case's notes) — plus the tokens it will write for every sample, each weighted by how many prompt tokens could
be read in the time one is written. The speeds are measured, per model file (sha256), from the timing every judge
result of that model in this workspace keeps (tokens read per second, tokens written per second, tokens written
per sample): after one run the next run's estimate is there from its first second.

:class:`engine.core.jobs.Job` turns the plan into an estimate (:meth:`engine.core.jobs.Job.plan`).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

DEFAULT_DECODE_WEIGHT = 5.0  # prompt tokens read per token written, until measured (2 CPU cores: about 90 vs 18)
DEFAULT_TOKENS_PER_SAMPLE = 110  # a PDSQI-9 JSON reply without explanations, until measured
RECENT = 30  # results a speed is the median over


@dataclass(frozen=True)
class Speeds:
    """One model's speeds on this machine, as measured on its stored results."""

    prompt_tps: float  # prompt tokens read per second
    decode_tps: float  # tokens written per second
    tokens_per_sample: float  # tokens written per sample
    n_results: int

    @property
    def decode_weight(self) -> float:
        return max(1.0, self.prompt_tps / self.decode_tps)


def measured_speeds(results: Iterable, model_sha256: Optional[str]) -> Optional[Speeds]:
    """The median speeds over the newest :data:`RECENT` scored results of this model that record how many prompt
    tokens they read (None when there is none, or no model hash: a server's speed is not this machine's)."""
    if not model_sha256:
        return None
    rs = [r for r in results if r.status == "scored" and r.provenance.model_sha256 == model_sha256
          and r.timing.prompt_new_tokens and r.timing.prompt_seconds > 0 and r.timing.decode_seconds > 0
          and r.timing.decode_tokens > 0 and r.samples]
    rs = sorted(rs, key=lambda r: r.created_at)[-RECENT:]
    if not rs:
        return None
    return Speeds(statistics.median(r.timing.prompt_new_tokens / r.timing.prompt_seconds for r in rs),
                  statistics.median(r.timing.decode_tokens / r.timing.decode_seconds for r in rs),
                  statistics.median(r.timing.decode_tokens / len(r.samples) for r in rs), len(rs))


def expected_samples(results: Iterable, model_sha256: Optional[str], n_samples: int, early_stop: bool) -> float:
    """How many samples a summary will take: ``n_samples``, or with early stopping the median number the stored
    results of this model asked for ``n_samples`` took (a run that stops early after 2 of 5 samples was planned as
    5, and its estimate read more than twice the time it took). ``n_samples`` when nothing is stored."""
    if not early_stop or n_samples <= 1 or not model_sha256:
        return float(n_samples)
    took = [len(r.samples) for r in results if r.status == "scored" and r.samples
            and r.provenance.model_sha256 == model_sha256
            and isinstance(r.provenance.params, dict) and r.provenance.params.get("n_samples") == n_samples]
    return float(min(n_samples, statistics.median(took[-RECENT:]))) if took else float(n_samples)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def work_tokens(prompts: Sequence[Optional[Sequence[int]]], n_samples: float, speeds: Optional[Speeds],
                batch: int = 1) -> list[float]:
    """Work per summary, in prompt-token units: ``prompts`` holds each summary's prompt tokens in run order (None
    for a summary already stored: no work); the prefix shared with the previous prompt read is reused (cut to a
    multiple of ``batch``, as llama.cpp's reuse is)."""
    weight = speeds.decode_weight if speeds else DEFAULT_DECODE_WEIGHT
    per_sample = speeds.tokens_per_sample if speeds else DEFAULT_TOKENS_PER_SAMPLE
    out: list[float] = []
    previous: Optional[Sequence[int]] = None
    for tokens in prompts:
        if tokens is None:
            out.append(0.0)
            continue
        reused = _common_prefix(previous, tokens) if previous is not None else 0
        reused -= reused % max(1, batch)
        out.append(float(len(tokens) - reused) + n_samples * per_sample * weight)
        previous = tokens
    return out
