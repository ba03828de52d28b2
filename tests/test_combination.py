"""The default item combinations (engine.judge.combination) and the evidence features they read."""
import json

import pytest

from engine.judge.combination import (COMBINATIONS, FORMS, MIN_POPULATION, SIGNALS, Scales, combine, combined_scores,
                                      dataset_scales, has_combination, scales_of)
from engine.judge.features import FEATURE_NAMES, Features, _medomit_share


def test_every_signal_reads_a_feature_that_exists_and_maps_onto_the_scale():
    for sig in SIGNALS.values():
        assert sig.feature is None or sig.feature in FEATURE_NAMES
        for v in (0.0, 0.1, 0.5, 1.0):
            assert 1.0 <= sig.to_scale(v if sig.feature else 1 + 4 * v) <= 5.0
    for item, comb in COMBINATIONS.items():
        weights = comb.weights
        assert set(weights) <= set(SIGNALS) and "judge" in weights and sum(weights.values()) == pytest.approx(1.0)
        assert comb.form in FORMS
        if comb.form == "mean":  # fixed before measuring: the judge and the evidence weigh half each
            assert weights["judge"] == pytest.approx(0.5)
    # Thorough: chosen on real visit notes, judge 1/3 of the ranking without MED-OMIT
    th = COMBINATIONS["thorough"].weights
    assert COMBINATIONS["thorough"].form == "z" and th["judge"] / (th["judge"] + th["coverage"]) == pytest.approx(1 / 3)


def test_combination_renormalises_over_the_signals_present():
    # Thorough without reference scales (the mean form): judge 4.6, coverage share 0.125 (-> 4.0), MED-OMIT share
    # 0.5 (-> 3.0)
    c = combine("thorough", 4.6, Features(omission=0.125, medomit_share=0.5))
    assert c.value == pytest.approx(0.25 * 4.6 + 0.5 * 4.0 + 0.25 * 3.0) and c.form == "mean"
    assert [p.signal for p in c.parts] == ["judge", "coverage", "medomit"] and c.uses_evidence
    assert "0.25 × judge's expected score" in c.label
    only = combine("thorough", 4.6, Features(omission=0.125))
    assert only.value == pytest.approx((0.25 * 4.6 + 0.5 * 4.0) / 0.75)
    assert combine("thorough", 4.6, None).value == pytest.approx(4.6) and not combine("thorough", 4.6, None).uses_evidence
    assert combine("thorough", None, Features(omission=0.1)) is None  # no judge score: nothing to combine
    acc = combine("accurate", 4.6, Features(unsupported=0.25))
    assert acc.value == pytest.approx(0.5 * 4.6 + 0.5 * 3.0)


def test_items_without_evidence_of_their_own_keep_the_judges_score():
    assert not has_combination("organized") and combine("organized", 3.7, Features(omission=0.9)).value == 3.7
    got = combined_scores({"accurate": 4.8, "organized": 4.0, "cited": None}, Features(unsupported=0.25))
    assert set(got) == {"accurate"} and got["accurate"].value == pytest.approx(0.5 * 4.8 + 0.5 * 3.0)


def test_medomit_share_reads_complete_results_of_the_default_model_only():
    from engine.evidence.medomit.result import Fact, FactScore, MedOmitResult

    facts = [Fact("F1", "a", "1", 0, 1, "exact"), Fact("F2", "b", "1", 2, 3, "exact"), Fact("F3", "c", None, None,
                                                                                            None, "unlinked")]
    scores = [FactScore("F1", True, "critical", 1.0, [], 1.0, []), FactScore("F2", False, "important", 0.5, [], 0.5, [])]
    res = MedOmitResult("s", "c", "complete", "", "", facts, [], [], scores, 1.0, 1,
                        provenance={"method": "medomit-v4", "model": "m", "model_file": "qwen.gguf"})
    assert _medomit_share(json.loads(res.to_json())) == pytest.approx(1.0 / 1.5)
    smoke = json.loads(res.to_json())
    smoke["provenance"]["model_file"] = "gemma-3-270m-it-Q4_K_M.gguf"
    assert _medomit_share(smoke) is None
    inc = json.loads(res.to_json())
    inc["status"] = "incomplete"
    assert _medomit_share(inc) is None and _medomit_share(None) is None


def test_validity_rows_show_the_real_text_figure_of_the_score_in_use(tmp_path, monkeypatch):
    from engine.judge import used_scores

    real = tmp_path / "real.json"
    real.write_text(json.dumps({"on": "real notes X", "items": [
        {"item": "thorough", "spearman_judge": 0.5, "spearman_combination": 0.6}]}), encoding="utf-8")
    monkeypatch.setattr(used_scores, "REAL_TEXT_VALIDITY", real)
    rows = {r["item"]: r for r in used_scores.validity_rows(("thorough", "organized"), None)}
    assert rows["Thorough"]["on real text"] == "ρ 0.60 (judge alone: ρ 0.50) on real notes X"
    assert rows["Organized"]["on real text"] == "not measured"
    monkeypatch.setattr(used_scores, "REAL_TEXT_VALIDITY", tmp_path / "missing.json")
    assert used_scores.validity_rows(("thorough",), None)[0]["on real text"] == "not measured"


def test_the_shipped_real_text_figure_is_read():
    from engine.judge.used_scores import REAL_TEXT_VALIDITY, defaults, real_text_validity

    r = real_text_validity()["thorough"]
    assert REAL_TEXT_VALIDITY.exists() and "ACI-BENCH" in r["on"] and r["n"] >= 30
    row = next(x for x in defaults("qwen2.5-coder-1.5b") if x["item"] == "Thorough")
    assert row["score used"] == "combination" and row["on real text"].startswith(f"ρ {r['spearman_combination']:.2f}")
    assert row["combination"].startswith("0.25 × judge's expected score + 0.50 × unit coverage")
    assert "standard scores over the dataset's summaries" in row["combination"]
    assert next(x for x in defaults("qwen2.5-coder-1.5b") if x["item"] == "Organized")["combination"] == ""


def _population(n=12):
    """Thorough inputs where the judge spreads by hundredths and coverage by tenths of its 1-5 map, independently."""
    return [(4.50 + 0.01 * (i % 4), Features(omission=0.02 * (i // 4))) for i in range(n)]


def test_z_form_gives_each_signal_its_stated_weight_whatever_its_spread():
    pop = _population()
    sc = scales_of("thorough", pop)
    assert COMBINATIONS["thorough"].form == "z" and sc.n == len(pop) and set(sc.sd) == {"judge", "coverage"}
    e, f = 4.515, Features(omission=0.02)  # a summary in the middle (no clipping)

    def effect(form_scales, d_judge=0.0, d_cov=0.0):  # moves in 1-5 units of each signal
        moved = combine("thorough", e + d_judge, Features(omission=f.omission - d_cov / 8), form_scales).value
        return moved - combine("thorough", e, f, form_scales).value

    sdj, sdc = sc.sd["judge"], sc.sd["coverage"]
    # one standard deviation of the judge moves the z form half as much as one of coverage (weights 1/3 : 2/3) ...
    assert effect(sc, d_judge=sdj) / effect(sc, d_cov=sdc) == pytest.approx(0.5, rel=0.02)
    # ... while in the mean form it moves it by a few hundredths of coverage's: the judge only breaks ties
    assert effect(None, d_judge=sdj) / effect(None, d_cov=sdc) < 0.1
    c = combine("thorough", e, f, sc)
    assert c.form == "z" and c.population == len(pop) and "standard scores over 12 summaries" in c.label
    assert [p.weight for p in c.parts] == pytest.approx([1 / 3, 2 / 3], abs=1e-4)
    # value = M + S * (weighted z): re-expressed on the 1-5 scale around the signals' weighted mean level
    j, cov = c.parts
    level = (sc.mean["judge"] + 2 * sc.mean["coverage"]) / 3
    spread = (sc.sd["judge"] + 2 * sc.sd["coverage"]) / 3
    assert c.value == pytest.approx(level + spread * (j.z + 2 * cov.z) / 3, abs=1e-3)
    values = [combine("thorough", x, y, sc).value for x, y in pop]
    assert 1.0 <= min(values) and max(values) <= 5.0


def test_z_form_falls_back_to_the_mean_form_without_a_reference_population():
    small = _population(MIN_POPULATION - 1)
    assert scales_of("thorough", small) is None
    assert scales_of("accurate", _population()) is None  # an item in the mean form has no scales
    e, f = small[0]
    c = combine("thorough", e, f, None)
    assert c.form == "mean" and c.label.startswith("combination: ") and c.value == combine("thorough", e, f).value
    other = Scales("accurate", 20, {"judge": 4.0}, {"judge": 0.1})
    assert combine("thorough", e, f, other).form == "mean"  # scales of another item are not used


def test_a_signal_without_spread_or_too_few_values_is_left_out_of_the_z_form():
    flat = [(4.6, Features(omission=0.01 * i)) for i in range(12)]
    sc = scales_of("thorough", flat)
    assert sc.sd["judge"] == 0.0
    c = combine("thorough", 4.6, Features(omission=0.05), sc)
    assert [p.signal for p in c.parts] == ["coverage"] and c.form == "z"
    # MED-OMIT run on 3 summaries only: not standardised, so not part of the z-average
    few = [(e, Features(omission=f.omission, medomit_share=0.2 if i < 3 else None)) for i, (e, f) in
           enumerate(_population())]
    sc = scales_of("thorough", few)
    assert "medomit" not in sc.mean
    assert [p.signal for p in combine("thorough", *few[0], sc).parts] == ["judge", "coverage"]


def test_scales_round_trip_and_dataset_scales_cover_the_z_items_only():
    sc = scales_of("thorough", _population())
    assert Scales.from_dict(sc.to_dict()) == sc and Scales.from_dict({}) is None
    scored = {f"s{i}": {"thorough": e, "accurate": 4.0} for i, (e, _) in enumerate(_population())}
    feats = {f"s{i}": f for i, (_, f) in enumerate(_population())}
    got = dataset_scales(scored, feats)
    assert set(got) == {"thorough"} and got["thorough"] == sc
    with_scales = combined_scores(scored["s0"], feats["s0"], got)
    assert with_scales["thorough"].form == "z" and with_scales["accurate"].form == "mean"
