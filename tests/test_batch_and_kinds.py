"""The one cached batch loop (engine.core.batch) and the registry of evidence kinds (engine.evidence.kinds)."""
import json

import pytest

from conftest import ROOT
from engine.core.batch import run_cached
from engine.core.jobs import Cancelled


def _run(ids, stored, fail_at=None, stop_after=None):
    kept, started, done = {}, [], []

    def compute(i, item):
        if item == fail_at:
            raise Cancelled("cancelled")
        return item.upper()

    out = list(run_cached(ids, lookup=stored.get, compute=compute, keep=kept.__setitem__,
                          should_stop=lambda: stop_after is not None and len(done) >= stop_after,
                          on_start=lambda d, item: started.append((d, item)),
                          on_done=lambda d, item, r, cached: done.append((d, item, cached))))
    return out, kept, started, done


def test_a_stored_result_is_used_and_a_new_one_kept_at_once():
    out, kept, started, done = _run(["a", "b", "c"], {"b": "stored b"})
    assert [(x.item_id, x.result, x.from_cache) for x in out] == [("a", "A", False), ("b", "stored b", True),
                                                                    ("c", "C", False)]
    assert kept == {"a": "A", "c": "C"}  # the stored one is not written again
    assert started == [(0, "a"), (2, "c")] and done == [(1, "a", False), (2, "b", True), (3, "c", False)]


def test_a_cancel_inside_an_item_ends_the_run_with_what_was_finished_kept():
    out, kept, _, done = _run(["a", "b", "c"], {}, fail_at="b")
    assert [x.item_id for x in out] == ["a"] and kept == {"a": "A"} and done == [(1, "a", False)]


def test_stop_is_checked_between_items():
    out, kept, _, _ = _run(["a", "b", "c"], {}, stop_after=2)
    assert [x.item_id for x in out] == ["a", "b"] and set(kept) == {"a", "b"}


@pytest.mark.parametrize("module", ["engine/judge/runner.py", "engine/evidence/medomit/pipeline.py", "engine/evidence/batch.py"])
def test_every_long_run_goes_through_the_one_loop(module):
    text = (ROOT / module).read_text(encoding="utf-8")
    assert "run_cached(" in text and "for done, sid in enumerate(" not in text


def test_every_coverage_method_and_llm_evidence_is_a_registered_kind():
    from engine.evidence.coverage.regions import METHODS
    from engine.evidence.kinds import EVIDENCE_KINDS, kind

    assert {f"coverage:{k}" for k in METHODS} | {"alignment", "medomit", "verification"} == set(EVIDENCE_KINDS)
    with pytest.raises(ValueError, match="registered: alignment"):
        kind("nope")


def test_shipped_evidence_reads_back_typed_through_the_registry(store):
    from engine.sample import ensure_sample
    from engine.evidence.support.alignment import AlignmentResult
    from engine.evidence.coverage.results import CoverageResult
    from engine.evidence.kinds import stored_results
    from engine.evidence.medomit.result import MedOmitResult

    ensure_sample(store)
    al = stored_results(store, "sample", "alignment")
    cov = stored_results(store, "sample", "coverage:unitcov")
    med = stored_results(store, "sample", "medomit")
    assert len(al) == 36 and all(isinstance(r, AlignmentResult) for r in al.values())
    assert len(cov) == 36 and all(isinstance(r, CoverageResult) for r in cov.values())
    assert med and all(isinstance(r, MedOmitResult) for r in med.values())
    from engine.evidence.support.verification.result import VerificationResult

    ver = stored_results(store, "sample", "verification")
    assert len(ver) == 36 and all(isinstance(r, VerificationResult) for r in ver.values())


def test_cli_lists_the_kinds_and_exports_one(tmp_path, capsys):
    from engine.cli import main

    ws = str(tmp_path / "w.sqlite")
    assert main(["--workspace", ws, "sample"]) == 0
    capsys.readouterr()
    assert main(["--workspace", ws, "evidence", "sample"]) == 0
    listing = capsys.readouterr().out
    assert "alignment" in listing and "36 of 36" in listing and "medomit" in listing
    assert main(["--workspace", ws, "evidence", "sample", "--kind", "coverage:unitcov"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(rows) == 36 and rows[0]["result"]["method"] == "unitcov"
    assert main(["--workspace", ws, "evidence", "sample", "--kind", "nope"]) == 1
