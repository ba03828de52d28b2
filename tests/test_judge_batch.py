"""Batch judging against an OpenAI-compatible server with several summaries in flight (run_batch(concurrency=N)).

The server is a stand-in on loopback (llama.cpp dialect) that answers each chat request after a fixed latency that
depends on the request, so summaries finish out of order. Checked: results come back in summary order, each is
stored as soon as it is finished, cached ones are skipped, cancel starts nothing new, an error surfaces in order,
callbacks run in the caller's thread, and an in-process backend stays sequential."""
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import BUNDLE
from engine.llm.backends import BackendError
from engine.llm.http_backend import OpenAIHTTPBackend
from engine.judge.runner import Judge, run_batch
from engine.judge.results import JudgeParams, JudgeResult
from engine.data.loading import load_paths
from fakes import REPLY, SlowFake


class StubServer:
    """llama.cpp-server stand-in: /props, /v1/models, /tokenize (one token per word) and /v1/chat/completions,
    which sleeps ``latency(user message)`` seconds, answers REPLY, and records what was in flight."""

    def __init__(self, latency, fail_when=None):
        self.latency, self.fail_when = latency, fail_when
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = self.chats = 0
        self.finished: list[str] = []  # user messages, in the order their replies went out
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/props":
                    return self._send(200, {"default_generation_settings": {"n_ctx": 32768}})
                if self.path == "/v1/models":
                    return self._send(200, {"data": [{"id": "stub.gguf", "meta": {"n_ctx_train": 32768}}]})
                return self._send(404, {"error": "not found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                if self.path == "/tokenize":
                    return self._send(200, {"tokens": list(range(len(body["content"].split())))})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                user = body["messages"][-1]["content"]
                with outer.lock:
                    outer.chats += 1
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    time.sleep(outer.latency(user))
                    if outer.fail_when and outer.fail_when(user):
                        return self._send(400, {"error": "this one fails"})
                    self._send(200, {"choices": [{"message": {"content": json.dumps(REPLY)},
                                                  "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": 100, "completion_tokens": 40}})
                finally:
                    with outer.lock:
                        outer.in_flight -= 1
                        outer.finished.append(user)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_port}/v1"

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def varied(user: str) -> float:
    """0.03 s or 0.25 s, fixed per request: later summaries often finish before earlier ones."""
    return 0.25 if hashlib.sha256(user.encode()).digest()[0] % 2 else 0.03


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE], name="sample")[0]


@pytest.fixture
def stored(ds, store):
    store.import_dataset(ds, name="sample")
    return store


def judge_for(server, **params):
    be = OpenAIHTTPBackend(server.url, model="stub.gguf", retries=0)
    return Judge(be, None, JudgeParams(**{"n_samples": 1, **params}))


def test_results_come_back_in_order_and_are_stored(ds, stored):
    srv = StubServer(varied)
    try:
        ids = [s.summary_id for s in ds.summaries[:12]]
        judge = judge_for(srv)
        main = threading.get_ident()
        threads, done_order, partials = set(), [], []

        def progress(p):
            threads.add(threading.get_ident())
            if p.message == "scored":
                done_order.append(p.summary_id)

        def on_partial(p):
            threads.add(threading.get_ident())
            partials.append(p.summary_id)

        results = list(run_batch(judge, ds, ids, store=stored, dataset_name="sample", progress=progress,
                                 on_partial=on_partial, concurrency=4))
        assert [r.summary_id for r in results] == ids  # stable order
        assert sorted(done_order) == sorted(ids) and done_order != ids  # they did finish out of order
        assert 2 <= srv.max_in_flight <= 4 and srv.chats == 12
        assert threads == {main}  # every callback ran in the caller's thread
        assert sorted(partials) == sorted(ids)
        for r in results:  # every result is stored under its cache key, exactly as yielded
            assert not r.from_cache and r.status == "scored"
            assert JudgeResult.from_json(stored.get_judge_result("sample", r.cache_key)).medians() == r.medians()
        # the same medians as a sequential run
        again = list(run_batch(judge, ds, ids, concurrency=1))
        assert [r.medians() for r in again] == [r.medians() for r in results]
    finally:
        srv.close()


def test_cached_results_are_skipped(ds, stored):
    srv = StubServer(lambda user: 0.05)
    try:
        ids = [s.summary_id for s in ds.summaries[:10]]
        judge = judge_for(srv)
        list(run_batch(judge, ds, ids[:4], store=stored, dataset_name="sample", concurrency=4))
        assert srv.chats == 4
        results = list(run_batch(judge, ds, ids, store=stored, dataset_name="sample", concurrency=4))
        assert [r.summary_id for r in results] == ids
        assert [r.from_cache for r in results] == [True] * 4 + [False] * 6
        assert srv.chats == 10  # only the six new ones were sent
        assert all(r.from_cache for r in run_batch(judge, ds, ids, store=stored, dataset_name="sample",
                                                   concurrency=4))
        assert srv.chats == 10
    finally:
        srv.close()


def test_cancel_starts_nothing_new_and_resume_finishes(ds, stored):
    ids = [s.summary_id for s in ds.summaries[:12]]
    first = ds.summary(ids[0]).text
    srv = StubServer(lambda user: 0.02 if first in user else 0.3)  # the first summary finishes well ahead
    try:
        judge = judge_for(srv, n_samples=3, early_stop=False)
        stop = threading.Event()
        started: list[str] = []

        def progress(p):
            if p.message == "judging" and p.sample == 0:
                started.append(p.summary_id)
            if p.message == "scored":
                stop.set()  # cancel as soon as the first summary is finished

        got = list(run_batch(judge, ds, ids, store=stored, dataset_name="sample", progress=progress,
                             should_stop=stop.is_set, concurrency=3))
        assert [r.summary_id for r in got] == ids[:1]
        assert started == ids[:3]  # the three in flight when the stop came; nothing started after it
        assert len(got[0].samples) == 3  # nothing half-finished is returned ...
        assert len(stored.judge_results("sample")) == 1  # ... or stored
        sent = {sid: sum(ds.summary(sid).text in u for u in srv.finished) for sid in ids}
        # the first summary's three samples; the two others stopped after their current (first) sample — or
        # before sending it, when a loaded machine let the stop come first — and no other summary was sent
        assert sent[ids[0]] == 3 and all(sent[s] <= 1 for s in ids[1:3]) and not any(sent[s] for s in ids[3:])
        assert srv.chats == sum(sent.values())
        resumed = list(run_batch(judge, ds, ids[:4], store=stored, dataset_name="sample", concurrency=3))
        assert [r.summary_id for r in resumed] == ids[:4]
        assert [r.from_cache for r in resumed] == [True, False, False, False]
    finally:
        srv.close()


def test_an_error_surfaces_in_order(ds, stored):
    ids = [s.summary_id for s in ds.summaries[:8]]
    bad_text = ds.summary(ids[5]).text
    srv = StubServer(lambda user: 0.05 if bad_text in user else 0.2, fail_when=lambda user: bad_text in user)
    try:
        judge = judge_for(srv)
        got = []
        with pytest.raises(BackendError, match="HTTP 400"):
            for r in run_batch(judge, ds, ids, store=stored, dataset_name="sample", concurrency=4):
                got.append(r.summary_id)
        assert got == ids[:5]  # everything before the failing summary, in order, then the error
        assert srv.chats <= 8
    finally:
        srv.close()


def test_generator_closed_early_stops_the_workers(ds, stored):
    srv = StubServer(lambda user: 0.15)
    try:
        ids = [s.summary_id for s in ds.summaries[:12]]
        judge = judge_for(srv, n_samples=4, early_stop=False)
        gen = run_batch(judge, ds, ids, store=stored, dataset_name="sample", concurrency=4)
        first = next(gen)
        gen.close()  # e.g. the page was rerun: the in-flight summaries stop after their current sample
        assert first.summary_id == ids[0]
        time.sleep(0.4)
        settled = srv.chats
        time.sleep(0.4)
        assert srv.chats == settled < 4 * 12
    finally:
        srv.close()


def test_in_process_backend_stays_sequential(ds):
    be = SlowFake()
    ids = [s.summary_id for s in ds.summaries[:5]]
    results = list(run_batch(Judge(be, "sha", JudgeParams(n_samples=1)), ds, ids, concurrency=8))
    assert [r.summary_id for r in results] == ids and be.max_active == 1
    assert [ds.summary(i).text in p for i, p in zip(ids, be.order)] == [True] * 5
