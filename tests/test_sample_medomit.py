"""The sample's shipped MED-OMIT results come from the 1.5B default judge and are stored with the sample, so the Case
page shows them without a run."""
import json

from engine.evidence.medomit_result import MedOmitResult
from engine.evidence.medomit import result_key
from engine.llm.modelfiles import QWEN_SHA256
from engine.sample import SAMPLE_MEDOMIT, ensure_sample


def test_shipped_medomit_rows_are_the_default_judges_and_import_with_the_sample(store):
    rows = [json.loads(x) for x in SAMPLE_MEDOMIT.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert rows and {r["method"] for r in rows} == {"medomit"}
    ensure_sample(store)
    ds = store.load_dataset("sample")
    stored = store.evidence_results("sample", "medomit")
    for r in rows:
        res = MedOmitResult.from_json(stored[r["summary_id"]])
        assert res.provenance["model"] == QWEN_SHA256 and not res.smoke_test
        s = ds.summary(r["summary_id"])
        assert r["cache_key"] == result_key(QWEN_SHA256, ds.case(s.case_id), s)  # keyed by content and model hash
        assert res.facts and res.status in ("complete", "incomplete")


def test_case_page_names_the_medomit_model():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    from engine.core import untrusted

    captions = " ".join(c.value for c in at.caption)
    assert "MED-OMIT by " + untrusted.md("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") in captions, captions[-800:]
