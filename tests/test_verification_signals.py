"""The signals claim verification reads without the model, the abbreviations both sides are read through, and the
monotone combination that turns them into one probability with an uncertain band."""
import json
import math

import pytest

from engine.core.models import Case, Note
from engine.evidence.support.verification.combination import (COMBINATION_PATH, Combination, fit_monotone,
                                                               shipped_combination)
from engine.evidence.support.verification.signals import FEATURES, FINDING_CAP, RecordWords, Signals, claim_signals, novel_words
from engine.evidence.text.abbreviations import ABBREVIATIONS, expand

RECORD = RecordWords(Case("c", "", (Note("1", "DCCV 3/12/2024: successful, restored sinus rhythm. HTN on "
                                              "lisinopril. Her mother is 53. No intracranial metastases on brain "
                                              "MRI. AKI resolved, creatinine 1.1."),)))


def test_abbreviations_meet_their_words_and_ambiguous_or_lower_case_words_stay_words():
    assert "cardioversion" in expand("DCCV on 3/12") and "rapid ventricular response" in expand("AFib with RVR")
    assert expand("MS flare; PT eval.") == "MS flare; PT eval."  # ambiguous: never expanded
    assert expand("er, I was sob at the tee") == "er, I was sob at the tee"  # words of a conversation
    assert "twice daily" in expand("metoprolol 25 mg bid")
    assert all(k == k.lower() for k in ABBREVIATIONS)


def test_what_the_record_states_in_other_forms_adds_no_novel_word():
    for claim in ("Cardioversion restored sinus rhythm.", "Brain MRI showed no metastases.",
                  "Hypertension, on lisinopril.", "Acute kidney injury resolved.",
                  "2. Continue lisinopril for HTN."):
        s = claim_signals(claim, RECORD, 0.9)
        assert s.novel_words == 0 and s.novel_numbers == 0 and not s.no_age, (claim, s)


def test_added_history_negatives_values_and_ages_are_read():
    s = claim_signals("She denies chest pain and has a history of asthma.", RECORD)
    assert s.novel_words > 0.5 and {"chest", "asthma"} <= set(novel_words("She denies chest pain and has a history "
                                                                          "of asthma.", RECORD))
    assert claim_signals("Her mother is 63.", RECORD).novel_numbers == 1
    assert claim_signals("A 74-year-old woman.", RECORD).no_age
    assert claim_signals("Her mother is 53.", RECORD).novel_numbers == 0
    assert claim_signals("Sinus rhythm.", RECORD, 0.8).vector()[0] == pytest.approx(math.log(0.2 / 0.8))
    assert claim_signals("Sinus rhythm.", RECORD).vector()[0] == 0.0  # no answer: undecided
    # a finding caps the model's yes: its answer cannot outweigh a number the record never gives
    assert claim_signals("Her mother is 63.", RECORD, 0.99).model == pytest.approx(1 - FINDING_CAP)


def test_the_monotone_fit_never_gives_a_negative_weight():
    # the second feature is anti-correlated with the label: an unconstrained fit would weigh it negatively
    X = [[0.9, 0.0], [0.8, 0.1], [0.7, 0.0], [0.2, 1.0], [0.1, 0.9], [0.3, 1.0], [0.6, 0.2], [0.4, 0.8]]
    y = [1, 1, 1, 0, 0, 0, 1, 0]
    b0, w = fit_monotone(X, y)
    assert w[0] > 1.0 and w[1] == pytest.approx(0.0, abs=1e-6)


def test_the_shipped_combination_is_monotone_and_bands_its_verdicts():
    comb = shipped_combination()
    assert comb.features == FEATURES and all(w >= 0 for w in comb.weights)
    assert 0 < comb.unsupported_below <= comb.supported_from < 1
    calm = Signals(0.0, 0, False, False, 0.05)
    worse = [Signals(0.8, 0, False, False, 0.05), Signals(0.0, 2, False, False, 0.05),
             Signals(0.0, 0, True, False, 0.05), Signals(0.0, 0, False, True, 0.05), Signals(0.0, 0, False, False, 0.9)]
    for s in worse:  # no signal can make a claim more supported
        assert comb.p_supported(s) <= comb.p_supported(calm)
    mid = (comb.unsupported_below + comb.supported_from) / 2
    assert comb.verdict(mid) == ("uncertain" if comb.unsupported_below < comb.supported_from else "supported")
    assert comb.verdict(comb.unsupported_below - 1e-6) == "unsupported"


def test_a_combination_with_a_negative_weight_or_other_features_is_refused():
    d = json.loads(COMBINATION_PATH.read_text())
    with pytest.raises(ValueError, match="monotone"):
        Combination.from_dict({**d, "weights": [-1.0] + d["weights"][1:]})
    with pytest.raises(ValueError, match="features"):
        Combination.from_dict({**d, "features": d["features"][:-1]})
