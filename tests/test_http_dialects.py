"""OpenAI-compatible servers as they really are: llama.cpp server, vLLM, Ollama, LM Studio (stand-ins on loopback
that answer the way each documents: which endpoints exist, where the context size is, 404 on /tokenize for
Ollama and LM Studio), plus retries on 429/5xx."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import BUNDLE
from engine.backends import ESTIMATE_BYTES_PER_TOKEN, BackendError, OpenAIHTTPBackend
from engine.judge import STATUS_SCORED, Judge, JudgeParams
from engine.loading import load_paths

REPLY = {"cited": 4, "accurate": 5, "thorough": 3, "useful": 4, "organized": 4, "comprehensible": 5,
         "succinct": 4, "abstraction": "no", "synthesized": "NA", "stigmatizing_notes": "no",
         "stigmatizing_summary": "no"}

DIALECTS = {
    "llama.cpp": {
        ("GET", "/v1/models"): {"object": "list", "data": [{"id": "llama-3.1-8b.gguf", "meta": {"n_ctx_train": 131072}}]},
        ("GET", "/props"): {"default_generation_settings": {"n_ctx": 8192}},
        ("POST", "/tokenize"): "tokens",
    },
    "vllm": {
        ("GET", "/v1/models"): {"data": [{"id": "meta-llama/Llama-3.1-8B-Instruct", "owned_by": "vllm",
                                          "max_model_len": 16384}]},
        ("POST", "/tokenize"): "count",
    },
    "ollama": {
        ("GET", "/v1/models"): {"object": "list", "data": [{"id": "llama3.1:8b", "object": "model",
                                                            "owned_by": "library"}]},
        ("POST", "/api/show"): {"parameters": "num_ctx 16384\nstop \"<|eot_id|>\"",
                                "model_info": {"general.architecture": "llama", "llama.context_length": 131072}},
    },
    "lmstudio": {
        ("GET", "/v1/models"): {"data": [{"id": "gemma-3-270m-it", "object": "model", "owned_by": "organization_owner"}]},
        ("GET", "/api/v0/models"): {"data": [{"id": "gemma-3-270m-it", "max_context_length": 32768,
                                              "loaded_context_length": 8192}]},
    },
}


def make_server(routes, fail_first=0, fail_status=503):
    seen = []
    state = {"fails": fail_first}

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, code, obj, headers=()):
            data = json.dumps(obj).encode()
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method):
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n)) if n else None
            seen.append((method, self.path, body))
            if self.path == "/v1/chat/completions":
                if state["fails"] > 0:
                    state["fails"] -= 1
                    return self._send(fail_status, {"error": "busy"}, [("Retry-After", "0")])
                return self._send(200, {"choices": [{"message": {"content": json.dumps(REPLY)},
                                                     "finish_reason": "stop"}],
                                        "usage": {"prompt_tokens": 100, "completion_tokens": 40}})
            route = routes.get((method, self.path))
            if route == "tokens" and body and "content" in body:
                return self._send(200, {"tokens": list(range(len(body["content"].split())))})
            if route == "count" and body and "prompt" in body:
                return self._send(200, {"count": len(body["prompt"].split()), "max_model_len": 16384})
            if isinstance(route, dict):
                return self._send(200, route)
            return self._send(404, {"error": "not found"})

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, seen


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
