"""Coverage speed per summary for a ~5,000-token source on this machine's CPU (torch threads 2 by default).

For every coverage method registered in :data:`engine.evidence.coverage.regions.METHODS`, three figures (median over repeats):
  cold            — the source was never seen: the in-memory caches AND the workspace's embedding cache are empty,
                    so its token / sentence embeddings are computed (and written to the workspace);
  warm (restart)  — a further summary of the same source scored by a *new* Embedder on the same workspace (what a
                    restarted app sees): the source's embeddings are read from the workspace, not computed;
  warm (process)  — a further summary of the same source in the same process: the in-memory cache answers.
Targets: cold <= 1.0 s, warm <= 0.3 s per summary (wall clock); each figure is printed with MET / MISSED and the
process's CPU seconds next to it (on a machine shared with other work, CPU time at --threads 1 shows what the
work costs; wall time with 2 threads on 2 busy cores is mostly waiting). The model load
(once per process) is not counted; one unrelated warm-up scoring runs first, as an app has done by then.
``--profile`` adds, for one cold run of each method, where the time goes (cProfile, top functions).
Usage: python bench/kde_bench.py [--threads 2] [--repeats 3] [--profile]
"""
import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from engine.evidence.coverage import CoverageParams, regions as coverage, score_coverage  # noqa: E402
from engine.evidence import Embedder  # noqa: E402
from engine.data import load_paths  # noqa: E402
from engine.core import Case, Note  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402
from engine.data import Store  # noqa: E402

COLD_TARGET, WARM_TARGET = 1.0, 0.3


def verdict(seconds: float, cpu: float, target: float) -> str:
    return f"{seconds:5.2f} s [CPU {cpu:4.2f} s] ({'MET' if seconds <= target else 'MISSED'}, target <= {target:g} s)"


def timed(fn, *args) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for one call."""
    w, c = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - w, time.process_time() - c


def source_notes(emb: Embedder, texts: list[str], tokens: int = 5000) -> list[str]:
    """The sample's notes, in order, until they hold ``tokens`` tokens (one ~5,000-token case)."""
    notes, n = [], 0
    for t in texts:
        if n >= tokens:
            break
        notes.append(t)
        n += len(emb.tok(t, add_special_tokens=False, verbose=False)["input_ids"])
    return notes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="show where one cold run's time goes, per method")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds, _ = load_paths([SAMPLE_BUNDLE])
    t0 = time.perf_counter()
    emb = Embedder()
    load = time.perf_counter() - t0
    restarted = Embedder()  # a second instance: "the app after a restart" (its own, empty, in-memory caches)
    print(f"embedding model loaded in {load:.2f} s (not counted); torch threads {torch.get_num_threads()}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (other processes slow every figure)")
    notes = source_notes(emb, [n.text for c in ds.cases for n in c.notes])
    n_tok = sum(len(emb.tok(n, add_special_tokens=False, verbose=False)["input_ids"]) for n in notes)
    summaries = ds.summaries
    methods = list(coverage.METHODS)
    warmup = ds.cases[-1]
    for m in methods:  # imports, first forward pass, sentence splitter set-up
        first = next(s for s in summaries if s.case_id == warmup.case_id)
        score_coverage(warmup, first, emb, CoverageParams(method=m))
        score_coverage(warmup, first, restarted, CoverageParams(method=m))
    print(f"source: {n_tok} tokens in {len(notes)} notes; {args.repeats} repeats, median per summary")
    with tempfile.TemporaryDirectory() as tmp:
        for mi, method in enumerate(methods):
            params = CoverageParams(method=method)
            cold, warm_restart, warm_process = [], [], []
            for r in range(args.repeats):
                # a fresh copy of the notes' text (never seen) and a fresh workspace -> cold
                case = Case(f"bench{mi}-{r}", "Cardiology",
                            tuple(Note(str(k + 1), t + " " * (1 + r + 10 * mi)) for k, t in enumerate(notes)))
                ws = Store(Path(tmp) / f"ws-{mi}-{r}.sqlite")
                emb.clear_memory_cache()
                emb.attach_store(ws)
                prof = cProfile.Profile() if args.profile and r == 0 else None
                if prof:
                    prof.enable()
                cold.append(timed(score_coverage, case, summaries[r % len(summaries)], emb, params))
                if prof:
                    prof.disable()
                # a restarted app: a new Embedder (empty in-memory caches) on the same workspace
                restarted.clear_memory_cache()
                restarted.attach_store(ws)
                warm_restart.append(timed(score_coverage, case, summaries[(r + 1) % len(summaries)], restarted,
                                          params))
                # the same process, a further summary
                warm_process.append(timed(score_coverage, case, summaries[(r + 2) % len(summaries)], emb, params))
                if prof:
                    out = io.StringIO()
                    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(18)
                    print(f"--- {method}: cold run profile (cumulative) ---")
                    print("\n".join(out.getvalue().splitlines()[4:]))
            (c, cc), (w1, wc1), (w2, wc2) = ((statistics.median(t[0] for t in x), statistics.median(t[1] for t in x))
                                             for x in (cold, warm_restart, warm_process))
            print(f"{method}\n  cold                {verdict(c, cc, COLD_TARGET)}\n"
                  f"  warm, restarted app {verdict(w1, wc1, WARM_TARGET)}\n"
                  f"  warm, same process  {verdict(w2, wc2, WARM_TARGET)}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
