"""Judge configurations: results from different models, prompts or parameters are never pooled.

A *configuration* is what decides a judge's grades: the model (file hash, or backend + endpoint + model name),
the prompt version, and the judge parameters (samples, temperature, few-shot examples, explanations, seed,
trimming), and whether the model ran offloaded to a GPU: offloading changes the floating-point arithmetic, and
with it the expected scores (measured on the sample: every median the same, expected scores up to 0.39 apart), so
GPU and CPU results of one model form two configurations. CPU results keep the key they always had. Settings that
cannot change a grade are left out: early stopping (exact by construction), threads, context size. :func:`configurations` groups stored results by configuration with their coverage;
:func:`results_for` returns one configuration's latest result per summary. The Agreement page, ``stats`` and the
committee report compute for one configuration at a time and name it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from engine.core import json_key
from engine.llm import is_smoke_test_model

IGNORED_PARAMS = ("early_stop",)  # cannot change a median


@dataclass(frozen=True)
class JudgeConfig:
    key: str  # 12 hex digits
    model: str  # model file or server model name
    model_sha256: Optional[str]
    backend: str
    prompt_version: str
    params: dict
    n_results: int  # stored results (latest per summary) in this configuration
    n_scored: int
    smoke_test: bool  # the embedded 270M model: grades not clinically meaningful
    judged_at: str = ""  # the newest result's time (UTC)
    gpu: bool = False  # computed with layers offloaded to a GPU

    @property
    def _settings(self) -> str:
        """How it sampled and what it asked, in words ("1 greedy sample, 3-shot, explained, GPU")."""
        p = self.params
        bits = [sampling_words(p)] + ([f"{p['shots']}-shot"] if p.get("shots") else []) \
            + (["explained"] if p.get("explain") else []) + (["GPU"] if self.gpu else [])
        return ", ".join(bits)

    @property
    def label(self) -> str:
        smoke = " (smoke-test model)" if self.smoke_test else ""
        when = f" · judged {self.judged_at[:16].replace('T', ' ')}" if self.judged_at else ""
        return (f"{self.model}{smoke} · {self.prompt_version} · {self._settings} · "
                f"{self.n_scored} of {self.n_results} summaries scored{when} · [{self.key}]")

    @property
    def short_label(self) -> str:
        """What a picker shows in one line (a select box cuts longer text): the model, how it sampled and how many
        summaries it scored; :attr:`label` has everything."""
        smoke = " (smoke test)" if self.smoke_test else ""
        return f"{self.model}{smoke} · {self._settings} · {self.n_scored}/{self.n_results} scored · [{self.key[:6]}]"


def sampling_words(params: dict) -> str:
    """How a configuration sampled, in words: one sample is the greedy pass (no temperature applies to it);
    more are that pass and samples at the temperature."""
    n = params.get("n_samples", "?")
    return "1 greedy sample" if n == 1 else f"{n} samples, T={params.get('temperature', '?')}"


def config_key_of(result) -> str:
    """The configuration key of one JudgeResult (its provenance)."""
    prov = result.provenance
    model_id = prov.model_sha256 or f"{prov.backend}:{prov.backend_params.get('endpoint', '')}:{prov.model_file}"
    params = {k: v for k, v in sorted(prov.params.items()) if k not in IGNORED_PARAMS}
    material = {"model": model_id, "prompt": prov.prompt_version, "params": params}
    if ran_on_gpu(result):
        material["arithmetic"] = "gpu"
    return json_key(material)[:12]


def ran_on_gpu(result) -> bool:
    """Whether a llama.cpp result was computed with layers offloaded to a GPU (a GPU build and ``n_gpu_layers`` != 0)."""
    bp = result.provenance.backend_params or {}
    try:
        return bool(bp.get("gpu_offload")) and int(bp.get("n_gpu_layers") or 0) != 0
    except (TypeError, ValueError):
        return False


def is_smoke_test(result) -> bool:
    prov = result.provenance
    return is_smoke_test_model(prov.model_sha256, prov.model_file)


def _latest_per_summary(results: Iterable) -> dict[str, object]:
    latest: dict[str, object] = {}
    for r in results:
        cur = latest.get(r.summary_id)
        if cur is None or r.created_at >= cur.created_at:
            latest[r.summary_id] = r
    return latest


def configurations(results: Sequence) -> list[JudgeConfig]:
    """The configurations present, most summaries first."""
    groups: dict[str, list] = {}
    for r in results:
        groups.setdefault(config_key_of(r), []).append(r)
    out = []
    for key, rs in groups.items():
        latest = _latest_per_summary(rs)
        first = rs[0]
        prov = first.provenance
        out.append(JudgeConfig(key, prov.model_file, prov.model_sha256, prov.backend, prov.prompt_version,
                               {k: v for k, v in prov.params.items() if k not in IGNORED_PARAMS}, len(latest),
                               sum(1 for r in latest.values() if r.status == "scored"), is_smoke_test(first),
                               max(r.created_at for r in rs), ran_on_gpu(first)))
    out.sort(key=lambda c: (-c.n_scored, -c.n_results, c.key))
    return out


def results_for(results: Sequence, key: Optional[str]) -> list:
    """One configuration's latest result per summary (``key`` None: the configuration covering most summaries)."""
    if key is None:
        configs = configurations(results)
        if not configs:
            return []
        key = configs[0].key
    return list(_latest_per_summary(r for r in results if config_key_of(r) == key).values())


def find(configs: Sequence[JudgeConfig], key: Optional[str]) -> Optional[JudgeConfig]:
    if key is None:
        return configs[0] if configs else None
    return next((c for c in configs if c.key == key or c.key.startswith(key)), None)
