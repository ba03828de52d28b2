"""LLM backends for the judge: in-process llama.cpp (any GGUF) and an OpenAI-compatible HTTP endpoint.

Both turn chat messages into a prompt, count its tokens with the model's own tokenizer, and generate
JSON-schema-constrained replies. Every generation returns, per generated token, the top log-probabilities
(before sampling), so the judge can compute a probability-weighted "expected" score per item.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence


from engine.llm.prompt_fence import CONTROL_STRINGS

TOP_LOGPROBS = 20

# GGUF general.file_type -> quantization name (llama.cpp's LLAMA_FTYPE_*)
GGUF_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
               11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
               18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
               25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
               32: "BF16", 36: "TQ1_0", 37: "TQ2_0"}


class BackendError(Exception):
    """The backend could not run; the message says why and what to do."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    prompt_seconds: float  # time to the first generated token (prompt evaluation, minus cached prefix)
    decode_seconds: float
    finish_reason: str = ""
    token_texts: list[str] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)  # per generated token: text -> logprob
    prompt_new_tokens: Optional[int] = None  # of prompt_tokens, those evaluated now (the rest came from the cache)


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared by the backend itself; callers read it and never probe for methods."""

    concurrent: bool = False  # serves several requests at once (the judge may keep several summaries in flight)
    tokenizer: bool = False  # ``tokenize(text) -> list[int]`` in process, cheaply: a run can be planned in tokens
    saved_prefix: bool = False  # ``use_shared_prefix(prompts, cache_id)``: keeps the shared prompt prefix evaluated;
    # ``keep_on_disk(cache_id)``: keeps every held case record on disk; ``token_counts()``: prompt tokens evaluated
    grammar: bool = True  # output constrained to the JSON schema (grammar or the server's response format)
    logprobs: bool = True  # asks for the rating tokens' log-probabilities (servers that omit them give none)
    reuse_batch: int = 1  # a reused prompt prefix is cut to a multiple of this many tokens
    next_token: bool = False  # ``next_token(messages, keep)``: the next token's log-probabilities in one step, the
    # first ``keep`` messages kept evaluated between calls (narrow yes/no questions about one record)
    fast_decode: bool = False  # writes long replies fast (a server, a GPU): worth generating long lists


@dataclass
class NextToken:
    """The log-probabilities of the token a model would write next (one decoding step, nothing sampled)."""

    logprobs: dict[str, float]  # the most likely tokens' texts -> natural-log probability (empty: none given)
    prompt_tokens: int
    new_tokens: int  # of prompt_tokens, those evaluated by this call (the kept prefix was reused)
    seconds: float


class Backend(Protocol):
    name: str
    capabilities: Capabilities

    def describe(self) -> dict: ...

    def render(self, messages: Sequence[dict]) -> str: ...

    def count_tokens(self, text: str) -> int: ...

    @property
    def n_ctx(self) -> int: ...

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation: ...


# ----------------------------------------------------------------------------------------------- prompts


class RenderedPrompt(str):
    """A rendered chat prompt that remembers which characters the chat template wrote and which came from the
    messages' contents. Backends tokenise contents as plain text: a control string in the data
    (``<start_of_turn>``, ``<|im_start|>``, ``<|eot_id|>`` …) stays text and never becomes a special token."""

    segments: tuple[tuple[str, bool], ...]  # (text, written by the template)
    keep: int  # leading messages a backend that keeps evaluated state holds for the prompts to come (0: none)

    def __new__(cls, segments: Sequence[tuple[str, bool]], keep: int = 0) -> "RenderedPrompt":
        obj = super().__new__(cls, "".join(t for t, _ in segments))
        obj.segments = tuple((t, bool(tpl)) for t, tpl in segments if t)
        obj.keep = int(keep)
        return obj


def keep_messages(prompt: str, keep: int) -> str:
    """``prompt`` marked so that a backend that keeps evaluated state (in-process llama.cpp) evaluates its first
    ``keep`` messages as it does for :meth:`next_token` questions and keeps them for the next prompt that starts with
    them (the case's record, :mod:`engine.llm.case_record`). A prompt that is not a :class:`RenderedPrompt` (a
    server's rendering) is returned as it is: the server's own prompt cache does this there."""
    if keep and isinstance(prompt, RenderedPrompt):
        return RenderedPrompt(prompt.segments, keep)
    return prompt


def render_segments(messages: Sequence[dict], render_text) -> RenderedPrompt:
    """Render ``messages`` with ``render_text`` (a chat template), keeping track of the contents: each content is
    replaced by a random stand-in for the rendering, and the stand-ins are then swapped back as content segments."""
    nonce = secrets.token_hex(8)
    marks = [f"\ue000{nonce}:{i}\ue001" for i in range(len(messages))]
    text = render_text([{**m, "content": marks[i]} for i, m in enumerate(messages)])
    parts = re.split("\ue000" + nonce + r":(\d+)\ue001", text)
    segments: list[tuple[str, bool]] = []
    for k, part in enumerate(parts):
        segments.append((part, True) if k % 2 == 0 else (messages[int(part)]["content"], False))
    return RenderedPrompt(segments)


def split_rendered(prompt: RenderedPrompt, keep: int) -> tuple[RenderedPrompt, RenderedPrompt]:
    """``prompt`` cut just before the content of message number ``keep`` (0-based; every message's content must be
    non-empty): the rendered first ``keep`` messages plus the template text that opens the next one, and the rest."""
    seen = 0
    for i, (_text, from_template) in enumerate(prompt.segments):
        if not from_template:
            if seen == keep:
                return RenderedPrompt(prompt.segments[:i]), RenderedPrompt(prompt.segments[i:])
            seen += 1
    raise ValueError(f"the prompt has no message number {keep} with content")


# Chat-template control strings of the common model families. Over HTTP the server applies its own template
# and tokenises what we send, so these are broken up in the data (a word joiner after the first character):
# they still read the same but cannot be parsed as control tokens.
WORD_JOINER = "\u2060"


def neutralise_control_strings(text: str) -> str:
    """``text`` with every chat-template control string broken by a word joiner after its first character."""
    return CONTROL_STRINGS.sub(lambda m: m.group(0)[0] + WORD_JOINER + m.group(0)[1:], text)


# ----------------------------------------------------------------------------------------------- llama.cpp


# ----------------------------------------------------------------------------------------------- HTTP


