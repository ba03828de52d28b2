"""Import benchmarks, each validated and imported into a fresh workspace:

1. a generated 200-case x 5-note x 7-rater bundle (target: 200 cases in <= 5 s on the 2-core reference machine);
2. 10,000 small cases (one short note, one summary, one rater), as a folder of 10,000 case JSON files plus a
   ratings CSV, and as a bundle (target: <= 3 s each; the import path must be linear in the number of records);
3. 10,000 notes (2,000 patients x 5 notes of ~250 words, one summary each) as a FHIR Bulk Data NDJSON export
   (every fourth note's text in a Binary), every resource validated with its FHIR model, against the same dataset
   as a tidy bundle in the same run (the ratio is the price of FHIR).

Prints the figures. Usage: python bench/import_bench.py [--cases 200] [--small 10000] [--fhir-notes 10000]
"""
import argparse
import csv
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.data import load_paths  # noqa: E402
from engine.core import ITEMS  # noqa: E402
from engine.data import Store  # noqa: E402

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


def generate_small(folder: Path, n_cases: int, as_json: bool) -> None:
    """``n_cases`` small cases: one short note, one summary, one rater's 11 items each."""
    folder.mkdir()
    ratings = []
    rows = {"cases": [], "notes": [], "summaries": []}
    for i in range(n_cases):
        cid = f"k{i:05d}"
        note = f"Patient {i} seen for follow-up; blood pressure stable on lisinopril."
        summary = f"Stable hypertension on lisinopril. <NoteID:1>"
        if as_json:
            (folder / f"{cid}.json").write_text(json.dumps({"target_specialty": "Cardiology", "notes": {"1": note},
                                                            "summary": summary}), encoding="utf-8")
        else:
            rows["cases"].append([cid, "Cardiology"])
            rows["notes"].append([cid, "1", note])
            rows["summaries"].append([cid, cid, summary])
        for item in ITEMS:
            ratings.append([cid, "R1", "senior", item.key, "1" if item.scale.value == "binary" else "4"])
    tables = {"cases": ["case_id", "target_specialty"], "notes": ["case_id", "note_id", "text"],
              "summaries": ["summary_id", "case_id", "text"]}
    for name, header in ({} if as_json else tables).items():
        with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([header] + rows[name])
    with (folder / "ratings.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["summary_id", "rater_id", "rater_group", "item", "value"]] + ratings)


def bench_small(tmp: Path, n: int, as_json: bool) -> float:
    what = "case JSON files + ratings CSV" if as_json else "bundle CSV"
    folder = tmp / ("small_json" if as_json else "small_bundle")
    generate_small(folder, n, as_json)
    store = Store(tmp / f"small_{int(as_json)}.sqlite")
    c0, t0 = time.process_time(), time.perf_counter()
    ds, report = load_paths([folder])
    t1 = time.perf_counter()
    res = store.import_dataset(ds, name="small")
    t2, c2 = time.perf_counter(), time.process_time()
    assert res.created and len(ds.cases) == n
    total = t2 - t0
    print(f"{n} small cases ({what}; {report.counts['ratings']} ratings): validate+parse {t1 - t0:.2f} s, "
          f"write {t2 - t1:.2f} s, total {total:.2f} s wall ({c2 - c0:.2f} s CPU; wall > CPU means other load "
          f"or I/O) -> target <= 3.0 s {'MET' if total <= 3.0 else 'MISSED'}")
    return total


def bench_fhir(tmp: Path, n_notes: int) -> None:
    from engine.data.fhir import dataset_resources, write_bulk
    from engine.data import LoadOptions

    folder = tmp / "fhir_src"
    folder.mkdir()
    generate(folder, n_notes // 5, random.Random(1))
    for name in ("ratings.csv",):
        (folder / name).unlink()
    ds, _ = load_paths([folder])
    export = write_bulk(dataset_resources(ds, binary_every=4), tmp / "fhir")
    mb = sum((export.folder / f).stat().st_size for f in export.files) / 1e6
    timings = {}
    for label, paths, opts in (("tidy bundle", [folder], None),
                               ("FHIR NDJSON", [export.folder], LoadOptions(summary_types=("llm-summary",)))):
        store = Store(tmp / f"{label[:4]}.sqlite")
        c0, t0 = time.process_time(), time.perf_counter()
        got, report = load_paths(paths, opts)
        t1 = time.perf_counter()
        store.import_dataset(got, name="bench")
        t2, c2 = time.perf_counter(), time.process_time()
        assert sum(len(c.notes) for c in got.cases) == n_notes
        timings[label] = t2 - t0
        print(f"{n_notes} notes as {label}: validate+parse {t1 - t0:.2f} s, write {t2 - t1:.2f} s, total "
              f"{t2 - t0:.2f} s wall ({c2 - c0:.2f} s CPU)" + (f"; {mb:.1f} MB in {len(export.files)} files, "
                                                               f"{sum(export.files.values()):,} resources"
                                                               if label.startswith("FHIR") else ""))
    print(f"FHIR / tidy time ratio (same run, same content): {timings['FHIR NDJSON'] / timings['tidy bundle']:.1f}x; "
          f"notes per second from FHIR: {n_notes / timings['FHIR NDJSON']:,.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--small", type=int, default=10_000, help="small cases for the linear-time check (0 = skip)")
    ap.add_argument("--fhir-notes", type=int, default=10_000, help="notes in the FHIR NDJSON import (0 = skip)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bundle"
        folder.mkdir()
        generate(folder, args.cases, random.Random(0))
        store = Store(Path(tmp) / "ws.sqlite")
        c0, t0 = time.process_time(), time.perf_counter()
        ds, report = load_paths([folder])
        t1 = time.perf_counter()
        res = store.import_dataset(ds, name="bench")
        t2, c2 = time.perf_counter(), time.process_time()
        t3 = time.perf_counter()
        again = store.import_dataset(load_paths([folder])[0], name="bench")
        t4 = time.perf_counter()
    total = t2 - t0
    print(f"dataset: {args.cases} cases, {report.counts['notes']} notes, {report.counts['ratings']} ratings")
    print(f"validate+parse: {t1 - t0:.2f} s; write: {t2 - t1:.2f} s; total: {total:.2f} s wall ({c2 - c0:.2f} s CPU)")
    print(f"cases imported per second: {args.cases / total:.0f}")
    print(f"re-import (no-op) took {t4 - t3:.2f} s, unchanged={again.unchanged}")
    target = 5.0 * args.cases / 200
    print(f"target: {args.cases} cases in <= {target:.1f} s -> {'MET' if total <= target else 'MISSED'}")
    assert res.created
    if args.small:
        with tempfile.TemporaryDirectory() as tmp:
            bench_small(Path(tmp), args.small, as_json=True)
            bench_small(Path(tmp), args.small, as_json=False)
    if args.fhir_notes:
        with tempfile.TemporaryDirectory() as tmp:
            bench_fhir(Path(tmp), args.fhir_notes)


if __name__ == "__main__":
    main()
