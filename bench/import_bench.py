"""Import benchmark: a generated 200-case x 5-note x 7-rater bundle, validated and imported into a fresh workspace.

Prints cases imported per second. Target: 200 cases in <= 5 s (on the 2-core reference machine).
Usage: python bench/import_bench.py [--cases 200]
"""
import argparse
import csv
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.loading import load_paths  # noqa: E402
from engine.rubric import ITEMS  # noqa: E402
from engine.store import Store  # noqa: E402

WORDS = ("patient presents with chest pain dyspnea troponin elevated echo shows reduced ejection fraction started "
         "metoprolol lisinopril follow up in clinic creatinine stable potassium normal plan continue").split()


def generate(folder: Path, n_cases: int, rng: random.Random) -> None:
    def w(name, header, rows):
        with (folder / name).open("w", newline="", encoding="utf-8") as fh:
            wr = csv.writer(fh)
            wr.writerow(header)
            wr.writerows(rows)

    cases, notes, summaries, ratings = [], [], [], []
    for i in range(n_cases):
        cid = f"c{i:04d}"
        cases.append([cid, rng.choice(["Cardiology", "Nephrology", "Oncology", "Neurology", "Endocrinology"])])
        for j in range(1, 6):
            notes.append([cid, str(j), f"2024-0{j}-01", "Progress note", "Internal Medicine",
                          " ".join(rng.choice(WORDS) for _ in range(250))])
        sid = f"{cid}-s1"
        summaries.append([sid, cid, " ".join(rng.choice(WORDS) for _ in range(150)) + " <NoteID:1>", "gen", "high", ""])
        for r in range(1, 8):
            for item in ITEMS:
                if item.scale.value == "binary":
                    v = str(rng.randint(0, 1))
                else:
                    v = str(rng.randint(1, 5))
                ratings.append([sid, f"R{r}", "senior" if r > 5 else "junior", item.key, v])
    w("cases.csv", ["case_id", "target_specialty"], cases)
    w("notes.csv", ["case_id", "note_id", "date", "note_type", "author_specialty", "text"], notes)
    w("summaries.csv", ["summary_id", "case_id", "text", "generator_model", "quality_group", "prompt_variant"],
      summaries)
    w("ratings.csv", ["summary_id", "rater_id", "rater_group", "item", "value"], ratings)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bundle"
        folder.mkdir()
        generate(folder, args.cases, random.Random(0))
        store = Store(Path(tmp) / "ws.sqlite")
        t0 = time.perf_counter()
        ds, report = load_paths([folder])
        t1 = time.perf_counter()
        res = store.import_dataset(ds, name="bench")
        t2 = time.perf_counter()
        t3 = time.perf_counter()
        again = store.import_dataset(load_paths([folder])[0], name="bench")
        t4 = time.perf_counter()
    total = t2 - t0
    print(f"dataset: {args.cases} cases, {report.counts['notes']} notes, {report.counts['ratings']} ratings")
    print(f"validate+parse: {t1 - t0:.2f} s; write: {t2 - t1:.2f} s; total: {total:.2f} s")
    print(f"cases imported per second: {args.cases / total:.0f}")
    print(f"re-import (no-op) took {t4 - t3:.2f} s, unchanged={again.unchanged}")
    target = 5.0 * args.cases / 200
    print(f"target: {args.cases} cases in <= {target:.1f} s -> {'MET' if total <= target else 'MISSED'}")
    assert res.created


if __name__ == "__main__":
    main()
