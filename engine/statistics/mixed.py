"""A linear mixed model with a random intercept per group (statsmodels ``MixedLM``)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MixedModelFit:
    """``params``: every estimated parameter by its patsy name in statsmodels' order (the fixed effects, then
    ``Group Var``, the random intercept's variance relative to the residual variance); ``conf_int``: the Wald 95 %
    interval of those that have one; ``pvalues``: their Wald z-test p; ``group_variance`` σ²_u and
    ``residual_variance`` σ² on the data's scale; ``n`` rows in ``groups`` groups; ``converged``: whether the
    optimiser said so."""

    params: dict[str, float]
    conf_int: dict[str, tuple[float, float]]
    pvalues: dict[str, float]
    group_variance: float
    residual_variance: float
    n: int
    groups: int
    converged: bool
    extra: dict = field(default_factory=dict)


def mixed_model(formula: str, data: Any, groups: Any, reml: bool = True) -> MixedModelFit:
    """Linear mixed model y = Xβ + Z u + ε with a random intercept u_g ~ N(0, σ²_u) per group and
    ε ~ N(0, σ²) (Laird & Ware 1982, Biometrics 38:963), fitted by REML (``reml=True``, as R ``lme4::lmer``'s
    default) or ML through ``statsmodels.formula.api.mixedlm(formula, data, groups=groups)`` (patsy formula:
    ``C(x)`` a categorical term, treatment-coded against its first level). Fit warnings (a boundary variance,
    a convergence note) are silenced; ``converged`` reports the optimiser's word. Raises what statsmodels raises on
    a singular design."""
    import numpy as np
    import statsmodels.formula.api as smf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm(formula, data, groups=groups).fit(reml=reml)
    ci = fit.conf_int()
    return MixedModelFit(
        params={k: float(v) for k, v in fit.params.items()},
        conf_int={k: (float(ci.loc[k].iloc[0]), float(ci.loc[k].iloc[1])) for k in ci.index},
        pvalues={k: float(v) for k, v in fit.pvalues.items()},
        group_variance=float(np.asarray(fit.cov_re)[0, 0]), residual_variance=float(fit.scale),
        n=int(fit.nobs), groups=len(fit.model.group_labels),
        converged=bool(getattr(fit, "converged", True)))
