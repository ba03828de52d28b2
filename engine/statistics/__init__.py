"""Statistics, the ground floor beside ``engine.core``: inter-rater reliability, agreement and paired/two-sample
tests (this adapter), the bootstrap (``bootstrap``, the one resampling code of the engine) and the strictly
increasing map calibration fits (``monotone``).

One adapter function per statistic, each returning a frozen dataclass
(:class:`Estimate` for coefficients, :class:`TestResult` for hypothesis tests).
Well-kept libraries are used where they exist:

* ICC (Shrout & Fleiss forms, F-based CIs) and Cronbach's alpha: ``pingouin``
* Krippendorff's alpha: ``krippendorff``
* classic Fleiss kappa (complete data): ``statsmodels``
* Wilcoxon signed-rank, Mann-Whitney U, Pearson r (Fisher z CI), Spearman rho:
  ``scipy.stats``

Small own implementations are written only where no maintained Python library
exists: Gwet's AC1/AC2 with Gwet's subject-sampling variance (missing ratings
allowed), Gwet's generalised Fleiss kappa (missing data) and its variance, the
Fleiss (1971) null-hypothesis SE, Cohen's kappa with the Fleiss-Cohen-Everitt
(1969) asymptotic SE and Gwet's variance, the Feldt CI from summary statistics,
and a unit-resampling bootstrap for Krippendorff's alpha.

Input convention: a 2-D array-like, rows = units/subjects, columns =
raters/items; ``None``/``NaN`` = missing. Two-sample functions take ``x`` and
``y`` (or one 2-column array for paired data).

The statistics live in this package's modules (``base``, ``icc``, ``alpha``, ``kappa``, ``significance``); callers import
them from here, the one adapter. It never imports streamlit.

Imports: engine.core.
"""

from __future__ import annotations

from engine.statistics.alpha import krippendorff_alpha, krippendorff_alpha_bootstrap
from engine.statistics.base import Estimate, TestResult, agreement_weights
from engine.statistics.icc import cronbach_alpha, cronbach_alpha_ci, icc, icc_all
from engine.statistics.kappa import cohen_kappa, fleiss_kappa, gwet_ac
from engine.statistics.significance import mann_whitney_u, pearson_r, spearman_rho, wilcoxon_signed_rank

__all__ = [
    "Estimate",
    "TestResult",
    "icc",
    "icc_all",
    "cronbach_alpha",
    "cronbach_alpha_ci",
    "krippendorff_alpha",
    "krippendorff_alpha_bootstrap",
    "gwet_ac",
    "fleiss_kappa",
    "cohen_kappa",
    "wilcoxon_signed_rank",
    "mann_whitney_u",
    "pearson_r",
    "spearman_rho",
    "agreement_weights",
]
