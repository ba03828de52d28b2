"""The pages' engine views on the sample: each returns, in one call, what its page draws."""
import pytest

from engine.data.store import Store
from engine.evidence.embeddings import Embedder
from engine.sample import SAMPLE_NAME, ensure_sample
from engine.views.case import DETECTOR_ROW, JUDGE_ROW, case_view, coverage_view, support_view


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("views") / "ws.sqlite")
    ensure_sample(store)
    return store, store.load_dataset(SAMPLE_NAME)


def test_case_view_holds_scores_stigma_verification_and_medomit(sample):
    store, ds = sample
    v = case_view(store, SAMPLE_NAME, ds, "card-01", "card-01-s2")
    assert v.summary.summary_id == "card-01-s2" and v.case.case_id == "card-01"
    rows = {r["rater"]: r for r in v.score_rows}
    assert JUDGE_ROW in rows and DETECTOR_ROW in rows and "median" in rows
    assert v.judge_configuration and v.verification is not None
    assert v.stigma is not None and v.stigma_error == ""
    assert v.medomit is not None and v.medomit.status == "complete"
    assert len(v.omitted_rows) == v.medomit.omission_count
    head = case_view(store, SAMPLE_NAME, ds, "card-01", None)
    assert head.summary is None and set(head.note_marks) == {n.note_id for n in head.case.notes}


def test_coverage_view_follows_the_threshold(sample):
    store, ds = sample
    emb = Embedder(store=store)
    d = coverage_view(store, SAMPLE_NAME, ds, "card-01-s2", emb, "unitcov")
    assert d.error == "" and d.low <= d.default_threshold <= d.high and d.threshold == d.default_threshold
    assert all(r.score >= d.threshold for r in d.regions)
    lower = coverage_view(store, SAMPLE_NAME, ds, "card-01-s2", emb, "unitcov", d.low)
    chars = lambda v: {(r.note_id, i) for r in v.regions for i in range(r.start, r.end)}  # noqa: E731
    assert lower.threshold == d.low and chars(lower) > chars(d)  # a lower threshold marks more of the notes


def test_support_view_has_one_citation_verdict_per_sentence(sample):
    store, ds = sample
    emb = Embedder(store=store)
    cv = case_view(store, SAMPLE_NAME, ds, "card-01", "card-01-s2")
    sv = support_view(store, SAMPLE_NAME, ds, "card-01-s2", emb, cv.verification)
    assert sv.error == "" and len(sv.citations) == len(sv.alignment.sentences)
    assert sv.citation_issues == sum(v in ("wrong", "missing", "unknown") for v, _, _ in sv.citations) > 0


def test_evidence_page_view_rows_and_group_rates(sample):
    from engine.evidence.stigma.detector import assess_dataset
    from engine.views.evidence import evidence_page_view

    store, ds = sample
    v = evidence_page_view(store, SAMPLE_NAME, ds, assess_dataset(ds))
    assert len(v.embedding_rows) == len(v.medomit_rows) == len(v.stigma_rows) == len(ds.summaries)
    assert v.medomit_results and set(v.medomit_by_group) == set(v.stigma_by_group) == {"generator", "quality group"}
    by_gen = v.stigma_by_group["generator"]
    assert sum(r["summaries"] for r in by_gen) == len(ds.summaries)
    assert {r["summary"] for r in v.chart_rows} == {s.summary_id for s in ds.summaries}


def test_agreement_page_view_and_chart_numbers(sample):
    import statistics

    from engine.analysis.agreement import analyse
    from engine.analysis.configured import configured_results
    from engine.views.agreement import agreement_page_view, bland_altman_limits, disagreement_rows, trend_line

    store, ds = sample
    chosen = configured_results(store, SAMPLE_NAME)
    config = chosen.configs[0]
    rep = analyse(ds, configured_results(store, SAMPLE_NAME, config.key).llm, n_boot=50)
    v = agreement_page_view(store, SAMPLE_NAME, ds, rep, config)
    assert v.headline and v.forest_humans.startswith("<svg") and v.reliability and v.llm_vs_humans
    assert {r["item"] for r in v.stigma_rows} and v.scores_used
    assert all(r["smoke-test model"] == "" for r in disagreement_rows(rep, "all", False, False))
    assert disagreement_rows(rep, "all", True, True) == []
    assert trend_line([1, 2, 3], [2, 4, 6]) == pytest.approx((2.0, 0.0)) and trend_line([1, 1], [2, 3]) is None
    d = [0.5, -0.5, 1.0, 0.0]
    bias, lo, hi = bland_altman_limits(d)
    assert bias == pytest.approx(0.25) and hi - bias == pytest.approx(1.96 * statistics.stdev(d))


def test_judge_page_view_item_table_and_dataset_rows(sample):
    from engine.views.judge import judge_page_view

    store, ds = sample
    v = judge_page_view(store, SAMPLE_NAME, ds, "card-01-s2")
    assert v.result is not None and v.result.summary_id == "card-01-s2"
    assert {r["item"] for r in v.item_rows} and all("LLM − human" in r for r in v.item_rows)
    assert len(v.dataset_rows) == len(ds.summaries)
    assert judge_page_view(store, SAMPLE_NAME, ds, None).result is None


def test_data_view_lists_validates_imports_deletes_and_restores(tmp_path):
    from engine.data.mapping import LoadOptions
    from engine.data.validation import DatasetInvalid
    from engine.sample import SAMPLE_BUNDLE
    from engine.views import data as data_view

    store = Store(tmp_path / "ws.sqlite")
    ensure_sample(store)
    v = data_view.data_page_view(store)
    assert v.dataset_names == [SAMPLE_NAME] and v.dataset_rows[0]["summaries"] == 36
    bad = tmp_path / "bad.json"
    bad.write_text('{"case_id": "x", "notes": []}', encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        data_view.validate(store, [str(bad)], LoadOptions())
    assert exc.value.report.error_count >= 1 and data_view.data_page_view(store).dataset_names == [SAMPLE_NAME]
    ds, rep = data_view.validate(store, [str(SAMPLE_BUNDLE)], LoadOptions(), name="copy")
    res = data_view.import_validated(store, ds, [str(SAMPLE_BUNDLE)], name="copy")
    assert res.dataset == "copy" and sorted(data_view.data_page_view(store).dataset_names) == ["copy", SAMPLE_NAME]
    saved = data_view.delete(store, "copy")
    after = data_view.data_page_view(store)
    assert after.dataset_names == [SAMPLE_NAME] and str(saved) in {str(b.path) for b in after.backups}
    data_view.restore(store, saved)
    assert sorted(data_view.data_page_view(store).dataset_names) == ["copy", SAMPLE_NAME]


def test_judge_view_marks_verdicts_the_evidence_contradicts_and_shows_validity(sample):
    """Before: a summary with a fabricated claim, a wrong citation and omitted facts could get 5s whose explanations
    said it "does not omit any relevant information", with nothing said; the Judge page named no validity."""
    from engine.views.judge import evidence_conflicts, judge_page_view

    store, ds = sample
    v = judge_page_view(store, SAMPLE_NAME, ds, "card-01-s3")
    res = v.result
    conflicts = evidence_conflicts(store, SAMPLE_NAME, ds, res)
    for key, evidence in (("accurate", "unsupported claim"), ("cited", "citation issue")):
        if res.items[key].expected is not None and res.items[key].expected >= 4:
            assert evidence in conflicts[key]
    assert all("validity (ρ, own set)" in r for r in v.item_rows)
    assert any(r["validity (ρ, own set)"].startswith("ρ ") for r in v.item_rows)  # the 1.5B's measured figures
    import copy
    from dataclasses import replace

    from engine.views.judge import _validity_cells

    smoke = copy.deepcopy(res)  # the smoke-test model's results name it by file: its figures are found too
    smoke.provenance = replace(smoke.provenance, model_sha256=None, model_file="gemma-3-270m-q4_k_m.gguf")
    assert any(v.startswith("ρ ") for v in _validity_cells(smoke).values())
    # a verdict the detector contradicts, on a copy of the result
    import copy

    fake = copy.deepcopy(res)
    fake.items["stigmatizing_summary"].median, fake.items["stigmatizing_summary"].values = 0.0, [0.0]
    hit = next(s for s in ds.summaries
               if "stigmatizing_summary" in evidence_conflicts(store, SAMPLE_NAME, ds,
                                                               _as(fake, s.summary_id, s.case_id)))
    assert hit is not None


def _as(result, summary_id, case_id):
    import copy

    r = copy.deepcopy(result)
    r.summary_id, r.case_id = summary_id, case_id
    return r


def test_evidence_page_says_when_medomit_and_coverage_rank_groups_apart():
    """Before: by quality group the MED-OMIT weight ran high > low > medium while coverage ran the other way, and
    nothing said which to believe."""
    from engine.views.evidence import group_disagreement

    rows = [{"quality group": g, "MED-OMIT weight": w, "omission score": c}
            for g, w, c in (("high", 1.12, 0.10), ("low", 0.92, 0.35), ("medium", 0.63, 0.25))]
    said = group_disagreement(rows, "quality group")
    assert said.startswith("By quality group, MED-OMIT and unit coverage rank the groups in opposite orders")
    assert "unit coverage is the measured signal" in said
    agree = [{**r, "MED-OMIT weight": r["omission score"] * 3} for r in rows]
    assert group_disagreement(agree, "quality group") == ""


def test_evidence_page_says_when_medomit_and_coverage_rank_the_quality_groups_apart():
    """The page a committee reads (before: MED-OMIT weight high 1.12 > low 0.92 > medium 0.63 beside a coverage
    column running the other way, with no word). The stored MED-OMIT weights are set to run against coverage."""
    import json

    from conftest import _run
    from engine.data.settings import workspace_path
    from engine.data.store import Store
    from engine.sample import ensure_sample

    store = Store(workspace_path())
    ensure_sample(store)
    ds = store.load_dataset("sample")
    weight = {"high": 30.0, "medium": 20.0, "low": 10.0}  # coverage ranks low > medium > high in omission
    for sid, text in store.evidence_results("sample", "medomit").items():  # stored again: now the latest rows
        d = json.loads(text)
        d["document_weight"] = weight.get(ds.summary(sid).quality_group, 15.0)
        store.put_evidence("sample", "medomit", f"reweighted-{sid}", sid, d["status"], json.dumps(d))
    at = _run("pages/evidence.py")
    warned = " ".join(w.value for w in at.warning)
    assert "opposite orders" in warned and "quality group" in warned, warned
