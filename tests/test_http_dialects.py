"""OpenAI-compatible servers as they really are: llama.cpp server, vLLM, Ollama, LM Studio (stand-ins on loopback
that answer the way each documents: which endpoints exist, where the context size is, 404 on /tokenize for
Ollama and LM Studio), plus retries on 429/5xx."""

import pytest

from conftest import BUNDLE
from engine.llm.http_backend import ESTIMATE_BYTES_PER_TOKEN, OpenAIHTTPBackend
from engine.llm.backends import BackendError
from engine.judge.results import STATUS_SCORED, JudgeParams
from engine.judge.runner import Judge
from engine.data.loading import load_paths
from fakes import DIALECTS, make_server


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE])[0]


@pytest.mark.parametrize("dialect,n_ctx,source,tokens", [
    ("llama.cpp", 8192, "llama.cpp /props", "server /tokenize (llama.cpp)"),
    ("vllm", 16384, "vLLM", "server /tokenize (vLLM)"),
    ("ollama", 16384, "Ollama /api/show num_ctx", "estimate"),
    ("lmstudio", 8192, "LM Studio", "bundled Gemma 3 tokenizer"),
])
def test_each_dialect_judges_the_sample(ds, dialect, n_ctx, source, tokens):
    srv, seen = make_server(DIALECTS[dialect])
    try:
        model = DIALECTS[dialect][("GET", "/v1/models")]["data"][0]["id"]
        be = OpenAIHTTPBackend(f"http://127.0.0.1:{srv.server_port}/v1", model=model, n_ctx=2048)
        info = be.server_info()
        assert info.dialect == dialect and be.n_ctx == n_ctx and source in info.n_ctx_source
        assert be.list_models() == [model]
        r = Judge(be, None, JudgeParams(n_samples=1)).judge(ds, ds.summaries[0].summary_id)
        assert r.status == STATUS_SCORED, r.reason
        assert tokens in r.provenance.backend_params["token_count"]
        assert r.provenance.backend_params["dialect"] == dialect and r.provenance.n_ctx == n_ctx
        chat = [b for m, p, b in seen if p == "/v1/chat/completions"][-1]
        if dialect == "ollama":
            assert chat["options"] == {"num_ctx": 16384}  # else Ollama would cut the prompt to its default window
        else:
            assert "options" not in chat
    finally:
        srv.shutdown()


def test_estimate_is_conservative():
    srv, _ = make_server(DIALECTS["ollama"])
    try:
        be = OpenAIHTTPBackend(f"http://127.0.0.1:{srv.server_port}", model="llama3.1:8b")
        text = "Echo: LVEF 35%, moderate mitral regurgitation. Start sacubitril/valsartan. " * 20
        n = be.count_tokens(text)
        # at least the byte count / 3 (English BPE averages ~4 bytes per token): an over-count, never an under-count
        assert n >= len(text.encode()) / ESTIMATE_BYTES_PER_TOKEN
        assert "estimate" in be.describe()["token_count"]
    finally:
        srv.shutdown()


@pytest.mark.parametrize("status", [429, 503])
def test_retries_with_backoff_then_succeeds(ds, status):
    srv, seen = make_server(DIALECTS["llama.cpp"], fail_first=2, fail_status=status)
    try:
        be = OpenAIHTTPBackend(f"http://127.0.0.1:{srv.server_port}/v1", backoff=0.01)
        r = Judge(be, None, JudgeParams(n_samples=1)).judge(ds, ds.summaries[0].summary_id)
        assert r.status == STATUS_SCORED
        assert sum(1 for m, p, b in seen if p == "/v1/chat/completions") == 3  # two refused, then answered
    finally:
        srv.shutdown()


def test_gives_up_with_a_clear_error(ds):
    srv, _ = make_server(DIALECTS["llama.cpp"], fail_first=100, fail_status=503)
    try:
        be = OpenAIHTTPBackend(f"http://127.0.0.1:{srv.server_port}/v1", retries=2, backoff=0.01)
        with pytest.raises(BackendError, match="HTTP 503"):
            be.generate(be.render([{"role": "user", "content": "x"}]), {"type": "object"}, 10, 0.0, 0, False)
    finally:
        srv.shutdown()
