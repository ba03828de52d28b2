"""Agreement analytics on a dataset: human raters vs the LLM judge (PDSQI-9 papers 000 and 001).

Everything here goes through :mod:`engine.core.reliability` (pingouin, krippendorff, scipy, statsmodels, own Gwet
AC); this module only arranges the data: per item a summaries × raters matrix (missing = NaN), the LLM judge's
median as an extra column, and the per-summary covariates (note length, summary length, specialty, generator,
quality group).

Conventions
-----------
* Likert items (cited … synthesized): ICC in every Shrout–Fleiss form (headline ICC(3,k)), F-based CIs, on the
  summaries every rater scored (listwise); Krippendorff α ordinal and interval with a bootstrap CI (summaries
  resampled); Gwet AC2 with linear and quadratic weights. Yes/no items: Gwet AC1 and Krippendorff α nominal.
* "Overall" stacks the Likert items: a unit is one (summary, item) pair.
* Cronbach α: items as columns, the mean human score per summary as value, pairwise deletion, Feldt CI.
* The rater panel is the imported raters. Clinicians' spot checks (Spot-check page) never join the panel: the
  panel statistics ignore them, :func:`engine.stats.spot_checks.spot_check_agreement` compares each clinician with the panel median and
  with the other clinicians, and they enter the human reference (the median the LLM is compared with) only when
  ``analyse(..., spot_checks_in_reference=True)``.
* An adjudicated final score (Spot-check page) replaces the human median of that summary and item as the human
  reference.
* Headline statistics (:func:`headline`): Likert items ICC(3,k) on the block of summaries every panel rater scored
  (block size shown), Krippendorff α interval when that block is under 3 summaries (α uses every rating). Yes/no
  items Gwet AC1 for the panel; for the LLM judge Cohen's κ against the human majority, which a constant judge
  fails (AC1 shown beside it). An estimate whose CI reaches zero reads "not distinguishable from chance".
* LLM vs humans: Wilcoxon signed-rank of the LLM median vs the human median per summary; the LLM as an 8th rater
  and as a substitute for each human, with the change in ICC(3,k), a bootstrap CI (1000 resamples of summaries)
  and a two-tailed bootstrap p.
"""
from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from engine.core import reliability as rel
from engine.core.models import ADJUDICATED_GROUP, RESERVED_RATER_GROUPS, SPOT_CHECK_GROUP, Dataset
from engine.core.rubric import ITEMS, Scale, format_share
from engine.stats.spot_checks import SpotCheckAgreement, spot_check_agreement

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
    rng = np.random.default_rng(seed)
    W = np.vstack([np.ones(n), rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)]).astype(float)
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

    def p2(d):
        return float(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean()))) if len(d) else float("nan")

    def ci(d):
        return (float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))) if len(d) else (math.nan, math.nan)

    return LlmEffect(float(base[0]), float(extra[0]), float(extra[0] - base[0]), ci(d_extra), p2(d_extra),
                     dict(zip(rater_ids, subs[:, 0].tolist())), float(np.mean(subs[:, 0]) - base[0]), ci(d_sub),
                     p2(d_sub), n, int(ok.sum()))


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


def _safe(fn, notes: list[str], label: str):
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
            out.icc = _safe(lambda: rel.icc_all(x[complete]), out.notes, "ICC") or {}
        else:
            out.notes.append("ICC: fewer than 3 summaries were scored by every rater")
        out.kripp_ordinal = _safe(lambda: rel.krippendorff_alpha_bootstrap(data, "ordinal", n_boot, seed),
                                  out.notes, "Krippendorff ordinal")
        out.kripp_interval = _safe(lambda: rel.krippendorff_alpha_bootstrap(data, "interval", n_boot, seed),
                                   out.notes, "Krippendorff interval")
        cats = [1.0, 2.0, 3.0, 4.0, 5.0]
        out.gwet_ac2_linear = _safe(lambda: rel.gwet_ac(data, "linear", categories=cats), out.notes, "Gwet AC2")
        out.gwet_ac2_quadratic = _safe(lambda: rel.gwet_ac(data, "quadratic", categories=cats), out.notes,
                                       "Gwet AC2")
    else:
        out.kripp_nominal = _safe(lambda: rel.krippendorff_alpha_bootstrap(data, "nominal", n_boot, seed),
                                  out.notes, "Krippendorff nominal")
        out.gwet_ac1 = _safe(lambda: rel.gwet_ac(data, "unweighted", categories=[0.0, 1.0]), out.notes, "Gwet AC1")
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
            out.llm_agreement = _safe(lambda: rel.icc_all(np.column_stack([hm[ok], llm[ok]]))["ICC2"], out.notes,
                                      "ICC(2,1) LLM vs human median")
        elif ok.sum() >= 3:
            decided = ok & (hm != 0.5)  # a tie of yes and no is no majority to compare with
            pairs = [[float(h > 0.5), float(v >= 0.5)] for h, v in zip(hm[decided], llm[decided])]
            if len(pairs) >= 3 and len({p[1] for p in pairs}) == 1:
                out.llm_constant = pairs[0][1]
            if len(pairs) >= 3:
                out.llm_agreement = _safe(lambda: rel.cohen_kappa(np.array(pairs), categories=[0.0, 1.0]),
                                          out.notes, "κ LLM vs human majority")
                out.llm_ac1 = _safe(lambda: rel.gwet_ac(pairs, "unweighted", categories=[0.0, 1.0]), out.notes,
                                    "AC1 LLM vs human majority")
            else:
                out.notes.append("κ LLM vs human majority: fewer than 3 summaries with a human majority")
        if likert and ok.sum() >= 3 and len(set(llm[ok].tolist())) == 1:
            out.llm_constant = float(llm[ok][0])
        if ok.sum() >= 3 and np.any(hm[ok] != llm[ok]):
            out.llm_vs_human = _safe(lambda: rel.wilcoxon_signed_rank(llm[ok], hm[ok]), out.notes, "Wilcoxon")
        if likert:
            out.llm_effect = _safe(lambda: llm_effect(x, llm, m.rater_ids, n_boot, seed), out.notes, "LLM effect")
    return out


@dataclass
class Correlation:
    item: str
    x: str
    y: str
    n: int
    spearman: Optional[rel.Estimate]
    pearson: Optional[rel.Estimate]


@dataclass
class GroupTest:
    item: str
    label: str
    test: Optional[rel.TestResult]
    n_a: int
    n_b: int
    median_a: Optional[float]
    median_b: Optional[float]


@dataclass
class AgreementReport:
    dataset: str
    n_summaries: int
    raters: list[str]
    has_llm: bool
    items: list[ItemAgreement]
    overall: ItemAgreement
    cronbach: Optional[rel.Estimate]
    quality_groups: list[GroupTest]
    junior_vs_senior: list[GroupTest]
    length: list[Correlation]
    mixed_model: dict
    factor_analysis: dict
    item_correlation: dict
    per_summary: list[dict]  # plain rows for charts and the disagreement explorer
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # statistics that could not be computed, with the reason
    judge_config: Optional[str] = None  # the judge configuration the LLM figures come from (never pooled)
    spot_checks_in_reference: bool = False  # whether the clinicians' spot checks entered the human reference
    spot_checks: Optional[SpotCheckAgreement] = None  # the clinicians vs the panel, and vs each other

    def to_dict(self) -> dict:
        return _jsonable(asdict(self))


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, (np.floating, float)):
        return None if not math.isfinite(float(o)) else float(o)
    if isinstance(o, np.integer):
        return int(o)
    return o


def _per_summary(ds: Dataset, llm: dict[str, dict[str, Optional[float]]], count_tokens: Callable[[str], int],
                 spot_checks: bool = False) -> list[dict]:
    rows = []
    tok_cache: dict[str, int] = {}
    by_summary: dict[str, list] = {}
    for r in ds.ratings:
        by_summary.setdefault(r.summary_id, []).append(r)
    for s in ds.summaries:
        case = ds.case(s.case_id)
        if case.case_id not in tok_cache:
            tok_cache[case.case_id] = sum(count_tokens(n.text) for n in case.notes)
        row = {"summary_id": s.summary_id, "case_id": s.case_id, "specialty": case.target_specialty,
               "generator": s.generator_model or "", "quality_group": s.quality_group or "",
               "note_tokens": tok_cache[case.case_id], "summary_tokens": count_tokens(s.text)}
        ratings = [r for r in by_summary.get(s.summary_id, []) if r.rater_group not in HUMAN_EXCLUDE
                   or (spot_checks and r.rater_group == SPOT_CHECK_GROUP)]
        adjudicated = {r.item: r.value for r in by_summary.get(s.summary_id, []) if r.rater_group == ADJUDICATED_GROUP}
        for item in ITEMS:
            vals = [r.value for r in ratings if r.item == item.key and r.value is not None]
            row[f"{item.key}:human_median"] = float(np.median(vals)) if vals else None
            if item.key in adjudicated:  # an adjudicated final score is the human reference (NA included)
                adj = adjudicated[item.key]
                row[f"{item.key}:human_median"] = None if adj is None else float(adj)
            row[f"{item.key}:adjudicated"] = item.key in adjudicated
            row[f"{item.key}:human_mean"] = float(np.mean(vals)) if vals else None
            row[f"{item.key}:human_sd"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else None
            for g in ("junior", "senior"):
                gv = [r.value for r in ratings if r.item == item.key and r.value is not None and r.rater_group == g]
                row[f"{item.key}:{g}_mean"] = float(np.mean(gv)) if gv else None
            v = llm.get(s.summary_id, {}).get(item.key)
            row[f"{item.key}:llm"] = v
            hm = row[f"{item.key}:human_median"]
            row[f"{item.key}:abs_diff"] = abs(v - hm) if v is not None and hm is not None else None
        rows.append(row)
    return rows


def _correlations(rows: list[dict], has_llm: bool, notes: Optional[list[str]] = None) -> list[Correlation]:
    notes = [] if notes is None else notes
    out = []
    ys = ["human_mean", "human_sd"] + (["llm", "abs_diff"] if has_llm else [])
    for item in LIKERT:
        for y in ys:
            pairs = [(r["note_tokens"], r[f"{item}:{y}"]) for r in rows if r[f"{item}:{y}"] is not None]
            if len(pairs) < 4 or len({b for _, b in pairs}) < 2:
                if y == "human_mean":
                    notes.append(f"note length vs {item}: " + ("too few summaries (fewer than 4)" if len(pairs) < 4
                                                                else "no variance in the scores"))
                continue
            a, b = zip(*pairs)
            out.append(Correlation(item, "note_tokens", y, len(pairs),
                                   _safe(lambda: rel.spearman_rho(a, b), notes, f"Spearman note length vs {item} {y}"),
                                   _safe(lambda: rel.pearson_r(a, b), notes, f"Pearson note length vs {item} {y}")))
    return out


def _group_tests(rows: list[dict], notes: Optional[list[str]] = None) -> tuple[list[GroupTest], list[GroupTest]]:
    notes = [] if notes is None else notes
    quality, seniority = [], []
    for item in LIKERT:
        hi = [r[f"{item}:human_mean"] for r in rows if r["quality_group"] == "high" and r[f"{item}:human_mean"] is not None]
        lo = [r[f"{item}:human_mean"] for r in rows if r["quality_group"] == "low" and r[f"{item}:human_mean"] is not None]
        if len(hi) >= 2 and len(lo) >= 2:
            quality.append(GroupTest(item, "high vs low quality (Mann-Whitney U)",
                                     _safe(lambda: rel.mann_whitney_u(hi, lo), notes, f"Mann-Whitney {item}"),
                                     len(hi), len(lo),
                                     float(np.median(hi)), float(np.median(lo))))
        pairs = [(r[f"{item}:junior_mean"], r[f"{item}:senior_mean"]) for r in rows
                 if r[f"{item}:junior_mean"] is not None and r[f"{item}:senior_mean"] is not None]
        if len(pairs) >= 3 and any(a != b for a, b in pairs):
            a, b = zip(*pairs)
            seniority.append(GroupTest(item, "junior vs senior (Wilcoxon signed-rank)",
                                       _safe(lambda: rel.wilcoxon_signed_rank(a, b), notes, f"junior vs senior {item}"),
                                       len(a), len(b),
                                       float(np.median(a)), float(np.median(b))))
    return quality, seniority


def _mixed_model(rows: list[dict]) -> dict:
    """(LLM − human median), stacked over Likert items, on specialty, generator, note and summary length
    (standardised), with a random intercept per case (statsmodels MixedLM)."""
    import pandas as pd
    import statsmodels.formula.api as smf

    recs = []
    for r in rows:
        for item in LIKERT:
            v, h = r[f"{item}:llm"], r[f"{item}:human_median"]
            if v is not None and h is not None:
                recs.append({"diff": v - h, "specialty": r["specialty"], "generator": r["generator"] or "unknown",
                             "note_tokens": r["note_tokens"], "summary_tokens": r["summary_tokens"],
                             "case": r["case_id"], "item": item})
    if len(recs) < 10:
        return {"error": "too few summaries with both LLM and human scores"}
    df = pd.DataFrame(recs)
    for c in ("note_tokens", "summary_tokens"):
        sd = df[c].std()
        df[c] = (df[c] - df[c].mean()) / (sd if sd > 0 else 1.0)
    terms = ["note_tokens", "summary_tokens"] + [f"C({c})" for c in ("specialty", "generator") if df[c].nunique() > 1]
    formula = "diff ~ " + " + ".join(terms)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = smf.mixedlm(formula, df, groups=df["case"]).fit(reml=True)
    except Exception as exc:  # noqa: BLE001 - singular designs happen on small data
        return {"error": f"the mixed model could not be fitted: {exc}", "formula": formula}
    ci = fit.conf_int()
    levels = {c: sorted(df[c].unique())[0] for c in ("specialty", "generator")}
    table = []
    for k, v in fit.params.items():
        if k == "Group Var":
            continue
        lo, hi = (float(ci.loc[k][0]), float(ci.loc[k][1])) if k in ci.index else (None, None)
        table.append({"term": mixed_term_label(k, levels), "estimate": float(v), "ci_low": lo, "ci_high": hi,
                      "p": float(fit.pvalues.get(k, float("nan")))})
    return {"formula": formula + " + (1 | case)", "n": int(len(df)), "groups": int(df["case"].nunique()),
            "coef": {k: float(v) for k, v in fit.params.items()},
            "p": {k: float(v) for k, v in fit.pvalues.items()},
            "table": table, "reference_levels": levels,
            "converged": bool(getattr(fit, "converged", True))}


def mixed_term_label(term: str, reference: dict) -> str:
    """A patsy term name in plain words (``C(specialty)[T.Cardiology]`` -> "specialty: Cardiology (vs X)")."""
    import re

    if term == "Intercept":
        return "mean LLM − human difference at the reference levels and average lengths"
    if term == "note_tokens":
        return "note length (per SD of tokens)"
    if term == "summary_tokens":
        return "summary length (per SD of tokens)"
    m = re.match(r"C\((\w+)\)\[T\.(.*)\]$", term)
    if m:
        return f"{m.group(1)}: {m.group(2)} (vs {reference.get(m.group(1), 'reference')})"
    return term


def _factor_analysis(rows: list[dict]) -> dict:
    import pandas as pd

    cols = [k for k in LIKERT if k != "synthesized"]
    df = pd.DataFrame([{k: r[f"{k}:human_mean"] for k in cols} for r in rows]).dropna()
    out: dict = {"items": cols, "n": int(len(df))}
    corr = df.corr().to_numpy() if len(df) > 2 else None
    if corr is not None:
        out["eigenvalues"] = [float(v) for v in sorted(np.linalg.eigvalsh(np.nan_to_num(corr)), reverse=True)]
    if len(df) < 6:
        out["error"] = "factor analysis needs at least 6 summaries with every item rated"
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from factor_analyzer.factor_analyzer import calculate_kmo

            out["kmo"] = float(calculate_kmo(df)[1])
        except Exception as exc:  # noqa: BLE001
            out["kmo_error"] = str(exc)
        try:  # minres + varimax, as in the PDSQI-9 paper (psych::fa)
            from factor_analyzer import FactorAnalyzer

            fa = FactorAnalyzer(n_factors=4, rotation="varimax", method="minres").fit(df)
            out["loadings"], out["method"] = fa.loadings_.round(4).tolist(), "minres, varimax (factor_analyzer)"
        except Exception as exc:  # noqa: BLE001 - factor_analyzer 0.5.1 does not run on scikit-learn >= 1.8
            from sklearn.decomposition import FactorAnalysis

            z = (df - df.mean()) / df.std(ddof=0).replace(0, 1)
            fa = FactorAnalysis(n_components=4, rotation="varimax", random_state=0).fit(z.to_numpy())
            out["loadings"] = fa.components_.T.round(4).tolist()
            out["method"] = (f"maximum likelihood, varimax (scikit-learn FactorAnalysis); factor_analyzer's minres "
                             f"failed: {exc}")
    return out


def _item_correlation(rows: list[dict]) -> dict:
    import pandas as pd

    df = pd.DataFrame([{k: r[f"{k}:human_mean"] for k in LIKERT} for r in rows])
    c = df.corr(method="spearman")
    return {"items": LIKERT, "matrix": [[None if pd.isna(v) else float(v) for v in row] for row in c.to_numpy()]}


def llm_scores_from_results(results) -> dict[str, dict[str, Optional[float]]]:
    """summary id -> item -> the judge's primary score (:func:`engine.judge.runner.primary_score`: the expected score for
    1-5 items, the median answer for yes/no items; None when NA), from stored JudgeResults that were scored."""
    from engine.judge.results import primary_score

    out = {}
    for r in results:
        if r.status == "scored":
            out[r.summary_id] = {k: primary_score(k, v) for k, v in r.items.items()}
    return out


def analyse(ds: Dataset, llm: Optional[dict[str, dict[str, Optional[float]]]] = None,
            count_tokens: Callable[[str], int] = lambda t: len(t.split()), n_boot: int = 1000, seed: int = 0,
            spot_checks_in_reference: bool = False) -> AgreementReport:
    """Every agreement statistic for a dataset (humans, and the LLM judge when ``llm`` scores are given).

    The panel statistics use the imported raters only. ``spot_checks_in_reference``: the clinicians' spot checks
    also enter the human median per summary (the reference the LLM is compared with); off by default."""
    import time

    t0 = time.perf_counter()
    llm = llm or {}
    has_llm = bool(llm)
    items = []
    stacked_h, stacked_l, stacked_ref, stacked_x = [], [], [], []
    raters: list[str] = []
    for item in ITEMS:
        m = item_matrix(ds, item.key)
        raters = sorted(set(raters) | set(m.rater_ids))
        lv = np.array([np.nan if llm.get(s, {}).get(item.key) is None else llm[s][item.key]
                       for s in m.summary_ids]) if has_llm else None
        ref = adjudicated_vector(ds, item.key, m.summary_ids)
        extra = spot_check_matrix(ds, item.key).values if spot_checks_in_reference else None
        items.append(item_agreement(m, lv, item.is_likert, n_boot, seed, ref, extra))
        if item.is_likert:
            stacked_h.append(m)
            stacked_ref.append(ref)
            stacked_x.append(extra)
            if lv is not None:
                stacked_l.append(lv)
    # overall: Likert items stacked, a unit = (summary, item); raters aligned by id
    all_r = sorted({r for m in stacked_h for r in m.rater_ids})
    blocks = []
    for m in stacked_h:
        b = np.full((len(m.summary_ids), len(all_r)), np.nan)
        for j, r in enumerate(m.rater_ids):
            b[:, all_r.index(r)] = m.values[:, j]
        blocks.append(b)
    overall_m = ItemMatrix("overall", [f"{s}:{m.item}" for m in stacked_h for s in m.summary_ids], all_r,
                           np.vstack(blocks))
    overall_x = None
    if spot_checks_in_reference and stacked_x:
        width = max(x.shape[1] for x in stacked_x)
        overall_x = np.vstack([np.pad(x, ((0, 0), (0, width - x.shape[1])), constant_values=np.nan)
                               for x in stacked_x])
    overall = item_agreement(overall_m, np.concatenate(stacked_l) if stacked_l else None, True, n_boot, seed,
                             (np.concatenate([r[0] for r in stacked_ref]), np.concatenate([r[1] for r in stacked_ref]))
                             if stacked_ref else None, overall_x)
    rows = _per_summary(ds, llm, count_tokens, spot_checks_in_reference)
    cron_cols = [k for k in LIKERT]
    cron_data = [[r[f"{k}:human_mean"] for k in cron_cols] for r in rows]
    notes: list[str] = []
    cronbach = (_safe(lambda: rel.cronbach_alpha(cron_data, nan_policy="pairwise"), notes, "Cronbach α")
                if len(rows) >= 3 else None)
    if len(rows) < 3:
        notes.append("Cronbach α: too few summaries (fewer than 3)")
    quality, seniority = _group_tests(rows, notes)
    correlations = _correlations(rows, has_llm, notes)
    mixed = _mixed_model(rows) if has_llm else {"error": "no LLM judge results"}
    factor = _factor_analysis(rows)
    for label, d in (("mixed model", mixed), ("factor analysis", factor)):
        if d.get("error") and (has_llm or label != "mixed model"):
            notes.append(f"{label}: {d['error']}")
    for a in [*items, overall]:
        notes.extend(f"{a.item}: {n}" for n in a.notes)
    return AgreementReport(ds.name, len(ds.summaries), raters, has_llm, items, overall, cronbach, quality,
                           seniority, correlations, mixed, factor, _item_correlation(rows), rows,
                           round(time.perf_counter() - t0, 3), notes,
                           spot_checks_in_reference=spot_checks_in_reference, spot_checks=spot_check_agreement(ds))


def reliability_rows(report: AgreementReport) -> list[dict]:
    """The reliability table (one row per item + overall) as plain rows with CIs, for the UI and exports."""
    def fmt(e: Optional[rel.Estimate]) -> str:
        if e is None or e.value is None or not math.isfinite(e.value):
            return ""
        ci = f" [{e.ci_low:.2f}, {e.ci_high:.2f}]" if e.ci_low is not None and e.ci_high is not None else ""
        return f"{e.value:.3f}{ci}"

    out = []
    for a in [*report.items, report.overall]:
        eff = a.llm_effect
        out.append({
            "item": a.item, "summaries": a.n_summaries, "complete": a.n_complete,
            "ICC(3,k)": fmt(a.icc.get("ICC3k")), "ICC(2,k)": fmt(a.icc.get("ICC2k")), "ICC(1,1)": fmt(a.icc.get("ICC1")),
            "α ordinal": fmt(a.kripp_ordinal), "α interval": fmt(a.kripp_interval), "α nominal": fmt(a.kripp_nominal),
            "AC1": fmt(a.gwet_ac1), "AC2 linear": fmt(a.gwet_ac2_linear), "AC2 quadratic": fmt(a.gwet_ac2_quadratic),
            "LLM vs human p (Wilcoxon)": "" if a.llm_vs_human is None else format_p(a.llm_vs_human.p_value),
            "ΔICC LLM as extra rater": "" if eff is None else
            f"{eff.delta_extra:+.3f} [{eff.delta_extra_ci[0]:+.3f}, {eff.delta_extra_ci[1]:+.3f}] p={_p(eff.p_extra, eff.n_boot)}",
            "ΔICC LLM substitutes a human": "" if eff is None else
            f"{eff.delta_substitute_mean:+.3f} [{eff.delta_substitute_ci[0]:+.3f}, {eff.delta_substitute_ci[1]:+.3f}] "
            f"p={_p(eff.p_substitute, eff.n_boot)}",
        })
    return out


def _p(p: float, n_boot: int) -> str:
    return f"< {1 / n_boot:.3g}" if p == 0 else format_p(p)


def disagreements(report: AgreementReport, item: Optional[str] = None,
                  exclude: Optional[Iterable[str]] = None) -> list[dict]:
    """Summaries ranked by |LLM − human median| (then by human SD), for the disagreement explorer. ``exclude``:
    summary ids to leave out (e.g. those whose LLM scores come from the smoke-test model)."""
    keys = [item] if item else LIKERT
    skip = set(exclude or ())
    out = []
    for r in report.per_summary:
        if r["summary_id"] in skip:
            continue
        diffs = [r[f"{k}:abs_diff"] for k in keys if r[f"{k}:abs_diff"] is not None]
        sds = [r[f"{k}:human_sd"] for k in keys if r[f"{k}:human_sd"] is not None]
        out.append({"summary_id": r["summary_id"], "case_id": r["case_id"], "specialty": r["specialty"],
                    "generator": r["generator"], "quality_group": r["quality_group"],
                    "|LLM − human|": round(statistics.mean(diffs), 3) if diffs else None,
                    "human SD": round(statistics.mean(sds), 3) if sds else None})
    out.sort(key=lambda d: (-(d["|LLM − human|"] or -1), -(d["human SD"] or 0)))
    return out


# --------------------------------------------------------------------------------------------- headline

# Koo & Li (2016), J Chiropr Med 15:155: ICC < 0.5 poor, 0.5–0.75 moderate, 0.75–0.9 good, > 0.9 excellent.
KOO_LI_BANDS = ((0.5, "poor"), (0.75, "moderate"), (0.9, "good"), (math.inf, "excellent"))
SMALL_N = 10  # fewer summaries than this: the interval is wide, read with care
_ADVERB = {"poor": "poorly", "moderate": "moderately", "good": "well", "excellent": "excellently"}


def koo_li_band(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return ""
    return next(name for limit, name in KOO_LI_BANDS if value < limit)


def format_p(p: Optional[float]) -> str:
    """p-values as a committee reads them: never 'p = 0'."""
    if p is None or not math.isfinite(p):
        return "—"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def format_estimate(e: Optional[rel.Estimate], digits: int = 2) -> str:
    if e is None or e.value is None or not math.isfinite(e.value):
        return "—"
    if e.ci_low is not None and e.ci_high is not None:
        return f"{e.value:.{digits}f} (95% CI {e.ci_low:.{digits}f} to {e.ci_high:.{digits}f})"
    return f"{e.value:.{digits}f}"


@dataclass
class HeadlineRow:
    """One item of the committee headline: how well the raters agree, and how the LLM judge compares."""

    item: str
    label: str  # as in the instrument
    kind: str  # "likert" | "yes/no"
    n: int  # summaries the statistic used
    statistic: str  # "ICC(3,k)" | "Krippendorff α (interval)" | "Gwet AC1"
    humans: Optional[rel.Estimate]
    humans_band: str
    llm_statistic: str  # "ICC(2,1) LLM vs human median" | "Cohen's κ LLM vs human majority"
    llm: Optional[rel.Estimate]
    llm_band: str
    human_center: str  # Likert: median of the human medians; yes/no: "12 of 40 yes (30%)"
    llm_center: str
    llm_vs_human_p: str  # Wilcoxon, formatted
    verdict: str
    warning: str = ""
    why_missing: str = ""
    block: str = ""  # which summaries the raters' statistic used, when not all of them
    secondary: str = ""  # the other statistic, shown beside the headline one (yes/no items: AC1 of the LLM)


def _share(yes: Optional[tuple[int, int]]) -> str:
    if not yes or not yes[1]:
        return "—"
    return format_share(*yes)  # the one wording for yes/no shares (engine.core.rubric)


def at_chance(e: Optional[rel.Estimate]) -> bool:
    """True when an agreement estimate cannot be told from chance: zero or below, or a CI reaching zero."""
    if e is None or e.value is None or not math.isfinite(e.value):
        return False
    return e.value <= 0 or (e.ci_low is not None and e.ci_low <= 0)


def _finite(e: Optional[rel.Estimate]) -> Optional[rel.Estimate]:
    return e if e is not None and e.value is not None and math.isfinite(e.value) else None


def _constant_words(item, value: float) -> str:
    from engine.core.rubric import format_value

    return f"answered {format_value(item, value)} for every summary"


def headline(report: AgreementReport) -> list[HeadlineRow]:
    """Per item: the raters' agreement with its CI and Koo & Li band, the LLM judge's agreement with the raters,
    centres, and a one-line verdict in words that cannot contradict the table under it.

    Raters: ICC(3,k) on the summaries every panel rater scored (the block size is named when it is not every
    summary), Krippendorff α interval when fewer than 3 summaries were scored by all (α handles missing ratings);
    yes/no items Gwet AC1. LLM judge: ICC(2,1) against the human median for 1-5 items; for yes/no items Cohen's κ
    against the human majority (AC1 beside it), so a judge that always gives the majority answer reads as chance.
    Any estimate at or below zero, or whose CI reaches zero, reads "not distinguishable from chance"."""
    from engine.core.rubric import get_item

    out = []
    for a in report.items:
        item = get_item(a.item)
        likert = item.is_likert
        block = ""
        if likert:
            icc = _finite(a.icc.get("ICC3k")) if a.n_complete >= 3 else None
            if icc is not None:
                humans, statistic, short, n = icc, "ICC(3,k)", "ICC", a.n_complete
                if a.n_complete < a.n_summaries:
                    block = (f"ICC on the {a.n_complete} of {a.n_summaries} summaries scored by every one of the "
                             f"{a.n_raters} raters")
            elif a.n_summaries < 3:
                humans, statistic, short, n = None, "ICC(3,k)", "ICC", a.n_complete
            else:
                humans, statistic, short, n = _finite(a.kripp_interval), "Krippendorff α (interval)", "α", \
                    a.n_summaries
                if humans is not None:
                    block = (f"Krippendorff α over all {a.n_summaries} rated summaries: only {a.n_complete} were "
                             "scored by every rater, too few for an ICC")
            raw = a.icc.get("ICC3k") if a.n_complete >= 3 else a.kripp_interval
        else:
            humans, statistic, short, n = _finite(a.gwet_ac1), "Gwet AC1", "AC1", a.n_summaries
            raw = a.gwet_ac1
        if raw is not None and humans is None:
            a.notes.append(f"{short}: no variance: every score is the same, so agreement is undefined")
        band = koo_li_band(humans.value if humans else None)
        llm = _finite(a.llm_agreement)
        llm_band = koo_li_band(llm.value if llm else None)
        if likert:
            hc = "—" if a.human_median is None else f"median {a.human_median:g}"
            lc = "—" if a.llm_median is None else f"median {a.llm_median:g}"
        else:
            hc, lc = _share(a.human_yes), _share(a.llm_yes)
        llm_prefixes = ("ICC(2,1)", "AC1 LLM", "κ LLM", "LLM vs human")
        own = [x for x in a.notes if not x.startswith(llm_prefixes)]
        why = "" if humans else ("; ".join(own) or "not enough ratings for this item")
        if humans and at_chance(humans):
            verdict = f"Raters' agreement is not distinguishable from chance ({short} {format_estimate(humans)})."
        elif humans:
            verdict = f"Raters agree {_ADVERB[band]} ({short} {format_estimate(humans)})."
        else:
            verdict = f"Rater agreement not computed: {why}."
        secondary = ""
        if report.has_llm:
            lshort = "ICC" if likert else "κ"
            if not likert:
                secondary = f"AC1 {format_estimate(_finite(a.llm_ac1))}" if _finite(a.llm_ac1) else ""
                verdict += f" The LLM judge said {lc}; the raters {hc}."
            if a.llm_constant is not None:
                verdict += (f" The LLM judge {_constant_words(item, a.llm_constant)}: its agreement is not "
                            f"distinguishable from chance" + (f" ({lshort} {format_estimate(llm)})" if llm else "")
                            + ".")
            elif llm and at_chance(llm):
                verdict += f" The LLM judge's agreement is not distinguishable from chance ({lshort} " \
                           f"{format_estimate(llm)})."
            elif llm:
                verdict += f" The LLM judge agrees {_ADVERB[llm_band]} with them ({lshort} {format_estimate(llm)})."
            else:
                reason = next((x for x in a.notes if x.startswith(llm_prefixes)),
                              "too few summaries with both scores")
                verdict += f" LLM agreement not computed: {reason}."
        warning = ""
        if humans and n < SMALL_N:
            warning = f"only {n} summaries: the interval is wide, read with care"
        if humans and humans.ci_low is not None and humans.ci_high is not None and not at_chance(humans) and \
                koo_li_band(humans.ci_low) != koo_li_band(humans.ci_high):
            warning = (warning + "; " if warning else "") + (f"the interval spans {koo_li_band(humans.ci_low)} to "
                                                           f"{koo_li_band(humans.ci_high)}")
        out.append(HeadlineRow(a.item, item.label, "likert" if likert else "yes/no", n, statistic, humans, band,
                               "ICC(2,1) LLM vs human median" if likert else "Cohen's κ LLM vs human majority",
                               llm, llm_band, hc, lc,
                               format_p(a.llm_vs_human.p_value) if a.llm_vs_human else "—", verdict, warning, why,
                               block, secondary))
    return out


def llm_vs_human_rows(report: AgreementReport, rows: Optional[list[HeadlineRow]] = None) -> list[dict]:
    """Per item, side by side: the raters' and the LLM's centre, Wilcoxon p, and the change in the raters' ICC(3,k)
    when the LLM joins them or replaces one of them (bootstrap CI and p)."""
    rows = rows if rows is not None else headline(report)
    out = []
    for r, a in zip(rows, report.items):
        eff = a.llm_effect
        out.append({"item": r.label, "raters": r.human_center, "LLM": r.llm_center, "Wilcoxon p": r.llm_vs_human_p,
                    "LLM agreement": format_estimate(r.llm),
                    "ΔICC LLM joins": "" if eff is None else
                    f"{eff.delta_extra:+.3f} [{eff.delta_extra_ci[0]:+.3f}, {eff.delta_extra_ci[1]:+.3f}] "
                    f"p {format_p(eff.p_extra) if eff.p_extra > 0 else _p(eff.p_extra, eff.n_boot)}",
                    "ΔICC LLM replaces a rater": "" if eff is None else
                    f"{eff.delta_substitute_mean:+.3f} [{eff.delta_substitute_ci[0]:+.3f}, "
                    f"{eff.delta_substitute_ci[1]:+.3f}] "
                    f"p {format_p(eff.p_substitute) if eff.p_substitute > 0 else _p(eff.p_substitute, eff.n_boot)}"})
    return out


def mixed_model_rows(mm: dict) -> list[dict]:
    """The mixed-effects model as a readable coefficient table (plain term names, estimate, 95% CI, p)."""
    return [{"term": t["term"], "estimate": round(t["estimate"], 3),
             "95% CI": f"{t['ci_low']:.2f} to {t['ci_high']:.2f}" if t["ci_low"] is not None else "",
             "p": format_p(t["p"])} for t in mm.get("table", [])]


# ------------------------------------------------------------------------------------------------- stigma items


@dataclass
class DetectorAgreement:
    """One PDSQI-9 stigmatizing-language item: the lexicon detector and the LLM judge against the raters' reference
    (adjudicated score, else the raters' median; a tie of yes and no counts as no reference and is left out)."""
    item: str
    label: str
    n: int  # summaries with a reference answer
    reference_yes: int
    detector_yes: int
    detector_agree: int  # summaries where the detector gives the reference answer
    detector_kappa: Optional[rel.Estimate]
    llm_n: int  # of those, summaries the LLM judge answered
    llm_yes: int
    llm_agree: int
    llm_kappa: Optional[rel.Estimate]
    notes: list[str] = field(default_factory=list)


def detector_agreement(ds: Dataset, detector: dict[str, dict[str, float]],
                       llm: Optional[dict[str, dict[str, Optional[float]]]] = None) -> list[DetectorAgreement]:
    """Per stigmatizing-language item: agreement of the detector's yes/no (``detector``: summary id -> item ->
    1.0/0.0, from engine.evidence.stigma) and of the LLM judge's median with the raters' reference — counts and Cohen's
    κ with its asymptotic 95 % CI (engine.core.reliability.cohen_kappa). κ is not defined when a side answers the same
    for every summary; the reason is kept in ``notes``."""
    from engine.data.ratings import medians
    from engine.core.rubric import get_item

    out = []
    for key in ("stigmatizing_notes", "stigmatizing_summary"):
        ref, det, llm_pairs = [], [], []
        for s in ds.summaries:
            m = medians(ds.ratings_for(s.summary_id)).get(key)
            d = detector.get(s.summary_id, {}).get(key)
            if m is None or m == 0.5 or d is None:
                continue
            ref.append(1.0 if m > 0.5 else 0.0)
            det.append(float(d))
            v = (llm or {}).get(s.summary_id, {}).get(key)
            if v is not None and v != 0.5:
                llm_pairs.append((ref[-1], 1.0 if v > 0.5 else 0.0))
        notes: list[str] = []

        def kappa(pairs, who):
            if len(pairs) < 2:
                notes.append(f"{who}: fewer than two summaries to compare")
                return None
            try:
                return rel.cohen_kappa(np.array(pairs, dtype=float))
            except Exception as exc:  # no variance on a side: κ undefined
                notes.append(f"{who}: κ not defined ({plain_reason(exc)})")
                return None

        pairs = list(zip(ref, det))
        out.append(DetectorAgreement(
            key, get_item(key).label, len(ref), int(sum(ref)), int(sum(det)), sum(a == b for a, b in pairs),
            kappa(pairs, "detector"), len(llm_pairs), int(sum(b for _, b in llm_pairs)),
            sum(a == b for a, b in llm_pairs), kappa(llm_pairs, "LLM judge") if llm_pairs else None, notes))
    return out
