"""Statistics benchmark: a generated 200-summary x 8-rater x 9-item dataset (plus an LLM judge), every agreement
statistic with bootstrap CIs (1000 resamples). Prints seconds (target <= 3 s on 2 cores; the UI caches the result).
Usage: python bench/stats_bench.py [--summaries 200] [--boot 1000]
"""
import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.analysis import analyse  # noqa: E402
from engine.core import Case, Dataset, ITEMS, Note, Rating, Scale, Summary  # noqa: E402

NINE = [i for i in ITEMS if i.key not in ("stigmatizing_notes", "stigmatizing_summary")]  # 9 items


def generate(n: int, raters: int, rng: random.Random) -> tuple[Dataset, dict]:
    cases, summaries, ratings, llm = [], [], [], {}
    for i in range(n):
        cid, sid = f"c{i}", f"s{i}"
        cases.append(Case(cid, rng.choice(["Cardiology", "Oncology", "Neurology"]),
                          (Note("1", "word " * rng.randint(300, 1500)),)))
        summaries.append(Summary(sid, cid, "summary " * rng.randint(80, 200), rng.choice(["g1", "g2"]),
                                 rng.choice(["high", "low"])))
        truth = {it.key: rng.uniform(1.5, 5) for it in NINE}
        llm[sid] = {}
        for it in NINE:
            for r in range(raters):
                if it.scale is Scale.BINARY:
                    v = float(rng.random() < 0.7)
                else:
                    v = float(min(5, max(1, round(truth[it.key] + rng.gauss(0, 0.7)))))
                ratings.append(Rating(sid, f"R{r}", it.key, v, "senior" if r >= raters - 2 else "junior"))
            llm[sid][it.key] = float(rng.random() < 0.7) if it.scale is Scale.BINARY else \
                float(min(5, max(1, round(truth[it.key] + rng.gauss(0, 1.0)))))
    return Dataset("bench", cases, summaries, ratings), llm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--summaries", type=int, default=200)
    ap.add_argument("--raters", type=int, default=8)
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args()
    ds, llm = generate(args.summaries, args.raters, random.Random(0))
    t0 = time.perf_counter()
    rep = analyse(ds, llm, n_boot=args.boot)
    secs = time.perf_counter() - t0
    print(f"{args.summaries} summaries x {args.raters} raters x {len(NINE)} items + LLM, {args.boot} bootstrap "
          f"resamples: {secs:.2f} s (target <= 3 s -> {'MET' if secs <= 3 else 'MISSED'})")
    print(f"overall ICC(3,k) {rep.overall.icc['ICC3k'].value:.3f}; LLM as extra rater dICC "
          f"{rep.overall.llm_effect.delta_extra:+.3f}")


if __name__ == "__main__":
    main()
