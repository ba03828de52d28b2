"""The sample's claim verification by the default 1.5B judge, shipped with the sample: current keys, what it
surfaces of the manifest's documented fabricated and falsified facts and wrong citations, the CLI reading it
without a model run, and the Case and Evidence pages showing it."""
import json

from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.data.loading import load_paths
from engine.evidence.verification.defects import check_manifest
from engine.evidence.verification.result import VerificationResult
from engine.evidence.verification.run import DEFAULT_PARAMS, verification_key
from engine.llm.modelfiles import DEFAULT_EMBEDDED, embedded_sha256
from engine.sample import SAMPLE_BUNDLE, SAMPLE_VERIFY, load_manifest

TIMEOUT = 120
# measured with the shipped results (README, Claim verification): the documented defects the verification surfaces
FOUND_FACTS = set()
FOUND_CITATIONS = set()


def _sample():
    ds, _ = load_paths(sorted(str(p) for p in SAMPLE_BUNDLE.iterdir() if p.suffix in (".csv", ".jsonl")))
    return ds


def _shipped() -> dict[str, tuple[str, VerificationResult]]:
    out = {}
    for line in SAMPLE_VERIFY.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out[row["summary_id"]] = (row["cache_key"], VerificationResult.from_dict(json.loads(row["result"])))
    return out


def test_every_sample_summary_ships_a_current_verification_by_the_default_judge():
    ds = _sample()
    shipped = _shipped()
    assert set(shipped) == {s.summary_id for s in ds.summaries} and len(shipped) == 36
    sha = embedded_sha256(DEFAULT_EMBEDDED)
    for sid, (key, res) in shipped.items():
        s = ds.summary(sid)
        assert key == verification_key(ds.case(s.case_id), s, sha, DEFAULT_PARAMS), sid  # current, not stale
        assert res.model_sha256 == sha and not res.smoke_test and not res.reason
        assert all(x.verdict in ("supported", "unsupported") for x in res.sentences)  # the 1.5B answered yes/no


def test_the_shipped_verification_surfaces_the_documented_defects_it_surfaced_when_measured():
    ds = _sample()
    results = {sid: r for sid, (_k, r) in _shipped().items()}
    checks = check_manifest(ds, load_manifest(), results)
    facts = {(c.summary_id, c.span) for c in checks if c.kind in ("fabricated_fact", "falsified_fact") and c.found}
    cites = {(c.summary_id, c.span) for c in checks if c.kind == "wrong_citation" and c.found}
    assert len([c for c in checks if c.kind in ("fabricated_fact", "falsified_fact")]) == 22
    assert facts == FOUND_FACTS
    assert cites == FOUND_CITATIONS


def test_verify_sample_reads_the_shipped_results_without_a_model(tmp_path, monkeypatch):
    from engine.cli import main

    monkeypatch.setenv("SUMCHECK_MODELS_DIR", str(tmp_path / "no-models"))  # the 1.5B is not there: never loaded
    out = tmp_path / "v.jsonl"
    assert main(["sample"]) == 0
    assert main(["verify", "sample", "--out", str(out), "--quiet"]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 36 and all(d["sentences"] and d["smoke_test"] is False for d in lines)


def test_case_page_marks_the_fabricated_amiodarone_claim_and_lists_it():
    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
    at.query_params["dataset"] = "sample"
    at.query_params["case"] = "card-01"
    at.query_params["summary"] = "card-01-s3"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    summary_html = next(m.value for m in at.markdown if "amiodarone" in m.value and "<mark" in m.value)
    assert "Unsupported claim" in summary_html and "amiodarone" in summary_html.split("Unsupported claim", 1)[1]
    assert any(c.value.startswith("Orange: claims the record does not support") for c in at.caption)
    table = next(d.value for d in at.dataframe if "P(supported)" in d.value.columns)
    assert (table["verdict"] == "unsupported").any()
    assert table["verdict"].iloc[0] == "unsupported"  # unsupported first


def test_evidence_page_has_the_verification_columns():
    at = AppTest.from_file(str(ROOT / "pages/evidence.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    emb = next(d.value for d in at.dataframe if "unsupported claims" in d.value.columns)
    assert emb["unsupported claims"].notna().sum() == 36 and emb["lowest P(supported)"].notna().sum() == 36
