"""Agreement of two measurements of the same thing: the Bland–Altman bias and limits of agreement."""
from __future__ import annotations

import statistics as pystats
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class BlandAltman:
    """``bias`` (the mean difference), the limits of agreement ``lower`` and ``upper`` (bias ∓ z·SD), the sample
    ``sd`` of the differences and their number ``n``."""

    bias: float
    lower: float
    upper: float
    sd: float
    n: int


def bland_altman(x: Sequence[float], y: Optional[Sequence[float]] = None, z: float = 1.96) -> BlandAltman:
    """Bland & Altman (1986, Lancet i:307) bias and limits of agreement of the differences d_i = x_i − y_i (or of
    ``x`` itself when it already holds the differences and ``y`` is None)::

        bias = d̄,   SD = √(Σ (d_i − d̄)² / (n − 1)),   limits = bias ∓ z · SD

    ``z = 1.96`` gives the 95 % limits (the 1986 paper rounds it to 2). Computed with Python's ``statistics``
    (``fmean``, ``stdev``). Raises ValueError for fewer than two differences.
    """
    d = list(x) if y is None else [a - b for a, b in zip(x, y)]
    if len(d) < 2:
        raise ValueError("limits of agreement need at least two differences")
    m, sd = pystats.fmean(d), pystats.stdev(d)
    return BlandAltman(m, m - z * sd, m + z * sd, sd, len(d))
