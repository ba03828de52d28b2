"""The "likely omission" flag of the default coverage method on real text the team did not write.

Data: ACI-BENCH training split (Yim et al., Scientific Data 2023; CC BY 4.0) from the realdev set, split by
encounter as in ``bench/verify_set.py``. Each encounter's conversation is the source; its summaries are the note a
clinician wrote from it (complete: it is what a good summary of the visit says) and the same note with half of its
narrative sentences taken out (seeded): an omissive summary. Per split: the unit-coverage global score of each,
the share of complete notes flagged (a false "likely omission") and of half notes flagged, at the shipped flag
threshold and at candidates. ``--choose`` picks, on the development split only, the lowest threshold that flags at
most :data:`MAX_COMPLETE_FLAGGED` of the complete notes; the test split is then reported at it.

Also prints the sample's flag rate by quality group (its summaries s1 high, s2 medium, s3 low) at each threshold:
the sample is written by the team, so it is a check the product keeps, not a measurement.

    python bench/flag_realdev.py [--choose]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import verify_set  # noqa: E402

from engine.core import Case, Note, Summary  # noqa: E402
from engine.evidence.coverage import CoverageParams, METHODS, score_coverage  # noqa: E402
from engine.evidence import Embedder  # noqa: E402

MAX_COMPLETE_FLAGGED = 0.10
BEFORE = 0.171  # the single flag threshold the registry had before it held one per source kind
SEED = 11


def encounters(split: str) -> list[tuple[str, str, list[str]]]:
    """(encounter id, conversation, the note's narrative sentences) of one split."""
    out = []
    for r in verify_set.read_rows("aci_bench_train.csv"):
        cid = f"aci:{r['dataset']}-{r['encounter_id']}"
        if verify_set.split_of(cid) == split:
            sents = verify_set.aci_sentences(r["note"])
            if len(sents) >= 6:
                out.append((cid, r["dialogue"].strip(), sents))
    return out


def scores(split: str, emb) -> list[tuple[float, float]]:
    """(complete note's global score, half note's) per encounter."""
    rng = random.Random(SEED)
    out = []
    for cid, conv, sents in encounters(split):
        case = Case(cid, "General", (Note("1", conv),))
        keep = sorted(rng.sample(range(len(sents)), len(sents) - len(sents) // 2))
        pair = []
        for text in (" ".join(sents), " ".join(sents[i] for i in keep)):
            res = score_coverage(case, Summary("s", cid, text), emb, CoverageParams(method="unitcov"))
            pair.append(res.global_score)
        out.append((pair[0], pair[1]))
    return out


def rates(pairs, thr: float) -> tuple[float, float]:
    n = max(len(pairs), 1)
    return sum(c >= thr for c, _ in pairs) / n, sum(h >= thr for _, h in pairs) / n


def choose(pairs) -> float:
    """The lowest threshold (on the scores' grid) flagging at most :data:`MAX_COMPLETE_FLAGGED` of complete notes."""
    for thr in sorted({round(x, 3) for c, h in pairs for x in (c, h)}):
        if rates(pairs, thr)[0] <= MAX_COMPLETE_FLAGGED:
            return thr
    return 1.0


def sample_rates(thr: float, emb) -> dict[str, str]:
    from engine.data import load_paths
    from engine.sample import SAMPLE_BUNDLE

    ds, _ = load_paths(sorted(str(p) for p in SAMPLE_BUNDLE.iterdir() if p.suffix in (".csv", ".jsonl")))
    groups: dict[str, list[bool]] = {"high (s1)": [], "medium (s2)": [], "low (s3)": []}
    for s in ds.summaries:
        g = score_coverage(ds.case(s.case_id), s, emb, CoverageParams(method="unitcov")).global_score
        key = {"1": "high (s1)", "2": "medium (s2)", "3": "low (s3)"}[s.summary_id[-1]]
        groups[key].append(g >= thr)
    return {k: f"{sum(v)} of {len(v)}" for k, v in groups.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--choose", action="store_true")
    args = ap.parse_args()
    emb = Embedder()
    m = METHODS["unitcov"]
    shipped = {k: m.flag_for({"source_kind": k}) for k in ("conversation", "notes")}
    dev, test = scores("dev", emb), scores("test", emb)
    rows = [("before (one threshold)", BEFORE, BEFORE), ("shipped (per source kind)", shipped["conversation"],
                                                         shipped["notes"])]
    if args.choose:
        chosen = choose(dev)
        print(f"chosen on dev for conversations: {chosen} (at most {MAX_COMPLETE_FLAGGED:.0%} of complete notes "
              f"flagged)")
    for label, conv_thr, notes_thr in rows:
        for name, pairs in (("dev", dev), ("test", test)):
            c, h = rates(pairs, conv_thr)
            print(f"{label}, conversations at {conv_thr:.3f} · ACI {name} ({len(pairs)} encounters): complete "
                  f"notes flagged {c:.0%}, half notes flagged {h:.0%}")
        print(f"{label}, notes at {notes_thr:.3f} · sample flagged: {sample_rates(notes_thr, emb)}")


if __name__ == "__main__":
    main()
