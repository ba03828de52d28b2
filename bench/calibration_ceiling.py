"""The best agreement any predictor can reach with the sample's raters through the product's calibration.

The sample's ratings are simulated (``sample_data/build_sample.py``): each item has a latent "true" score per summary
(from the summary's injected defects, its quality group and the length of its notes), and each of the 7 raters adds
a personal bias, Gaussian noise and rounding. This script feeds that latent score itself to
:func:`engine.judge.calibration.fit` as if it were the judge's score (``kind="judge"``), so the leave-one-case-out
figures it prints are those of a predictor that knows each summary's truth exactly: the ceiling the raters' noise
leaves for ICC(2,1) and Spearman ρ on this sample. The product's own figures (``python -m engine calibrate sample
--dry-run``) are read against it; an item whose ceiling is below a goal cannot meet that goal on this sample.
It is a property of the simulated sample, not of the product, and it runs no model.
Usage: python bench/calibration_ceiling.py
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sample_data"))

import build_sample  # noqa: E402
from engine.data import load_paths, medians  # noqa: E402
from engine.judge import calibration  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402


def latent_by_summary() -> dict[str, dict[str, float]]:
    """summary id -> item -> the simulation's latent score (as build_sample computes it)."""
    cases = build_sample.load_cases()
    words = [sum(len(n["text"].split()) for n in c["notes"]) for c in cases]
    mu, sd = statistics.mean(words), statistics.pstdev(words) or 1.0
    return {s["summary_id"]: build_sample.latent_scores(s, c, (w - mu) / sd)
            for c, w in zip(cases, words) for s in c["summaries"]}


def main() -> None:
    ds = load_paths([SAMPLE_BUNDLE])[0]
    latent = latent_by_summary()
    human = {s.summary_id: {k: v for k, v in medians(r for r in ds.ratings if r.summary_id == s.summary_id).items()
                            if k in calibration.LIKERT_KEYS and v is not None} for s in ds.summaries}
    rows = [(s.summary_id, s.case_id, {k: latent[s.summary_id].get(k) for k in calibration.LIKERT_KEYS}, None)
            for s in ds.summaries]
    cal = calibration.fit("sample", "latent", rows, human, len({r.rater_id for r in ds.ratings}), kind="judge", n_boot=200)
    print("Ceiling on the sample: the simulation's latent score as the predictor, calibrated leave-one-case-out")
    print(f"{'item':16s} {'n':>3s} {'ρ':>6s} {'ICC(2,1)':>9s}  95 % CI")
    for key in calibration.LIKERT_KEYS:
        ic = cal.items.get(key)
        if ic is None or ic.status != "fitted":
            print(f"{key:16s} {'—':>3s} refused: {ic.reason if ic else 'no latent score'}")
            continue
        a = ic.after
        ci = f"{a.icc.ci[0]:.2f}–{a.icc.ci[1]:.2f}" if a.icc.ci else "—"
        print(f"{key:16s} {a.n:3d} {a.spearman.value:6.2f} {a.icc.value:9.2f}  {ci}")


if __name__ == "__main__":
    main()
