"""Factor analysis of the items through statsmodels, against R psych's published output, and the KMO formula."""
import numpy as np
import pytest

from engine.statistics import kmo, principal_axis_varimax

# The SAS example data (Minas Graes, Matto Grosso, Santa Cruz) with R psych's varimax loadings:
# psych::fa(Y, nfactors=2, fm="pa", rotate="Varimax", SMC=TRUE, min.err=1e-10), columns Basal, Occ, Max, id.
Y = np.array([
    [2.068, 2.070, 1.580, 1], [2.068, 2.074, 1.602, 2], [2.090, 2.090, 1.613, 3], [2.097, 2.093, 1.613, 4],
    [2.117, 2.125, 1.663, 5], [2.140, 2.146, 1.681, 6], [2.045, 2.054, 1.580, 7], [2.076, 2.088, 1.602, 8],
    [2.090, 2.093, 1.643, 9], [2.111, 2.114, 1.643, 10], [2.093, 2.098, 1.653, 11], [2.100, 2.106, 1.623, 12],
    [2.104, 2.101, 1.653, 13]])
R_PSYCH_VARIMAX = np.array([[0.98828898, -0.12587155], [0.97424206, -0.15354033], [0.84418097, -0.502714],
                            [0.20601929, -0.55558235]])


def _same_up_to_sign_and_order(a, b, tol):
    for perm in ([0, 1], [1, 0]):
        c = a[:, perm]
        c = c * np.sign((c * b).sum(axis=0))
        if np.allclose(c, b, atol=tol):
            return True
    return False


def test_principal_axis_varimax_matches_r_psych():
    got = principal_axis_varimax(Y, n_factors=2)
    assert _same_up_to_sign_and_order(got, R_PSYCH_VARIMAX, tol=1e-5), got


def test_kmo_is_the_kaiser_formula():
    r = np.array([[1.0, 0.6, 0.5], [0.6, 1.0, 0.4], [0.5, 0.4, 1.0]])
    s = np.linalg.inv(r)
    p = lambda i, j: -s[i, j] / np.sqrt(s[i, i] * s[j, j])  # noqa: E731
    r2 = 2 * (0.6 ** 2 + 0.5 ** 2 + 0.4 ** 2)
    p2 = 2 * (p(0, 1) ** 2 + p(0, 2) ** 2 + p(1, 2) ** 2)
    assert kmo(r) == pytest.approx(r2 / (r2 + p2))
    assert 0.5 < kmo(r) < 1


def test_factor_analysis_of_the_sample_runs_without_a_silent_fallback():
    from engine.data.loading import load_paths
    from engine.sample import SAMPLE_BUNDLE
    from engine.analysis.agreement import analyse

    ds, _ = load_paths([SAMPLE_BUNDLE], name="s")
    fa = analyse(ds).factor_analysis
    assert "statsmodels" in fa["method"] and "failed" not in fa["method"]
    assert len(fa["loadings"]) == len(fa["items"]) and len(fa["loadings"][0]) == 4
