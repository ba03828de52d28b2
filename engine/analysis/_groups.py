"""Per-summary rows and what they show across summaries: length and score correlations, differences by generator
and quality group, the mixed model of LLM − human differences, the factor analysis of the items.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from engine import statistics as rel
from engine.core import ADJUDICATED_GROUP, Dataset, ITEMS, SPOT_CHECK_GROUP
from engine.analysis.items import HUMAN_EXCLUDE, LIKERT, safe_statistic


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


def per_summary_rows(ds: Dataset, llm: dict[str, dict[str, Optional[float]]], count_tokens: Callable[[str], int],
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


def compute_correlations(rows: list[dict], has_llm: bool, notes: Optional[list[str]] = None) -> list[Correlation]:
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
                                   safe_statistic(lambda: rel.spearman_rho(a, b), notes, f"Spearman note length vs {item} {y}"),
                                   safe_statistic(lambda: rel.pearson_r(a, b), notes, f"Pearson note length vs {item} {y}")))
    return out


def compute_group_tests(rows: list[dict], notes: Optional[list[str]] = None) -> tuple[list[GroupTest], list[GroupTest]]:
    notes = [] if notes is None else notes
    quality, seniority = [], []
    for item in LIKERT:
        hi = [r[f"{item}:human_mean"] for r in rows if r["quality_group"] == "high" and r[f"{item}:human_mean"] is not None]
        lo = [r[f"{item}:human_mean"] for r in rows if r["quality_group"] == "low" and r[f"{item}:human_mean"] is not None]
        if len(hi) >= 2 and len(lo) >= 2:
            quality.append(GroupTest(item, "high vs low quality (Mann-Whitney U)",
                                     safe_statistic(lambda: rel.mann_whitney_u(hi, lo), notes, f"Mann-Whitney {item}"),
                                     len(hi), len(lo),
                                     float(np.median(hi)), float(np.median(lo))))
        pairs = [(r[f"{item}:junior_mean"], r[f"{item}:senior_mean"]) for r in rows
                 if r[f"{item}:junior_mean"] is not None and r[f"{item}:senior_mean"] is not None]
        if len(pairs) >= 3 and any(a != b for a, b in pairs):
            a, b = zip(*pairs)
            seniority.append(GroupTest(item, "junior vs senior (Wilcoxon signed-rank)",
                                       safe_statistic(lambda: rel.wilcoxon_signed_rank(a, b), notes, f"junior vs senior {item}"),
                                       len(a), len(b),
                                       float(np.median(a)), float(np.median(b))))
    return quality, seniority


def fit_mixed_model(rows: list[dict]) -> dict:
    """(LLM − human median), stacked over Likert items, on specialty, generator, note and summary length
    (standardised), with a random intercept per case (:func:`engine.statistics.mixed_model`, REML)."""
    import pandas as pd

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
        fit = rel.mixed_model(formula, df, groups=df["case"], reml=True)
    except Exception as exc:  # noqa: BLE001 - singular designs happen on small data
        return {"error": f"the mixed model could not be fitted: {exc}", "formula": formula}
    levels = {c: sorted(df[c].unique())[0] for c in ("specialty", "generator")}
    table = []
    for k, v in fit.params.items():
        if k == "Group Var":
            continue
        lo, hi = fit.conf_int.get(k, (None, None))
        table.append({"term": mixed_term_label(k, levels), "estimate": v, "ci_low": lo, "ci_high": hi,
                      "p": fit.pvalues.get(k, float("nan"))})
    return {"formula": formula + " + (1 | case)", "n": int(len(df)), "groups": int(df["case"].nunique()),
            "coef": dict(fit.params), "p": dict(fit.pvalues), "table": table, "reference_levels": levels,
            "converged": fit.converged}


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


def run_factor_analysis(rows: list[dict]) -> dict:
    import pandas as pd

    cols = [k for k in LIKERT if k != "synthesized"]
    df = pd.DataFrame([{k: r[f"{k}:human_mean"] for k in cols} for r in rows]).dropna()
    out: dict = {"items": cols, "n": int(len(df))}
    corr = rel.correlation_matrix(df) if len(df) > 2 else None
    if corr is not None:
        out["eigenvalues"] = rel.scree_eigenvalues(corr)
    if len(df) < 6:
        out["error"] = "factor analysis needs at least 6 summaries with every item rated"
        return out
    out["method"] = ("iterated principal axis (the least-squares solution minres also reaches), varimax "
                     "(statsmodels Factor)")
    constant = [c for c in cols if df[c].nunique() < 2]
    if constant:
        out["error"] = (f"factor analysis needs every item to vary; {', '.join(constant)} got the same mean score "
                        "on every summary")
        return out
    try:
        out["kmo"] = rel.kmo(rel.correlation_matrix(df))
        out["loadings"] = rel.principal_axis_varimax(df.to_numpy(dtype=float), n_factors=4).round(4).tolist()
    except (np.linalg.LinAlgError, ValueError) as exc:  # a singular correlation matrix
        out["error"] = f"factor analysis failed: {exc}"
    return out


def item_correlation_matrix(rows: list[dict]) -> dict:
    import pandas as pd

    df = pd.DataFrame([{k: r[f"{k}:human_mean"] for k in LIKERT} for r in rows])
    c = rel.correlation_matrix(df, method="spearman")
    return {"items": LIKERT, "matrix": [[None if pd.isna(v) else float(v) for v in row] for row in c]}
