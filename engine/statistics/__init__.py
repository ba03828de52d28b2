"""Statistics, the ground floor beside ``engine.core``: every statistic the engine, the pages and the benches
compute — inter-rater reliability, agreement and paired/two-sample tests, correlations, discrimination (AUROC),
Bland–Altman limits, linear, ridge, logistic and mixed-model fits, factor analysis, the bootstrap (``bootstrap``,
the one resampling code of the engine) and the monotone maps calibration fits (``monotone``). Nothing outside this
package imports scipy, scikit-learn or statsmodels to compute a statistic.

One adapter function per statistic, each with its formula and a reference, returning a frozen dataclass where it
gives several values (:class:`Estimate` for coefficients, :class:`TestResult` for hypothesis tests, and one per
fit). Well-kept libraries are used where they exist:

* ICC (Shrout & Fleiss forms, F-based CIs) and Cronbach's alpha: ``pingouin``
* Krippendorff's alpha: ``krippendorff``
* classic Fleiss kappa (complete data), the mixed model (``MixedLM``), principal-axis factoring: ``statsmodels``
* Wilcoxon signed-rank, Mann-Whitney U, Pearson r (Fisher z CI), Spearman rho, mid-ranks, the least-squares
  line, the bounded logistic fit and the logistic curve (``scipy.optimize``): ``scipy``
* AUROC, isotonic regression, ridge regression: ``scikit-learn``

Small own implementations are written only where no maintained Python library
exists: Gwet's AC1/AC2 with Gwet's subject-sampling variance (missing ratings
allowed), Gwet's generalised Fleiss kappa (missing data) and its variance, the
Fleiss (1971) null-hypothesis SE, Cohen's kappa with the Fleiss-Cohen-Everitt
(1969) asymptotic SE and Gwet's variance, the Feldt CI from summary statistics,
a unit-resampling bootstrap for Krippendorff's alpha, the case (cluster) bootstrap, the
Kaiser–Meyer–Olkin measure and the Bland–Altman limits.

Input convention: a 2-D array-like, rows = units/subjects, columns =
raters/items; ``None``/``NaN`` = missing. Two-sample functions take ``x`` and
``y`` (or one 2-column array for paired data).

The statistics live in this package's modules (``base``, ``icc``, ``alpha``, ``kappa``, ``significance``,
``bootstrap``, ``clustered``, ``discrimination``, ``blandaltman``, ``regression``, ``logistic``, ``mixed``,
``factor``, ``monotone``); callers import them from here, the one adapter. It never imports streamlit.

Imports: engine.core.
"""

from __future__ import annotations

from engine.statistics.alpha import krippendorff_alpha, krippendorff_alpha_bootstrap
from engine.statistics.base import Estimate, TestResult, agreement_weights
from engine.statistics.icc import cronbach_alpha, cronbach_alpha_ci, icc, icc_all
from engine.statistics.kappa import cohen_kappa, fleiss_kappa, gwet_ac
from engine.statistics.significance import (mann_whitney_u, midranks, pearson_r, spearman_defined, spearman_rho,
                                            wilcoxon_signed_rank)
from engine.statistics.blandaltman import BlandAltman, bland_altman
from engine.statistics.bootstrap import (cluster_bootstrap, cluster_bootstrap_values, percentile_interval,
                                        resample_counts, two_sided_p)
from engine.statistics.clustered import ClusterEstimate, mean_absolute_error_clustered, spearman_clustered
from engine.statistics.discrimination import auroc
from engine.statistics.factor import correlation_matrix, kmo, principal_axis_varimax, scree_eigenvalues
from engine.statistics.logistic import LogisticCurve, LogisticFit, bounded_logistic, logistic_curve
from engine.statistics.mixed import MixedModelFit, mixed_model
from engine.statistics.monotone import TIE_SLOPE, isotonic_steps, monotone_apply, monotone_knots
from engine.statistics.regression import Line, RidgeFit, least_squares_line, ridge_standardised

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
    "spearman_defined",
    "midranks",
    "agreement_weights",
    "auroc",
    "spearman_clustered",
    "mean_absolute_error_clustered",
    "ClusterEstimate",
    "cluster_bootstrap",
    "cluster_bootstrap_values",
    "percentile_interval",
    "resample_counts",
    "two_sided_p",
    "bland_altman",
    "BlandAltman",
    "least_squares_line",
    "Line",
    "ridge_standardised",
    "RidgeFit",
    "bounded_logistic",
    "LogisticFit",
    "logistic_curve",
    "LogisticCurve",
    "mixed_model",
    "MixedModelFit",
    "correlation_matrix",
    "scree_eigenvalues",
    "kmo",
    "principal_axis_varimax",
    "isotonic_steps",
    "monotone_knots",
    "monotone_apply",
    "TIE_SLOPE",
]
