"""Claim verification on the judge-validity set's Accurate variants (bench/validity_set.py: our own writing).

For every case: the clean reference summary, ``accurate`` 1 (one number falsified) and 2 (two numbers falsified
and one fabricated sentence). Each is verified with the default parameters (citations not asked: the Accurate
item is about content) and judged by the default 1.5B judge (one greedy pass; results kept in
``bench/out/validity.sqlite``, shared with ``bench/judge_validity.py``). Printed on the **test split** (cases never
used for a choice): Spearman ρ with −severity and AUROC defect vs clean for

  judge       the judge's Accurate expected score
  verify      −(share of unsupported sentences), ties broken by the lowest P(supported)
  judge+verify  expected score − w · 4 · unsupported share: w = 1 fixed before any run (an all-unsupported
                summary loses the whole 1-5 range), or chosen on the development split from a grid (``--choose``,
                which also verifies and judges the development cases)

Usage: python bench/verify_validity.py [--threads 2] [--choose]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from validity_common import OUT, defect_auroc, judge_score, run_model  # noqa: E402
from validity_set import all_variants, dataset  # noqa: E402
from engine.statistics import spearman_defined  # noqa: E402

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--choose", action="store_true", help="choose w on the development split (runs it too)")
    a = ap.parse_args()
    from engine.data import Store
    from engine.evidence.support.verification import DEFAULT_PARAMS, compute_verification
    from engine.judge import open_llama_backend
    from engine.llm import DEFAULT_EMBEDDED

    variants = [v for v in all_variants() if v.kind in ("clean", "accurate") and (a.choose or v.split == "test")]
    OUT.mkdir(exist_ok=True)
    store = Store(OUT / "validity.sqlite")
    ds = dataset(variants, "verify-validity")
    if ds.name not in store.dataset_names():
        store.import_dataset(ds, name=ds.name)
    backend, sha = open_llama_backend("", n_ctx=8192, n_threads=a.threads, embedded_key=DEFAULT_EMBEDDED)
    params = replace(DEFAULT_PARAMS, citations=False)
    ver = compute_verification(store, ds.name, ds, [v.summary_id for v in variants], lambda: backend, sha,
                               params, lambda **kw: print(f"  verify {kw.get('done')} {kw.get('item')}",
                                                          file=sys.stderr, flush=True)).results
    del backend
    judged = run_model(DEFAULT_EMBEDDED, 1, variants, store, a.threads)

    def vscore(sid):
        r = ver[sid]
        share = r.unsupported_share if r.unsupported_share is not None else 0.0
        return -share + 1e-3 * (r.lowest_p or 0.0)

    def judge(sid):
        return judge_score(judged.get(sid), "accurate", "expected")

    def combined(sid, w):
        j = judge(sid)
        r = ver[sid]
        return None if j is None else j - w * 4 * (r.unsupported_share or 0.0)

    dev = [v for v in variants if v.split == "dev"]
    test = [v for v in variants if v.split == "test"]

    def rho(vs, f):
        ok = [v for v in vs if f(v.summary_id) is not None]
        return spearman_defined([f(v.summary_id) for v in ok], [-v.severity for v in ok])

    if a.choose:
        w = max(WEIGHTS, key=lambda w: (rho(dev, lambda s: combined(s, w)) or -1, -w))
        print(f"\nweight chosen on the development split: w = {w}")
    else:
        w = 1.0
        print("\nweight fixed before the run: w = 1")
    print(f"test split: {len(test)} summaries of {len({v.case_id for v in test})} cases")
    print(f"{'score':14} {'Spearman':>9} {'AUROC':>7}")
    for name, f in (("judge", judge), ("verify", vscore), ("judge+verify", lambda s: combined(s, w))):
        ok = [v for v in test if f(v.summary_id) is not None]
        r = spearman_defined([f(v.summary_id) for v in ok], [-v.severity for v in ok])
        auc = defect_auroc([f(v.summary_id) for v in ok], [int(v.severity > 0) for v in ok])
        print(f"{name:14} {r if r is not None else float('nan'):9.3f} {auc if auc is not None else float('nan'):7.3f}")
    per = [(v.summary_id, v.severity, len(ver[v.summary_id].unsupported), len(ver[v.summary_id].sentences))
           for v in test]
    print("unsupported sentences per test summary (id, severity, unsupported / sentences):")
    for sid, sev, u, n in per:
        print(f"  {sid} {sev} {u}/{n}")


if __name__ == "__main__":
    main()
