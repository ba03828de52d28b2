"""Triage queue: priority from judge scores and evidence, reasons per summary, blinded reasons, strata."""
from types import SimpleNamespace

import pytest

from engine.judge.features import Features
from engine.judge.features import EvidenceSummary
from engine.judge.triage import MIN_MEDIAN, STRATA, below_median, item_medians, queue, stratified_sample


def _ev(flag=False, weak=0, sents=10, cit=0, n_cit=10, stigma=()):
    f = Features(omission=0.4 if flag else 0.05, weak_support=weak / sents, citation_problems=cit / n_cit,
                 stigma_hits=float(len(stigma)), log_words=5.0)
    return EvidenceSummary(f, flag, weak, sents, cit, n_cit, tuple(stigma))


def _s(i):
    return SimpleNamespace(summary_id=f"s{i}", case_id=f"c{i // 3}")


def test_low_scores_and_bad_evidence_come_first_with_reasons():
    sums = [_s(i) for i in range(9)]
    scores = {f"s{i}": {"accurate": 4.8, "thorough": 4.9} for i in range(9)}
    scores["s4"] = {"accurate": 2.1, "thorough": 4.9}  # the judge says inaccurate
    ev = {f"s{i}": _ev() for i in range(9)}
    ev["s7"] = _ev(flag=True, weak=4, cit=3, stigma=("noncompliant",))  # the evidence says many things
    q = queue(sums, scores, "expected score", ev)
    assert [e.summary_id for e in q[:2]] == ["s4", "s7"] or [e.summary_id for e in q[:2]] == ["s7", "s4"]
    top = {e.summary_id: e for e in q}
    assert any("Accurate 2.1" in r for r in top["s4"].reasons)
    assert not any("2.1" in r for r in top["s4"].blind_reasons) and any("Accurate" in r for r in top["s4"].blind_reasons)
    r7 = " ".join(top["s7"].reasons)
    assert "coverage flags omissions" in r7 and "4 of 10 sentences" in r7 and "noncompliant" in r7
    assert [e.stratum for e in q] == [STRATA[0]] * 3 + [STRATA[1]] * 3 + [STRATA[2]] * 3
    assert all(a.priority >= b.priority for a, b in zip(q, q[1:]))


def test_reasons_name_the_item_furthest_below_its_own_median_not_only_the_lowest_score():
    """Thorough sits around 3 on every summary (its evidence's level), the judge's Accurate near 5: the lowest
    score is Thorough's for all of them, and the reasons also name the item that is unusual for the summary."""
    n = MIN_MEDIAN + 2
    sums = [_s(i) for i in range(n)]
    scores = {f"s{i}": {"thorough": 3.0 + 0.01 * i, "accurate": 4.8} for i in range(n)}
    scores["s5"]["accurate"] = 3.9  # far below Accurate's median, still above every Thorough score
    q = {e.summary_id: e for e in queue(sums, scores, "x", {})}
    assert all(e.reasons[0].startswith("lowest judge items (x): Thorough") for e in q.values())
    assert q["s5"].reasons[1] == "furthest below the dataset's median: Accurate 3.9 (median 4.8)"
    assert q["s5"].blind_reasons[1] == "judge: furthest below the dataset's median Accurate"
    assert q["s0"].reasons[1].startswith("furthest below the dataset's median: Thorough 3.0")
    # the judge risk still reads the lowest score (the rule the real-text bench keeps)
    assert q["s5"].judge_risk == pytest.approx((5.0 - 3.05) / 4.0, abs=1e-4)
    # the median needs MIN_MEDIAN scores, and an item at or above its median is not named
    assert item_medians({k: scores[k] for k in list(scores)[:MIN_MEDIAN - 1]}) == {}
    assert below_median({"accurate": 4.8, "thorough": 2.0}, {"accurate": 4.8, "thorough": 2.5}) == [("thorough", 0.5)]
    few = queue(sums[:3], scores, "x", {})
    assert all(len(e.reasons) == 1 for e in few)


def test_unjudged_summary_is_not_treated_as_safe():
    q = queue([_s(0), _s(1)], {"s0": {"accurate": 5.0}}, "expected score", {})
    assert q[0].summary_id == "s1" and "not judged yet" in q[0].reasons


def test_stratified_sample_covers_every_stratum():
    sums = [_s(i) for i in range(12)]
    scores = {f"s{i}": {"accurate": 1.0 + i * 0.3} for i in range(12)}
    q = queue(sums, scores, "x", {})
    pick = stratified_sample(q, 3, seed=1)
    assert sorted(e.stratum for e in pick) == sorted(STRATA)
    assert stratified_sample(q, 3, seed=1) == pick


def test_the_queue_scores_thorough_on_the_datasets_own_scales(monkeypatch, tmp_path, capsys):
    """The shipped sample (36 summaries judged by the 1.5B, with evidence): triage's Thorough score is the
    combination in standard scores over the dataset's scored summaries, not the fixed 1-5 maps."""
    from engine.cli import main
    from engine.data.store import Store
    from engine.judge import triage
    from engine.judge.combination import dataset_scales
    from engine.judge.configs import configurations, find, results_for
    from engine.judge.features import evidence_for
    from engine.judge.results import primary_score
    from engine.judge.stored import stored_judge_results
    from engine.judge.used_scores import choices, used_scores

    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(tmp_path / "ws.sqlite"))
    assert main(["sample"]) == 0
    capsys.readouterr()
    store = Store(tmp_path / "ws.sqlite")
    ds = store.load_dataset("sample")
    entries, _ = triage.for_dataset(store, "sample", ds)
    results = stored_judge_results(store, "sample")
    config = find(configurations(results), None)
    raw = {r.summary_id: {k: primary_score(k, v) for k, v in r.items.items()}
           for r in results_for(results, config.key) if r.status == "scored"}
    ev = evidence_for(store, "sample", ds)
    feats = {sid: ev[sid].features if sid in ev else None for sid in raw}
    scales = dataset_scales(raw, feats)
    assert scales["thorough"].n == len(raw) >= 30
    picks = choices(triage.LIKERT, None)

    def risk(sc):
        return round(max(0.0, min(1.0, (5.0 - min(v for k, v in sc.items() if k in triage.LIKERT and v is not None))
                              / 4.0)), 4)

    want = {sid: risk(used_scores(raw[sid], feats[sid], None, picks, scales)) for sid in raw}
    mean_form = {sid: risk(used_scores(raw[sid], feats[sid], None, picks)) for sid in raw}
    got = {e.summary_id: e.judge_risk for e in entries if e.summary_id in raw}
    assert got == pytest.approx(want, abs=1e-4)
    assert any(abs(want[s] - mean_form[s]) > 1e-3 for s in raw)  # the scales change what triage reads
