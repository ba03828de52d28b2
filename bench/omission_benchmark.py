"""Omission vs compression benchmark, built from the sample data.

For every sample summary S (36), two variants (odd or even sentences removed) give:
  * construction A: S complete            vs  S with half its sentences removed       (omission at any length)
  * construction B: S with every sentence cut to half its words (length-matched control)
                                          vs  S with half its sentences removed       (omission at equal length)
A method should score the half-removed summary as *more* omissive in both. Prints, per method and construction,
the AUROC (half-removed = positive) and the paired accuracy (share of pairs where the half-removed version scores
higher). Target for the default method: paired accuracy >= 0.8 on both constructions.
Usage: python bench/omission_benchmark.py [--methods sentcov kde kde-raw] [--calibrate]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sklearn.metrics import roc_auc_score  # noqa: E402

from engine.coverage import CoverageParams, calibrate, score_coverage  # noqa: E402
from engine.embeddings import Embedder  # noqa: E402
from engine.loading import load_paths  # noqa: E402
from engine.models import Summary  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402
from engine.sentences import split_sentences  # noqa: E402

METHODS = {"topiccov": CoverageParams(method="topiccov"), "sentcov": CoverageParams(method="sentcov"),
           "kde": CoverageParams(method="kde"),  # the shipped kde defaults
           "kde-paper": CoverageParams(method="kde", pca_components=5, bandwidth="scott", clean=True)}


def parse_spec(spec: str) -> CoverageParams:
    """'kde:pca=5,bw=0.1,clean=0' -> CoverageParams"""
    if spec in METHODS:
        return METHODS[spec]
    method, _, rest = spec.partition(":")
    kw = dict(x.split("=") for x in rest.split(",") if x)
    return CoverageParams(method=method, pca_components=int(kw.get("pca", 5)), bandwidth=kw.get("bw", "scott"),
                          clean=kw.get("clean", "1") == "1", topic_distance=float(kw.get("td", 0.5)))


def variants(s: Summary):
    sents = split_sentences(s.text)
    for parity in (0, 1):
        half = " ".join(x.text for i, x in enumerate(sents) if i % 2 == parity)
        # each sentence keeps the first half of its words and stays a sentence (ends with a period)
        cut = " ".join(" ".join(x.clean.split()[: max(1, len(x.clean.split()) // 2)]).rstrip(",;:") + "."
                       for x in sents)
        yield (Summary(s.summary_id + f"-half{parity}", s.case_id, half),
               Summary(s.summary_id + "-cut", s.case_id, cut))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", nargs="+", default=["topiccov", "sentcov", "kde", "kde-paper"],
                    help="names or specs such as kde:pca=10,bw=0.1,clean=1")
    ap.add_argument("--calibrate", action="store_true", help="also print F1-optimal thresholds (complete vs half)")
    args = ap.parse_args()
    ds, _ = load_paths([SAMPLE_BUNDLE])
    emb = Embedder()
    for name in args.methods:
        p = parse_spec(name)
        t0 = time.perf_counter()
        a_pairs, b_pairs = [], []
        for s in ds.summaries:
            case = ds.case(s.case_id)
            full = score_coverage(case, s, emb, p).global_score
            for half, cut in variants(s):
                h = score_coverage(case, half, emb, p).global_score
                c = score_coverage(case, cut, emb, p).global_score
                a_pairs.append((full, h))
                b_pairs.append((c, h))
        secs = time.perf_counter() - t0
        for label, pairs in (("A complete vs half-removed", a_pairs), ("B length-matched control vs half-removed",
                                                                       b_pairs)):
            y = [0] * len(pairs) + [1] * len(pairs)
            sc = [a for a, _ in pairs] + [b for _, b in pairs]
            acc = sum(b > a for a, b in pairs) / len(pairs)
            print(f"{name:24s} {label:42s} AUROC {roc_auc_score(y, sc):.3f}  paired accuracy {acc:.3f} "
                  f"({len(pairs)} pairs)")
        if args.calibrate:
            # validation split = summaries of the first half of the cases; test = the rest
            case_of = [s.case_id for s in ds.summaries for _ in range(2)]
            val_cases = {c.case_id for c in ds.cases[: len(ds.cases) // 2]}
            val = [p for p, c in zip(a_pairs, case_of) if c in val_cases]
            test = [p for p, c in zip(a_pairs, case_of) if c not in val_cases]
            cal = calibrate([a for a, _ in val] + [b for _, b in val], [False] * len(val) + [True] * len(val))
            pred = [(a >= cal.threshold, False) for a, _ in test] + [(b >= cal.threshold, True) for _, b in test]
            tp = sum(p and y for p, y in pred)
            fp = sum(p and not y for p, y in pred)
            prec = tp / (tp + fp) if tp + fp else 0.0
            rec = tp / len(test)
            f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
            print(f"{name:24s} threshold tuned on validation cases (A): {cal.threshold:.4f} (val F1 {cal.f1}); "
                  f"test cases: P {prec:.3f} R {rec:.3f} F1 {f1:.3f}")
        print(f"{name:24s} {secs:.1f} s for {len(ds.summaries) * 5} scorings")


if __name__ == "__main__":
    main()
