"""Seconds for a summary's whole evidence (``python -m engine check``) on this machine, from nothing stored.

In a fresh workspace and a fresh folder of kept prompt states, with the default model:

0. set-up: the instruction block every prompt starts with (the rubric included) is evaluated once per model and
   kept (a probe record, no case of the sample);
1. ``check check-bench --summary CASE-s3`` (the sample imported under another name, so none of its shipped results
   applies): the first summary of a case with nothing stored: coverage and sentence support, the judge, claim
   verification and MED-OMIT, the record read once;
2. ``CASE-s1`` then ``CASE-s2``, each in a new process: further summaries of the case, the record loaded from disk
   (the "head read" column shows no record is read again).

Every run is its own process, so the figures include loading the model; the table gives per part its seconds, the
record tokens it read and loaded, and every prompt token it read, and the machine's measured reading and writing
speed (tokens per second), so figures from machines of other speeds compare. A "head" is what a part's prompts
share and keep evaluated: the case's record, or for MED-OMIT's omission questions the summary. Usage:
python bench/check_bench.py [--case rheum-01] [--threads 2] [--keep FOLDER]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATASET = "check-bench"  # the sample's cases under another name: no shipped result of the sample applies


def _env(folder: Path) -> dict:
    return {**os.environ, "SUMCHECK_WORKSPACE": str(folder / "workspace.sqlite"),
            "SUMCHECK_CACHE_DIR": str(folder / "cache"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


SETUP = """
import json, time
from engine.core.models import Case, Note
from engine.llm import case_record
from engine.judge.runner import open_llama_backend
t0 = time.perf_counter()
be, sha = open_llama_backend(n_ctx=8192, n_threads={threads})  # as the check opens it (the key depends on it)
t1 = time.perf_counter()
n = case_record.keep_records(be, sha)
probe = Case("probe", "Cardiology", (Note("1", "Probe note."),))
be.next_token(case_record.with_task(case_record.record_messages(probe), "Probe?"), case_record.KEEP)
t2 = time.perf_counter()
print(json.dumps({{"load_s": t1 - t0, "shared_tokens": n, "shared_s": t2 - t1}}))
"""

SPEED = """
import json, time
from engine.llm.llama import LlamaCppBackend
from engine.llm.modelfiles import default_embedded_key, embedded_model_path
be = LlamaCppBackend(embedded_model_path(default_embedded_key()), n_ctx=4096, n_threads={threads})
toks = be.tokenize("The patient was seen in clinic today for follow-up of hypertension and diabetes. " * 12)[:512]
t0 = time.perf_counter(); be._eval_cancellable(toks, 0, len(toks)); t1 = time.perf_counter()
schema = {{"type": "object", "properties": {{"a": {{"type": "string", "maxLength": 200}}}}, "required": ["a"]}}
g = be.generate(be.render([{{"role": "user", "content": "Write one long sentence about the heart in JSON."}}]),
                schema, 64, 0.0, 0, False)
print(json.dumps({{"read_tps": len(toks) / (t1 - t0), "write_tps": g.completion_tokens / max(g.decode_seconds, 1e-9)}}))
"""


def _python(code: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(summary: str, env: dict, folder: Path, threads: int) -> tuple[float, list[dict]]:
    out = folder / f"{summary}.jsonl"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "engine", "check", DATASET, "--summary", summary, "--out", str(out),
                    "--threads", str(threads), "--quiet"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    return wall, [json.loads(x) for x in out.read_text().splitlines() if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="rheum-01")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keep", help="keep the workspace and states in this folder (default: a temporary one)")
    args = ap.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="sumcheck-check-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = _env(folder)
    # the sample imported under another name: none of its shipped evidence applies, nothing is stored
    subprocess.run([sys.executable, "-m", "engine", "import", str(ROOT / "sample_data" / "pdsqi_sample"), "--name",
                    DATASET], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    speed = _python(SPEED.format(threads=args.threads), env)
    setup = _python(SETUP.format(threads=args.threads), env)
    print(f"machine: {os.cpu_count()} cores, {args.threads} threads; the model reads {speed['read_tps']:.0f} prompt "
          f"tokens/s and writes {speed['write_tps']:.1f} tokens/s")
    print(f"set-up (once per model): load {setup['load_s']:.1f} s; the shared instructions ({setup['shared_tokens']} "
          f"tokens) read and kept in {setup['shared_s']:.1f} s")
    print()
    print(f"{'run':<28} {'part':<13} {'status':<14} {'seconds':>8} {'head read':>12} {'head loaded':>14} "
          f"{'prompt read':>12}")
    for label, sid in (("first summary (nothing stored)", f"{args.case}-s3"),
                       ("next summary, new process", f"{args.case}-s1"),
                       ("next summary, new process", f"{args.case}-s2")):
        wall, parts = _check(sid, env, folder, args.threads)
        for p in parts:
            print(f"{label + ' ' + sid:<28.28} {p['part']:<13} {p['status']:<14} {p['seconds']:>8.1f} "
                  f"{p['head_tokens_read']:>12,} {p['head_tokens_loaded']:>14,} {p['prompt_tokens_read']:>12,}")
        total = sum(p["seconds"] for p in parts)
        print(f"{'':<28} {'all parts':<13} {'':<14} {total:>8.1f}   (process wall time with loading: {wall:.1f} s)")
        for p in parts:
            print(f"{'':<30}{p['part']}: {p['result']}")
    print(f"\nkept in {folder}" if args.keep else "")


if __name__ == "__main__":
    main()
