"""Judge validity on summaries with known, graded defects (bench/validity_set.py).

For each embedded model and sample count, judges every variant (results kept in ``bench/out/validity.sqlite``,
so an interrupted run resumes) and prints, per item, on the **test split** (cases never used for choices):

* Spearman ρ between the judge's score and the known severity (sign flipped: a good judge scores a worse summary
  lower, so higher is better), over the clean control and that item's defect variants of each test case, with a
  95 % interval for the raw expected score's ρ from a bootstrap of whole test cases;
  for the raw expected score, the calibrated score (isotonic map fitted on the development split's variants,
  target 5 − 2·severity) and the median of the samples;
* AUROC defect vs clean control (expected score; P(yes) for the stigmatizing item);
* seconds per summary.

    python bench/judge_validity.py [--models qwen2.5-coder-1.5b gemma3-270m] [--samples 1 3] [--split test]
                                   [--combination [--no-medomit]]

``--combination`` adds, on the test split, the default combination of the judge with each item's own evidence
(bench/combination_validity.py); a calibrated score ranks as its predictor, so its ρ is the judge's or the
combination's.

A figure here is measured on data we wrote ourselves; it says whether the judge moves with the defects we put in,
not how it agrees with clinicians on real summaries.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from validity_common import OUT, defect_auroc, fmt, judge_score, run_model  # noqa: E402
from validity_set import ITEM_OF_KIND, all_variants  # noqa: E402
from engine.judge import PROMPT_VERSION  # noqa: E402
from engine.statistics import isotonic_steps, spearman_clustered, spearman_defined  # noqa: E402

GOAL_ITEMS = ("thorough", "accurate", "cited", "succinct", "organized")


def _case_interval(x, y, cases, n_boot: int = 2000):
    """95 % interval of Spearman's ρ from a bootstrap of whole test cases (every variant of a case together)."""
    ci = spearman_clustered(x, y, cases, n_boot, seed=7).ci
    return list(ci) if ci else None


def evaluate(variants, results) -> list[dict]:
    rows = []
    for item in sorted(set(ITEM_OF_KIND.values()), key=lambda k: (k not in GOAL_ITEMS, k)):
        kinds = [k for k, v in ITEM_OF_KIND.items() if v == item]
        rel = [v for v in variants if v.kind == "clean" or v.kind in kinds]
        dev = [v for v in rel if v.split == "dev" and results.get(v.summary_id) is not None]
        test = [v for v in rel if v.split == "test" and results.get(v.summary_id) is not None]
        raw = {v.summary_id: judge_score(results[v.summary_id], item, "expected") for v in dev + test}
        med = {v.summary_id: judge_score(results[v.summary_id], item, "median") for v in test}
        row = {"item": item, "n_test": len(test)}
        t_ok = [v for v in test if raw[v.summary_id] is not None]
        sev = [-v.severity for v in t_ok]
        row["spearman_raw"] = spearman_defined([raw[v.summary_id] for v in t_ok], sev)
        row["spearman_raw_ci"] = _case_interval([raw[v.summary_id] for v in t_ok], sev, [v.case_id for v in t_ok])
        m_ok = [v for v in test if med[v.summary_id] is not None]
        row["spearman_median"] = spearman_defined([med[v.summary_id] for v in m_ok], [-v.severity for v in m_ok])
        d_ok = [v for v in dev if raw[v.summary_id] is not None]
        if len({v.severity for v in d_ok}) >= 2 and item != "stigmatizing_summary":
            xk, yk = isotonic_steps(np.array([raw[v.summary_id] for v in d_ok]),
                                    np.array([5.0 - 2 * v.severity for v in d_ok]))
            cal = [float(np.interp(raw[v.summary_id], xk, yk)) for v in t_ok]
            row["spearman_calibrated"] = spearman_defined(cal, sev)
        else:
            row["spearman_calibrated"] = None
        row["auroc"] = defect_auroc([raw[v.summary_id] for v in t_ok], [int(v.severity > 0) for v in t_ok])
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["qwen2.5-coder-1.5b", "gemma3-270m"])
    ap.add_argument("--samples", nargs="+", type=int, default=[1])
    ap.add_argument("--split", choices=("test", "both"), default="both",
                    help="which variants to judge: test only (no calibrated figure), or dev and test")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", default=str(OUT / "judge_validity.json"))
    ap.add_argument("--no-medomit", action="store_true",
                    help="with --combination: leave MED-OMIT out of the Thorough combination (its decision is over "
                         "an hour on 2 CPU cores for the test split)")
    ap.add_argument("--combination", action="store_true",
                    help="also the default combinations of the judge with each item's evidence on the test split "
                         "(bench/combination_validity.py)")
    ap.add_argument("--record", action="store_true",
                    help="also write these models' rows into engine/resources/judge_validity.json (shown on Settings)")
    args = ap.parse_args(argv)
    from engine.data import Store

    OUT.mkdir(parents=True, exist_ok=True)
    store = Store(OUT / "validity.sqlite")
    variants = all_variants()
    todo = variants if args.split == "both" else [v for v in variants if v.split == "test"]
    # the test split first: its figures are what is reported
    todo = sorted(todo, key=lambda v: (v.split != "test", v.case_id))
    report = []
    for key in args.models:
        for k in args.samples:
            results = run_model(key, k, todo, store, args.threads)
            fresh = [r for r in results.values() if r.status == "scored"]
            secs = float(np.median([r.timing.total_seconds for r in fresh])) if fresh else None
            for row in evaluate(variants, results):
                report.append({"model": key, "samples": k, "prompt": PROMPT_VERSION, "sec_per_summary_median": secs,
                               **row})
    print(f"Judge validity on the test split ({len({v.case_id for v in variants if v.split == 'test'})} cases; "
          "Spearman of score vs −severity; AUROC defect vs clean)")
    print(f"{'model':<20} {'N':>2} {'item':<22} {'n':>3} {'ρ raw':>6} {'95% CI (cases)':>16} {'ρ cal':>6} "
          f"{'ρ med':>6} {'AUROC':>6} {'s/summary':>9}")
    for r in report:
        ci = r.get("spearman_raw_ci")
        ci_text = f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "—"
        print(f"{r['model']:<20} {r['samples']:>2} {r['item']:<22} {r['n_test']:>3} {fmt(r['spearman_raw']):>6} "
              f"{ci_text:>16} {fmt(r['spearman_calibrated']):>6} {fmt(r['spearman_median']):>6} "
              f"{fmt(r['auroc']):>6} {fmt(r['sec_per_summary_median']):>9}")
    Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    if args.combination:
        import combination_validity

        print()
        combination_validity.print_figures(combination_validity.figures(args.threads or 2,
                                                                        medomit=not args.no_medomit))
    if args.record:
        from engine.llm import VALIDITY_FILE

        try:
            kept = [r for r in json.loads(VALIDITY_FILE.read_text(encoding="utf-8")) if r["model"] not in args.models]
        except (OSError, ValueError):
            kept = []
        VALIDITY_FILE.write_text(json.dumps(kept + report, indent=1) + "\n", encoding="utf-8")
        print(f"recorded in {VALIDITY_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
