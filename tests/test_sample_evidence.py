"""Fast start: the sample's embedding evidence ships precomputed, keyed by content and code version, and is
recomputed only when stale."""
import json
import os
import subprocess
import sys
import time
import warnings


from conftest import ROOT
from engine.evidence.support.alignment import alignment_key
from engine.evidence.coverage.regions import DEFAULT_METHOD, coverage_key
from engine.evidence.coverage.results import CoverageParams
from engine.evidence.embeddings import EMBEDDING_NAME
from engine.sample import SAMPLE_EVIDENCE, SAMPLE_NAME, ensure_sample, import_shipped_evidence
from engine.data.store import Store


def rows():
    return [json.loads(x) for x in SAMPLE_EVIDENCE.read_text().splitlines() if x.strip()]


def test_shipped_evidence_is_current():
    # every shipped row carries the key the current code computes for that summary (content + parameters +
    # code version): regenerate the file with `python -m engine sample --precompute --export-evidence ...` when
    # this fails
    from engine.data.loading import load_paths
    from engine.sample import SAMPLE_BUNDLE

    ds, _ = load_paths(sorted(str(p) for p in SAMPLE_BUNDLE.glob("*.csv")), name=SAMPLE_NAME)
    got = {(r["method"], r["summary_id"]): r["cache_key"] for r in rows()}
    assert len(got) == 2 * len(ds.summaries)
    for s in ds.summaries:
        case = ds.case(s.case_id)
        assert got[(f"coverage:{DEFAULT_METHOD}", s.summary_id)] == coverage_key(case, s, CoverageParams(), EMBEDDING_NAME)
        assert got[("alignment", s.summary_id)] == alignment_key(case, s)


def test_fresh_workspace_gets_the_shipped_evidence(tmp_path):
    st = Store(tmp_path / "ws.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ensure_sample(st)
    assert len(st.evidence_results(SAMPLE_NAME, f"coverage:{DEFAULT_METHOD}")) == 36
    assert len(st.evidence_results(SAMPLE_NAME, "alignment")) == 36
    assert import_shipped_evidence(st) == 0  # idempotent


def test_stale_rows_are_never_shown(tmp_path):
    bad = tmp_path / "stale.jsonl"
    r = rows()[0]
    bad.write_text(json.dumps({**r, "cache_key": "0" * 64}) + "\n" + "not json\n"
                   + json.dumps({**r, "summary_id": "nope"}) + "\n")
    st = Store(tmp_path / "ws.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ensure_sample(st)
    assert import_shipped_evidence(st, bad) == 1  # stored, but under a key no summary has
    assert st.get_evidence(SAMPLE_NAME, r["method"], "0" * 64) is not None


def test_precompute_on_a_fresh_workspace_computes_nothing(tmp_path):
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(tmp_path / "ws.sqlite")}
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "engine", "sample", "--precompute"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - t0
    assert run.returncode == 0, run.stderr
    assert "0 computed now" in run.stdout and "loading the embedding model" not in run.stderr
    print(f"make sample on a fresh workspace: {took:.1f} s")
