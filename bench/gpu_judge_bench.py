"""Judge benchmark on the installed llama.cpp build: the default judge with every layer offloaded vs CPU only.

Run on a machine whose llama-cpp-python is built with GPU support (CUDA, Metal, Vulkan …). Prints, from one run:
 (a) the build: llama-cpp-python version, whether it can offload, the GPU named by ``nvidia-smi`` when there is one;
 (b) every sample summary judged the default way (the 1.5B, one greedy pass, ``n_gpu_layers=-1``), in case order in
     one process, so a case's later summaries reuse its notes: seconds per summary (the first, which also reads the
     rubric prefix, and the median of the rest), prompt and decode tokens per second, the whole sample's time;
 (c) one case's summaries with 7 samples on the GPU (what a self-consistency configuration costs there);
 (d) the same case's summaries on the CPU of the same machine (``n_gpu_layers=0``), one greedy pass, so the GPU/CPU
     ratio comes from one run on one machine;
 (e) agreement of (b) with the shipped sample results (the same model and prompt, judged on 2 CPU cores): medians
     equal and the largest difference of an expected score; offloading changes the arithmetic, not the method.
Figures are written to ``--out`` as JSON as well.
Usage: python bench/gpu_judge_bench.py [--case CASE] [--cpu-threads N] [--out FILE]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.data import load_paths  # noqa: E402
from engine.judge import Judge, JudgeParams, JudgeResult, open_llama_backend  # noqa: E402
from engine.llm import QWEN_KEY, gpu_offload_supported  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "sample_data" / "judge_results.jsonl"


def gpu_name() -> str:
    if not shutil.which("nvidia-smi"):
        return "none found (no nvidia-smi)"
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip()


def row(r: JudgeResult, seconds: float) -> dict:
    t = r.timing
    return {"summary": r.summary_id, "case": r.case_id, "status": r.status, "seconds": round(seconds, 3),
            "prompt_tokens": t.prompt_tokens, "prompt_s": round(t.prompt_seconds, 3), "decode_tokens": t.decode_tokens,
            "decode_s": round(t.decode_seconds, 3), "samples": r.samples_taken,
            "medians": r.medians(), "expected": {k: v.expected for k, v in r.items.items()}}


def run(judge: Judge, ds, summary_ids: list[str]) -> list[dict]:
    rows = []
    for sid in summary_ids:
        t0 = time.perf_counter()
        r = judge.judge(ds, sid)
        rows.append(row(r, time.perf_counter() - t0))
        print(f"    {sid}: {rows[-1]['seconds']:.2f} s ({r.timing.prompt_tokens} prompt tokens, "
              f"{r.timing.decode_tokens} decoded, {r.samples_taken} sample(s), {r.status})", flush=True)
    return rows


def rates(rows: list[dict]) -> tuple[float, float]:
    p = sum(r["prompt_tokens"] for r in rows) / max(1e-9, sum(r["prompt_s"] for r in rows))
    d = sum(r["decode_tokens"] for r in rows) / max(1e-9, sum(r["decode_s"] for r in rows))
    return p, d


def compare_shipped(rows: list[dict]) -> dict:
    shipped = {}
    for line in SHIPPED.read_text(encoding="utf-8").splitlines():
        r = JudgeResult.from_json(line)
        shipped[r.summary_id] = r
    same_medians, diffs, n = 0, [], 0
    for x in rows:
        s = shipped.get(x["summary"])
        if s is None:
            continue
        n += 1
        same_medians += s.medians() == x["medians"]
        for k, v in s.items.items():
            e = x["expected"].get(k)
            if v.expected is not None and e is not None:
                diffs.append(abs(v.expected - e))
    return {"summaries": n, "identical_medians": same_medians,
            "max_expected_diff": max(diffs) if diffs else None,
            "median_expected_diff": statistics.median(diffs) if diffs else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="", help="the case for (c) and (d) (default: the first)")
    ap.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--parts", default="bcde")
    ap.add_argument("--limit", type=int, default=0, help="(b) judge only the first N summaries (a quick check)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    import llama_cpp

    report: dict = {"llama_cpp_python": llama_cpp.__version__, "gpu_offload": gpu_offload_supported(),
                    "gpu": gpu_name(), "cores": os.cpu_count()}
    print(f"(a) llama-cpp-python {report['llama_cpp_python']}, GPU offload supported: {report['gpu_offload']}; "
          f"GPU: {report['gpu']}; {report['cores']} cores", flush=True)
    ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
    case_id = args.case or ds.cases[0].case_id
    case_ids = [s.summary_id for s in ds.summaries_for(case_id)]
    t0 = time.perf_counter()
    be, sha = open_llama_backend("", n_ctx=8192, n_threads=args.cpu_threads, n_gpu_layers=-1, embedded_key=QWEN_KEY)
    report["gpu_load_s"] = round(time.perf_counter() - t0, 2)
    print(f"    model loaded with every layer offloaded in {report['gpu_load_s']:.1f} s", flush=True)
    if "b" in args.parts:
        print("(b) the whole sample, one greedy pass each, GPU:", flush=True)
        t0 = time.perf_counter()
        ids = [s.summary_id for s in ds.summaries]
        rows = run(Judge(be, sha, JudgeParams(n_samples=1)), ds, ids[:args.limit] if args.limit else ids)
        total = time.perf_counter() - t0
        p, d = rates(rows)
        rest = [r["seconds"] for r in rows[1:]] or [rows[0]["seconds"]]
        report["gpu_sample"] = {"rows": rows, "total_s": round(total, 2), "prompt_tps": round(p), "decode_tps": round(d, 1)}
        print(f"    whole sample: {len(rows)} summaries in {total:.1f} s; first {rows[0]['seconds']:.2f} s, median of the "
              f"rest {statistics.median(rest):.2f} s, slowest {max(rest):.2f} s; prompt {p:.0f} tokens/s, decode "
              f"{d:.1f} tokens/s; scored {sum(r['status'] == 'scored' for r in rows)} of {len(rows)}", flush=True)
        if "e" in args.parts:
            report["vs_shipped_cpu"] = cmp = compare_shipped(rows)
            print(f"(e) against the shipped 2-core CPU results: medians identical for {cmp['identical_medians']} of "
                  f"{cmp['summaries']} summaries; expected scores differ by at most {cmp['max_expected_diff']:.4f} "
                  f"(median {cmp['median_expected_diff']:.4f})", flush=True)
    if "c" in args.parts:
        print(f"(c) {case_id}, 7 samples each, GPU:", flush=True)
        rows = run(Judge(be, sha, JudgeParams(n_samples=7, early_stop=False)), ds, case_ids)
        report["gpu_7_samples"] = rows
        print(f"    7 samples: {statistics.mean(r['seconds'] for r in rows):.2f} s per summary", flush=True)
    del be
    if "d" in args.parts:
        print(f"(d) {case_id}, one greedy pass each, CPU only ({args.cpu_threads} threads):", flush=True)
        cpu, sha = open_llama_backend("", n_ctx=8192, n_threads=args.cpu_threads, n_gpu_layers=0, embedded_key=QWEN_KEY)
        rows = run(Judge(cpu, sha, JudgeParams(n_samples=1)), ds, case_ids)
        report["cpu_case"] = rows
        p, d = rates(rows)
        gpu_rows = [r for r in report.get("gpu_sample", {}).get("rows", []) if r["case"] == case_id]
        msg = f"    CPU: {statistics.mean(r['seconds'] for r in rows):.2f} s per summary, prompt {p:.0f} tokens/s, " \
              f"decode {d:.1f} tokens/s"
        if gpu_rows:
            g = statistics.mean(r["seconds"] for r in gpu_rows)
            c = statistics.mean(r["seconds"] for r in rows)
            report["cpu_over_gpu"] = round(c / g, 1)
            msg += f"; GPU {g:.2f} s per summary on the same case: CPU time / GPU time {c / g:.1f}"
        print(msg, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
