"""The bundled synthetic sample dataset (12 patients, 36 summaries, 7 raters)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

from .loading import load_paths
from .store import ImportResult, Store

SAMPLE_ROOT = Path(__file__).resolve().parent.parent / "sample_data"
SAMPLE_BUNDLE = SAMPLE_ROOT / "pdsqi_sample"
SAMPLE_MANIFEST = SAMPLE_ROOT / "manifest.json"
# The embedded model's PDSQI-9 judge results for the sample (7 samples each), recorded with
# `python -m engine judge sample` + `python -m engine judge-export sample --out sample_data/judge_results.jsonl`,
# so the Agreement page has LLM figures without a 20-minute CPU run. Regenerate them when the prompt changes.
SAMPLE_JUDGE = SAMPLE_ROOT / "judge_results.jsonl"
SAMPLE_NAME = "sample"


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
        from .judge import import_results_file
        from .validation import DatasetInvalid

        try:
            import_results_file(store, SAMPLE_NAME, SAMPLE_JUDGE)
        except DatasetInvalid as exc:  # recorded with another prompt version: the sample still opens, without them
            warnings.warn(f"the recorded judge results {SAMPLE_JUDGE} were not imported (regenerate them): {exc}",
                          stacklevel=2)
    return res


def load_manifest() -> dict:
    return json.loads(SAMPLE_MANIFEST.read_text(encoding="utf-8"))
