"""One grammar-constrained JSON step on a local LLM, cached by its inputs.

Used by pipelines with several LLM steps (MED-OMIT). A step either returns a parsed, schema-valid value or
fails with its reason and raw text — a pipeline that gets a failed step marks its result incomplete instead of
inventing the missing part.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence

from engine.core import check_cancelled, json_key
from engine.llm.backends import Backend, BackendError, keep_messages


class StepCache(Protocol):
    def get_llm_step(self, key: str) -> Optional[str]: ...

    def put_llm_step(self, key: str, step: str, model_id: str, value: str) -> None: ...


@dataclass
class StepResult:
    step: str
    ok: bool
    value: Any
    raw: str
    error: str = ""
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cut_off: bool = False  # the reply reached its token budget before it was complete
    seconds: float = 0.0  # the model's time for this reply; for a cached step, the time it took when it ran (0: unknown)


def validate(value: Any, schema: dict, path: str = "$") -> None:
    """A small JSON-schema check for the subset the steps use (object, array, string, integer, number,
    boolean, enum, required, maxItems). Raises ValueError naming the path."""
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{path}: {value!r} is not one of {schema['enum']}")
    t = schema.get("type")
    if t == "object":
        if not isinstance(value, dict):
            raise ValueError(f"{path}: expected an object")
        for k in schema.get("required", []):
            if k not in value:
                raise ValueError(f"{path}: missing key {k!r}")
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                validate(value[k], sub, f"{path}.{k}")
    elif t == "array":
        if not isinstance(value, list):
            raise ValueError(f"{path}: expected an array")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ValueError(f"{path}: more than {schema['maxItems']} items")
        for i, v in enumerate(value):
            validate(v, schema.get("items", {}), f"{path}[{i}]")
    elif t == "string" and not isinstance(value, str):
        raise ValueError(f"{path}: expected a string")
    elif t == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{path}: expected an integer")
    elif t == "boolean" and not isinstance(value, bool):
        raise ValueError(f"{path}: expected true or false")


def step_key(model_id: str, step: str, messages: Sequence[dict], schema: dict, max_tokens: int) -> str:
    return json_key({"model": model_id, "step": step, "messages": list(messages), "schema": schema,
                     "max_tokens": max_tokens})


def run_step(backend: Backend, model_id: str, step: str, messages: Sequence[dict], schema: dict, max_tokens: int,
             cache: Optional[StepCache] = None, check: Optional[Callable[[Any], None]] = None,
             seed: int = 0, keep: int = 0) -> StepResult:
    """Run one step greedily (deterministic); serve it from ``cache`` when the same inputs ran before. ``keep``: the
    leading messages a backend that keeps evaluated state holds for the prompts to come (a case's record,
    :func:`engine.llm.backends.keep_messages`).

    Only successful steps are cached, so a failed step is retried on the next run."""
    key = step_key(model_id, step, messages, schema, max_tokens)
    if cache is not None:
        hit = cache.get_llm_step(key)
        if hit is not None:
            d = json.loads(hit)
            return StepResult(step, True, d["value"], d["raw"], cached=True, seconds=float(d.get("seconds", 0.0)),
                              prompt_tokens=int(d.get("prompt_tokens", 0)),
                              completion_tokens=int(d.get("completion_tokens", 0)))
    check_cancelled()  # a cancelled job runs no further step (the steps before it stay cached)
    prompt = keep_messages(backend.render(messages), keep)
    n = backend.count_tokens(prompt)
    if n + max_tokens > backend.n_ctx:
        return StepResult(step, False, None, "", f"{step}: the prompt needs {n} tokens plus {max_tokens} for the "
                                                 f"reply, but the context holds {backend.n_ctx}", prompt_tokens=n)
    try:
        gen = backend.generate(prompt, schema, max_tokens, 0.0, seed, want_logprobs=False)
    except BackendError as exc:
        return StepResult(step, False, None, "", f"{step}: {exc}", prompt_tokens=n)
    res = StepResult(step, False, None, gen.text, prompt_tokens=n, completion_tokens=gen.completion_tokens,
                     seconds=round(gen.prompt_seconds + gen.decode_seconds, 3))  # as the backend measured it
    if gen.finish_reason == "length":
        res.error = f"{step}: the reply was cut off at {max_tokens} tokens"
        res.cut_off = True
        return res
    try:
        value = json.loads(gen.text)
        validate(value, schema)
        if check is not None:
            check(value)
    except (json.JSONDecodeError, ValueError) as exc:
        res.error = f"{step}: invalid reply ({exc})"
        return res
    res.ok, res.value = True, value
    if cache is not None:
        cache.put_llm_step(key, step, model_id, json.dumps({"value": value, "raw": gen.text, "seconds": res.seconds,
                                                            "prompt_tokens": n,
                                                            "completion_tokens": gen.completion_tokens}))
    return res
