"""Agreement analytics on a dataset: human raters vs the LLM judge (PDSQI-9 papers 000 and 001).

Everything here goes through :mod:`engine.statistics` (pingouin, krippendorff, scipy, statsmodels, own Gwet
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
  panel statistics ignore them, :func:`engine.analysis.spot_checks.spot_check_agreement` compares each clinician with the panel median and
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
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Optional

import numpy as np

from engine import statistics as rel
from engine.core import Dataset, ITEMS, item_label
from engine.analysis.formatting import format_boot_p, format_p
from engine.analysis._groups import (Correlation, GroupTest, compute_correlations, compute_group_tests, fit_mixed_model,
                                 item_correlation_matrix, per_summary_rows, run_factor_analysis)
from engine.analysis.items import (ItemAgreement, ItemMatrix, LIKERT, adjudicated_vector, item_agreement, item_matrix,
                                safe_statistic, spot_check_matrix)
from engine.analysis.spot_checks import SpotCheckAgreement, spot_check_agreement


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


def llm_scores_from_results(results) -> dict[str, dict[str, Optional[float]]]:
    """summary id -> item -> the judge's primary score (:func:`engine.judge.runner.primary_score`: the expected score for
    1-5 items, the median answer for yes/no items; None when NA), from stored JudgeResults that were scored."""
    from engine.judge import primary_score

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
    rows = per_summary_rows(ds, llm, count_tokens, spot_checks_in_reference)
    cron_cols = [k for k in LIKERT]
    cron_data = [[r[f"{k}:human_mean"] for k in cron_cols] for r in rows]
    notes: list[str] = []
    cronbach = (safe_statistic(lambda: rel.cronbach_alpha(cron_data, nan_policy="pairwise"), notes, "Cronbach α")
                if len(rows) >= 3 else None)
    if len(rows) < 3:
        notes.append("Cronbach α: too few summaries (fewer than 3)")
    quality, seniority = compute_group_tests(rows, notes)
    correlations = compute_correlations(rows, has_llm, notes)
    mixed = fit_mixed_model(rows) if has_llm else {"error": "no LLM judge results"}
    factor = run_factor_analysis(rows)
    for label, d in (("mixed model", mixed), ("factor analysis", factor)):
        if d.get("error") and (has_llm or label != "mixed model"):
            notes.append(f"{label}: {d['error']}")
    for a in [*items, overall]:
        notes.extend(f"{a.item}: {n}" for n in a.notes)
    return AgreementReport(ds.name, len(ds.summaries), raters, has_llm, items, overall, cronbach, quality,
                           seniority, correlations, mixed, factor, item_correlation_matrix(rows), rows,
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
            "item": item_label(a.item), "summaries": a.n_summaries, "complete": a.n_complete,
            "ICC(3,k)": fmt(a.icc.get("ICC3k")), "ICC(2,k)": fmt(a.icc.get("ICC2k")), "ICC(1,1)": fmt(a.icc.get("ICC1")),
            "α ordinal": fmt(a.kripp_ordinal), "α interval": fmt(a.kripp_interval), "α nominal": fmt(a.kripp_nominal),
            "AC1": fmt(a.gwet_ac1), "AC2 linear": fmt(a.gwet_ac2_linear), "AC2 quadratic": fmt(a.gwet_ac2_quadratic),
            "LLM vs human p (Wilcoxon)": "" if a.llm_vs_human is None else format_p(a.llm_vs_human.p_value),
            "ΔICC LLM as extra rater": "" if eff is None else
            f"{eff.delta_extra:+.3f} [{eff.delta_extra_ci[0]:+.3f}, {eff.delta_extra_ci[1]:+.3f}] p={format_boot_p(eff.p_extra, eff.n_boot)}",
            "ΔICC LLM substitutes a human": "" if eff is None else
            f"{eff.delta_substitute_mean:+.3f} [{eff.delta_substitute_ci[0]:+.3f}, {eff.delta_substitute_ci[1]:+.3f}] "
            f"p={format_boot_p(eff.p_substitute, eff.n_boot)}",
        })
    return out


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


# ------------------------------------------------------------------------------------------------- stigma items


