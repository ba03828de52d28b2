"""The committee's headline per item: verdicts in words (Koo & Li bands, "not distinguishable from chance"),
yes-rates beside the raters', the constant judge named, and the tables under it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from engine import statistics as rel
from engine.core import format_share
from engine.analysis.agreement import AgreementReport
from engine.analysis.formatting import format_boot_p, format_estimate, format_p, format_score


# Koo & Li (2016), J Chiropr Med 15:155: ICC < 0.5 poor, 0.5–0.75 moderate, 0.75–0.9 good, > 0.9 excellent.
KOO_LI_BANDS = ((0.5, "poor"), (0.75, "moderate"), (0.9, "good"), (math.inf, "excellent"))
SMALL_N = 10  # fewer summaries than this: the interval is wide, read with care
_ADVERB = {"poor": "poorly", "moderate": "moderately", "good": "well", "excellent": "excellently"}
_LLM_NOTES = ("ICC(2,1)", "AC1 LLM", "κ LLM", "LLM vs human")  # how notes on the LLM judge begin


def koo_li_band(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return ""
    return next(name for limit, name in KOO_LI_BANDS if value < limit)


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


def share_of(yes: Optional[tuple[int, int]]) -> str:
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
    from engine.core import format_value

    return f"answered {format_value(item, value)} for every summary"


def _raters_statistic(a, likert: bool) -> tuple[Optional[rel.Estimate], str, str, int, str]:
    """The raters' agreement on one item: (estimate, statistic, its short name, summaries it used, which summaries
    when not all of them). A statistic left undefined by scores without variance is said in the item's notes."""
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
    return humans, statistic, short, n, block


def _llm_verdict(a, item, likert: bool, llm: Optional[rel.Estimate], llm_band: str, hc: str,
                 lc: str) -> tuple[str, str]:
    """(what the verdict says of the LLM judge on one item, the statistic shown beside the headline one)."""
    verdict, secondary = "", ""
    lshort = "ICC" if likert else "κ"
    if not likert:
        secondary = f"AC1 {format_estimate(_finite(a.llm_ac1))}" if _finite(a.llm_ac1) else ""
        verdict += f" The LLM judge said {lc}; the raters {hc}."
    if a.llm_constant is not None and not likert:
        k, n_pairs = a.llm_matches or (0, 0)
        verdict += (f" The LLM judge {_constant_words(item, a.llm_constant)}, so it tells no summary from "
                    f"another: κ is not defined (every answer the same), and it matches the raters' majority "
                    f"on {k} of {n_pairs} summaries.")
    elif a.llm_constant is not None:
        verdict += (f" The LLM judge {_constant_words(item, a.llm_constant)}: its agreement is not "
                    f"distinguishable from chance" + (f" ({lshort} {format_estimate(llm)})" if llm else "")
                    + ".")
    elif llm and at_chance(llm):
        verdict += f" The LLM judge's agreement is not distinguishable from chance ({lshort} " \
                   f"{format_estimate(llm)})."
    elif llm:
        verdict += f" The LLM judge agrees {_ADVERB[llm_band]} with them ({lshort} {format_estimate(llm)})."
    else:
        reason = next((x for x in a.notes if x.startswith(_LLM_NOTES)), "too few summaries with both scores")
        verdict += f" LLM agreement not computed: {reason}."
    return verdict, secondary


def headline(report: AgreementReport) -> list[HeadlineRow]:
    """Per item: the raters' agreement with its CI and Koo & Li band, the LLM judge's agreement with the raters,
    centres, and a one-line verdict in words that cannot contradict the table under it.

    Raters: ICC(3,k) on the summaries every panel rater scored (the block size is named when it is not every
    summary), Krippendorff α interval when fewer than 3 summaries were scored by all (α handles missing ratings);
    yes/no items Gwet AC1. LLM judge: ICC(2,1) against the human median for 1-5 items; for yes/no items Cohen's κ
    against the human majority (AC1 beside it), so a judge that always gives the majority answer reads as chance.
    Any estimate at or below zero, or whose CI reaches zero, reads "not distinguishable from chance"."""
    from engine.core import get_item

    out = []
    for a in report.items:
        item = get_item(a.item)
        likert = item.is_likert
        humans, statistic, short, n, block = _raters_statistic(a, likert)
        band = koo_li_band(humans.value if humans else None)
        llm = _finite(a.llm_agreement)
        llm_band = koo_li_band(llm.value if llm else None)
        if likert:
            hc = "—" if a.human_median is None else f"median {format_score(a.human_median)}"
            lc = "—" if a.llm_median is None else f"median {format_score(a.llm_median)}"
        else:
            hc, lc = share_of(a.human_yes), share_of(a.llm_yes)
        own = [x for x in a.notes if not x.startswith(_LLM_NOTES)]
        why = "" if humans else ("; ".join(own) or "not enough ratings for this item")
        spans = ""  # said in the raters' own sentence, never after the judge's
        if humans and humans.ci_low is not None and humans.ci_high is not None and not at_chance(humans) and \
                koo_li_band(humans.ci_low) != koo_li_band(humans.ci_high):
            spans = f"; their interval spans {koo_li_band(humans.ci_low)} to {koo_li_band(humans.ci_high)}"
        if humans and at_chance(humans):
            verdict = f"Raters' agreement is not distinguishable from chance ({short} {format_estimate(humans)})."
        elif humans:
            verdict = f"Raters agree {_ADVERB[band]} ({short} {format_estimate(humans)}{spans})."
        else:
            verdict = f"Rater agreement not computed: {why}."
        secondary = ""
        if report.has_llm:
            said, secondary = _llm_verdict(a, item, likert, llm, llm_band, hc, lc)
            verdict += said
        warning = ""
        if humans and n < SMALL_N:
            warning = f"only {n} summaries: the interval is wide, read with care"
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
                    f"p {format_p(eff.p_extra) if eff.p_extra > 0 else format_boot_p(eff.p_extra, eff.n_boot)}",
                    "ΔICC LLM replaces a rater": "" if eff is None else
                    f"{eff.delta_substitute_mean:+.3f} [{eff.delta_substitute_ci[0]:+.3f}, "
                    f"{eff.delta_substitute_ci[1]:+.3f}] "
                    f"p {format_p(eff.p_substitute) if eff.p_substitute > 0 else format_boot_p(eff.p_substitute, eff.n_boot)}"})
    return out


def mixed_model_rows(mm: dict) -> list[dict]:
    """The mixed-effects model as a readable coefficient table (plain term names, estimate, 95% CI, p)."""
    return [{"term": t["term"], "estimate": round(t["estimate"], 3),
             "95% CI": f"{t['ci_low']:.2f} to {t['ci_high']:.2f}" if t["ci_low"] is not None else "",
             "p": format_p(t["p"])} for t in mm.get("table", [])]


USABLE_LLM_BANDS = ("moderate", "good", "excellent")  # Koo & Li bands in which the judge's score may stand in


def committee_verdict(row: HeadlineRow) -> str:
    """One sentence a committee can act on for one item: may the LLM judge's score be used for it? Yes only when
    the raters themselves agree beyond chance and the judge agrees with them at least moderately (Koo & Li band of
    its point estimate) with an interval that excludes chance; otherwise no, with the reason."""
    if row.humans is None or at_chance(row.humans):
        return (f"{row.label}: do not use the judge's score — the raters themselves do not agree beyond chance, so "
                "there is no reference to hold it to.")
    if row.llm is None:
        return f"{row.label}: do not use the judge's score — its agreement with the raters could not be measured."
    if at_chance(row.llm):
        return (f"{row.label}: do not use the judge's score — its agreement with the raters is not distinguishable "
                "from chance.")
    if row.llm_band not in USABLE_LLM_BANDS:
        return (f"{row.label}: use the judge's score only to sort summaries for review — it agrees "
                f"{_ADVERB.get(row.llm_band, row.llm_band)} with the raters.")
    return (f"{row.label}: the judge's score may stand in for a rater's — it agrees "
            f"{_ADVERB.get(row.llm_band, row.llm_band)} with the raters (lower 95% bound {row.llm.ci_low:.2f}).")
