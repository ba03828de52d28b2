"""OpenAI-compatible HTTP backend against a small stand-in server on loopback (protocol logic only)."""
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from conftest import BUNDLE
from engine.llm.backends import BackendError
from engine.llm.http_backend import OpenAIHTTPBackend
from engine.judge.results import STATUS_SCORED, JudgeParams
from engine.judge.runner import Judge
from engine.data.loading import load_paths

REPLY = {"cited": 4, "accurate": 5, "thorough": 3, "useful": 4, "organized": 4, "comprehensible": 5,
         "succinct": 4, "abstraction": "no", "synthesized": "NA", "stigmatizing_notes": "no",
         "stigmatizing_summary": "no"}


class Handler(BaseHTTPRequestHandler):
    seen = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.seen.append((self.path, body))
        if self.path == "/tokenize":
            out = {"tokens": list(range(len(body["content"].split())))}
        else:
            text = json.dumps(REPLY)
            out = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 40}}
            if body.get("logprobs"):
                toks = [text[: text.index(":") + 1], " 4", text[text.index(":") + 3:]]
                out["choices"][0]["logprobs"] = {"content": [
                    {"token": toks[0], "top_logprobs": []},
                    {"token": " 4", "top_logprobs": [{"token": " 4", "logprob": math.log(0.5)},
                                                     {"token": " 5", "logprob": math.log(0.5)}]},
                    {"token": toks[2], "top_logprobs": []}]}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/v1"
    srv.shutdown()


def test_http_backend_judges_with_schema_and_logprobs(server):
    ds, _ = load_paths([BUNDLE])
    be = OpenAIHTTPBackend(server, model="llama-3.1-8b", n_ctx=100_000)
    r = Judge(be, None, JudgeParams(n_samples=2)).judge(ds, ds.summaries[0].summary_id)
    assert r.status == STATUS_SCORED and r.items["cited"].median == 4.0
    assert r.items["cited"].expected == pytest.approx(4.5)  # 0.5 * 4 + 0.5 * 5
    chats = [b for p, b in Handler.seen if p == "/v1/chat/completions"]
    assert chats[0]["response_format"]["type"] == "json_schema"
    assert chats[0]["messages"][0]["role"] == "system" and chats[0]["model"] == "llama-3.1-8b"
    assert chats[0]["temperature"] == 0.0 and chats[1]["temperature"] == 0.7
    assert r.provenance.backend == "openai-http" and r.provenance.model_sha256 is None


def test_http_backend_unreachable():
    be = OpenAIHTTPBackend("http://127.0.0.1:9", n_ctx=1000, timeout=2)
    with pytest.raises(BackendError, match="cannot reach"):
        be.count_tokens("hello")
