"""Judge benchmark: the embedded model (Gemma 3 270M Q4_K_M) on 2 threads, and a stand-in server for concurrency.

Prints, from one run:
 (a) one judged sample (prompt build + token count + grammar-constrained decoding + parsing + expected scores)
     vs a bare llama-cpp-python completion of the same prompt tokens and the same number of output tokens,
     both from a cold cache (target <= 1.10), on a ~3,000-token case;
 (b) 7-sample self-consistency vs one sample, both cold (target <= 2.0): the prompt is evaluated once;
 (c) prompt and decode tokens per second;
 (d) client concurrency: batch throughput against a local stand-in server (its own process) that answers every chat
     request after a fixed latency (0.2 s), 8 summaries in flight vs 1, best of --repeats (target >= 6x);
 (e) exact early stopping replayed on the recorded sample results (sample_data/judge_results.jsonl): mean samples
     used of 7 and the time they took vs all 7 (from the recorded per-sample timings);
 (f) one fresh sample summary judged end to end in a fresh process (python start, model load, judge; early stopping
     on), first with no saved rubric prefix (it is evaluated and saved), then with it (loaded), best of --repeats
     (target <= 30 s); the second process then judges it again with early stopping off for the real-run comparison.
(g) both embedded models (the 1.5B default judge and the 270M smoke-test model), measured in one run: in a fresh
     process with the saved rubric prefix (warmed by an earlier process), the three summaries of one sample case,
     one greedy pass each: seconds per summary for the first (the case's notes read) and the next two (the notes
     reused: the prompt puts everything the case's summaries share first), prompt and decode tokens per second.
(h) claim verification with both embedded models, in one run: one sample summary of the case given to (g) (its
     notes read once, then every claim asked as one yes/no question): seconds to read the record, median seconds per
     question after it, questions per summary.
(i) the realdev judge set (bench/judge_realdev.py: 15 real short MTS-Dialog conversations of the test split, four
     summaries each) judged through the command line, one greedy pass each: seconds, prompt tokens, tokens read and
     tokens reused per summary; with --against COMMIT the same set judged by that commit's command line first (a
     temporary worktree, the same machine and run), and the ratio of their times and their largest score difference.
(a)-(c) run without the saved prefix (no model hash is given), so they measure a cold prompt as before.
(a)-(f) measure the model named by SUMCHECK_EMBEDDED_MODEL (default: the 1.5B).
Usage: python bench/judge_bench.py [--threads 2] [--case-tokens 3000] [--repeats 2] [--parts abcdefghi]
                                   [--realdev-cases 15] [--against COMMIT]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.judge import Judge, JudgeParams, JudgeResult, build_messages, open_llama_backend, run_batch  # noqa: E402
from engine.data import load_paths  # noqa: E402
from engine.core import Case, Dataset, Note  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import judge_realdev  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def make_case(be, target_tokens: int) -> tuple[Dataset, str]:
    """The first sample case, its notes extended with the next cases' notes until the notes reach ~target tokens."""
    ds, _ = load_paths([SAMPLE_BUNDLE])
    base = ds.cases[0]
    summary = ds.summaries_for(base.case_id)[0]
    notes, i = list(base.notes), 1
    while be.count_tokens("\n".join(n.text for n in notes)) < target_tokens and i < len(ds.cases):
        for n in ds.cases[i].notes:
            notes.append(Note(str(len(notes) + 1), n.text, n.date, n.note_type, n.author_specialty))
            if be.count_tokens("\n".join(x.text for x in notes)) >= target_tokens:
                break
        i += 1
    case = Case(base.case_id, base.target_specialty, tuple(notes))
    return Dataset("bench", [case], [summary], []), summary.summary_id


def cold(be):
    be._cached_prompt, be._cached_logits = None, None
    be.llm.reset()


def embedded_parts(args) -> None:
    be, sha = open_llama_backend("", n_ctx=8192, n_threads=args.threads)
    ds, sid = make_case(be, args.case_tokens)
    case = ds.cases[0]
    note_tokens = be.count_tokens("\n".join(n.text for n in case.notes))
    prompt = be.render(build_messages(case, ds.summary(sid)))
    tokens = be.tokenize(prompt)
    print(f"model: {be.path.name} ({be.quantization}), threads {args.threads}")
    print(f"case: {len(case.notes)} notes, {note_tokens} note tokens; whole prompt {len(tokens)} tokens")
    # (a)-(c) measure a cold prompt: no model hash, so no saved rubric prefix is used (that is (f))
    one_judge, bare, n_out = [], [], 0
    for _ in range(args.repeats):
        cold(be)
        t0 = time.perf_counter()
        r = Judge(be, None, JudgeParams(n_samples=1)).judge(ds, sid)
        one_judge.append(time.perf_counter() - t0)
        n_out = r.timing.decode_tokens
        cold(be)
        t0 = time.perf_counter()
        t_first, n_bare = None, 0
        for _chunk in be.llm.create_completion(tokens, max_tokens=n_out, temperature=0.0, stream=True):
            t_first = t_first or time.perf_counter()
            n_bare += 1
        t1 = time.perf_counter()
        # if the bare completion stopped early (end of sequence), scale its decode time to the same length
        bare.append((t_first - t0) + (t1 - t_first) * n_out / max(n_bare, 1))
    a = min(one_judge) / min(bare)
    print(f"(a) one judged sample {min(one_judge):.2f} s vs bare completion {min(bare):.2f} s "
          f"({n_out} output tokens): ratio {a:.3f} (target <= 1.10) -> {'MET' if a <= 1.10 else 'MISSED'}")

    t_one = t_seven = float("inf")
    for _ in range(args.repeats):  # best of: the machine is shared
        cold(be)
        t0 = time.perf_counter()
        r1 = Judge(be, None, JudgeParams(n_samples=1, seed=99)).judge(ds, sid)
        t_one = min(t_one, time.perf_counter() - t0)
        cold(be)
        t0 = time.perf_counter()
        r7 = Judge(be, None, JudgeParams(n_samples=7, seed=99, early_stop=False)).judge(ds, sid)
        t_seven = min(t_seven, time.perf_counter() - t0)
    b = t_seven / t_one
    print(f"(b) 7-sample self-consistency {t_seven:.2f} s vs one sample {t_one:.2f} s: ratio {b:.3f} "
          f"(target <= 2.0) -> {'MET' if b <= 2.0 else 'MISSED'}")
    tm = r7.timing
    print(f"(c) prompt {tm.prompt_tokens} tokens at {tm.prompt_tps:.1f} tokens/s; decode {tm.decode_tokens} tokens "
          f"at {tm.decode_tps:.1f} tokens/s (7 samples); statuses: {r1.status}, {r7.status}")


# ------------------------------------------------------------------------------------------- (d) concurrency

STUB_REPLY = {"cited": 4, "accurate": 5, "thorough": 3, "useful": 4, "organized": 4, "comprehensible": 5,
              "succinct": 4, "abstraction": "no", "synthesized": "NA", "stigmatizing_notes": "no",
              "stigmatizing_summary": "no"}


STUB_SERVER = r"""
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
latency, reply = float(sys.argv[1]), sys.argv[2]
state, lock = {"in_flight": 0, "max": 0}, threading.Lock()

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                out = dict(state)
                state["max"] = 0
            return self._send(out)
        self._send({"default_generation_settings": {"n_ctx": 32768}} if self.path == "/props" else
                   {"data": [{"id": "stub.gguf", "meta": {"n_ctx_train": 32768}}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path == "/tokenize":
            return self._send({"tokens": list(range(len(body["content"].split())))})
        with lock:
            state["in_flight"] += 1
            state["max"] = max(state["max"], state["in_flight"])
        time.sleep(latency)
        with lock:
            state["in_flight"] -= 1
        self._send({"choices": [{"message": {"content": reply}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 40}})

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print(srv.server_port, flush=True)
srv.serve_forever()
"""


def stub_server(latency: float) -> tuple[subprocess.Popen, str]:
    """A llama.cpp-server stand-in on loopback, in its own process (as a real server is): every chat request is
    answered after ``latency`` seconds; GET /stats says how many were in flight at most since the last look."""
    proc = subprocess.Popen([sys.executable, "-c", STUB_SERVER, str(latency), json.dumps(STUB_REPLY)],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def concurrency_part(args) -> None:
    import requests

    from engine.llm import OpenAIHTTPBackend

    ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
    ids = [s.summary_id for s in ds.summaries[: args.summaries]]
    proc, base = stub_server(args.latency)
    try:
        params = JudgeParams(n_samples=args.server_samples, early_stop=False)
        rate, seen = {}, {}
        for _ in range(args.repeats):  # best of: the machine is shared
            for n in (1, 8):
                judge = Judge(OpenAIHTTPBackend(base + "/v1", model="stub.gguf"), None, params)
                requests.get(base + "/stats", timeout=10)
                t0 = time.perf_counter()
                results = list(run_batch(judge, ds, ids, concurrency=n))
                dt = time.perf_counter() - t0
                assert [r.summary_id for r in results] == ids and all(r.status == "scored" for r in results)
                at_once = requests.get(base + "/stats", timeout=10).json()["max"]
                print(f"    {n} in flight: {len(ids)} summaries x {args.server_samples} requests in {dt:.2f} s = "
                      f"{len(ids) / dt:.2f} summaries/s (server saw at most {at_once} at once)")
                if len(ids) / dt > rate.get(n, 0):
                    rate[n], seen[n] = len(ids) / dt, at_once
        d = rate[8] / rate[1]
        print(f"(d) client concurrency against a stand-in server process ({args.latency:g} s per chat request), best "
              f"of {args.repeats}: 8 in flight {rate[8]:.2f} summaries/s vs 1 in flight {rate[1]:.2f}: {d:.2f}x "
              f"(target >= 6x) -> {'MET' if d >= 6 else 'MISSED'}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ------------------------------------------------------------------------------------------- (e) early stopping


def early_stop_replay_part(args) -> None:
    from engine.judge import aggregate, all_fixed

    recorded = ROOT / "tests" / "data" / "judge_results_gemma_7samples.jsonl"  # the smoke-test model, 7 samples
    results = [JudgeResult.from_json(x) for x in recorded.read_text().splitlines() if x.strip()]
    used, t_early, t_full, same = [], 0.0, 0.0, 0
    for r in results:
        n = len(r.samples)
        k = next((j for j in range(1, n + 1) if all_fixed([s.values for s in r.samples[:j] if s.ok], j, n)), n)
        used.append(k)
        t_full += r.timing.prompt_seconds + sum(s.decode_seconds for s in r.samples)
        t_early += r.timing.prompt_seconds + sum(s.decode_seconds for s in r.samples[:k])
        early = aggregate(r.samples[:k])
        same += all((early[i].median, early[i].is_na) == (v.median, v.is_na) for i, v in r.items.items())
    hist = {k: used.count(k) for k in sorted(set(used))}
    print(f"(e) early stopping replayed on the {len(results)} recorded 7-sample results of the smoke-test model: "
          f"mean {statistics.mean(used):.2f} "
          f"of 7 samples (samples used: count {hist}); recorded time {t_early:.1f} s vs {t_full:.1f} s for all 7 "
          f"({t_early / t_full:.3f}); identical medians in {same}/{len(results)}")


# ------------------------------------------------------------------------------------------- (f) fresh process

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from engine.judge.runner import Judge, JudgeParams, open_llama_backend
from engine.data.loading import load_paths
from engine.sample import SAMPLE_BUNDLE
ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
sid = sys.argv[2]
be, sha = open_llama_backend("", n_ctx=8192, n_threads=int(sys.argv[3]))
t1 = time.perf_counter()
r = Judge(be, sha, JudgeParams()).judge(ds, sid)
t2 = time.perf_counter()
out = {"load": t1 - t0, "judge": t2 - t1, "end_to_end": t2 - t0, "samples": len(r.samples),
       "prompt_tokens": r.timing.prompt_tokens, "prompt_s": r.timing.prompt_seconds,
       "decode_s": r.timing.decode_seconds,
       "prefix": dict(be.prefix_stats), "medians": r.medians(), "status": r.status}
if sys.argv[4] == "full":
    be._cached_prompt = None; be.llm.reset()  # cold again (the saved prefix is loaded)
    t3 = time.perf_counter()
    f = Judge(be, sha, JudgeParams(early_stop=False)).judge(ds, sid)
    out.update(full_judge=time.perf_counter() - t3, full_samples=len(f.samples), full_medians=f.medians())
print(json.dumps(out))
"""


def fresh_process_part(args) -> None:
    ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
    sid = args.summary or ds.summaries[-1].summary_id
    with tempfile.TemporaryDirectory() as saved_dir:
        best: dict[str, dict] = {}
        full: dict = {}
        for rep in range(args.repeats):
            for label in ("no saved prefix", "saved prefix"):
                # "no saved prefix": an empty cache folder each time (the first one becomes the saved one)
                with tempfile.TemporaryDirectory() as empty:
                    cache = saved_dir if (label == "saved prefix" or rep == 0) else empty
                    proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), sid, str(args.threads),
                                           "full" if label == "saved prefix" else "-"],
                                          env={**os.environ, "SUMCHECK_CACHE_DIR": cache}, capture_output=True,
                                          text=True, check=True)
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                p = out["prefix"]
                print(f"    {label}: end to end {out['end_to_end']:.2f} s: start and model load {out['load']:.2f} s, "
                      f"judge {out['judge']:.2f} s (prompt {out['prompt_tokens']} tokens in {out['prompt_s']:.2f} s, "
                      f"decode {out['decode_s']:.2f} s, {out['samples']} of 7 samples); rubric prefix {p['tokens']} "
                      f"tokens: {'loaded' if p['loaded'] else 'evaluated and saved' if p['saved'] else 'not used'}")
                if label not in best or out["end_to_end"] < best[label]["end_to_end"]:
                    best[label] = out
                if "full_judge" in out:  # best of each
                    full = {"samples": out["samples"], "full_samples": out["full_samples"],
                            "judge": min(out["judge"], full.get("judge", float("inf"))),
                            "full_judge": min(out["full_judge"], full.get("full_judge", float("inf"))),
                            "same": out["medians"] == out["full_medians"] and full.get("same", True)}
        a, b = best["no saved prefix"], best["saved prefix"]
        print(f"(f) fresh sample summary {sid} end to end in a fresh process (start, imports, model load, judge), "
              f"{args.threads} threads, best of {args.repeats}: {b['end_to_end']:.2f} s with the saved rubric prefix "
              f"(prompt {b['prompt_s']:.2f} s), {a['end_to_end']:.2f} s without (prompt {a['prompt_s']:.2f} s) "
              f"(target <= 30 s) -> {'MET' if b['end_to_end'] <= 30 else 'MISSED'}; medians identical: "
              f"{a['medians'] == b['medians']}")
        print(f"    early stopping on the real run: {full['samples']} of 7 samples, judge {full['judge']:.2f} s; with "
              f"early stopping off (same process, prefix loaded again): {full['full_samples']} samples, "
              f"{full['full_judge']:.2f} s (best of {args.repeats}); medians identical: {full['same']}")


# ------------------------------------------------------------------------------------ (g) both models, case reuse

CASE_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from engine.judge.runner import Judge, JudgeParams, open_llama_backend
from engine.data.loading import load_paths
from engine.sample import SAMPLE_BUNDLE
ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
be, sha = open_llama_backend("", n_ctx=8192, n_threads=int(sys.argv[3]), embedded_key=sys.argv[4])
judge = Judge(be, sha, JudgeParams(n_samples=1))
out = []
for s in ds.summaries_for(sys.argv[2]):
    t = time.perf_counter()
    r = judge.judge(ds, s.summary_id)
    out.append({"summary": s.summary_id, "seconds": time.perf_counter() - t, "prompt_tokens": r.timing.prompt_tokens,
                "prompt_s": r.timing.prompt_seconds, "decode_tokens": r.timing.decode_tokens,
                "decode_s": r.timing.decode_seconds, "prefix_loaded": be.prefix_stats["loaded"], "status": r.status})
print(json.dumps(out))
"""


def models_part(args) -> None:
    ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
    case_id = args.case or ds.cases[-1].case_id
    print(f"(g) one sample case ({case_id}, {len(ds.summaries_for(case_id))} summaries), one greedy pass each, a fresh "
          f"process per model with its saved rubric prefix, {args.threads} threads:")
    with tempfile.TemporaryDirectory() as cache:
        for key in ("qwen2.5-coder-1.5b", "gemma3-270m"):
            runs = []
            for _ in range(2):  # the first process saves the rubric prefix, the second is measured
                proc = subprocess.run([sys.executable, "-c", CASE_CHILD, str(ROOT), case_id, str(args.threads), key],
                                      env={**os.environ, "SUMCHECK_CACHE_DIR": cache}, capture_output=True, text=True)
                if proc.returncode:
                    print(f"    {key}: failed: {proc.stderr.strip().splitlines()[-1:]}")
                    break
                runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            if len(runs) < 2:
                continue
            rows = runs[1]
            first, rest = rows[0], rows[1:]
            ptps = first["prompt_tokens"] / first["prompt_s"] if first["prompt_s"] else float("nan")
            dtps = sum(r["decode_tokens"] for r in rows) / max(1e-9, sum(r["decode_s"] for r in rows))
            print(f"    {key}: first summary {first['seconds']:.1f} s ({first['prompt_tokens']} prompt tokens, "
                  f"{ptps:.0f} prompt tokens/s after the saved prefix; prefix loaded: {bool(first['prefix_loaded'])}); "
                  f"next {len(rest)} (notes reused): " + ", ".join(f"{r['seconds']:.1f} s" for r in rest)
                  + f"; decode {dtps:.1f} tokens/s; case total {sum(r['seconds'] for r in rows):.1f} s "
                  f"(fresh-summary target <= 45 s -> {'MET' if first['seconds'] <= 45 else 'MISSED'})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--case-tokens", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--parts", default="abcdefghi", help="which parts to run (a-c run together)")
    ap.add_argument("--realdev-cases", type=int, default=15, help="(i) conversations in the realdev judge set")
    ap.add_argument("--against", default="", help="(i) also judge the realdev set with this commit")
    ap.add_argument("--case", default="", help="(g) the sample case (default: the last one)")
    ap.add_argument("--latency", type=float, default=0.2, help="(d) the stand-in server's seconds per request")
    ap.add_argument("--summaries", type=int, default=24, help="(d) summaries judged at each concurrency")
    ap.add_argument("--server-samples", type=int, default=2, help="(d) samples per summary")
    ap.add_argument("--summary", default="", help="(f) the sample summary to judge (default: the last one)")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    if set("abc") & set(args.parts):
        embedded_parts(args)
    if "d" in args.parts:
        concurrency_part(args)
    if "e" in args.parts:
        early_stop_replay_part(args)
    if "f" in args.parts:
        fresh_process_part(args)
    if "g" in args.parts:
        models_part(args)
    if "h" in args.parts:
        verification_part(args)
    if "i" in args.parts:
        judge_realdev.run_part(args.realdev_cases, args.threads, args.against)


if __name__ == "__main__":
    main()
