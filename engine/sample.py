"""The bundled synthetic sample dataset (12 patients, 36 summaries, 7 raters)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

from engine.evidence.coverage import DEFAULT_METHOD as DEFAULT_COVERAGE_METHOD
from engine.data import ImportResult, Store, load_paths

SAMPLE_ROOT = Path(__file__).resolve().parent.parent / "sample_data"
SAMPLE_BUNDLE = SAMPLE_ROOT / "pdsqi_sample"
SAMPLE_MANIFEST = SAMPLE_ROOT / "manifest.json"
# The default judge's (Qwen2.5-Coder-1.5B) PDSQI-9 results for the sample (one greedy pass each), recorded with
# `python -m engine check sample --only judge --only verification` (the record read once per case for both) +
# `python -m engine judge-export sample --out sample_data/judge_results.jsonl`, so the Agreement page has LLM figures
# without a CPU run. Regenerate them when the prompt changes.
SAMPLE_JUDGE = SAMPLE_ROOT / "judge_results.jsonl"
# The sample's embedding evidence (default coverage method and sentence support per summary), computed with
# `python -m engine sample --precompute --export-evidence sample_data/evidence_results.jsonl`. Each row keeps the
# cache key the current code computes for that summary (content + parameters + code version), so a row from older
# code or other content is never shown: it simply does not match and that summary is recomputed.
SAMPLE_EVIDENCE = SAMPLE_ROOT / "evidence_results.jsonl"
EVIDENCE_METHODS = (f"coverage:{DEFAULT_COVERAGE_METHOD}", "alignment")  # the default coverage method's
# The default judge's MED-OMIT results for the sample with the fact source the default resolves to on a CPU (the
# one-step pipeline: `python -m engine omissions sample --method medomit`, then `sample --export-medomit`), keyed by
# method version, model hash, fact source and content like any MED-OMIT result: shown on the Case page without a
# run; a row whose key no longer matches what the current code would compute is never shown as current.
SAMPLE_MEDOMIT = SAMPLE_ROOT / "medomit_results.jsonl"
MEDOMIT_METHODS = ("medomit",)
# The default judge's claim verification of the sample (the `check` above, then
# `python -m engine sample --export-verification sample_data/verification_results.jsonl`), keyed like any stored
# verification (method and prompt version, model hash, parameters, content): `verify sample` reads them instead of
# a 20-minute CPU run, and a row whose key no longer matches is simply recomputed.
SAMPLE_VERIFY = SAMPLE_ROOT / "verification_results.jsonl"
VERIFY_METHODS = ("verification",)
SAMPLE_NAME = "sample"
SAMPLE_ABOUT = ("This is the bundled sample: 12 synthetic patients written for SumCheck (no real person, no PHI), "
                "3 summaries each with documented defects, and 7 raters' PDSQI-9 scores. Its judge results, evidence "
                "and MED-OMIT rows come with it, so every page shows something before you run anything.")


def ensure_sample(store: Store) -> ImportResult | None:
    """Import the sample dataset unless the workspace already has a dataset named 'sample'.

    Returns None when it was already there (left untouched: it may hold the user's own reviews).
    """
    if SAMPLE_NAME in store.dataset_names():
        return None
    if not SAMPLE_BUNDLE.is_dir():
        raise FileNotFoundError(f"sample data not found at {SAMPLE_BUNDLE}; run 'python sample_data/build_sample.py'")
    files = sorted(str(p) for p in SAMPLE_BUNDLE.iterdir() if p.suffix in (".csv", ".jsonl"))
    ds, _ = load_paths(files, name=SAMPLE_NAME)
    ds.source = "bundled synthetic sample (sample_data/pdsqi_sample)"
    res = store.import_dataset(ds, name=SAMPLE_NAME, files=tuple(Path(f).name for f in files))
    if SAMPLE_JUDGE.is_file():
        from engine.judge import import_results_file
        from engine.data import DatasetInvalid

        try:
            import_results_file(store, SAMPLE_NAME, SAMPLE_JUDGE)
        except DatasetInvalid as exc:  # recorded with another prompt version: the sample still opens, without them
            warnings.warn(f"the recorded judge results {SAMPLE_JUDGE} were not imported (regenerate them): {exc}",
                          stacklevel=2)
    import_shipped_evidence(store)
    import_shipped_evidence(store, SAMPLE_MEDOMIT, MEDOMIT_METHODS)
    import_shipped_evidence(store, SAMPLE_VERIFY, VERIFY_METHODS)
    return res


def import_shipped_evidence(store: Store, path: Path = SAMPLE_EVIDENCE, methods: tuple = EVIDENCE_METHODS) -> int:
    """Store the shipped evidence rows for the sample (idempotent). Rows for unknown summaries or methods, or that
    are not JSON objects, are skipped; a stale row is harmless (its key matches nothing). Returns rows stored."""
    if not path.is_file() or SAMPLE_NAME not in store.dataset_names():
        return 0
    known = {s.summary_id for s in store.load_dataset(SAMPLE_NAME).summaries}
    n = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            ok = (isinstance(row, dict) and row.get("method") in methods and row.get("summary_id") in known
                  and isinstance(row.get("cache_key"), str) and isinstance(json.loads(row["result"]), dict))
        except (ValueError, TypeError, KeyError):
            ok = False
        if ok and store.get_evidence(SAMPLE_NAME, row["method"], row["cache_key"]) is None:
            store.put_evidence(SAMPLE_NAME, row["method"], row["cache_key"], row["summary_id"],
                               row.get("status", "complete"), row["result"])
            n += 1
    return n


def export_evidence(store: Store, path: Path, methods: tuple = EVIDENCE_METHODS) -> int:
    """Write the sample's stored evidence of ``methods`` (latest per summary and method) as shipped rows; returns
    the count."""
    with store.connect() as con:
        rows = con.execute("SELECT e.method, e.cache_key, e.summary_id, e.status, e.result FROM evidence_results e "
                           "JOIN datasets d ON d.dataset_id = e.dataset_id WHERE d.name = ? ORDER BY e.method, "
                           "e.summary_id, e.created_at", (SAMPLE_NAME,)).fetchall()
    latest = {}
    for method, key, sid, status, result in rows:
        if method in methods:
            latest[(method, sid)] = {"method": method, "cache_key": key, "summary_id": sid, "status": status,
                                     "result": result}
    lines = [json.dumps(v, sort_keys=True) for _, v in sorted(latest.items())]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def load_manifest() -> dict:
    return json.loads(SAMPLE_MANIFEST.read_text(encoding="utf-8"))


def open_workspace(path) -> Store:
    """The workspace at ``path`` (an SQLite file or a PostgreSQL address), opened, with the sample imported the
    first time (:func:`ensure_sample`): what the app opens once per process."""
    store = Store(path)
    ensure_sample(store)
    return store
