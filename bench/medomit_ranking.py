"""Where the documented dropped facts land in the list of a summary's omitted facts that a reviewer reads.

MED-OMIT with the 1.5B reports 40-76 omitted facts per sample summary (a summary compresses its notes, and MED-OMIT
counts a fact with any part missing as omitted). Its importance labels tie: the model labels nearly every fact
"important" (3,501 of 3,627 fact scores of the shipped rows), so the weight order is close to arbitrary. Reading
the label's probability instead of the label (the expected importance weight, as the judge's expected score
reads its rating token) did not help: on neph-01's 80 facts it spread only from 0.47 to 0.55 (deciles) and put
the two dropped facts 31st of 62 and 58th of 64.

This script ranks each summary's omitted facts (the shipped rows, no model) by:
  * weight      MED-OMIT's order: fact score, heaviest first (ties by fact id);
  * weight,cov  the same, ties broken by the least covered fact first;
  * others,...  the facts the other summaries of the case state first (engine.evidence.medomit.peers),
                then one of the tie-breaks above or P(omitted) or coverage alone;
and prints, per ordering, the rank of each documented dropped fact that MED-OMIT reported (the manifest's
``dropped_fact`` defects, matched as bench/medomit_eval.py matches them): the median rank and how many are in the
first 10. The sample's cases are split as bench/validity_set.py splits them: the tie-break of the shipped order
was chosen on the development cases; the test cases are reported. The sample is our own writing, and its
dropped facts were taken out of one summary of a case whose other summaries state them, which is the situation
the consensus order rewards: read it as a check of the mechanism, not as a measurement on real summaries.
Usage: python bench/medomit_ranking.py
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from medomit_eval import matches  # noqa: E402
from validity_set import DEV_CASES  # noqa: E402
from engine.data import load_paths  # noqa: E402
from engine.evidence.medomit import MedOmitResult, consensus, omitted_fact_rows  # noqa: E402
from engine.sample import SAMPLE_BUNDLE, SAMPLE_MEDOMIT, load_manifest  # noqa: E402


def _cov(s) -> float:
    return 1.0 if s.coverage is None else s.coverage


ORDERS = {
    "weight": lambda s, share: (-s.score, s.fact_id),
    "weight,cov": lambda s, share: (-s.score, _cov(s), s.fact_id),
    "others,weight": lambda s, share: (-share(s), -s.score, s.fact_id),
    "others,weight,cov": lambda s, share: (-share(s), -s.score, _cov(s), s.fact_id),
    "others,P(omitted)": lambda s, share: (-share(s), -(s.p_omitted or 0.0), s.fact_id),
    "others,cov": lambda s, share: (-share(s), _cov(s), s.fact_id),
}
SHIPPED = "others,weight,cov"  # engine.evidence.medomit.rows.omitted_fact_rows with a consensus


def _share(cons):
    """fact score -> the share of the other summaries that state its fact (0 without a comparison)."""
    return lambda s: cons.share_of(s.fact_id) if cons is not None else 0.0


def shipped_results() -> list[MedOmitResult]:
    return [MedOmitResult.from_json(json.loads(x)["result"])
            for x in SAMPLE_MEDOMIT.read_text(encoding="utf-8").splitlines() if x.strip()]


def dropped_ranks(results, ds, manifest) -> dict[str, dict[str, list[int]]]:
    """ordering -> split ("dev" / "test") -> rank of each reported dropped fact among its summary's omitted facts
    (its best-placed matching report)."""
    out = {k: {"dev": [], "test": []} for k in ORDERS}
    for r in results:
        if r.status != "complete":
            continue
        case = ds.case(r.case_id)
        cons = consensus(r, [o for o in results if o.case_id == r.case_id])
        share = _share(cons)
        for d in (d for d in manifest["summaries"][r.summary_id]["defects"] if d["type"] == "dropped_fact"):
            hits = {s.fact_id for s in r.omitted if matches(s, r, d, case)}
            if not hits:
                continue
            for name, key in ORDERS.items():
                order = [s.fact_id for s in sorted(r.omitted, key=lambda s: key(s, share))]
                out[name]["dev" if r.case_id in DEV_CASES else "test"].append(
                    min(order.index(h) for h in hits) + 1)
    return out


def shipped_order_matches(results) -> bool:
    """The Case page's order (omitted_fact_rows) is the SHIPPED ordering here (a pipeline check)."""
    for r in results:
        if r.status != "complete":
            continue
        cons = consensus(r, [o for o in results if o.case_id == r.case_id])
        share = _share(cons)
        want = [s.fact_id for s in sorted(r.omitted, key=lambda s: ORDERS[SHIPPED](s, share))]
        if [row["fact_id"] for row in omitted_fact_rows(r, cons)] != want:
            return False
    return True


def main() -> None:
    ds = load_paths([SAMPLE_BUNDLE])[0]
    results = shipped_results()
    per = [len(r.omitted) for r in results if r.status == "complete"]
    print(f"omitted facts per summary: median {statistics.median(per)}, {min(per)}-{max(per)} "
          f"({len(per)} summaries)")
    ranks = dropped_ranks(results, ds, load_manifest())
    print(f"{'ordering':22s} {'dev: median, in top 10':>24s} {'test: median, in top 10':>25s}")
    for name, by in ranks.items():
        cells = [f"{statistics.median(v):5.1f}, {sum(1 for x in v if x <= 10)} of {len(v)}" if v else "—"
                 for v in (by["dev"], by["test"])]
        print(f"{name:22s} {cells[0]:>24s} {cells[1]:>25s}" + ("   <- the Case page" if name == SHIPPED else ""))
        print(f"{'':22s} ranks dev {by['dev']} test {by['test']}")
    print("the Case page orders as", SHIPPED, "(pipeline check):", shipped_order_matches(results))


if __name__ == "__main__":
    main()
