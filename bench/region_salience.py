"""Boilerplate down-weighting of uncovered regions (engine.evidence.text.salience), measured on the bundled sample.

For every sample summary and each coverage method (topiccov, sentcov, kde) the summary is scored with the shipped
defaults (``CoverageParams(method=m)``: default threshold, ``top_regions`` 8), and its regions are listed twice
from the same unit scores:

* before — ranked by raw omission score (every unit's salience 1.0);
* after  — ranked by score x salience (the engine.evidence.text.salience rule), as ``score_coverage`` now stores them.

Two views, each cut to the top 5 regions:
* stored: ``select_regions`` (what ``score_coverage`` stores: regions at or above the threshold, topped up with
  the least covered places when fewer than 8 pass it), first 5;
* page: ``merge_regions(case, units, threshold, top=5)`` as the Case page lists them at the default slider.

Prints (1) the share of ``dropped_fact`` spans of the manifest (summaries with such a defect) that overlap one of
the top 5 regions of their summary, and (2) the share of top-5 regions (all summaries) that are boilerplate /
small talk by the rule (region salience < engine.evidence.text.salience.LOW_SALIENCE, salience computed by the rule for both
rankings). The sample is our own synthetic data (sample_data/), not an external benchmark.
Usage: python bench/region_salience.py [--methods topiccov sentcov kde]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.evidence.coverage import CoverageParams, Region, merge_regions, score_coverage, select_regions  # noqa: E402
from engine.evidence import Embedder  # noqa: E402
from engine.data import load_paths  # noqa: E402
from engine.evidence.text import LOW_SALIENCE, unit_salience  # noqa: E402
from engine.sample import SAMPLE_BUNDLE, load_manifest  # noqa: E402

TOP = 5


def rule_salience(region: Region, units, sal) -> float:
    """The rule's salience of a region (as merge_regions computes it), whatever ranking produced the region."""
    inside = [(u.score, w) for u, w in zip(units, sal)
              if u.note_id == region.note_id and u.start < region.end and region.start < u.end]
    if not inside:
        return 1.0
    top = max(s for s, _ in inside)
    if top <= 0:
        return max(w for _, w in inside)
    return min(1.0, max(0.0, max(s * w for s, w in inside) / top))


def overlaps(regions, note_id: str, start: int, end: int) -> bool:
    return any(r.note_id == note_id and r.start < end and start < r.end for r in regions)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", nargs="+", default=["topiccov", "sentcov", "kde"])
    args = ap.parse_args()
    ds, _ = load_paths([SAMPLE_BUNDLE])
    manifest = load_manifest()["summaries"]
    emb = Embedder()
    t0 = time.perf_counter()
    # hits[method][view][when] = spans overlapped; boiler[...] = [boilerplate regions, regions]
    hits = {m: {v: {"before": 0, "after": 0} for v in ("stored", "page")} for m in args.methods}
    boiler = {m: {v: {"before": [0, 0], "after": [0, 0]} for v in ("stored", "page")} for m in args.methods}
    n_spans = 0
    examples: dict[str, list[str]] = {m: [] for m in args.methods}
    changes: list[str] = []
    for s in ds.summaries:
        case = ds.case(s.case_id)
        spans = []
        for d in manifest[s.summary_id]["defects"]:
            if d["type"] == "dropped_fact":
                text = case.note(d["note_id"]).text
                a = text.index(d["source_span"])
                spans.append((d["note_id"], a, a + len(d["source_span"])))
        n_spans += len(spans)
        for m in args.methods:
            p = CoverageParams(method=m)
            res = score_coverage(case, s, emb, p)
            units, thr = res.units, res.threshold
            sal = unit_salience(case, units)
            ones = [1.0] * len(units)
            lists = {
                ("stored", "before"): select_regions(case, units, m, thr, p.top_regions, ones)[:TOP],
                ("stored", "after"): select_regions(case, units, m, thr, p.top_regions, sal)[:TOP],
                ("page", "before"): merge_regions(case, units, thr, top=TOP, salience=ones),
                ("page", "after"): merge_regions(case, units, thr, top=TOP, salience=sal),
            }
            assert [(r.note_id, r.start) for r in res.regions[:TOP]] == \
                [(r.note_id, r.start) for r in lists[("stored", "after")]]
            for view in ("stored", "page"):
                for sp in spans:
                    was, now = overlaps(lists[(view, "before")], *sp), overlaps(lists[(view, "after")], *sp)
                    if was != now:  # say why a dropped fact entered or left the top 5
                        reg = [r for r in lists[(view, "before" if was else "after")]
                               if r.note_id == sp[0] and r.start < sp[2] and sp[1] < r.end][0]
                        changes.append(f"  {m}/{view} {s.summary_id}: {'lost' if was else 'gained'} — region "
                                       f"{reg.text[:70]!r} raw {reg.score}, rule salience "
                                       f"{rule_salience(reg, units, sal):.2f}")
            for (view, when), regs in lists.items():
                hits[m][view][when] += sum(overlaps(regs, *sp) for sp in spans)
                low = [r for r in regs if rule_salience(r, units, sal) < LOW_SALIENCE]
                boiler[m][view][when][0] += len(low)
                boiler[m][view][when][1] += len(regs)
                if view == "stored" and when == "before":
                    examples[m] += [r.text.strip().splitlines()[0][:60] for r in low]
    took = time.perf_counter() - t0
    print("Measured on the bundled synthetic sample (our own data, sample_data/): "
          f"{len(ds.summaries)} summaries, {n_spans} dropped-fact spans; default CoverageParams per method; "
          f"top {TOP} regions.\n")
    print("dropped-fact spans overlapping a top-5 region (before = raw score, after = score x salience)")
    print(f"{'method':10s} {'stored before':>14s} {'stored after':>13s} {'page before':>12s} {'page after':>11s}")
    for m in args.methods:
        h = hits[m]
        print(f"{m:10s} " + " ".join(f"{h[v][w]:>{k - 6}d}/{n_spans:<2d} {h[v][w] / n_spans:4.0%}"
                                     for v, w, k in (("stored", "before", 14), ("stored", "after", 13),
                                                     ("page", "before", 12), ("page", "after", 11))))
    if changes:
        print("changes (a region's raw score is its highest unit's; after, it ranks by its best salience-weighted "
              "unit):")
        print("\n".join(changes))
    print(f"\nshare of top-5 regions that are boilerplate / small talk by the rule (salience < {LOW_SALIENCE})")
    print(f"{'method':10s} {'stored before':>14s} {'stored after':>13s} {'page before':>12s} {'page after':>11s}")
    for m in args.methods:
        b = boiler[m]
        print(f"{m:10s} " + " ".join(f"{b[v][w][0]:>{k - 10}d}/{b[v][w][1]:<3d} {b[v][w][0] / max(1, b[v][w][1]):5.1%}"
                                     for v, w, k in (("stored", "before", 14), ("stored", "after", 13),
                                                     ("page", "before", 12), ("page", "after", 11))))
    for m in args.methods:
        if examples[m]:
            print(f"  {m}: boilerplate in the top 5 before — " + "; ".join(sorted(set(examples[m]))[:8]))
    print(f"\n{took:.0f} s")


if __name__ == "__main__":
    main()
