"""Honest omission benchmark: development and test splits, two source kinds, every registered coverage method.

Data (all written by the team, synthetic, in the repository):
  * notes          — the sample's 12 patients (sample_data/pdsqi_sample), each with a labelled fact list, a
                     complete reference summary whose sentences name their facts, and 4 written summaries of known
                     content (sample_data/note_facts/);
  * conversation   — 14 doctor–patient conversations with their clinical note (the complete summary; its
                     sentences are mapped to facts through the facts' note sentences) and 4–5 written summaries of
                     known content (sample_data/conversations/).
Cases are split per kind, deterministically (seed 13), into a development half — where methods, settings, the
salience rule, the calibration and the flag threshold are chosen — and a test half that is only reported.

Constructions per case, from its complete summary C (fact-bearing sentences removed in a seeded random order, two
orders per case, the half always containing the quarter):
  complete  C itself                                    quarter   25 % of the fact-bearing sentences removed
  half      50 % removed                                compressed  C with stopwords removed (all facts kept)
  truncated every sentence cut to its first half        rewrite   the written telegraphic summary (all facts,
                                                                    other words; the closest we have to a paraphrase)
Figures (per method, split and kind):
  AUROC      cross-case AUROC, complete vs half-omitted (one threshold for every case of the split)
  paired     share of (case, order) where half scores above complete
  graded     share where complete < quarter < half
  vs compr.  share where half scores above compressed (compression is not omission)
  vs rewrite share where half scores above the written complete rewrite
  loc        localisation: per (case, order), AUROC of unit scores × salience (what the Case page ranks by) for
             source units carrying a removed fact vs units carrying a kept fact; averaged
  loc-all    the same against every other unit (units carrying no labelled fact included: stricter)
  top5       share of the removed facts inside one of the first 5 stored regions (what a reader sees first);
             "top5 keys" ranks the same units with the key-term tier only, "top5 plain" by score x salience only
             (the ranking before engine.evidence.coverage.regions.region_rank_key's tiers)
  spearman   Spearman of the global score with the true omission rate over the labelled summaries (the complete
             summary, the written ones, and the quarter/half constructions)
  flagged    with the method's flag threshold: share of complete summaries flagged / of half-omitted flagged
Usage:
  python bench/omission_benchmark.py [--methods unitcov topiccov ...] [--splits dev test] [--fit] [--with-support]
  --fit   fit unitcov's calibration and flag threshold on the development split and print them (paste into
          engine/evidence/coverage/regions.py UNITCOV_CALIBRATION and the registry); the test split is not used.
"""
from __future__ import annotations

import argparse
import glob
import json
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from engine.evidence.coverage import CoverageParams, METHODS, calibrate, score_coverage, select_regions  # noqa: E402
from engine.evidence import Embedder  # noqa: E402
from engine.data import load_paths  # noqa: E402
from engine.core import Case, Note, Summary  # noqa: E402
from engine.evidence.text import split_sentences, unit_salience  # noqa: E402
from engine.statistics import auroc, logistic_curve, spearman_rho  # noqa: E402

SPLIT_SEED = 13
ORDERS = (0, 1)
STOPWORDS = frozenset("""a an the of to in on at for and or but with by from as is are was were be been being this
that these those it its he she they them his her their we our you your i me my have has had do does did so such
than then there here very just also about into over under again further once only own same too can will would
should could shall may might must am which who whom whose what when where why how all any both each few more most
other some""".split())  # negations are kept: dropping them would change the facts


@dataclass
class Item:
    kind: str
    case: Case
    sents: list[str]  # the complete summary, one sentence per entry
    sent_facts: list[list[str]]  # the facts each sentence states
    facts: dict[str, dict]
    spans: dict[str, list[tuple[str, int, int]]]  # fact -> (note id, start, end) in the source
    written: list[tuple[str, str, float, str]] = field(default_factory=list)  # (id, text, omission rate, style)


def load_conversations() -> list[Item]:
    items = []
    for f in sorted(glob.glob(str(ROOT / "sample_data/conversations/*.json"))):
        d = json.load(open(f, encoding="utf-8"))
        case = Case(d["encounter_id"], d["specialty"], (Note("1", d["dialogue"], note_type="Dialogue transcript"),))
        facts = {x["fact_id"]: x for x in d["facts"]}
        sents = [p.strip() for s in split_sentences(d["note"]) for p in s.text.split("\n") if p.strip()]
        sent_facts = [[fid for fid, x in facts.items() if x["note_sentence"] in s or s in x["note_sentence"]]
                      for s in sents]
        spans = {}
        for fid, x in facts.items():
            a = d["dialogue"].index(x["dialogue_span"])
            spans[fid] = [("1", a, a + len(x["dialogue_span"]))]
        written = [(s["summary_id"], s["text"], s["omission_rate"], s["style"]) for s in d["summaries"]]
        items.append(Item("conversation", case, sents, sent_facts, facts, spans, written))
    return items


def load_note_cases() -> list[Item]:
    ds, _ = load_paths([ROOT / "sample_data/pdsqi_sample"])
    items = []
    for f in sorted(glob.glob(str(ROOT / "sample_data/note_facts/*.json"))):
        d = json.load(open(f, encoding="utf-8"))
        case = ds.case(d["case_id"])
        facts = {x["fact_id"]: x for x in d["facts"]}
        spans = {}
        for fid, x in facts.items():
            t = case.note(x["note_id"]).text
            a = t.index(x["source_span"])
            spans[fid] = [(x["note_id"], a, a + len(x["source_span"]))]
        written = [(s["summary_id"], s["text"], s["omission_rate"], s["style"]) for s in d["summaries"]]
        items.append(Item("notes", case, [s["text"] for s in d["reference"]], [s["facts"] for s in d["reference"]],
                          facts, spans, written))
    return items


def split(items: list[Item]) -> dict[str, list[Item]]:
    """Per kind: case ids sorted, shuffled with SPLIT_SEED, first half development, rest test."""
    out: dict[str, list[Item]] = {"dev": [], "test": []}
    for kind in sorted({i.kind for i in items}):
        ks = sorted((i for i in items if i.kind == kind), key=lambda i: i.case.case_id)
        random.Random(SPLIT_SEED).shuffle(ks)
        half = len(ks) // 2
        out["dev"] += ks[:half]
        out["test"] += ks[half:]
    return out


def compress(text: str) -> str:
    return "\n".join(" ".join(w for w in line.split(" ")
                              if re.sub(r"[^a-z]", "", w.lower()) not in STOPWORDS or not re.sub(r"[^a-z]", "", w.lower()))
                     for line in text.split("\n"))


def truncate(sents: list[str]) -> str:
    return "\n".join(" ".join(s.split()[: max(1, len(s.split()) // 2)]).rstrip(",;:") + "." for s in sents)


def removed_sentences(item: Item, order: int, share: float) -> tuple[set[int], set[str]]:
    """The indices of the ``share`` of C's fact-bearing sentences removed (seeded order; nested across shares) and
    the facts no kept sentence states."""
    idx = [i for i, f in enumerate(item.sent_facts) if f]
    random.Random(1000 * order + len(item.case.case_id)).shuffle(idx)
    gone = set(idx[: round(len(idx) * share)])
    kept = {f for i, fs in enumerate(item.sent_facts) if i not in gone for f in fs}
    return gone, set(item.facts) - kept


def removal(item: Item, order: int, share: float) -> tuple[str, float, set[str]]:
    """C without ``share`` of its fact-bearing sentences (:func:`removed_sentences`): (text, true omission rate,
    removed facts)."""
    gone, removed = removed_sentences(item, order, share)
    return "\n".join(s for i, s in enumerate(item.sents) if i not in gone), len(removed) / len(item.facts), removed


@dataclass
class Scored:
    g: float
    raw: float
    units: list  # (note id, start, end, score × salience)
    regions: list = field(default_factory=list)  # the stored top regions (key terms first), as (note, start, end)
    regions_plain: list = field(default_factory=list)  # the same units ranked by score x salience only
    regions_keys: list = field(default_factory=list)  # ... with the key-term tier but not the change/next-step one


class Scorer:
    def __init__(self, emb: Embedder, key: str):
        self.emb, self.key, self.n = emb, key, 0

    def __call__(self, item: Item, text: str) -> Scored:
        self.n += 1
        r = score_coverage(item.case, Summary("bench", item.case.case_id, text), self.emb, CoverageParams(method=self.key))
        sal = unit_salience(item.case, r.units)
        from engine.evidence.coverage import regions as coverage_module

        coverage_module.RANK_ACTIONS = False  # the rankings before this rule, on the same units
        try:
            plain = select_regions(item.case, r.units, self.key, r.threshold, TOP_REGIONS, sal)
            keys = select_regions(item.case, r.units, self.key, r.threshold, TOP_REGIONS, sal, text)
        finally:
            coverage_module.RANK_ACTIONS = True
        return Scored(r.global_score, float(r.params.get("raw_score", r.global_score)),
                      [(u.note_id, u.start, u.end, u.score * s) for u, s in zip(r.units, sal)],
                      [(x.note_id, x.start, x.end) for x in r.regions[:TOP_REGIONS]],
                      [(x.note_id, x.start, x.end) for x in plain],
                      [(x.note_id, x.start, x.end) for x in keys])


TOP_REGIONS = 5  # what a reader looks at first: the Case page's first five "possibly omitted" regions


def _top_recall(regions: list, removed: set, spans: dict) -> float:
    """Share of the removed facts with a span inside one of the top regions."""
    hit = [any(_overlaps(r, [sp]) for sp in spans[f] for r in regions) for f in removed]
    return float(np.mean(hit)) if hit else float("nan")


def _overlaps(u, spans) -> bool:
    return any(u[0] == nid and u[1] < b and u[2] > a for nid, a, b in spans)


def evaluate(score: Scorer, items: list[Item]) -> dict:
    comp, half, paired, graded, vs_comp, vs_rew, loc, loc_all = [], [], [], [], [], [], [], []
    top5, top5_plain, top5_keys = [], [], []
    lab_x, lab_y, records = [], [], []  # records: (raw score, true omission rate, role) for --fit
    for it in items:
        full = score(it, "\n".join(it.sents))
        comp.append(full.g)
        lab_x.append(full.g), lab_y.append(0.0), records.append((full.raw, 0.0, "complete"))
        compressed = score(it, compress("\n".join(it.sents))).g
        rewrite = [w for w in it.written if w[3] == "telegraphic" and w[2] == 0.0]
        rew = score(it, rewrite[0][1]).g if rewrite else None
        for order in ORDERS:
            qt, qrate, _ = removal(it, order, 0.25)
            ht, hrate, removed = removal(it, order, 0.5)
            q, h = score(it, qt), score(it, ht)
            half.append(h.g)
            paired.append(h.g > full.g)
            graded.append(full.g < q.g < h.g)
            vs_comp.append(h.g > compressed)
            if rew is not None:
                vs_rew.append(h.g > rew)
            for x, y, role in ((q, qrate, "quarter"), (h, hrate, "half")):
                lab_x.append(x.g), lab_y.append(y), records.append((x.raw, y, role))
            top5.append(_top_recall(h.regions, removed, it.spans))
            top5_plain.append(_top_recall(h.regions_plain, removed, it.spans))
            top5_keys.append(_top_recall(h.regions_keys, removed, it.spans))
            pos = [sp for f in removed for sp in it.spans[f]]
            kept = [sp for f in set(it.facts) - removed for sp in it.spans[f]]
            y_all = [_overlaps(u, pos) for u in h.units]
            if 0 < sum(y_all) < len(y_all):
                loc_all.append(auroc(y_all, [u[3] for u in h.units]))
            sel = [(u, p) for u, p in zip(h.units, y_all) if p or _overlaps(u, kept)]
            yk = [p and not _overlaps(u, kept) for u, p in sel]
            if 0 < sum(yk) < len(yk):
                loc.append(auroc(yk, [u[3] for u, _ in sel]))
        for _sid, text, rate, _style in it.written:
            w = score(it, text)
            lab_x.append(w.g), lab_y.append(rate), records.append((w.raw, rate, "written"))
    kinds = {it.kind for it in items}  # one source kind per call: its own flag threshold
    flag = METHODS[score.key].flag_for({"source_kind": kinds.pop()}) if len(kinds) == 1 else \
        METHODS[score.key].flag_threshold
    return {"AUROC": auroc([0] * len(comp) + [1] * len(half), comp + half),
            "paired": float(np.mean(paired)), "graded": float(np.mean(graded)), "vs compr.": float(np.mean(vs_comp)),
            "vs rewrite": float(np.mean(vs_rew)) if vs_rew else float("nan"),
            "loc": float(np.mean(loc)) if loc else float("nan"),
            "loc-all": float(np.mean(loc_all)) if loc_all else float("nan"),
            "top5": float(np.nanmean(top5)) if top5 else float("nan"),
            "top5 plain": float(np.nanmean(top5_plain)) if top5_plain else float("nan"),
            "top5 keys": float(np.nanmean(top5_keys)) if top5_keys else float("nan"),
            "spearman": float(spearman_rho(lab_x, lab_y).value),
            "flagged complete": float(np.mean([c >= flag for c in comp])),
            "flagged half": float(np.mean([h >= flag for h in half])),
            "_records": records}


FIGURES = ("AUROC", "paired", "graded", "vs compr.", "vs rewrite", "loc", "loc-all", "top5", "top5 keys", "top5 plain",
           "spearman",
           "flagged complete",
           "flagged half")
# the rule that chose the default on the development split, fixed before the test split was scored
CHOICE_FIGURES = ("AUROC", "paired", "graded", "vs compr.", "loc", "spearman")
# the targets set for this benchmark; its localisation target ("regions carrying the removed sentences rank above the rest") is
# loc-all, taken literally; loc (removed vs kept facts) is printed beside it
TARGETS = {"AUROC": 0.90, "paired": 0.97, "graded": 0.85, "vs compr.": 0.85, "loc-all": 0.80, "spearman": 0.60}


def fit_calibration(results_dev: dict) -> None:
    """unitcov: per kind, the logistic curve 1/(1+exp(-(a + b·raw))) closest (least squares) to the true omission
    rates of the development split's labelled summaries; then the flag threshold maximising F1 of complete (no)
    vs half-omitted (yes) on the calibrated development scores of both kinds together (one threshold that means
    the same for both)."""
    from engine.evidence.coverage import calibrated

    print("\n--fit (development split only)")
    coefs, comp, half = {}, [], []
    for kind, res in results_dev.items():
        raw = np.array([r[0] for r in res["_records"]])
        rate = np.array([r[1] for r in res["_records"]])
        curve = logistic_curve(raw, rate, p0=(-3.0, 8.0), maxfev=20000)
        coefs[kind] = (round(curve.a, 4), round(curve.b, 4))
        cal = [calibrated(x, *coefs[kind]) for x in raw]
        comp += [c for c, r in zip(cal, res["_records"]) if r[2] == "complete"]
        half += [c for c, r in zip(cal, res["_records"]) if r[2] == "half"]
    print(f"UNITCOV_CALIBRATION = {coefs!r}")
    cal = calibrate([float(x) for x in comp + half], [False] * len(comp) + [True] * len(half))
    print(f"unitcov flag threshold (F1 complete vs half, dev): {cal.threshold:.4f} (P {cal.precision}, "
          f"R {cal.recall})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--splits", nargs="+", default=["dev", "test"])
    ap.add_argument("--with-support", action="store_true",
                    help="also print the weak-support figures (bench/support_benchmark.py --no-legacy: genuine "
                         "sentences flagged and swapped-in sentences caught, per split and kind)")
    args = ap.parse_args()
    items = load_note_cases() + load_conversations()
    sp = split(items)
    for name in ("dev", "test"):
        for kind in ("notes", "conversation"):
            print(f"{name:4s} {kind:12s}: {', '.join(i.case.case_id for i in sp[name] if i.kind == kind)}")
    print("All data is ours (synthetic, written by the team): the held-out real conversations are the real test.\n")
    emb = Embedder()
    table: dict = {}
    for key in args.methods:
        scorer = Scorer(emb, key)
        t0 = time.perf_counter()
        for name in args.splits:
            for kind in ("notes", "conversation"):
                table[(key, name, kind)] = evaluate(scorer, [i for i in sp[name] if i.kind == kind])
        print(f"{key}: {scorer.n} scorings in {time.perf_counter() - t0:.0f} s", flush=True)
    head = f"{'method':10s} {'split':5s} {'kind':12s} " + " ".join(f"{f:>10s}" for f in FIGURES)
    print("\n" + head)
    for (key, name, kind), res in table.items():
        print(f"{key:10s} {name:5s} {kind:12s} " + " ".join(f"{res[f]:10.3f}" for f in FIGURES))
    if "dev" in args.splits:
        mean = {k: np.mean([table[(k, "dev", kind)][f] for kind in ("notes", "conversation") for f in CHOICE_FIGURES])
                for k in args.methods}
        best = max(mean, key=mean.get)
        print("\nchoice on the development split (mean of " + ", ".join(CHOICE_FIGURES) + " over both kinds): "
              + ", ".join(f"{k} {v:.3f}" for k, v in sorted(mean.items(), key=lambda kv: -kv[1]))
              + f" -> {best}")
    if "test" in args.splits:
        from engine.evidence.coverage import DEFAULT_METHOD

        if DEFAULT_METHOD in args.methods:
            print(f"\ntargets on the test split for the default method ({DEFAULT_METHOD}):")
            for kind in ("notes", "conversation"):
                res = table[(DEFAULT_METHOD, "test", kind)]
                print(f"  {kind:12s} " + ", ".join(f"{f} {res[f]:.3f} ({'MET' if res[f] >= t else 'MISSED'} >= {t})"
                                                   for f, t in TARGETS.items()))
    if args.fit and "unitcov" in args.methods and "dev" in args.splits:
        fit_calibration({kind: table[("unitcov", "dev", kind)] for kind in ("notes", "conversation")})
    if args.with_support:
        sys.path.insert(0, str(ROOT / "bench"))
        import support_benchmark

        print("\nweak-support rule (bench/support_benchmark.py --no-legacy):", flush=True)
        support_benchmark.main(["--no-legacy"])


if __name__ == "__main__":
    main()
