"""Team workspace benchmark: SQLite file vs PostgreSQL server, measured in one run on this machine.

Prints:
 (a) spot-check saves per second with --reviewers concurrent reviewer processes (each saves a full PDSQI-9 spot
     check, 11 items, for --saves summaries), and with one reviewer, on both stores;
 (b) the Agreement page's work on --summaries summaries x 3 raters (every item rated): reading the dataset from the
     store, and the whole panel analysis (engine.analysis.configured.analyse_configuration, --boot bootstrap
     resamples), on both stores; plus the import time.
The PostgreSQL server is a throw-away local one (engine.data.pg_server, fsync off), so its figures are an upper bound
for a hospital's networked, durable server; the SQLite file is on this machine's disk.
Usage: python bench/team_bench.py [--reviewers 8] [--saves 40] [--summaries 10000] [--boot 200] [--parts ab]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.core import Case, Dataset, ITEMS, Note, Rating, Scale, Summary  # noqa: E402
from engine.data import PgServer, Store  # noqa: E402

SAVER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from engine.data.store import Store
from engine.data.reviews import save_review
store = Store(sys.argv[2])
ids, who, go = json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
values = {"cited": 4, "accurate": 4, "thorough": 3, "useful": 4, "organized": 5, "comprehensible": 5, "succinct": 4,
          "abstraction": "yes", "synthesized": 4, "stigmatizing_notes": "no", "stigmatizing_summary": "no"}
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
for sid in ids:
    save_review(store, "b", sid, who, "spot_check", values)
print("done", flush=True)
"""


def synthetic(n: int, raters: int = 3, seed: int = 0) -> Dataset:
    """``n`` summaries (one note each, three summaries per case) rated by ``raters`` raters on every item."""
    rng = random.Random(seed)
    cases, summaries, ratings = [], [], []
    for c in range((n + 2) // 3):
        cases.append(Case(f"c{c}", "Medicine", (Note("1", f"Note of case {c}: stable, follow up in {c % 9} weeks."),)))
    for i in range(n):
        sid = f"c{i // 3}-s{i % 3}"
        summaries.append(Summary(sid, f"c{i // 3}", f"Summary {i}: stable. <NoteID:1>", f"gen-{i % 3}", ""))
        quality = rng.randint(2, 5)
        for r in range(raters):
            for it in ITEMS:
                if it.scale is Scale.BINARY:
                    v = float(rng.random() < 0.2)
                elif it.allows_na:
                    v = None
                else:
                    v = float(min(5, max(1, quality + rng.choice((-1, 0, 0, 1)))))
                if it.key == "abstraction":
                    v = 0.0
                ratings.append(Rating(sid, f"R{r + 1}", it.key, v, "panel"))
    return Dataset("b", cases, summaries, ratings)


def saves(target: str, reviewers: int, per: int, ids: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        go = os.path.join(tmp, "go")
        procs = []
        for r in range(reviewers):
            mine = ids[r * per:(r + 1) * per] if reviewers > 1 else ids[:per]
            procs.append(subprocess.Popen([sys.executable, "-c", SAVER, str(ROOT), target, json.dumps(mine),
                                           f"reviewer-{r}-{time.time_ns()}", go], stdout=subprocess.PIPE, text=True))
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        t0 = time.perf_counter()
        Path(go).touch()
        for p in procs:
            assert p.wait(timeout=600) == 0
        return reviewers * per / (time.perf_counter() - t0)


def part_a(args, targets: dict[str, str]) -> None:
    print(f"(a) spot-check saves per second (11 items each; a save is one transaction):", flush=True)
    ds = synthetic(max(args.reviewers * args.saves, 3), raters=0)
    for name, target in targets.items():
        store = Store(target)
        store.import_dataset(ds)
        ids = [s.summary_id for s in ds.summaries]
        one = saves(target, 1, args.saves, ids)
        many = saves(target, args.reviewers, args.saves, ids)
        with store.connect() as con:
            n = con.execute("SELECT COUNT(*) FROM reviews").fetchone()[0]
        store.close()
        print(f"    {name}: 1 reviewer {one:.0f} saves/s; {args.reviewers} reviewers at once {many:.0f} saves/s "
              f"({many / one:.1f}x); {n} review rows stored, expected {11 * args.saves * (1 + args.reviewers)}",
              flush=True)


def part_b(args, targets: dict[str, str]) -> None:
    from engine.analysis import analyse_configuration

    ds = synthetic(args.summaries)
    print(f"(b) the Agreement page on {len(ds.summaries):,} summaries x 3 raters ({len(ds.ratings):,} ratings), "
          f"{args.boot} bootstrap resamples:", flush=True)
    for name, target in targets.items():
        store = Store(target)
        t0 = time.perf_counter()
        store.import_dataset(ds)
        t_import = time.perf_counter() - t0
        t0 = time.perf_counter()
        store.load_dataset("b")
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        analyse_configuration(store, "b", None, n_boot=args.boot, count_tokens=lambda t: len(t.split()),
                              with_judge=False)
        t_all = time.perf_counter() - t0
        store.close()
        print(f"    {name}: import {t_import:.1f} s; read the dataset {t_read:.2f} s; whole panel analysis "
              f"{t_all:.1f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reviewers", type=int, default=8)
    ap.add_argument("--saves", type=int, default=40, help="(a) spot checks saved per reviewer")
    ap.add_argument("--summaries", type=int, default=10_000)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--parts", default="ab")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)", flush=True)
    server = PgServer()
    os.environ["PGPASSFILE"] = str(server.passfile)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for part, fn in (("a", part_a), ("b", part_b)):
                if part in args.parts:
                    fn(args, {"SQLite": str(Path(tmp) / f"{part}.sqlite"), "PostgreSQL": server.new_database()})
    finally:
        server.stop()


if __name__ == "__main__":
    main()
