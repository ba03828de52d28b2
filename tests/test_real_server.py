"""End to end against a real OpenAI-compatible server process: llama-cpp-python's own server serving the embedded
GGUF on loopback. The judge talks to it over HTTP exactly as it would to a hospital's llama.cpp/vLLM server."""
import os
import socket
import subprocess
import sys
import time

import pytest
import requests

from engine.llm.http_backend import OpenAIHTTPBackend
from engine.judge.results import STATUS_SCORED, JudgeParams
from engine.judge.runner import Judge
from engine.llm.modelfiles import embedded_model_path
from engine.core.models import Case, Dataset, Note, Summary
from engine.core.rubric import ITEMS

SHORT = Dataset("short", [Case("c1", "Cardiology", (
    Note("1", "67 y/o man with new atrial fibrillation. Started apixaban 5 mg twice daily."),
    Note("2", "Echo: LVEF 35%. Cardiology follow-up in 4 weeks.")))],
    [Summary("c1-s1", "c1", "New AF on apixaban. <NoteID:1> LVEF 35%. <NoteID:2>")])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = (tmp_path_factory.mktemp("server") / "server.log").open("w+")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path()),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
                             "--model_alias", "gemma-3-270m"],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail(f"llama_cpp.server exited: {log.read()[-2000:]}")
        try:
            if requests.get(url + "/v1/models", timeout=2).ok:
                break
        except requests.RequestException:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama_cpp.server did not start in 120 s")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_judge_through_a_real_server(server):
    be = OpenAIHTTPBackend(server + "/v1", model="gemma-3-270m", n_ctx=4096)
    assert be.list_models() == ["gemma-3-270m"]
    r = Judge(be, None, JudgeParams(n_samples=1)).judge(SHORT, "c1-s1")
    assert r.status == STATUS_SCORED, (r.reason, [s.raw for s in r.samples])
    for s in r.samples:  # schema-constrained by the server: every reply parses, every value within its scale
        assert s.ok, s.error
        for item in ITEMS:
            v = s.values.get(item.key)
            if v is not None:
                assert v in item.allowed_values
    assert r.provenance.backend == "openai-http" and r.timing.prompt_tokens > 0
    assert "token_count" in r.provenance.backend_params
