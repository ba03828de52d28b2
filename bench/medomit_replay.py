"""MED-OMIT's model work for a case, written down here and replayed on another machine (a lent GPU).

The minutes a MED-OMIT run takes are almost all the model's: fact lists, differential, importance, clusters (all
generated) and one closed question per fact and summary. A lent GPU machine may not hold the product's Python
environment or its embedding model, but it can build llama-cpp-python and load the same GGUF. So:

  record   runs MED-OMIT here on the chosen sample cases with every generated step served from a step store
           (``bench/out/medomit_<model>.sqlite``, filled by ``bench/medomit_eval.py``), exactly as a run from
           scratch would ask them: each step once (a case's later summaries read the case-level steps from the
           cache, as in a real run), each closed question the omission decision asks, in order. The closed
           questions are written down and answered "undecided" here (which questions are asked depends on
           coverage only, not on the answers). It writes the calls as JSON lines, with the seconds the rest of
           the run (linking, passages, embeddings, coverage) took on this machine.
  replay   loads the GGUF with :class:`engine.llm.llama.LlamaCppBackend` (the product's backend; ``--gpu-layers
           -1`` offloads every layer) and makes the same calls in the same order — each generated step through
           ``generate`` with its grammar and reply budget, each question through ``next_token`` with the summary
           kept evaluated — and prints the model's seconds per case and step kind, beside the seconds the same
           steps took when they ran on the machine that filled the step store.

A case's minutes there are the replayed model seconds plus the rest measured here (printed separately: that part
does not move to the GPU in this replay). A reply the other machine's arithmetic words differently may be cut
off where the stored one was not; such steps are counted and named (a real run would ask them again in halves).

Usage: python bench/medomit_replay.py record --case-ids id-01[,card-01] --out CALLS.jsonl [--model KEY] [--facts SOURCE]
       python bench/medomit_replay.py replay --calls CALLS.jsonl [MORE.jsonl] --gguf MODEL.gguf [--gpu-layers -1] [--out F] [--limit N]
(replay imports llama_cpp before NumPy: on one GPU machine the model load crashed when NumPy came first.)
On a machine that fetches nothing, build llama-cpp-python there from its source with
CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90" (Hopper), let the GGUF travel in pieces (``split -b``),
join them and compare the sha256 with the model's before replaying.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from wrapped_backend import WrappedBackend  # noqa: E402


class Recorder(WrappedBackend):
    """Step cache and backend in one: serves each generated step from ``store`` and writes down the calls a run
    from scratch would make (a step the first time its key is asked; every closed question)."""

    def __init__(self, store, backend):
        from dataclasses import replace

        super().__init__(backend)
        self.store = store
        self.capabilities = replace(backend.capabilities, next_token=True)  # answers the closed questions itself
        self.calls: list[dict] = []
        self.misses: list[str] = []
        self._seen: set[str] = set()
        self._pending = None
        self.case = ""

    # the step cache: a key seen before is a cache hit, as in a real run; a new one goes through generate
    def get_llm_step(self, key):
        if key in self._seen:
            return self.store.get_llm_step(key)
        self._seen.add(key)
        self._pending = (key, self.store.get_llm_step(key))
        return None

    def put_llm_step(self, key, step, model_id, value):
        return None

    def generate(self, prompt, schema, max_tokens, temperature, seed, want_logprobs=False):
        from engine.llm import BackendError, Generation

        key, hit = self._pending or ("", None)
        self._pending = None
        if hit is None:
            self.misses.append(key)
            raise BackendError("this step is not in the step store (run bench/medomit_eval.py on the case first)")
        d = json.loads(hit)
        segments = [[t, tpl] for t, tpl in getattr(prompt, "segments", ((str(prompt), False),))]
        self.calls.append({"case": self.case, "kind": "step", "prompt": segments, "schema": schema,
                           "max_tokens": max_tokens, "seed": seed, "stored_seconds": float(d.get("seconds", 0.0)),
                           "stored_completion_tokens": int(d.get("completion_tokens", 0))})
        return Generation(d["raw"], int(d.get("prompt_tokens", 0)), int(d.get("completion_tokens", 0)), 0.0, 0.0,
                          "stop")

    def next_token(self, messages, keep):
        from engine.llm import NextToken

        self.calls.append({"case": self.case, "kind": "question", "messages": list(messages), "keep": keep})
        return NextToken({"yes": math.log(0.5), "no": math.log(0.5)}, 0, 0, 0.0)


def record(args) -> None:
    from engine.data import Store, load_paths
    from engine.evidence import Embedder
    from engine.evidence.medomit import MedOmit
    from engine.judge import open_llama_backend
    from engine.sample import SAMPLE_BUNDLE

    ds, _ = load_paths([SAMPLE_BUNDLE], name="eval")
    store = Store(ROOT / "bench" / "out" / f"medomit_{args.model}.sqlite")
    be, sha = open_llama_backend("", n_ctx=args.ctx, n_threads=args.threads, embedded_key=args.model)
    rec = Recorder(store, be)
    mo = MedOmit(rec, sha, cache=rec, embedder=Embedder(), facts=args.facts)
    header = {"kind": "header", "model_sha256": sha, "n_ctx": args.ctx, "facts": args.facts, "cases": {}}
    for cid in [c.strip() for c in args.case_ids.split(",") if c.strip()]:
        rec.case = f"{cid} ({args.facts})"
        n0, t0 = len(rec.calls), time.perf_counter()
        statuses = []
        for s in [s for s in ds.summaries if s.case_id == cid]:
            res = mo.run(ds.case(cid), s)
            statuses.append(f"{s.summary_id}: {res.status}" + (f" at {res.failed_step}" if res.status != "complete"
                                                                 else f", {len(res.scores)} facts"))
        rest = time.perf_counter() - t0
        mine = rec.calls[n0:]
        header["cases"][rec.case] = {"summaries": statuses, "steps": sum(c["kind"] == "step" for c in mine),
                                "questions": sum(c["kind"] == "question" for c in mine),
                                "rest_seconds_here": round(rest, 1),
                                "stored_step_seconds": round(sum(c.get("stored_seconds", 0.0) for c in mine), 1)}
        print(rec.case, json.dumps(header["cases"][rec.case]), flush=True)
    if rec.misses:
        print(f"{len(rec.misses)} steps were not in the step store; their cases are incomplete", file=sys.stderr)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for c in rec.calls:
            fh.write(json.dumps(c) + "\n")
    print(f"{len(rec.calls)} calls written to {args.out}")


def replay_prompt(recorded):
    """The rendered prompt of a recorded step: its segments, so that the chat template's control strings are
    tokenised as control tokens and the data as text, exactly as in the recorded run. A recording made before the
    segments were kept holds one plain string, which replays with the template's text tokenised as data."""
    from engine.llm import RenderedPrompt

    if isinstance(recorded, str):
        return recorded
    return RenderedPrompt([(t, bool(tpl)) for t, tpl in recorded])


def replay(args) -> None:
    import llama_cpp  # noqa: F401 - before NumPy (see the module docstring)

    from engine.llm import LlamaCppBackend, gpu_offload_supported

    files = [Path(f).read_text(encoding="utf-8").splitlines() for f in args.calls]
    headers = [json.loads(lines[0]) for lines in files]
    calls = [json.loads(x) for lines in files for x in lines[1:]]
    cases = {cid: info for h in headers for cid, info in h["cases"].items()}  # case -> what record wrote of it
    if len({h["n_ctx"] for h in headers}) != 1 or len({h["model_sha256"] for h in headers}) != 1:
        raise SystemExit("the recordings differ in model or context size; replay them separately")
    t0 = time.perf_counter()
    be = LlamaCppBackend(args.gguf, n_ctx=headers[0]["n_ctx"], n_threads=args.threads, n_gpu_layers=args.gpu_layers)
    load = time.perf_counter() - t0
    out = {"llama_cpp": llama_cpp.__version__, "offload_supported": gpu_offload_supported(),
           "gpu_layers": args.gpu_layers, "load_seconds": round(load, 1), "cases": {}}
    print(json.dumps(out), flush=True)
    for cid in cases:
        mine = [c for c in calls if c["case"] == cid][: args.limit or None]
        by = {"step": 0.0, "question": 0.0}
        gen_tokens = cut = invalid = 0
        stored = 0.0
        t_case = time.perf_counter()
        for c in mine:
            t = time.perf_counter()
            if c["kind"] == "step":
                g = be.generate(replay_prompt(c["prompt"]), c["schema"], c["max_tokens"], 0.0, c["seed"], want_logprobs=False)
                gen_tokens += g.completion_tokens
                stored += c["stored_seconds"]
                if g.finish_reason == "length":
                    cut += 1
                else:
                    try:
                        json.loads(g.text)
                    except ValueError:
                        invalid += 1
            else:
                be.next_token(c["messages"], c["keep"])
            by[c["kind"]] += time.perf_counter() - t
        wall = time.perf_counter() - t_case
        row = {"model_seconds": round(wall, 1), "generated_steps_seconds": round(by["step"], 1),
               "questions_seconds": round(by["question"], 1),
               "steps": sum(c["kind"] == "step" for c in mine), "questions": sum(c["kind"] == "question" for c in mine),
               "generated_tokens": gen_tokens, "cut_off": cut, "invalid_json": invalid,
               "same_steps_stored_seconds": round(stored, 1),
               "rest_seconds_recorded": cases[cid]["rest_seconds_here"]}
        out["cases"][cid] = row
        print(cid, json.dumps(row), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--case-ids", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--model", default="qwen2.5-coder-1.5b")
    r.add_argument("--ctx", type=int, default=8192)
    r.add_argument("--facts", default="model", help="the fact source (engine.evidence.medomit.facts)")
    r.add_argument("--threads", type=int, default=0)
    p = sub.add_parser("replay")
    p.add_argument("--calls", required=True, nargs="+")
    p.add_argument("--gguf", required=True)
    p.add_argument("--gpu-layers", type=int, default=-1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--out", default="")
    p.add_argument("--limit", type=int, default=0, help="only the first N calls of each case (a quick check)")
    args = ap.parse_args()
    record(args) if args.cmd == "record" else replay(args)


if __name__ == "__main__":
    main()
