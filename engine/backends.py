"""LLM backends for the judge: in-process llama.cpp (any GGUF) and an OpenAI-compatible HTTP endpoint.

Both turn chat messages into a prompt, count its tokens with the model's own tokenizer, and generate
JSON-schema-constrained replies. Every generation returns, per generated token, the top log-probabilities
(before sampling), so the judge can compute a probability-weighted "expected" score per item.
"""
from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol, Sequence

import numpy as np

TOP_LOGPROBS = 20

# GGUF general.file_type -> quantization name (llama.cpp's LLAMA_FTYPE_*)
_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
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


class Backend(Protocol):
    name: str

    def describe(self) -> dict: ...

    def render(self, messages: Sequence[dict]) -> str: ...

    def count_tokens(self, text: str) -> int: ...

    @property
    def n_ctx(self) -> int: ...

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation: ...


# ----------------------------------------------------------------------------------------------- llama.cpp


def _gemma_render(messages: Sequence[dict], bos: str) -> str:
    """Gemma's turn format (its GGUF may carry no chat template). The system text joins the first user turn."""
    out, system = [bos], ""
    for m in messages:
        if m["role"] == "system":
            system = m["content"] + "\n\n"
            continue
        role = "model" if m["role"] == "assistant" else "user"
        content = (system + m["content"]) if role == "user" and system else m["content"]
        if role == "user":
            system = ""
        out.append(f"<start_of_turn>{role}\n{content}<end_of_turn>\n")
    out.append("<start_of_turn>model\n")
    return "".join(out)


def _chatml_render(messages: Sequence[dict]) -> str:
    out = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(out) + "<|im_start|>assistant\n"


class LlamaCppBackend:
    """In-process llama.cpp through llama-cpp-python. Load once and reuse (the prompt prefix is cached)."""

    name = "llama.cpp"

    def __init__(self, model_path: str | os.PathLike, n_ctx: int = 8192, n_threads: int = 0, n_gpu_layers: int = 0,
                 seed: int = 0):
        from .modelfiles import check_gguf, ModelError

        path = Path(model_path)
        try:
            check_gguf(path)
        except ModelError as exc:
            raise BackendError(str(exc)) from exc
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - installed by requirements
            raise BackendError("llama-cpp-python is not installed; run 'make install'") from exc
        self._llama_cpp = llama_cpp
        threads = n_threads or max(1, (os.cpu_count() or 2))
        try:
            self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=int(n_ctx), n_threads=threads,
                                       n_threads_batch=threads, n_gpu_layers=int(n_gpu_layers), seed=seed,
                                       logits_all=False, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(f"llama.cpp could not load {path.name}: {exc}. The file may be corrupt or of an "
                               "architecture this llama.cpp build does not support.") from exc
        self.path = path
        self.params = {"n_ctx": int(n_ctx), "n_threads": threads, "n_gpu_layers": int(n_gpu_layers)}
        meta = self.llm.metadata
        self.arch = meta.get("general.architecture", "")
        self.template = meta.get("tokenizer.chat_template")
        self._bos_text = self._piece(self.llm.token_bos())
        self._eos_text = self._piece(self.llm.token_eos())
        self.quantization = _FILE_TYPES.get(int(meta.get("general.file_type", -1)), "unknown")
        self._formatter = None
        if self.template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            try:
                self._formatter = Jinja2ChatFormatter(template=self.template, eos_token=self._eos_text,
                                                      bos_token=self._bos_text)
            except Exception:  # a template jinja2 cannot compile: fall back to the built-in formats
                self._formatter = None
        self._grammars: dict[str, object] = {}

    def _piece(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    @property
    def n_ctx(self) -> int:
        return self.llm.n_ctx()

    def describe(self) -> dict:
        import llama_cpp

        return {"backend": self.name, "model_file": self.path.name, "model_path": str(self.path),
                "quantization": self.quantization, "architecture": self.arch,
                "chat_format": "gguf-template" if self._formatter else ("gemma" if self.arch.startswith("gemma")
                                                                        else "chatml"),
                "llama_cpp_python": llama_cpp.__version__, **self.params}

    def render(self, messages: Sequence[dict]) -> str:
        if self._formatter is not None:
            text = self._formatter(messages=list(messages)).prompt
        elif self.arch.startswith("gemma"):
            text = _gemma_render(messages, self._bos_text)
        else:
            text = _chatml_render(messages)
        if self._bos_text and not text.startswith(self._bos_text) and self.llm.metadata.get(
                "tokenizer.ggml.add_bos_token", "true") != "false":
            text = self._bos_text + text
        return text

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def _grammar(self, schema: dict):
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        return self._grammars[key]

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation:
        tokens = self.tokenize(prompt)
        steps: list[dict[int, float]] = []
        seen: list[int] = []  # the last token of the context at each step = the previously generated token

        def capture(ids, logits):  # raw logits of the next token, before grammar and sampling
            seen.append(int(ids[-1]))
            arr = np.asarray(logits, dtype=np.float32)
            top = np.argpartition(arr, -TOP_LOGPROBS)[-TOP_LOGPROBS:]
            m = float(arr.max())
            lse = m + math.log(float(np.exp(arr - m).sum()))
            steps.append({int(t): float(arr[t]) - lse for t in top})
            return logits

        t0 = time.perf_counter()
        t_first: Optional[float] = None
        pieces: list[str] = []
        finish = ""
        try:
            stream = self.llm.create_completion(
                tokens, max_tokens=max_tokens, temperature=temperature, top_p=0.95, top_k=40, seed=seed,
                grammar=self._grammar(schema), stream=True, logits_processor=[capture] if want_logprobs else None)
            for chunk in stream:
                if t_first is None:
                    t_first = time.perf_counter()
                ch = chunk["choices"][0]
                pieces.append(ch.get("text") or "")
                finish = ch.get("finish_reason") or finish
        except ValueError as exc:  # e.g. prompt longer than the context
            raise BackendError(str(exc)) from exc
        t1 = time.perf_counter()
        text = "".join(pieces)
        token_texts: list[str] = []
        top: list[dict[str, float]] = []
        if want_logprobs:
            out_ids = seen[1:]  # generated tokens, in order (the very last one may be missing)
            token_texts = [self._piece(t) for t in out_ids]
            done = "".join(token_texts)
            if len(done) < len(text) and text.startswith(done):
                token_texts.append(text[len(done):])
            top = [{self._piece(t): lp for t, lp in s.items()} for s in steps[: len(token_texts)]]
        n_out = sum(1 for p in pieces if p)  # one streamed chunk per generated token
        t_first = t_first or t1
        return Generation(text=text, prompt_tokens=len(tokens), completion_tokens=n_out,
                          prompt_seconds=t_first - t0, decode_seconds=t1 - t_first, finish_reason=finish,
                          token_texts=token_texts, top_logprobs=top)


# ----------------------------------------------------------------------------------------------- HTTP


class OpenAIHTTPBackend:
    """An OpenAI-compatible server (llama.cpp server, vLLM) on this machine or the hospital network.

    Uses /v1/chat/completions with a JSON-schema response format; token counts come from the server's
    /tokenize endpoint (llama.cpp or vLLM style)."""

    name = "openai-http"

    def __init__(self, base_url: str, model: str = "", api_key: str = "", n_ctx: int = 8192, timeout: float = 600):
        self.base = base_url.rstrip("/")
        if self.base.endswith("/v1"):
            self.base = self.base[:-3]
        self.model = model
        self.api_key = api_key
        self._n_ctx = n_ctx
        self.timeout = timeout
        self._messages_by_prompt: dict[str, list[dict]] = {}

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def _post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise BackendError(f"{self.base}{path} answered HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise BackendError(f"cannot reach {self.base}{path}: {exc}. Is the server running?") from exc

    def describe(self) -> dict:
        return {"backend": self.name, "model_file": self.model or "(server default)", "endpoint": self.base,
                "quantization": "unknown", "n_ctx": self._n_ctx}

    def render(self, messages: Sequence[dict]) -> str:
        # the server applies its own chat template; keep the messages for generate()
        text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
        self._messages_by_prompt[text] = list(messages)
        return text

    def count_tokens(self, text: str) -> int:
        try:
            r = self._post("/tokenize", {"content": text})
            if "tokens" in r:
                return len(r["tokens"])
        except BackendError:
            pass
        r = self._post("/tokenize", {"model": self.model, "prompt": text})
        if "count" in r:
            return int(r["count"])
        raise BackendError(f"{self.base}/tokenize gave no token count; the context budget cannot be checked")

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation:
        messages = self._messages_by_prompt.get(prompt) or [{"role": "user", "content": prompt}]
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, "seed": seed,
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": "pdsqi9", "schema": schema, "strict": True}}}
        if self.model:
            body["model"] = self.model
        if want_logprobs:
            body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        t0 = time.perf_counter()
        r = self._post("/v1/chat/completions", body)
        t1 = time.perf_counter()
        try:
            choice = r["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"unexpected reply from {self.base}: {str(r)[:300]}") from exc
        usage = r.get("usage") or {}
        token_texts, top = [], []
        for entry in ((choice.get("logprobs") or {}).get("content") or []):
            token_texts.append(entry.get("token", ""))
            top.append({t["token"]: t["logprob"] for t in entry.get("top_logprobs", [])})
        return Generation(text=text, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", len(token_texts))),
                          prompt_seconds=0.0, decode_seconds=t1 - t0, finish_reason=choice.get("finish_reason", ""),
                          token_texts=token_texts, top_logprobs=top)
