"""An OpenAI-compatible server (llama.cpp's server, vLLM, Ollama, LM Studio) as a judge backend: context size
and tokenizer discovered from the server, JSON-schema replies, retries with backoff.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from engine.core import check_cancelled
from engine.llm.backends import (BackendError, Capabilities, Generation, NextToken, TOP_LOGPROBS,
                                 neutralise_control_strings)


@dataclass(frozen=True)
class ServerInfo:
    """What an OpenAI-compatible server says about itself (each field None where it does not say)."""

    dialect: str  # llama.cpp | vllm | ollama | lmstudio | openai-compatible
    models: tuple[str, ...]
    n_ctx: Optional[int]
    n_ctx_source: str  # where the context size came from
    tokenize: Optional[str]  # "llama.cpp" | "vllm" | None (no tokenizer endpoint)


# Model families whose tokenizer ships with this program (the embedded Gemma 3 GGUF): counts for them are exact.
_BUNDLED_TOKENIZER_FAMILIES = ("gemma-3", "gemma3")
ESTIMATE_BYTES_PER_TOKEN = 3.0  # BPE tokenizers average ~4 bytes per token on English clinical text
ESTIMATE_MARGIN = 1.15


class OpenAIHTTPBackend:
    """An OpenAI-compatible server: llama.cpp's server, vLLM, Ollama, LM Studio (on this machine or the hospital
    network).

    * Replies come from ``/v1/chat/completions`` with a JSON-schema response format.
    * Token counts: the server's ``/tokenize`` (llama.cpp or vLLM style) when it has one; otherwise the bundled
      Gemma 3 tokenizer for Gemma 3 models, else a stated conservative estimate (UTF-8 bytes / 3, plus 15 %).
      :meth:`describe` says which was used.
    * Context size: read from the server where it says it (llama.cpp ``/props``, vLLM ``max_model_len``, Ollama
      ``/api/show``, LM Studio ``/api/v0/models``), else the ``n_ctx`` given (the Settings value).
    * HTTP through ``requests`` with timeouts and retries with exponential backoff on 429, 5xx and dropped
      connections (``Retry-After`` honoured)."""

    name = "openai-http"
    # a server takes several requests at once; counting tokens costs a request, so no run plan in tokens
    # one-step answers: the server keeps (or not) its own prompt cache; a server that omits log-probabilities
    # gives an empty NextToken and the caller says so
    capabilities = Capabilities(concurrent=True, tokenizer=False, saved_prefix=False, grammar=True, logprobs=True,
                                next_token=True, fast_decode=True)

    def __init__(self, base_url: str, model: str = "", api_key: str = "", n_ctx: int = 8192, timeout: float = 600,
                 retries: int = 4, backoff: float = 0.5, probe: bool = True):
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        self.base = base_url.rstrip("/")
        if self.base.endswith("/v1"):
            self.base = self.base[:-3]
        self.model = model
        self.api_key = api_key
        self._n_ctx_setting = int(n_ctx)
        self.timeout = timeout
        self._messages_by_prompt: dict[str, list[dict]] = {}
        self._requests = requests
        self.session = requests.Session()
        retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                      status_forcelist=(429, 500, 502, 503, 504), allowed_methods=None, raise_on_status=False,
                      respect_retry_after_header=True)
        adapter = HTTPAdapter(max_retries=retry, pool_maxsize=32)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        self._info: Optional[ServerInfo] = None
        self._token_method: Optional[str] = None
        self._gemma_counter = None
        self._probe = probe

    # -- transport
    def _call(self, method: str, path: str, body: Optional[dict] = None, quiet: bool = False):
        """(status, JSON or None). Raises BackendError when the server cannot be reached at all; with ``quiet`` an
        error status is returned rather than raised (probing what a server offers)."""
        url = self.base + path
        try:
            r = self.session.request(method, url, json=body, timeout=(min(10.0, self.timeout), self.timeout))
        except self._requests.RequestException as exc:
            raise BackendError(f"cannot reach {url}: {exc.__class__.__name__}: {exc}. Is the server running, and is "
                               "the address right (Ollama: http://127.0.0.1:11434/v1, LM Studio: "
                               "http://127.0.0.1:1234/v1, llama.cpp server: http://127.0.0.1:8080/v1)?") from exc
        try:
            data = r.json()
        except ValueError:
            data = None
        if r.status_code >= 400 and not quiet:
            raise BackendError(f"{url} answered HTTP {r.status_code}: {r.text[:300]}")
        return r.status_code, data

    def _post(self, path: str, body: dict) -> dict:
        status, data = self._call("POST", path, body)
        if not isinstance(data, dict):
            raise BackendError(f"{self.base}{path} did not answer with a JSON object (HTTP {status})")
        return data

    # -- what the server says about itself
    def server_info(self) -> ServerInfo:
        if self._info is None:
            self._info = self._discover()
        return self._info

    def _discover(self) -> ServerInfo:
        models: list[str] = []
        n_ctx: Optional[int] = None
        source = "settings"
        dialect = "openai-compatible"
        status, data = self._call("GET", "/v1/models", quiet=True)
        entries = (data or {}).get("data") if isinstance(data, dict) else None
        for m in entries or []:
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                models.append(m["id"])
                if m.get("owned_by") == "vllm":
                    dialect = "vllm"
                if isinstance(m.get("max_model_len"), int) and (not self.model or m["id"] == self.model):
                    n_ctx, source, dialect = m["max_model_len"], "vLLM /v1/models max_model_len", "vllm"
                meta = m.get("meta")
                if n_ctx is None and isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):
                    dialect = "llama.cpp"
        if n_ctx is None:  # llama.cpp server
            status, props = self._call("GET", "/props", quiet=True)
            if status == 200 and isinstance(props, dict):
                dgs = props.get("default_generation_settings") or {}
                val = dgs.get("n_ctx") if isinstance(dgs, dict) else None
                val = val if isinstance(val, int) else props.get("n_ctx")
                if isinstance(val, int) and val > 0:
                    n_ctx, source, dialect = val, "llama.cpp /props n_ctx", "llama.cpp"
        if n_ctx is None:  # LM Studio's own REST API
            status, lm = self._call("GET", "/api/v0/models", quiet=True)
            for m in ((lm or {}).get("data") or []) if isinstance(lm, dict) else []:
                if isinstance(m, dict) and (not self.model or m.get("id") == self.model):
                    val = m.get("loaded_context_length") or m.get("max_context_length")
                    if isinstance(val, int) and val > 0:
                        n_ctx, source, dialect = val, "LM Studio /api/v0/models", "lmstudio"
                        break
        if n_ctx is None:  # Ollama
            name = self.model or (models[0] if models else "")
            status, show = self._call("POST", "/api/show", {"model": name}, quiet=True) if name else (404, None)
            if status == 200 and isinstance(show, dict):
                dialect = "ollama"
                params = str(show.get("parameters") or "")
                m = re.search(r"^\s*num_ctx\s+(\d+)", params, re.MULTILINE)
                info = show.get("model_info") or {}
                trained = next((v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)),
                               None) if isinstance(info, dict) else None
                if m:
                    n_ctx, source = int(m.group(1)), "Ollama /api/show num_ctx"
                elif trained:
                    # Ollama serves with its default window unless num_ctx is set; we send num_ctx with each request
                    n_ctx = min(trained, self._n_ctx_setting) if self._n_ctx_setting else trained
                    source = "Ollama /api/show context_length (capped by Settings; sent as num_ctx)"
        tokenize = self._probe_tokenize()
        return ServerInfo(dialect, tuple(models), n_ctx, source if n_ctx else "settings", tokenize)

    def _probe_tokenize(self) -> Optional[str]:
        status, data = self._call("POST", "/tokenize", {"content": "probe"}, quiet=True)
        if status == 200 and isinstance(data, dict) and isinstance(data.get("tokens"), list):
            return "llama.cpp"
        status, data = self._call("POST", "/tokenize", {"model": self.model, "prompt": "probe"}, quiet=True)
        if status == 200 and isinstance(data, dict) and isinstance(data.get("count"), int):
            return "vllm"
        return None

    def list_models(self) -> list[str]:
        return list(self.server_info().models)

    @property
    def n_ctx(self) -> int:
        if self._probe:
            info = self.server_info()
            if info.n_ctx:
                return int(info.n_ctx)
        return self._n_ctx_setting

    def describe(self) -> dict:
        d = {"backend": self.name, "model_file": self.model or "(server default)", "endpoint": self.base,
             "quantization": "unknown", "n_ctx": self.n_ctx,
             "data_control_strings": "neutralised (word joiner): the server tokenises the messages"}
        if self._probe:
            info = self.server_info()
            d.update(dialect=info.dialect, n_ctx_source=info.n_ctx_source)
        if self._token_method:
            d["token_count"] = self._token_method
        d["response_format"] = getattr(self, "_schema_style", "json_schema")
        return d

    def render(self, messages: Sequence[dict]) -> str:
        # the server applies its own chat template; keep the messages for generate()
        text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
        self._messages_by_prompt[text] = list(messages)
        return text

    def count_tokens(self, text: str) -> int:
        how = self.server_info().tokenize if self._probe else self._probe_tokenize()
        if how == "llama.cpp":
            self._token_method = "server /tokenize (llama.cpp)"
            return len(self._post("/tokenize", {"content": text})["tokens"])
        if how == "vllm":
            self._token_method = "server /tokenize (vLLM)"
            return int(self._post("/tokenize", {"model": self.model, "prompt": text})["count"])
        if any(f in self.model.lower().replace(" ", "") for f in _BUNDLED_TOKENIZER_FAMILIES):
            counter = self._gemma()
            if counter is not None:
                self._token_method = "bundled Gemma 3 tokenizer (the server has no /tokenize)"
                return counter(text)
        self._token_method = (f"estimate: UTF-8 bytes / {ESTIMATE_BYTES_PER_TOKEN:g} + {ESTIMATE_MARGIN - 1:.0%} "
                              "margin (the server has no /tokenize)")
        return math.ceil(len(text.encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN * ESTIMATE_MARGIN)

    def _response_format(self, schema: dict) -> dict:
        """The JSON-schema response format in the style this server accepts (found on the first refusal)."""
        if getattr(self, "_schema_style", "json_schema") == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "pdsqi9", "schema": schema, "strict": True}}

    def _gemma(self):
        if self._gemma_counter is None:
            try:
                from engine.llm.modelfiles import SMOKE_EMBEDDED, embedded_model_path, judge_token_counter

                counter, how = judge_token_counter(str(embedded_model_path(SMOKE_EMBEDDED)))
                self._gemma_counter = counter if how == "judge-model tokens" else False
            except Exception:  # no embedded model here: fall back to the estimate
                self._gemma_counter = False
        return self._gemma_counter or None

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation:
        check_cancelled()  # a request once sent runs to its end on the server: stop before sending the next
        messages = self._messages_by_prompt.get(prompt) or [{"role": "user", "content": prompt}]
        messages = [{**m, "content": neutralise_control_strings(m["content"])} for m in messages]
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, "seed": seed,
                "response_format": self._response_format(schema)}
        if self.model:
            body["model"] = self.model
        if self._probe and self.server_info().dialect == "ollama":
            body["options"] = {"num_ctx": self.n_ctx}  # Ollama otherwise serves with its small default window
        if want_logprobs:
            body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        t0 = time.perf_counter()
        try:
            r = self._post("/v1/chat/completions", body)
        except BackendError as exc:
            # llama-cpp-python's server takes only {"type": "json_object", "schema": ...}; others take json_schema
            if getattr(self, "_schema_style", "json_schema") != "json_schema" or "response_format" not in str(exc):
                raise
            self._schema_style = "json_object"
            body["response_format"] = self._response_format(schema)
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

    def next_token(self, messages: Sequence[dict], keep: int) -> NextToken:
        """The first reply token's top log-probabilities (one token, greedy). ``keep`` is advisory: the server decides
        what of the prompt it keeps evaluated. A server that gives no log-probabilities yields an empty mapping."""
        check_cancelled()
        body = {"messages": [{**m, "content": neutralise_control_strings(m["content"])} for m in messages],
                "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        if self.model:
            body["model"] = self.model
        t0 = time.perf_counter()
        r = self._post("/v1/chat/completions", body)
        try:
            choice = r["choices"][0]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"unexpected reply from {self.base}: {str(r)[:300]}") from exc
        content = (choice.get("logprobs") or {}).get("content") or []
        top = {t["token"]: float(t["logprob"]) for t in (content[0].get("top_logprobs") or [])} if content else {}
        if content and not top and "token" in content[0] and "logprob" in content[0]:
            top = {content[0]["token"]: float(content[0]["logprob"])}
        usage = r.get("usage") or {}
        n = int(usage.get("prompt_tokens", 0))
        return NextToken(logprobs=top, prompt_tokens=n, new_tokens=n, seconds=time.perf_counter() - t0)
