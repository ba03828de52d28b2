"""Triage against known defects: which item its reasons name, and how its judge risk orders the summaries.

Triage's judge risk is the shortfall of a summary's lowest 1-5 score (engine.judge.triage). The items' scores sit
at different levels — Thorough's combination around 3, where the judge's other scores sit near 5 — so the lowest
item is the same for nearly every summary. The reasons now also name the items furthest below their own median
over the dataset. This bench measures both namings, and three ways the judge risk could read the items:
  * lowest      (5 − the lowest score) / 4 — the product's rule;
  * worst gap   the lowest score after each item is shifted so that its median is the median of the items' medians;
  * sum of gaps (5 − that common level + the summed shortfalls from the medians) / 4.
Priority = 0.6 · judge risk + 0.4 · evidence risk as in the product. The judge risk's rule is chosen on the
development split of the real visit notes (the only real set with known defects); the test split is reported.

Data, each through the product's own readers (used scores, evidence, the queue):
  * real visit notes (bench/thorough_realdev.py's stores: ACI-BENCH training split, split by encounter; the
    clinician's note and versions with ¼ and ½ of its narrative sentences taken out, judged by the default 1.5B):
    Spearman ρ of the priority with the share taken out, AUROC for "something taken out" against the complete
    note, and for how many of the summaries with sentences taken out each naming names Thorough (the only
    defect here);
  * the sample (our own writing: 36 summaries in three quality groups with documented defects; shipped judge
    results and evidence): ρ of the priority with the quality group (low = 2, medium = 1, high = 0), AUROC low
    against high, and for how many summaries with documented defects each naming's first item is one a defect
    belongs to. A check on our own sample, not a result on real text.
Usage: python bench/triage_bench.py
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from engine.statistics import auroc, spearman_rho  # noqa: E402

OUT = ROOT / "bench" / "out"
DEFECT_ITEM = {"dropped_fact": "thorough", "falsified_fact": "accurate", "fabricated_fact": "accurate",
               "wrong_citation": "cited", "missing_citation": "cited", "redundancy": "succinct",
               "stigmatizing_language": None}


RULES = ("lowest", "worst gap", "sum of gaps")


def _rows(store, name: str, ds) -> dict:
    """summary id -> (priority per rule, item named by the lowest score, item named by the largest gap)."""
    from engine.judge import evidence_for, triage, used_scores

    evidence = evidence_for(store, name, ds)
    used = used_scores.for_dataset(store, name, None, evidence, ds)
    entries = {e.summary_id: e for e in triage.queue(ds.summaries, used.used, used.source, evidence)}
    medians = triage.item_medians({s.summary_id: used.used.get(s.summary_id) for s in ds.summaries})
    level = statistics.median(medians.values())  # the common level: the median of the items' medians
    out = {}
    for sid, sc in used.used.items():
        got = {k: v for k, v in sc.items() if k in triage.LIKERT and v is not None}
        shifted = {k: v + level - medians[k] for k, v in got.items() if k in medians}
        risks = {"lowest": (5 - min(got.values())) / 4, "worst gap": (5 - min(shifted.values())) / 4,
                 "sum of gaps": (5 - level + sum(max(0.0, level - v) for v in shifted.values())) / 4}
        er = entries[sid].evidence_risk
        pri = {k: triage.W_JUDGE * min(1.0, max(0.0, r)) + triage.W_EVIDENCE * er for k, r in risks.items()}
        assert abs(pri["lowest"] - entries[sid].priority) < 1e-3  # the product's queue, recomputed
        gap = triage.below_median(got, medians, 1)
        out[sid] = (pri, min(got, key=got.get), gap[0][0] if gap else "")
    return out


def real_text() -> None:
    from engine.data import Store

    path = OUT / "thorough_realdev.sqlite"
    if not path.exists():
        print("real visit notes: bench/out/thorough_realdev.sqlite is missing (run bench/thorough_realdev.py)")
        return
    store = Store(path)
    print("Real visit notes (ACI-BENCH training split; share of the clinician's note taken out 0, 1/4, 1/2)")
    print(f"{'split':<24} {'n':>4} " + " ".join(f"{'ρ ' + r:>14}" for r in RULES) + " " +
          " ".join(f"{'AUROC ' + r:>17}" for r in RULES) + f" {'Thorough named: lowest / gap':>29}")
    for part, names in (("development (33 conv.)", ["thorough-realdev-dev"]),
                        ("test (20 conv.)", ["thorough-realdev-test", "thorough-realdev-test-from10"])):
        rows = {}
        for name in names:
            rows.update(_rows(store, name, store.load_dataset(name)))
        share = [int(sid.rsplit("-o", 1)[1]) / 100 for sid in rows]
        rho = [spearman_rho([rows[s][0][r] for s in rows], share).value for r in RULES]
        auc = [auroc([x > 0 for x in share], [rows[s][0][r] for s in rows]) for r in RULES]
        cut = [v for v, x in zip(rows.values(), share) if x > 0]  # something taken out: Thorough is the defect
        low = sum(v[1] == "thorough" for v in cut)
        gap = sum(v[2] == "thorough" for v in cut)
        print(f"{part:<24} {len(rows):>4} " + " ".join(f"{x:>14.2f}" for x in rho) + " " +
              " ".join(f"{x:>17.2f}" for x in auc) + f" {low:>20} / {gap:<3} of {len(cut)}")


def sample() -> None:
    from engine.cli import main
    from engine.data import Store
    from engine.sample import load_manifest

    manifest = load_manifest()["summaries"]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SUMCHECK_WORKSPACE"] = str(Path(tmp) / "ws.sqlite")
        main(["sample"])
        store = Store(Path(tmp) / "ws.sqlite")
        rows = _rows(store, "sample", store.load_dataset("sample"))
    group = {"high": 0, "medium": 1, "low": 2}
    q = [group[manifest[s]["quality_group"]] for s in rows]
    print("\nThe sample (our own writing; a check, not a result)")
    for r in RULES:
        pr = [rows[s][0][r] for s in rows]
        lh = [(p, g == 2) for p, g in zip(pr, q) if g != 1]
        print(f"  {r:<12} ρ priority with quality group {spearman_rho(pr, q).value:.2f}, AUROC low/high "
              f"{auroc([y for _, y in lh], [p for p, _ in lh]):.2f}")
    with_defects = [s for s in rows if manifest[s]["defects"]]
    for label, k in (("lowest score", 1), ("furthest below its median", 2)):
        hit = sum(rows[s][k] in {DEFECT_ITEM[d["type"]] for d in manifest[s]["defects"]} for s in with_defects)
        named = Counter(rows[s][k] for s in rows)
        print(f"  item named by the {label}: a documented defect's item for {hit} of {len(with_defects)} summaries "
              "with defects; named: " + ", ".join(f"{k or '(none)'} {v}" for k, v in named.most_common()))


if __name__ == "__main__":
    real_text()
    sample()
