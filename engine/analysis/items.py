"""Agreement on one item: the raters' matrix (panel raters; spot checks and adjudications apart), ICC / α / AC
with the reasons a statistic could not be computed, and the LLM's effect on the panel's ICC (as one more rater,
or in place of each human, bootstrapped).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from engine import statistics as rel
from engine.statistics import percentile_interval, resample_counts, two_sided_p
from engine.core import ADJUDICATED_GROUP, Dataset, ITEMS, RESERVED_RATER_GROUPS, SPOT_CHECK_GROUP, Scale


# the rater panel: not the LLM judge, not adjudicated final scores, not clinicians' spot checks
HUMAN_EXCLUDE = set(RESERVED_RATER_GROUPS)
LIKERT = [i.key for i in ITEMS if i.is_likert]
BINARY = [i.key for i in ITEMS if i.scale is Scale.BINARY]


@dataclass
class ItemMatrix:
    item: str
    summary_ids: list[str]
    rater_ids: list[str]
    values: np.ndarray  # summaries × raters, NaN = not rated (or NA)


def item_matrix(ds: Dataset, item: str, exclude_groups=HUMAN_EXCLUDE) -> ItemMatrix:
    sids = [s.summary_id for s in ds.summaries]
    raters = sorted({r.rater_id for r in ds.ratings if r.rater_group not in exclude_groups})
    m = np.full((len(sids), len(raters)), np.nan)
    si = {s: i for i, s in enumerate(sids)}
    ri = {r: j for j, r in enumerate(raters)}
    for r in ds.ratings:
        if r.item == item and r.rater_id in ri and r.value is not None:
            m[si[r.summary_id], ri[r.rater_id]] = r.value
    return ItemMatrix(item, sids, raters, m)


def spot_check_matrix(ds: Dataset, item: str) -> ItemMatrix:
    """The clinicians' spot checks of ``item`` as a summaries × reviewers matrix (same rows as
    :func:`item_matrix`)."""
    others = {r.rater_group for r in ds.ratings} - {SPOT_CHECK_GROUP}
    return item_matrix(ds, item, exclude_groups=others)


@dataclass
class LlmEffect:
    icc_humans: float  # ICC(3,k) of the humans on the summaries every human and the LLM scored
    icc_with_llm: float  # the LLM as an extra rater
    delta_extra: float
    delta_extra_ci: tuple[float, float]
    p_extra: float
    icc_substituted: dict[str, float]  # human replaced by the LLM -> ICC(3,k)
    delta_substitute_mean: float
    delta_substitute_ci: tuple[float, float]
    p_substitute: float
    n: int
    n_boot: int


def _icc3k_weighted(W: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """ICC(3,k) = (MSR − MSE) / MSR of bootstrap resamples given as row-count weights W (B × n) over the rows
    of Y (n × k), from weighted sufficient statistics (row sums, squares, column sums) — no resampled copies."""
    n, k = Y.shape
    s = Y.sum(axis=1)
    S = W @ s
    Q = W @ (Y ** 2).sum(axis=1)
    R = W @ (s ** 2)
    C = ((W @ Y) ** 2).sum(axis=1)
    N = n * k
    ss_t = Q - S ** 2 / N
    ss_r = R / k - S ** 2 / N
    ss_c = C / n - S ** 2 / N
    msr = ss_r / (n - 1)
    mse = (ss_t - ss_r - ss_c) / ((n - 1) * (k - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(msr > 0, (msr - mse) / msr, np.nan)


def llm_effect(x: np.ndarray, llm: np.ndarray, rater_ids: Sequence[str], n_boot: int = 1000, seed: int = 0
               ) -> Optional[LlmEffect]:
    """Change in ICC(3,k) when the LLM joins the raters (8th rater) or replaces each human in turn; bootstrap
    over summaries (the same resamples for every variant), percentile CI and two-tailed p."""
    keep = ~np.isnan(x).any(axis=1) & ~np.isnan(llm)
    x, llm = x[keep], llm[keep]
    n, k = x.shape
    if n < 3 or k < 2:
        return None
    W = resample_counts(n, n_boot, seed, with_observed=True)
    base = _icc3k_weighted(W, x)  # row 0 = the observed sample
    extra = _icc3k_weighted(W, np.column_stack([x, llm]))
    # substitutions: only column j changes, so update the sufficient statistics instead of recomputing
    s, q = x.sum(axis=1), (x ** 2).sum(axis=1)
    Wx, Wl = W @ x, W @ llm
    N = n * k
    subs = []
    for j in range(k):
        sj, qj = s - x[:, j] + llm, q - x[:, j] ** 2 + llm ** 2
        S, Q, R = W @ sj, W @ qj, W @ (sj ** 2)
        C = (Wx ** 2).sum(axis=1) - Wx[:, j] ** 2 + Wl ** 2
        ss_t, ss_r, ss_c = Q - S ** 2 / N, R / k - S ** 2 / N, C / n - S ** 2 / N
        msr, mse = ss_r / (n - 1), (ss_t - ss_r - ss_c) / ((n - 1) * (k - 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            subs.append(np.where(msr > 0, (msr - mse) / msr, np.nan))
    subs = np.array(subs)  # (k, B+1)
    d_extra = (extra - base)[1:]
    d_sub = (np.nanmean(subs, axis=0) - base)[1:]
    ok = np.isfinite(d_extra) & np.isfinite(d_sub)
    d_extra, d_sub = d_extra[ok], d_sub[ok]

    return LlmEffect(float(base[0]), float(extra[0]), float(extra[0] - base[0]), percentile_interval(d_extra),
                     two_sided_p(d_extra), dict(zip(rater_ids, subs[:, 0].tolist())),
                     float(np.mean(subs[:, 0]) - base[0]), percentile_interval(d_sub),
                     two_sided_p(d_sub), n, int(ok.sum()))


@dataclass
class ItemAgreement:
    item: str
    n_summaries: int
    n_raters: int
    n_complete: int
    icc: dict[str, rel.Estimate] = field(default_factory=dict)
    kripp_ordinal: Optional[rel.Estimate] = None
    kripp_interval: Optional[rel.Estimate] = None
    kripp_nominal: Optional[rel.Estimate] = None
    gwet_ac1: Optional[rel.Estimate] = None
    gwet_ac2_linear: Optional[rel.Estimate] = None
    gwet_ac2_quadratic: Optional[rel.Estimate] = None
    llm_vs_human: Optional[rel.TestResult] = None
    llm_effect: Optional[LlmEffect] = None
    # the LLM's agreement with the humans: Likert ICC(2,1) (absolute agreement) of the LLM score with the human
    # median; yes/no Cohen's κ of the LLM with the human majority (ties left out), with Gwet AC1 as secondary
    llm_agreement: Optional[rel.Estimate] = None
    llm_ac1: Optional[rel.Estimate] = None
    llm_constant: Optional[float] = None  # the one value the LLM gave every compared summary, when it never varied
    llm_matches: Optional[tuple[int, int]] = None  # yes/no items: (summaries where the LLM = the human majority, of)
    human_median: Optional[float] = None  # median over summaries of the human median
    llm_median: Optional[float] = None
    human_yes: Optional[tuple[int, int]] = None  # yes/no items: (yes answers, answers) over all human ratings
    llm_yes: Optional[tuple[int, int]] = None
    notes: list[str] = field(default_factory=list)


def plain_reason(exc: BaseException) -> str:
    """Why a statistic could not be computed, in words a committee reads (the library's message kept after it)."""
    msg = str(exc) or exc.__class__.__name__
    low = msg.lower()
    if any(k in low for k in ("zero variance", "no variance", "constant", "divide", "division", "nan", "singular",
                              "all the same", "identical")):
        why = "no variance: every score is the same, so agreement is undefined"
    elif any(k in low for k in ("at least", "too few", "not enough", "fewer than", "empty", "need", "minimum")):
        why = "too few summaries or raters"
    else:
        why = "could not be computed"
    return f"{why} ({msg[:200]})"


def safe_statistic(fn, notes: list[str], label: str):
    """Run one statistic; when it cannot be computed, say why in ``notes`` (never swallowed)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = fn()
    except Exception as exc:  # noqa: BLE001 - a statistic that cannot be computed is reported, not fatal
        notes.append(f"{label}: {plain_reason(exc)}")
        return None
    if isinstance(value, rel.Estimate) and (value.value is None or not math.isfinite(value.value)):
        notes.append(f"{label}: no variance: every score is the same, so agreement is undefined")
        return None
    return value


def adjudicated_vector(ds: Dataset, item: str, summary_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per summary, whether ``item`` has an adjudicated final score, and that score (NaN when adjudicated NA)."""
    adj = {r.summary_id: r.value for r in ds.ratings if r.item == item and r.rater_group == ADJUDICATED_GROUP}
    mask = np.array([s in adj for s in summary_ids], dtype=bool)
    values = np.array([np.nan if adj.get(s) is None else adj[s] for s in summary_ids], dtype=float)
    return mask, values


def item_agreement(m: ItemMatrix, llm: Optional[np.ndarray], likert: bool, n_boot: int, seed: int,
                   reference: Optional[tuple[np.ndarray, np.ndarray]] = None,
                   extra: Optional[np.ndarray] = None) -> ItemAgreement:
    """``reference``: per summary, (adjudicated?, adjudicated score or NaN for NA), from
    :func:`adjudicated_vector`; an adjudicated score replaces the human median of that summary (it is the
    reference, never one more rater in ``m``). ``extra``: more human columns (spot checks) that enter the human
    median but none of the panel's agreement statistics."""
    x = m.values
    rated = ~np.isnan(x).all(axis=1)
    complete = ~np.isnan(x).any(axis=1)
    out = ItemAgreement(m.item, int(rated.sum()), x.shape[1], int(complete.sum()))
    data = [[None if np.isnan(v) else v for v in row] for row in x[rated]]
    if not rated.any():
        out.notes.append("no rater scored this item")
    elif likert:
        if complete.sum() >= 3:
            out.icc = safe_statistic(lambda: rel.icc_all(x[complete]), out.notes, "ICC") or {}
        else:
            out.notes.append("ICC: fewer than 3 summaries were scored by every rater")
        out.kripp_ordinal = safe_statistic(lambda: rel.krippendorff_alpha_bootstrap(data, "ordinal", n_boot, seed),
                                  out.notes, "Krippendorff ordinal")
        out.kripp_interval = safe_statistic(lambda: rel.krippendorff_alpha_bootstrap(data, "interval", n_boot, seed),
                                   out.notes, "Krippendorff interval")
        cats = [1.0, 2.0, 3.0, 4.0, 5.0]
        out.gwet_ac2_linear = safe_statistic(lambda: rel.gwet_ac(data, "linear", categories=cats), out.notes, "Gwet AC2")
        out.gwet_ac2_quadratic = safe_statistic(lambda: rel.gwet_ac(data, "quadratic", categories=cats), out.notes,
                                       "Gwet AC2")
    else:
        out.kripp_nominal = safe_statistic(lambda: rel.krippendorff_alpha_bootstrap(data, "nominal", n_boot, seed),
                                  out.notes, "Krippendorff nominal")
        out.gwet_ac1 = safe_statistic(lambda: rel.gwet_ac(data, "unweighted", categories=[0.0, 1.0]), out.notes, "Gwet AC1")
    xr = np.column_stack([x, extra]) if extra is not None and extra.size and len(extra) == len(x) else x
    hm = np.array([np.nanmedian(r) if not np.isnan(r).all() else np.nan for r in xr]) if len(xr) else np.array([])
    if reference is not None and len(hm) == len(reference[0]):
        hm = np.where(reference[0], reference[1], hm)  # an adjudicated final score is the human reference
    if (~np.isnan(hm)).any():
        out.human_median = float(np.nanmedian(hm))
    if not likert:
        rated_values = x[~np.isnan(x)]
        out.human_yes = (int((rated_values >= 0.5).sum()), int(rated_values.size))
        if llm is not None:
            lv = llm[~np.isnan(llm)]
            out.llm_yes = (int((lv >= 0.5).sum()), int(lv.size))
    if llm is not None and (~np.isnan(llm)).any():
        out.llm_median = float(np.nanmedian(llm))
    if llm is not None and (~np.isnan(llm)).sum() < 3:
        out.notes.append("LLM vs human: fewer than 3 summaries have an LLM score")
    if llm is not None and (~np.isnan(llm)).sum() >= 3:
        ok = ~np.isnan(hm) & ~np.isnan(llm)
        if likert and ok.sum() >= 3:
            out.llm_agreement = safe_statistic(lambda: rel.icc_all(np.column_stack([hm[ok], llm[ok]]))["ICC2"], out.notes,
                                      "ICC(2,1) LLM vs human median")
        elif ok.sum() >= 3:
            decided = ok & (hm != 0.5)  # a tie of yes and no is no majority to compare with
            pairs = [[float(h > 0.5), float(v >= 0.5)] for h, v in zip(hm[decided], llm[decided])]
            if len(pairs) >= 3 and len({p[1] for p in pairs}) == 1:
                out.llm_constant = pairs[0][1]
            if pairs:
                out.llm_matches = (sum(1 for h, v in pairs if h == v), len(pairs))
            constant = [who for who, k in (("the raters' majority", 0), ("the LLM", 1))
                        if len({p[k] for p in pairs}) == 1]
            if len(pairs) >= 3 and constant:  # κ is 0 by construction then, whatever the agreement: not shown
                out.notes.append(f"κ LLM vs human majority: not defined: {' and '.join(constant)} gave every summary "
                                 "the same answer (AC1 and the share of agreement still say how often they agree)")
            elif len(pairs) >= 3:
                out.llm_agreement = safe_statistic(lambda: rel.cohen_kappa(np.array(pairs), categories=[0.0, 1.0]),
                                                   out.notes, "κ LLM vs human majority")
            if len(pairs) >= 3:
                out.llm_ac1 = safe_statistic(lambda: rel.gwet_ac(pairs, "unweighted", categories=[0.0, 1.0]), out.notes,
                                    "AC1 LLM vs human majority")
            else:
                out.notes.append("κ LLM vs human majority: fewer than 3 summaries with a human majority")
        if likert and ok.sum() >= 3 and len(set(llm[ok].tolist())) == 1:
            out.llm_constant = float(llm[ok][0])
        if ok.sum() >= 3 and np.any(hm[ok] != llm[ok]):
            out.llm_vs_human = safe_statistic(lambda: rel.wilcoxon_signed_rank(llm[ok], hm[ok]), out.notes, "Wilcoxon")
        if likert:
            out.llm_effect = safe_statistic(lambda: llm_effect(x, llm, m.rater_ids, n_boot, seed), out.notes, "LLM effect")
    return out
