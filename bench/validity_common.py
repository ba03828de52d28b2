"""What the judge-validity benches share (bench/judge_validity.py, bench/combination_validity.py,
bench/verify_validity.py): where their results are kept, judging the validity set's variants with one embedded
model, reading one item's score from a judge result, the AUROC of a score for "defect vs clean", and the figure
format. Their statistics come from engine.statistics."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def run_model(key: str, samples: int, variants, store, threads: int, ds_name: str = "") -> dict[str, dict]:
    """Judge every variant with embedded model ``key`` and ``samples`` samples (results kept in ``store``, so an
    interrupted run resumes): summary id -> judge result."""
    from validity_set import dataset

    from engine.judge import Judge, JudgeParams, open_llama_backend, run_batch

    backend, sha = open_llama_backend("", n_ctx=8192, n_threads=threads, embedded_key=key)
    judge = Judge(backend, sha, JudgeParams(n_samples=samples, early_stop=False))
    ds = dataset(variants, ds_name or f"validity-{key}-{samples}")
    if ds.name not in store.dataset_names():
        store.import_dataset(ds, name=ds.name)
    ids = [v.summary_id for v in variants]
    out, t0 = {}, time.perf_counter()
    for i, r in enumerate(run_batch(judge, ds, ids, store=store, dataset_name=ds.name)):
        out[r.summary_id] = r
        if not r.from_cache:
            el = time.perf_counter() - t0
            print(f"  [{key} ×{samples}] {i + 1}/{len(ids)} {r.summary_id} {r.status} "
                  f"{r.timing.total_seconds:.1f} s (elapsed {el / 60:.1f} min)", file=sys.stderr, flush=True)
    return out


def judge_score(result, item: str, kind: str) -> Optional[float]:
    """One item's score from a judge result: its median (``kind="median"``) or its primary score; for the
    stigmatizing item P(no), so that higher is better as for the other items. None when not scored."""
    from engine.judge import primary_score

    sc = result.items.get(item) if result and result.status == "scored" else None
    if sc is None:
        return None
    if kind == "median":
        return sc.median
    if item == "stigmatizing_summary":
        return None if sc.expected is None else 1.0 - sc.expected  # P(no): higher = better, like the others
    return primary_score(item, sc)


def defect_auroc(scores, defect) -> Optional[float]:
    """AUROC of a *lower* score for a defect (``defect`` 1) against the clean control (0)
    (:func:`engine.statistics.auroc`); None without both."""
    from engine.statistics import auroc

    a = auroc(defect, scores, higher_is_positive=False)
    return None if math.isnan(a) else a


def fmt(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"
