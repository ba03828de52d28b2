"""The Agreement page's view: from one agreement report (one judge configuration), every table, figure input and
caption figure the page draws — the headline and its forest plots, the detector's and the LLM's agreement on the
stigmatizing-language items, reliability, group tests, length correlations, LLM vs raters, the mixed model, the
stored calibration, the scores used, and the filtered disagreement list — and the numbers behind the charts
(trend lines, Bland–Altman limits)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from engine.core import Dataset, get_item
from engine.judge import calibration, used_scores
from engine.analysis import (AgreementReport, HeadlineRow, INTERVAL_NOTE, LIKERT, ReportError, configured_results,
                             detector_agreement, disagreements, format_estimate, format_p, headline,
                             llm_vs_human_rows, mixed_model_rows, reliability_rows, report,
                             spot_check_rows)  # noqa: F401 (INTERVAL_NOTE: for the page)
from engine.statistics import bland_altman, least_squares_line
from engine.core import ITEMS
from engine.data import StoreError

__all__ = ["AgreementPage", "AgreementPageView", "CALIBRATION_KINDS", "CalibrationRefused", "ITEM_LABELS",
           "INTERVAL_NOTE", "ReportError", "StoreError", "agreement_page"]

CALIBRATION_KINDS = calibration.CALIBRATION_KINDS
CalibrationRefused = calibration.CalibrationRefused
ITEM_LABELS = {i.key: i.label for i in ITEMS}


@dataclass
class AgreementPageView:
    report: AgreementReport
    headline: list[HeadlineRow]
    forest_humans: str  # SVG, escaped by engine.analysis.report
    forest_llm: Optional[str]
    verdicts: list[dict]
    spot_vs: list[dict]
    spot_pairs: list[dict]
    stigma_rows: list[dict] = field(default_factory=list)
    stigma_notes: list[tuple[str, str]] = field(default_factory=list)  # (item label, note)
    reliability: list[dict] = field(default_factory=list)
    group_tests: list[dict] = field(default_factory=list)
    length_table: list[dict] = field(default_factory=list)
    llm_vs_humans: list[dict] = field(default_factory=list)
    mixed_model: list[dict] = field(default_factory=list)
    mixed_model_error: str = ""
    calibration: object = None  # the newest stored Calibration of the configuration
    calibration_rows: list[dict] = field(default_factory=list)
    scores_used: list[dict] = field(default_factory=list)
    likert: list[str] = field(default_factory=lambda: list(LIKERT))
    kmo: Optional[float] = None
    factor_method: str = ""
    factor_error: str = ""


def _stigma_rows(ds: Dataset, detector: dict, llm: dict) -> tuple[list[dict], list[tuple[str, str]]]:
    rows, notes = [], []
    for a in detector_agreement(ds, detector, llm):
        rows.append({"item": a.label, "summaries": a.n, "raters: yes": a.reference_yes,
                     "detector: yes": a.detector_yes,
                     "detector agrees": f"{a.detector_agree} of {a.n}" if a.n else "",
                     "detector κ (95% CI)": format_estimate(a.detector_kappa) if a.detector_kappa else "",
                     "LLM: yes": str(a.llm_yes) if a.llm_n else "",
                     "LLM agrees": f"{a.llm_agree} of {a.llm_n}" if a.llm_n else "",
                     "LLM κ (95% CI)": format_estimate(a.llm_kappa) if a.llm_kappa else ""})
        notes += [(a.label, n) for n in a.notes]
    return rows, notes


def _length_table(rep: AgreementReport) -> list[dict]:
    return [{"item": get_item(c.item).label, "score": c.y.replace("_", " "), "summaries": c.n,
             "Spearman ρ": None if c.spearman is None else round(c.spearman.value, 3),
             "p (ρ)": "—" if c.spearman is None else format_p(c.spearman.p_value),
             "Pearson r": None if c.pearson is None else round(c.pearson.value, 3),
             "p (r)": "—" if c.pearson is None else format_p(c.pearson.p_value)} for c in rep.length]


def agreement_page_view(store, name: str, ds: Dataset, rep: AgreementReport, config=None,
                        stigma_results: Sequence = ()) -> AgreementPageView:
    """Everything the Agreement page shows of report ``rep`` (built for judge configuration ``config``, a
    :class:`engine.judge.configs.JudgeConfig` or None); ``stigma_results``: the detector's result per summary."""
    rows = headline(rep)
    vs, pairs = spot_check_rows(rep.spot_checks)
    view = AgreementPageView(
        rep, rows, report.forest_svg(rows, "humans", report.HUMANS_TITLE),
        report.forest_svg(rows, "llm", report.LLM_TITLE) if rep.has_llm else None,
        [{"label": r.label, "verdict": r.verdict, "warning": r.warning, "block": r.block, "secondary": r.secondary}
         for r in rows], vs, pairs)
    llm_med = configured_results(store, name, config.key).llm if config is not None else {}
    view.stigma_rows, view.stigma_notes = _stigma_rows(
        ds, {r.summary_id: r.item_answers for r in stigma_results}, llm_med)
    view.reliability = reliability_rows(rep)
    view.group_tests = [{"item": get_item(g.item).label, "test": g.label, "median A": g.median_a,
                         "median B": g.median_b, "p": None if g.test is None else format_p(g.test.p_value)}
                        for g in rep.quality_groups + rep.junior_vs_senior]
    view.length_table = _length_table(rep)
    if rep.has_llm:
        view.llm_vs_humans = llm_vs_human_rows(rep, rows)
        if rep.mixed_model.get("table"):
            view.mixed_model = mixed_model_rows(rep.mixed_model)
        else:
            view.mixed_model_error = rep.mixed_model.get("error", "unknown reason")
    if config is not None:
        view.calibration = calibration.latest(store, name, config.key)
        view.calibration_rows = calibration.table_rows(view.calibration) if view.calibration else []
        view.scores_used = used_scores.for_configuration(store, name, config)
    fa = rep.factor_analysis
    view.kmo, view.factor_method, view.factor_error = fa.get("kmo"), fa.get("method", ""), fa.get("error", "")
    return view


def length_correlation(rep: AgreementReport, item: str, y: str) -> tuple[Optional[float], Optional[float]]:
    """(Spearman ρ, p) of note length with ``y`` ("human_mean", "human_sd") for ``item``; Nones when not computed."""
    c = next((c for c in rep.length if c.item == item and c.y == y), None)
    return (c.spearman.value, c.spearman.p_value) if c and c.spearman else (None, None)


def rho_caption(rho: Optional[float], p: Optional[float]) -> str:
    """" — Spearman ρ = 0.412, p = 0.031" (p below the shown precision as "p <0.001"); "" without a ρ."""
    if rho is None:
        return ""
    fp = format_p(p)
    return f" — Spearman ρ = {rho:.3f}, p {fp if fp.startswith('<') else '= ' + fp}"


def trend_line(xs: Sequence[float], ys: Sequence[float]) -> Optional[tuple[float, float]]:
    """(slope, intercept) of the least-squares line (engine.statistics.least_squares_line); None for fewer than two
    distinct x."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    fit = least_squares_line(xs, ys)
    return fit.slope, fit.intercept


def bland_altman_limits(differences: Sequence[float]) -> Optional[tuple[float, float, float]]:
    """(bias, lower, upper): the mean difference and the 95 % limits of agreement, mean ∓ 1.96 SD (sample SD;
    Bland & Altman 1986; engine.statistics.bland_altman); None for fewer than two differences."""
    if len(differences) < 2:
        return None
    ba = bland_altman(differences)
    return ba.bias, ba.lower, ba.upper


def disagreement_rows(rep: AgreementReport, item: str, smoke_test: bool, exclude_smoke: bool) -> list[dict]:
    """The largest LLM-vs-raters disagreements for ``item`` ("all" for every item); a configuration's scores are
    all from the smoke-test model or none are, so excluding them leaves nothing or changes nothing."""
    excluded = [r["summary_id"] for r in rep.per_summary] if (exclude_smoke and smoke_test) else []
    rows = disagreements(rep, None if item == "all" else item, exclude=excluded)
    for r in rows:
        r["smoke-test model"] = "yes" if smoke_test else ""
    return rows


def agreement_report(store, name: str, config_key: Optional[str], n_boot: int, count_tokens=None,
                     spot_checks: bool = False) -> AgreementReport:
    """The dataset's agreement report: the rater panel, reviews, and the judge results of ONE configuration
    (``config_key``; None: no judge) — never pooled across configurations."""
    from engine.analysis import analyse_configuration

    return analyse_configuration(store, name, config_key, n_boot=n_boot, count_tokens=count_tokens,
                                 spot_checks_in_reference=spot_checks, with_judge=config_key is not None).report


def judge_configurations(store, name: str):
    """The judge configurations present in a dataset's stored results (most summaries first)."""
    return configured_results(store, name).configs


def fit_calibration(store, name: str, config_key: str, kind: str):
    """Fit and store a calibration of one judge configuration to the dataset's raters (engine.judge.calibration
    .fit_from_store); raises :class:`engine.judge.calibration.CalibrationRefused` with the reason."""
    return calibration.fit_from_store(store, name, config_key, kind)


def committee_report(store, name: str, out_html, out_pdf, config_key: Optional[str], count_tokens=None,
                     spot_checks: bool = False):
    """Write the committee report (engine.analysis.report.write): HTML, and the PDF when ``out_pdf`` is given."""
    from engine.analysis import report

    return report.write(store, name, out_html, out_pdf, config_key, count_tokens=count_tokens,
                        spot_checks_in_reference=spot_checks)


def pdf_printer_available() -> bool:
    """Whether a PDF of the report can be printed here (a Chromium is installed)."""
    from engine.analysis import report

    return report.chromium_path() is not None


BA_STEP = 0.25  # Bland–Altman points are drawn on a quarter-point grid (the CSV keeps the exact values)


@dataclass(frozen=True)
class BlandAltmanData:
    """``points``: one row per summary with both scores (summary, mean, LLM − human); ``bubbles``: the points
    snapped to a :data:`BA_STEP` grid, one row per grid point with how many summaries it holds and their names (at
    most eight); ``limits``: (bias, lower, upper) or None."""

    points: list[dict]
    bubbles: list[dict]
    limits: Optional[tuple[float, float, float]]


def bland_altman_data(rows: Sequence[dict], item: str) -> BlandAltmanData:
    """The judge's score against the raters' median for ``item`` (rows of the report's ``per_summary``)."""
    points = [{"summary": r["summary_id"], "mean": (r[f"{item}:llm"] + r[f"{item}:human_median"]) / 2,
               "LLM − human": r[f"{item}:llm"] - r[f"{item}:human_median"]}
              for r in rows if r.get(f"{item}:llm") is not None and r.get(f"{item}:human_median") is not None]
    grid: dict[tuple[float, float], list[str]] = {}
    for p in points:
        at = tuple(round(p[c] / BA_STEP) * BA_STEP for c in ("mean", "LLM − human"))
        grid.setdefault(at, []).append(p["summary"])
    bubbles = [{"mean": m, "LLM − human": d, "summaries": len(names),
                "names": ", ".join(names[:8]) + (" …" if len(names) > 8 else "")}
               for (m, d), names in sorted(grid.items())]
    return BlandAltmanData(points, bubbles, bland_altman_limits([p["LLM − human"] for p in points]))


def confusion_counts(rows: Sequence[dict], item: str) -> tuple[list[int], list[list[int]]]:
    """(levels, counts[human level][LLM level]) of the raters' median (rounded) against the judge's score (rounded)
    for ``item``; every score 1–5 is a level."""
    pairs = [(round(r[f"{item}:human_median"] + 1e-9), round(r[f"{item}:llm"]))
             for r in rows if r.get(f"{item}:llm") is not None and r.get(f"{item}:human_median") is not None]
    levels = sorted({v for p in pairs for v in p} | {1, 2, 3, 4, 5})
    at = {v: i for i, v in enumerate(levels)}
    counts = [[0] * len(levels) for _ in levels]
    for h, llm in pairs:
        counts[at[h]][at[llm]] += 1
    return levels, counts


class AgreementPage:
    """Everything the Agreement page shows and does for one dataset: the judge configurations, then for the one
    chosen the report (kept while the data are unchanged: engine.views.memo) and its view, the charts' data, the
    filtered disagreements, fitting a calibration and writing the committee report."""

    def __init__(self, store, name: str, ds: Dataset):
        self.store, self.name, self.ds = store, name, ds
        self.configurations = judge_configurations(store, name)
        self.report: Optional[AgreementReport] = None
        self.view: Optional[AgreementPageView] = None

    def analyse(self, config, spot_checks: bool, count_tokens=None, n_boot: int = 1000) -> AgreementPageView:
        """The report of ``config`` (a JudgeConfig or None) and its view; the figures behind :attr:`report`."""
        from engine.views.memo import remembered

        key = (config.key if config else None, spot_checks, n_boot)
        self.report = remembered(self.store, self.name, "agreement", key, lambda: agreement_report(
            self.store, self.name, key[0], n_boot, count_tokens=count_tokens, spot_checks=spot_checks))
        self.config = config
        return self._read_view()

    def _read_view(self) -> AgreementPageView:
        from engine.views.memo import stigma_results

        self.view = agreement_page_view(self.store, self.name, self.ds, self.report, self.config,
                                        stigma_results(self.store, self.name, self.ds))
        return self.view

    def length_correlation(self, item: str, y: str):
        return length_correlation(self.report, item, y)

    def bland_altman(self, item: str) -> BlandAltmanData:
        return bland_altman_data(self.report.per_summary, item)

    def confusion(self, item: str):
        return confusion_counts(self.report.per_summary, item)

    def disagreements(self, item: str, exclude_smoke: bool) -> list[dict]:
        smoke = bool(self.config and self.config.smoke_test)
        return disagreement_rows(self.report, item, smoke, exclude_smoke)

    def fit_calibration(self, kind: str):
        """Fit and store a calibration of the chosen configuration, then read the view again."""
        fitted = fit_calibration(self.store, self.name, self.config.key, kind)
        self._read_view()
        return fitted

    def report_files(self, count_tokens=None, spot_checks: bool = False) -> tuple[bytes, Optional[bytes]]:
        """The committee report of the chosen configuration as (HTML, PDF or None where no Chromium can print it);
        raises :class:`ReportError` with the reason."""
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="sumcheck-report-") as d:
            html, pdf = Path(d) / "report.html", Path(d) / "report.pdf"
            committee_report(self.store, self.name, html, pdf if pdf_printer_available() else None,
                             self.config.key if self.config else None, count_tokens=count_tokens,
                             spot_checks=spot_checks)
            return html.read_bytes(), (pdf.read_bytes() if pdf.exists() else None)


def agreement_page(store, name: str, ds: Dataset) -> AgreementPage:
    """The Agreement page's one entry (:class:`AgreementPage`)."""
    return AgreementPage(store, name, ds)
