"""Default item combinations on the judge-validity set (bench/validity_set.py: our own writing, graded defects).

For every variant of the **test split** (cases never used for a choice; the combination weights were fixed before
this ran, see engine.judge.combination): the default 1.5B judge's expected score (one greedy pass, cached in
``bench/out/validity.sqlite``), the evidence the product stores — unit coverage, sentence support with citation
verdicts and restatements, claim verification (clean and Accurate variants), MED-OMIT decided with today's
decision on the case's shipped facts, differential, importance and clusters (clean and Thorough variants) — and
the product's feature reader (engine.judge.features.evidence_for). Printed per item: Spearman ρ with −severity
over each test case's clean control and that item's variants, for the judge's score and for the combination, and
AUROC defect vs clean. A calibrated score is a strictly increasing map of its predictor, so on these variants it
ranks exactly as the judge's score (kind ``judge``) or the combination (``judge+evidence`` without a correction):
its ρ is not a separate measurement and is not printed.

The Thorough combination's "z" form standardises its signals over every summary judged in the run (as the product
does over a dataset's). ``--items thorough`` measures one item again on its own variants and the clean controls.

Usage: python bench/combination_validity.py [--threads 2] [--json FILE] [--no-medomit] [--record] [--items a,b]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from validity_common import OUT, defect_auroc, fmt, judge_score, run_model  # noqa: E402
from validity_set import ITEM_OF_KIND, all_variants, dataset  # noqa: E402
from engine.statistics import spearman_defined  # noqa: E402

ITEMS = ("thorough", "accurate", "cited", "succinct", "organized", "comprehensible")
SHIPPED_MEDOMIT = ROOT / "sample_data" / "medomit_results.jsonl"


def medomit_for(store, ds, variants, backend, sha, emb) -> int:
    """Today's decision on each variant, from its case's shipped case-level outputs; stored as the product does."""
    from engine.evidence.medomit import MedOmit, MedOmitResult, result_key

    rows = [json.loads(x) for x in SHIPPED_MEDOMIT.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_case: dict[str, MedOmitResult] = {}
    for r in rows:
        res = MedOmitResult._from_json(r["result"])
        if res.status == "complete":
            by_case.setdefault(res.case_id, res)
    mo = MedOmit(backend, sha, embedder=emb, facts="model")
    done = 0
    for v in variants:
        s, case = ds.summary(v.summary_id), ds.case(v.case_id)
        key = result_key(sha, case, s, mo.decision, mo.gaps)
        if store.get_evidence(ds.name, "medomit", key, s.summary_id) is not None or v.case_id not in by_case:
            continue
        base = by_case[v.case_id]
        res = mo.decide_again(base, case, s)
        store.put_evidence(ds.name, "medomit", key, s.summary_id, res.status, res.to_json())
        done += 1
        print(f"  medomit {v.summary_id}: {res.omission_count} omitted", file=sys.stderr, flush=True)
    return done


def figures(threads: int = 2, medomit: bool = True, items: tuple = ITEMS) -> dict:
    """Judge, evidence and the per-item figures of the test split (see the module docstring); ``items``: only the
    clean controls and these items' variants are judged and reported (their "z" scales then range over those)."""
    from dataclasses import replace

    from engine.data import Store
    from engine.evidence import Embedder, compute_evidence
    from engine.evidence.support.verification import DEFAULT_PARAMS, compute_verification
    from engine.judge import (COMBINATIONS, COMBINATION_VERSION, WEIGHTS_NOTE, combine, dataset_scales, evidence_for,
                              open_llama_backend)
    from engine.llm import DEFAULT_EMBEDDED

    OUT.mkdir(parents=True, exist_ok=True)
    store = Store(OUT / "validity.sqlite")
    subset = tuple(items) != ITEMS
    variants = [v for v in all_variants() if v.split == "test"
                and (not subset or v.kind == "clean" or ITEM_OF_KIND.get(v.kind) in items)]
    tag = "-" + "-".join(items) if subset else ""
    ds = dataset(variants, "combination-validity-test" + tag)
    if ds.name not in store.dataset_names():
        store.import_dataset(ds, name=ds.name)
    t0 = time.perf_counter()
    judged = run_model(DEFAULT_EMBEDDED, 1, variants, store, threads, ds_name="validity-test-1.5b-1" + tag)
    print(f"judged in {(time.perf_counter() - t0) / 60:.1f} min", file=sys.stderr)
    emb = Embedder(store=store)
    compute_evidence(store, ds.name, ds, [v.summary_id for v in variants], emb)
    backend, sha = open_llama_backend("", n_ctx=8192, n_threads=threads, embedded_key=DEFAULT_EMBEDDED)
    acc = [v.summary_id for v in variants if v.kind in ("clean", "accurate")] if "accurate" in items else []
    compute_verification(store, ds.name, ds, acc, lambda: backend, sha, replace(DEFAULT_PARAMS, citations=False),
                         lambda **kw: None)
    if medomit:
        medomit_for(store, ds, [v for v in variants if v.kind in ("clean", "thorough")], backend, sha, emb)
    ev = evidence_for(store, ds.name, ds)
    # the "z" form's reference population: every judged summary of the split, as the product takes a dataset's
    scored = {v.summary_id: {it: judge_score(judged[v.summary_id], it, "expected") for it in ITEMS}
              for v in variants if judged.get(v.summary_id)}
    scales = dataset_scales(scored, {sid: e.features for sid, e in ev.items()})
    report = {"version": COMBINATION_VERSION, "weights": {k: dict(v.weights) for k, v in COMBINATIONS.items()},
              "forms": {k: v.form for k, v in COMBINATIONS.items()}, "note": WEIGHTS_NOTE, "items": [],
              "cases": len({v.case_id for v in variants}),
              "medomit": ("decided for the clean and Thorough variants" if medomit else
                          "not run: the Thorough combination weighs the judge and unit coverage as for any "
                          "summary MED-OMIT has not run on")}
    report["population"] = len(scored)
    for item in items:
        kinds = [k for k, it in ITEM_OF_KIND.items() if it == item]
        rel = [v for v in variants if (v.kind == "clean" or v.kind in kinds) and judged.get(v.summary_id)]
        raw = {v.summary_id: judge_score(judged[v.summary_id], item, "expected") for v in rel}
        rel = [v for v in rel if raw[v.summary_id] is not None]
        comb = {v.summary_id: combine(item, raw[v.summary_id], ev[v.summary_id].features, scales.get(item)).value
                for v in rel}
        sev = [-v.severity for v in rel]
        defect = [int(v.severity > 0) for v in rel]
        row = {"item": item, "n": len(rel),
               "spearman_judge": spearman_defined([raw[v.summary_id] for v in rel], sev),
               "spearman_combination": spearman_defined([comb[v.summary_id] for v in rel], sev),
               "auroc_judge": defect_auroc([raw[v.summary_id] for v in rel], defect),
               "auroc_combination": defect_auroc([comb[v.summary_id] for v in rel], defect)}
        report["items"].append(row)
    return report


def print_figures(report: dict) -> None:
    print(f"MED-OMIT: {report.get('medomit', '')}")
    print(f"Test split, {report['cases']} cases; Spearman with −severity, AUROC defect vs clean. A calibrated score "
          "ranks as its predictor (strictly increasing map): its ρ is the judge's or the combination's.")
    print(f"{'item':<16} {'n':>3} {'ρ judge':>8} {'ρ comb.':>8} {'AUROC judge':>12} {'AUROC comb.':>12}")
    for row in report["items"]:
        print(f"{row['item']:<16} {row['n']:>3} {fmt(row['spearman_judge']):>8} {fmt(row['spearman_combination']):>8} "
              f"{fmt(row['auroc_judge']):>12} {fmt(row['auroc_combination']):>12}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=str(OUT / "combination_validity.json"))
    ap.add_argument("--no-medomit", action="store_true",
                    help="leave MED-OMIT out (its decision asks the model about ~60 facts per summary: over an hour "
                         "on 2 CPU cores for the test split)")
    ap.add_argument("--record", action="store_true",
                    help="also write the figures to engine/resources/combination_validity.json (shown where the "
                         "score is used)")
    ap.add_argument("--items", default=",".join(ITEMS),
                    help="comma-separated items to measure (default all); only the clean controls and these items' "
                         "variants are judged, and --record replaces only these items' rows")
    a = ap.parse_args()
    items = tuple(i for i in ITEMS if i in a.items.split(","))
    report = figures(a.threads, medomit=not a.no_medomit, items=items)
    print_figures(report)
    Path(a.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    if a.record:
        from engine.judge import used_scores

        if items != ITEMS:  # keep the other items' rows, and say which rows were measured on what
            old = json.loads(used_scores.COMBINATION_VALIDITY.read_text(encoding="utf-8"))
            rows = {r["item"]: r for r in old["items"]}
            for r in report["items"]:
                rows[r["item"]] = {**r, "population": report["population"], "version": report["version"]}
            report = {**old, **{k: report[k] for k in ("version", "weights", "forms", "note", "medomit")},
                      "items": [rows[i] for i in ITEMS if i in rows]}
        used_scores.COMBINATION_VALIDITY.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(f"recorded in {used_scores.COMBINATION_VALIDITY}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
