"""Restatements inside a summary: values keep their units, a sentence with a new value is news, not a repeat, and
the real embedding model finds a paraphrased repeat while leaving a trend alone."""
import numpy as np
import pytest

from engine.evidence.support.redundancy import RULE, is_restatement, restatements, values


def test_values_keep_their_units():
    assert values("58-year-old woman") == {("58", "year")}
    assert values("LDL is 58 mg/dL, goal < 55 mg/dL") == {("58", "mg/dl"), ("55", "mg/dl")}
    assert values("UPCR fell from 1.8 to 0.6 g/g") == {("1.8", "g/g"), ("0.6", "g/g")}  # a range shares its unit
    assert values("6-8 attacks a day, WBC 2,140") == {("6", ""), ("8", ""), ("2140", "")}
    assert ("58", "year") not in values("LDL 58 mg/dL")


def test_the_rule_needs_no_new_value_and_shared_words():
    assert is_restatement(0.3, frozenset(), 0.7, frozenset(), 0.3)
    assert not is_restatement(0.3, frozenset(), 0.7, frozenset({("64", "iu/ml")}), 0.3)  # a new value: news
    assert not is_restatement(0.05, frozenset(), 0.7, frozenset(), 0.3)  # close in meaning, no word in common
    assert is_restatement(0.0, frozenset({("0.6", "g/g")}), 0.4, frozenset(), RULE.said_before)
    assert not is_restatement(0.0, frozenset({("0.6", "g/g")}), 0.4, frozenset(), RULE.said_before - 0.01)


def _unit(rows):
    v = np.array(rows, dtype=float)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_each_later_sentence_names_its_strongest_earlier_one_and_headings_never_count():
    sents = ["Assessment and plan:", "Stress echo showed no inducible ischemia at 10 METs.",
             "Echo later showed no inducible ischemia on stress testing.",
             "Assessment and plan:"]
    vecs = _unit([[1, 0, 0], [0, 1, 0], [0, 0.95, 0.3], [1, 0, 0]])
    found = restatements(sents, vecs, skip=[True, False, False, True])
    assert [(r.first, r.later) for r in found] == [(1, 2)]
    assert found[0].describe().startswith("restates sentence 2")
    assert restatements(sents, vecs, skip=[False, False, False, False]) == found  # too few content words anyway


@pytest.fixture(scope="module")
def emb(suite_embedder):
    return suite_embedder


def _flags(emb, sents):
    return [(r.first, r.later) for r in restatements(sents, emb.sentence_embeddings(sents))]


def test_a_paraphrased_repeat_is_found_with_the_real_model(emb):
    sents = ["MRI showed a 6 mm acute infarct in the right caudate nucleus.",
             "Aspirin and atorvastatin were started, and he returned to work.",
             "In brief, the stroke was a small ischemic infarct of the right caudate nucleus."]
    assert _flags(emb, sents) == [(0, 2)]


def test_a_trend_and_a_different_finding_are_not_repeats(emb):
    trend = ["Creatinine was 2.4 mg/dL on admission with potassium 5.9.",
             "By discharge, creatinine had fallen to 1.3 mg/dL."]  # same analyte, new value
    assert _flags(emb, trend) == []
    age = ["61-year-old man with type 2 diabetes.", "LDL is 61 mg/dL on atorvastatin 40 mg daily."]
    assert _flags(emb, age) == []  # the age is not the LDL
