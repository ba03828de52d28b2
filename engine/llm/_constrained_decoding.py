"""The decoding step of the in-process llama.cpp backend (:class:`engine.llm.llama.LlamaCppBackend`): reading the
next-token logits and their top log-probabilities, grammar-constrained sampling of the next token through a llama.cpp
grammar sampler, and the check that a reply is complete JSON. Each function takes the ``llama_cpp`` module (``lc``)
or the ``llama_cpp.Llama`` (``llm``) it works on."""
from __future__ import annotations

import ctypes
import json
import math
from typing import Callable

import numpy as np

from engine.llm.backends import BackendError, TOP_LOGPROBS

# How LlamaCppBackend._generate decodes with the functions below.
# llama-cpp-python's own sampler applies the grammar to the whole vocabulary at every step (262k tokens
# for Gemma: ~35 ms a token on 2 cores). This loop does what llama.cpp's common sampler does instead:
# pick a token from the raw logits, ask the grammar about that one token, and only when it is rejected
# apply the grammar to the whole vocabulary and pick again. The output is still exactly
# grammar-constrained; only the cost changes. The evaluated prompt is kept, so a second sample with the
# same prompt starts decoding at once.

SUBSET = 2048  # the highest-logit tokens the grammar is asked about first (constrained_logits)
MIN_P = 0.05  # the min-p cut-off of sampling (pick), relative to the likeliest token


def logits_now(lc, llm) -> np.ndarray:
    """A copy of the next-token logits after the last token ``llm`` evaluated."""
    ptr = lc.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def top_logprobs(logits: np.ndarray, piece: Callable[[int], str]) -> dict[str, float]:
    """The log-probabilities of the :data:`engine.llm.backends.TOP_LOGPROBS` likeliest tokens, by their text."""
    cand = np.argpartition(logits, -TOP_LOGPROBS)[-TOP_LOGPROBS:]
    m = float(logits.max())
    lse = m + math.log(float(np.exp(logits - m).sum()))
    return {piece(int(t)): float(logits[t]) - lse for t in cand}


def grammar_for(grammars: dict, schema: dict):
    """The ``llama_cpp.LlamaGrammar`` of the JSON ``schema``, built once and kept in ``grammars`` by the schema."""
    key = json.dumps(schema, sort_keys=True)
    if key not in grammars:
        from llama_cpp import LlamaGrammar

        grammars[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    return grammars[key]


def grammar_sampler(lc, llm, g):
    """A llama.cpp grammar sampler over ``llm``'s vocabulary for the grammar ``g`` (a ``llama_cpp.LlamaGrammar``)."""
    vocab = lc.llama_model_get_vocab(llm._model.model)
    smpl = lc.llama_sampler_init_grammar(vocab, g._grammar.encode("utf-8"), g._root.encode("utf-8"))
    if not smpl:
        raise BackendError("llama.cpp rejected the output grammar")
    return smpl


def token_allowed(lc, smpl, token: int) -> bool:
    """Whether the grammar sampler ``smpl`` allows ``token`` next."""
    one = (lc.llama_token_data * 1)(lc.llama_token_data(token, 0.0, 0.0))
    arr = lc.llama_token_data_array(one, 1, -1, False)
    lc.llama_sampler_apply(smpl, ctypes.byref(arr))
    return math.isfinite(one[0].logit)


def apply_grammar(lc, smpl, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Grammar-masked logits for the candidate token ids (-inf where the grammar forbids the token)."""
    n = len(ids)
    buf = (lc.llama_token_data * n)()
    view = np.ctypeslib.as_array(buf).view(np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)]))
    view["id"] = ids
    view["logit"] = logits[ids]
    arr = lc.llama_token_data_array(buf, n, -1, False)
    lc.llama_sampler_apply(smpl, ctypes.byref(arr))  # the grammar masks in place (order and size kept)
    return view["logit"].copy()


def apply_full(lc, smpl, logits: np.ndarray) -> np.ndarray:
    return apply_grammar(lc, smpl, np.arange(logits.shape[0], dtype=np.int32), logits)


def constrained_logits(lc, smpl, logits: np.ndarray, temperature: float, subset: int = SUBSET,
                       min_p: float = MIN_P) -> np.ndarray:
    """Logits with every grammar-forbidden token at -inf.

    Cheap path: only the SUBSET highest-logit tokens are checked. That is exact when a token outside the
    subset could not be chosen anyway: greedy decoding with an allowed token inside, or sampling where
    every outside token falls under the min-p cut-off relative to the best allowed token. Otherwise the
    whole vocabulary is checked."""
    n = logits.shape[0]
    subset = min(subset, n)
    idx = np.argpartition(logits, -subset)[-subset:] if subset < n else np.arange(n)
    masked_sub = apply_grammar(lc, smpl, idx.astype(np.int32), logits)
    out = np.full(n, -np.inf, dtype=np.float32)
    out[idx] = masked_sub
    if subset == n or not np.isfinite(masked_sub).any():
        return out if subset == n else apply_full(lc, smpl, logits)
    best = float(masked_sub.max())
    floor = float(logits[idx].min())  # every token outside the subset has a logit <= floor
    if temperature <= 0 or floor < best + math.log(min_p):
        return out
    return apply_full(lc, smpl, logits)


def pick(logits: np.ndarray, temperature: float, rng: np.random.Generator, top_k: int = 40, top_p: float = 0.95,
         min_p: float = MIN_P) -> int:
    """Greedy, or top-k → top-p → min-p → temperature sampling (llama.cpp's defaults)."""
    if temperature <= 0:
        return int(np.argmax(logits))
    m = float(logits.max())
    cand = np.flatnonzero(logits >= m + math.log(min_p))  # min-p on the untempered distribution
    if len(cand) > top_k:
        cand = cand[np.argpartition(logits[cand], -top_k)[-top_k:]]
    z = np.exp(logits[cand].astype(np.float64) - m)
    p = z / z.sum()
    order = np.argsort(-p)
    keep = order[: int(np.searchsorted(np.cumsum(p[order]), top_p) + 1)]
    zt = np.exp((np.log(p[keep]) - np.log(p[keep]).max()) / temperature)
    return int(cand[keep][rng.choice(len(keep), p=zt / zt.sum())])


def complete_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
        return True
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
