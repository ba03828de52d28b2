"""Factor analysis of items: their correlation matrix and its eigenvalues (the scree), the Kaiser–Meyer–Olkin
measure of sampling adequacy, and principal-axis factoring with varimax rotation."""
from __future__ import annotations

from typing import Any, Literal

import numpy as np


def correlation_matrix(data: Any, method: Literal["pearson", "spearman"] = "pearson") -> np.ndarray:
    """The correlation matrix of the columns of ``data`` (rows = observations; a DataFrame or a 2-D array), each
    pair over the rows where both are present: Pearson's r, or Spearman's rho (Pearson's r of the mid-ranks), through
    ``pandas.DataFrame.corr``. NaN where a column is constant or a pair has fewer than two rows."""
    import pandas as pd

    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(np.asarray(data, dtype=float))
    return df.corr(method=method).to_numpy()


def scree_eigenvalues(corr: Any) -> list[float]:
    """The eigenvalues of a correlation matrix, largest first (the scree of Cattell 1966; Kaiser's criterion keeps
    those above 1), through ``numpy.linalg.eigvalsh``; a NaN correlation (a constant item) counts as 0."""
    return [float(v) for v in sorted(np.linalg.eigvalsh(np.nan_to_num(np.asarray(corr, dtype=float))), reverse=True)]


def kmo(corr: Any) -> float:
    """Kaiser–Meyer–Olkin measure of sampling adequacy of a correlation matrix R (Kaiser 1970; Kaiser & Rice 1974,
    Educ Psychol Meas 34:111; the overall MSA of R psych ``KMO`` and of SPSS)::

        KMO = Σ_{i≠j} r²_ij / (Σ_{i≠j} r²_ij + Σ_{i≠j} p²_ij),   p_ij = −S_ij / √(S_ii S_jj),  S = R⁻¹

    p_ij being the partial correlations (the anti-image correlations up to sign); the pseudo-inverse stands in
    for R⁻¹ when R is singular. NaN when every off-diagonal r and p is 0. No maintained Python library computes it
    (statsmodels and pingouin do not), so it is written here.
    """
    r = np.asarray(corr, dtype=float)
    s = np.linalg.pinv(r)
    d = np.sqrt(np.outer(np.diag(s), np.diag(s)))
    p = -s / d
    off = ~np.eye(len(r), dtype=bool)
    r2, p2 = float((r[off] ** 2).sum()), float((p[off] ** 2).sum())
    return r2 / (r2 + p2) if r2 + p2 > 0 else float("nan")


def principal_axis_varimax(x: Any, n_factors: int) -> np.ndarray:
    """Loadings (variables × factors) of an iterated principal-axis factor analysis of the correlation matrix of
    ``x`` (rows = observations), squared multiple correlations as starting communalities, varimax-rotated (Kaiser
    1958): statsmodels ``Factor(method="pa")``, whose loadings match R psych ``fa(fm="pa", rotate="varimax")``.
    At convergence principal axis minimises the same unweighted least-squares residual as psych's ``fm="minres"``
    (Harman 1976, ch. 8; the PDSQI-9 validation's choice)."""
    from statsmodels.multivariate.factor import Factor

    res = Factor(x, n_factor=n_factors, method="pa", smc=True).fit(tol=1e-8)
    res.rotate("varimax")
    return np.asarray(res.loadings)
