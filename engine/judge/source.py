"""The judge model in use, opened the same way by the app and the CLI.

One setting says where the judge model comes from (:attr:`engine.data.settings.AppSettings.source`): the embedded
smoke-test model, a GGUF file, a GGUF that Ollama or LM Studio keeps on this machine (all three run in process with
llama.cpp), or an OpenAI-compatible server (Ollama, LM Studio, llama.cpp's server, vLLM). This module opens that
backend, checks a server (what it says about itself and how prompt tokens will be counted), and passes the newer
batch options (requests in flight, partial results, early stopping) only to an engine that has them.
Nothing here reaches the network except the server the user configured.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from engine.llm import Backend, BackendError, OpenAIHTTPBackend
from engine.data import (AppSettings, SOURCE_EMBEDDED, SOURCE_GGUF, SOURCE_LOCAL, SOURCE_SERVER, SettingsError,
                         check_server_url)

SOURCE_LABELS = {SOURCE_EMBEDDED: "Embedded default", SOURCE_GGUF: "GGUF file",
                 SOURCE_LOCAL: "Found on this machine", SOURCE_SERVER: "OpenAI-compatible server"}
SERVER_EXAMPLES = {"Ollama": "http://127.0.0.1:11434/v1", "LM Studio": "http://127.0.0.1:1234/v1",
                   "llama.cpp server": "http://127.0.0.1:8080/v1"}
TOKEN_PROBE = "Token count probe: LVEF 35%, moderate mitral regurgitation."


def server_backend(url: str, model: str = "", api_key: str = "", n_ctx: int = 8192, **kw) -> OpenAIHTTPBackend:
    """An :class:`OpenAIHTTPBackend` for ``url`` (checked to be an http(s) address; nothing is sent yet)."""
    try:
        url = check_server_url(url)
    except SettingsError as exc:
        raise BackendError(str(exc)) from exc
    return OpenAIHTTPBackend(url, model=(model or "").strip(), api_key=(api_key or "").strip(), n_ctx=int(n_ctx),
                             **kw)


def open_judge_backend(settings: AppSettings, store=None) -> tuple[Backend, Optional[str]]:
    """(backend, model sha256) for the configured source. In process: the GGUF (or the embedded model) loaded by
    llama.cpp with its sha256. Server: the HTTP backend, already asked what it serves (so an unreachable server
    fails here, with the reason), and no sha256 (the judge identifies it by endpoint and model name). Raises
    :class:`BackendError`."""
    if settings.source == SOURCE_SERVER:
        backend = server_backend(settings.server_url, settings.server_model, settings.server_api_key,
                                 int(settings.n_ctx))
        backend.describe()  # probes the server
        return backend, None
    from engine.judge.runner import open_llama_backend

    return open_llama_backend(settings.llama_model_path, n_ctx=int(settings.n_ctx), n_threads=int(settings.n_threads),
                              n_gpu_layers=int(settings.n_gpu_layers), store=store,
                              embedded_key=settings.embedded_model if settings.source == SOURCE_EMBEDDED else "")


# Interactive checks (List models, Check server) answer within seconds: one retry, short timeouts.
QUICK = {"timeout": 20.0, "retries": 1, "backoff": 0.2}


def list_server_models(url: str, api_key: str = "") -> list[str]:
    """The model names an OpenAI-compatible server lists at ``/v1/models``. Raises :class:`BackendError`."""
    return server_backend(url, api_key=api_key, **QUICK).list_models()


@dataclass(frozen=True)
class ServerCheck:
    endpoint: str
    dialect: str
    models: tuple[str, ...]
    model: str  # the model the judge will ask for ("" = the server's default)
    n_ctx: int
    n_ctx_source: str
    token_count: str  # how prompt tokens are counted for the context budget
    model_listed: Optional[bool]  # whether the server lists ``model`` (None: no model named, or no list)


def check_server(url: str, model: str = "", api_key: str = "", n_ctx: int = 8192) -> ServerCheck:
    """Ask the server what it is (dialect), what it serves, its context size and where that came from, and count a
    short probe's tokens to learn how prompts will be counted. Raises :class:`BackendError`."""
    be = server_backend(url, model, api_key, n_ctx, **QUICK)
    info = be.server_info()
    be.count_tokens(TOKEN_PROBE)
    d = be.describe()
    listed = (be.model in info.models) if be.model and info.models else None
    return ServerCheck(be.base, info.dialect, info.models, be.model, int(be.n_ctx), info.n_ctx_source,
                       str(d.get("token_count", "unknown")), listed)


def describe_source(settings: AppSettings) -> dict[str, Any]:
    """What the configured source is, for display (never the API key)."""
    src = settings.source
    out: dict[str, Any] = {"source": src, "label": SOURCE_LABELS[src]}
    if src == SOURCE_SERVER:
        out.update(endpoint=settings.server_url, model=settings.server_model or "(server default)",
                   api_key="set" if settings.server_api_key else "none", concurrency=int(settings.concurrency))
    elif src in (SOURCE_GGUF, SOURCE_LOCAL):
        out.update(model_path=settings.model_path, n_ctx=int(settings.n_ctx), n_gpu_layers=int(settings.n_gpu_layers))
        if src == SOURCE_LOCAL and settings.local_model_name:
            out["model"] = settings.local_model_name
    return out
