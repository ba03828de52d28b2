"""The sample's claim verification by the default 1.5B judge, shipped with the sample: current keys, what it
surfaces of the manifest's documented fabricated and falsified facts and wrong citations, the CLI reading it
without a model run, and the Case and Evidence pages showing it."""
import json

from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.data.loading import load_paths
from engine.evidence.defect_check import check_verification
from engine.evidence.support.verification.result import VerificationResult
from engine.evidence.support.verification.combination import shipped_combination
from engine.evidence.support.verification.run import DEFAULT_PARAMS, verification_key
from engine.llm.modelfiles import DEFAULT_EMBEDDED, embedded_sha256
from engine.sample import SAMPLE_BUNDLE, SAMPLE_VERIFY, load_manifest

TIMEOUT = 120
# measured with the shipped results (docs/evidence.md, Claim verification): all 22 documented fabricated or
# falsified facts are unsupported claims (card-02-s3's contrast allergy through the unrecorded-allergy check: the
# model alone said yes at P 0.62); the model's citation check (a second opinion) flags these 6 of the 10 documented wrong citations
FOUND_FACTS = {
    ('card-01-s2', 'LVEF normalized to 55%'),
    ('card-01-s3', 'he was started on amiodarone 200 mg daily to maintain sinus rhythm'),
    ('card-02-s2', 'she now takes aspirin with prasugrel 10 mg daily'),
    ('card-02-s3', 'a documented iodinated contrast allergy requiring premedication before catheterization'),
    ('endo-01-s3', 'FNA cytology was benign (Bethesda II)'),
    ('endo-01-s3', 'she was started on levothyroxine 50 mcg daily for fatigue'),
    ('endo-02-s3', 'most recent A1c 6.9%'),
    ('gi-01-s3', 'MELD-Na 12 was recorded in June'),
    ('id-01-s2', '2.6 x 1.1 cm mobile tricuspid vegetation'),
    ('id-01-s3', 'complicated by septic arthritis of the left knee'),
    ('neph-01-s3', 'complicated by a perinephric hematoma requiring transfusion of 1 unit'),
    ('neph-01-s3', 'start cyclophosphamide-based therapy after final pathology'),
    ('neuro-01-s3', 'left optic neuritis in September 2023'),
    ('neuro-01-s3', 'spinal imaging showed an enhancing T7 cord lesion'),
    ('neuro-02-s3', 'apixaban 2.5 mg twice daily'),
    ('neuro-02-s3', 'with petechial hemorrhagic transformation'),
    ('onc-01-s3', '5.4 cm spiculated RUL mass'),
    ('onc-01-s3', 'Brain MRI showed a 4 mm enhancing left cerebellar lesion'),
    ('pulm-01-s3', 'FEV1 62% predicted'),
    ('pulm-01-s3', 'molecular testing showed an EGFR exon 19 deletion'),
    ('rheum-01-s2', 'a small pericardial effusion on echocardiogram'),
    ('rheum-01-s3', 'class III lupus nephritis'),
}
FOUND_CITATIONS = {
    ('card-01-s3', 'Left heart catheterization showed nonobstructive CAD with 30% mid-LAD stenosis.'),
    ('card-02-s3', 'Empagliflozin 10 mg daily was started for diabetes with cardiovascular benefit.'),
    ('neuro-01-s3', 'Cervical MRI showed a nonenhancing C3 dorsal column lesion.'),
    ('onc-01-s3', 'PD-L1 TPS was 60%.'),
    ('pulm-01-s3', 'PET-CT showed SUVmax 6.8 with no FDG-avid nodes or distant disease.'),
    ('rheum-01-s3', 'Anti-dsDNA was 285 IU/mL with low complements.'),
}


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
        assert all(x.verdict in ("supported", "uncertain", "unsupported") for x in res.sentences)  # all answered
        assert res.method_version == "verify-v2" and res.params["combination"] == shipped_combination().to_dict()


def test_the_shipped_verification_surfaces_the_documented_defects_it_surfaced_when_measured():
    ds = _sample()
    results = {sid: r for sid, (_k, r) in _shipped().items()}
    checks = check_verification(ds, load_manifest(), results)
    facts = {(c.summary_id, c.span) for c in checks if c.kind in ("fabricated_fact", "falsified_fact") and c.found}
    cites = {(c.summary_id, c.span) for c in checks if c.kind == "wrong_citation" and c.found}
    assert len([c for c in checks if c.kind in ("fabricated_fact", "falsified_fact")]) == 22
    assert facts == FOUND_FACTS
    assert cites == FOUND_CITATIONS


def test_verify_sample_reads_the_shipped_results_without_a_model(tmp_path, monkeypatch):
    from engine.cli import main

    monkeypatch.setenv("SUMCHECK_EMBEDDED_MODEL", DEFAULT_EMBEDDED)  # the default judge, as on a user's machine
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
    why = summary_html.split("Unsupported claim", 1)[1]
    assert "Why: " in why  # the mark names what drove it
    table = next(d.value for d in at.dataframe if "P(supported)" in d.value.columns)
    assert (table["verdict"] == "unsupported").any()
    assert table["verdict"].iloc[0] == "unsupported"  # unsupported first


def test_evidence_page_has_the_verification_columns():
    at = AppTest.from_file(str(ROOT / "pages/evidence.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    emb = next(d.value for d in at.dataframe if "unsupported claims" in d.value.columns)
    assert emb["unsupported claims"].notna().sum() == 36 and emb["lowest P(supported)"].notna().sum() == 36
