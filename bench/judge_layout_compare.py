"""The judge before and after a prompt change, against the sample's raters: per item, Spearman ρ between the judge's
expected score and the raters' median over the sample's 36 summaries, with a 95 % interval from a bootstrap of whole
cases (every summary of a case together), for each of two judge-result files (``judge-export`` lines).

A change is kept when no item's ρ drops below the earlier file's interval. The sample and its raters are our own
writing (simulated raters), so this says whether the new prompt moves with the raters as the old one did, not how
either agrees with clinicians. Usage:
python bench/judge_layout_compare.py BEFORE.jsonl AFTER.jsonl [--boot 2000]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def _expected(path: Path) -> tuple[str, dict[str, dict[str, float]]]:
    from engine.judge import JudgeResult

    out, version = {}, ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = JudgeResult.from_json(line)
        version = r.provenance.prompt_version
        out[r.summary_id] = {k: v.expected for k, v in r.items.items() if v.expected is not None}
    return version, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--boot", type=int, default=2000)
    args = ap.parse_args()

    from engine.core import ITEMS, Scale
    from engine.data import load_paths, medians
    from engine.sample import SAMPLE_BUNDLE
    from engine.statistics import cluster_bootstrap, spearman_rho

    ds, _ = load_paths([str(SAMPLE_BUNDLE)], name="sample")
    ref = {s.summary_id: medians(r for r in ds.ratings_for(s.summary_id) if r.rater_group != "llm")
           for s in ds.summaries}
    runs = [_expected(Path(p)) for p in (args.before, args.after)]
    print(f"before: {runs[0][0]} ({len(runs[0][1])} summaries); after: {runs[1][0]} ({len(runs[1][1])} summaries)")
    print(f"{'item':<22} {'ρ before [95% CI]':>26} {'ρ after [95% CI]':>26} {'kept':>6}")
    for item in ITEMS:
        if item.scale is Scale.BINARY or item.allows_na:
            continue
        cells = []
        for _, res in runs:
            sids = [s.summary_id for s in ds.summaries if s.summary_id in res and item.key in res[s.summary_id]
                    and ref[s.summary_id].get(item.key) is not None]
            x = np.array([res[s][item.key] for s in sids])
            y = np.array([ref[s][item.key] for s in sids])
            groups = [ds.summary(s).case_id for s in sids]

            def rho(idx, x=x, y=y):
                if len(set(x[idx])) < 2 or len(set(y[idx])) < 2:
                    return None
                return spearman_rho(x[idx], y[idx]).value

            point = rho(np.arange(len(sids)))
            ci = cluster_bootstrap(rho, groups, args.boot, seed=7)
            cells.append((point, ci))
        (b, bci), (a, aci) = cells

        def fmt(v, ci):
            if v is None:
                return "constant"
            return f"{v:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else f"{v:+.2f}"

        kept = "—" if a is None or b is None or bci is None else ("yes" if a >= bci[0] else "NO")
        print(f"{item.key:<22} {fmt(b, bci):>26} {fmt(a, aci):>26} {kept:>6}")


if __name__ == "__main__":
    main()
