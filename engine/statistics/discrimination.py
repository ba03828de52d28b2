"""How well a score tells two classes apart: the area under the ROC curve."""
from __future__ import annotations

import math
from typing import Optional, Sequence


def auroc(labels: Sequence, scores: Sequence[Optional[float]], higher_is_positive: bool = True) -> float:
    """Area under the ROC curve of ``scores`` for the two classes of ``labels`` (1/True positive, 0/False negative),
    through ``sklearn.metrics.roc_auc_score``::

        AUROC = P(S+ > S−) + ½ P(S+ = S−) = U / (n+ n−)

    the probability that a random positive scores above a random negative, ties counting half: the Mann-Whitney U
    of the positives' scores over all n+ n− pairs (Bamber 1975; Hanley & McNeil 1982, Radiology 143:29).

    ``higher_is_positive=False``: a *lower* score points to the positive class (the AUROC of −score). Pairs whose
    score is None are left out; NaN when fewer than two classes remain.
    """
    from sklearn.metrics import roc_auc_score

    pairs = [(y, s) for y, s in zip(labels, scores) if s is not None]
    ys = [y for y, _ in pairs]
    if len(set(ys)) < 2:
        return math.nan
    ss = [s for _, s in pairs] if higher_is_positive else [-float(s) for _, s in pairs]
    return float(roc_auc_score(ys, ss))
