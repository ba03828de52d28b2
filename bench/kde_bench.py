"""Coverage speed: time per summary for a ~5,000-token source on this machine's CPU, embedding model loaded once.

Prints, for the paper's KDE method and the default topic-coverage method:
  cold  — the source has not been seen (its token / sentence embeddings are computed; embeddings included);
  warm  — a further summary of the same source (source embeddings reused from the in-memory cache).
Target: <= 1 s per summary, embeddings included.
Usage: python bench/kde_bench.py [--threads 2] [--repeats 3]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from engine.coverage import CoverageParams, score_coverage  # noqa: E402
from engine.embeddings import Embedder  # noqa: E402
from engine.loading import load_paths  # noqa: E402
from engine.models import Case, Note  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds, _ = load_paths([SAMPLE_BUNDLE])
    t0 = time.perf_counter()
    emb = Embedder()
    print(f"embedding model loaded once in {time.perf_counter() - t0:.2f} s; torch threads {torch.get_num_threads()}")
    # a ~5,000-token source: notes of several sample cases, as one case with 5 notes
    texts = [n.text for c in ds.cases for n in c.notes]
    notes, i = [], 0
    while sum(len(emb.tok(n, add_special_tokens=False)["input_ids"]) for n in notes) < 5000:
        notes.append(texts[i])
        i += 1
    n_tok = sum(len(emb.tok(n, add_special_tokens=False)["input_ids"]) for n in notes)
    summaries = ds.summaries[:args.repeats + 1]
    for method in ("kde", "topiccov"):
        cold, warm = [], []
        for r in range(args.repeats):
            # a fresh copy of the notes text defeats the cache -> cold; the next summary reuses it -> warm
            case = Case(f"bench{r}", "Cardiology",
                        tuple(Note(str(k + 1), t + " " * (r + 1)) for k, t in enumerate(notes)))
            emb._cache.clear()
            emb._sent_cache.clear()
            t = time.perf_counter()
            score_coverage(case, summaries[r], emb, CoverageParams(method=method))
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            score_coverage(case, summaries[r + 1], emb, CoverageParams(method=method))
            warm.append(time.perf_counter() - t)
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"{method:9s} source {n_tok} tokens in {len(notes)} notes: cold {c:.2f} s/summary "
              f"(target <= 1 s -> {'MET' if c <= 1 else 'MISSED'}), warm {w:.2f} s/summary")


if __name__ == "__main__":
    main()
