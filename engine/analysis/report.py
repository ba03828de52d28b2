"""The committee report: one self-contained HTML file (and a PDF printed from it by headless Chromium).

What an informatics committee asks for, in one document that works offline: the dataset, the methods in plain
words with references, per item how well the raters agree and how the LLM judge compares (forest plots with the
Koo & Li bands), LLM vs humans side by side, score distributions, length effects, the omission and sentence-support
evidence per generator and quality group, the top disagreement cases with short excerpts, statistics that could not
be computed and why, and full provenance. No script, font or image is fetched: the charts are inline SVG drawn
here, the style is inline. Every data string goes through :func:`engine.core.untrusted.html`. Results from the
embedded smoke-test model are marked as such on every printed page.

    python -m engine report sample --out report.html --pdf report.pdf
"""
from __future__ import annotations

import functools
import math
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Sequence

from engine.core import ITEMS, RESERVED_RATER_GROUPS, citations, get_item, untrusted
from engine.judge import JudgeConfig, sampling_words
from engine.analysis.agreement import AgreementReport, disagreements
from engine.analysis.formatting import INTERVAL_NOTE, format_p
from engine.core import formatted_rows
from engine.analysis.headlines import (HeadlineRow, KOO_LI_BANDS, committee_verdict, headline, llm_vs_human_rows,
                                      mixed_model_rows)
from engine.analysis.spot_checks import spot_check_rows

APP_VERSION = "SumCheck 0.9"
HUMANS_TITLE = "Raters' agreement (ICC(3,k), or α when few summaries were scored by all; yes/no items: AC1), 95% CI"
LLM_TITLE = "LLM judge vs raters (ICC(2,1); yes/no items: Cohen's κ), 95% CI"
BAND_COLOURS = {"poor": "#fde2e1", "moderate": "#fff1d6", "good": "#e3f4e1", "excellent": "#c9ecc4"}
REFERENCES = [
    "Croxford E, et al. Development and validation of the Provider Documentation Summarization Quality "
    "Instrument (PDSQI-9) for large language models. 2025.",
    "Croxford E, et al. Automating evaluation of AI text generation in healthcare with a large language model "
    "(LLM)-as-a-judge. 2025.",
    "Koo TK, Li MY. A guideline of selecting and reporting intraclass correlation coefficients for reliability "
    "research. J Chiropr Med. 2016;15(2):155-163.",
    "Shrout PE, Fleiss JL. Intraclass correlations: uses in assessing rater reliability. Psychol Bull. "
    "1979;86(2):420-428.",
    "Gwet KL. Computing inter-rater reliability and its variance in the presence of high agreement. Br J Math "
    "Stat Psychol. 2008;61:29-48.",
    "Krippendorff K. Computing Krippendorff's alpha-reliability. 2011.",
    "Schumacher E, et al. MED-OMIT: extrinsically-focused evaluation of omissions in medical summarization. 2023.",
]


class ReportError(Exception):
    """The report could not be made; the message says why and what to do."""


@dataclass
class ReportData:
    dataset: str
    created_at: str
    n_cases: int
    n_summaries: int
    specialties: list[tuple[str, int]]
    generators: list[tuple[str, int]]
    raters: list[tuple[str, str, int]]  # rater, group, ratings
    config: Optional[JudgeConfig]
    configs: list[JudgeConfig]
    agreement: AgreementReport
    headline: list[HeadlineRow]
    evidence_by_generator: list[dict]
    evidence_by_quality: list[dict]
    disagreements: list[dict]
    provenance: dict
    scores_used: list[dict] = field(default_factory=list)  # per item: the score decisions use and its validity


# ----------------------------------------------------------------------------------------------- data


def _counts(values) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for v in values:
        out[v or "(none)"] = out.get(v or "(none)", 0) + 1
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def _evidence_groups(store, name: str, ds) -> tuple[list[dict], list[dict]]:
    """Mean omission score, MED-OMIT weight and sentence support per generator and per quality group, from the
    evidence stored in the workspace (summaries without stored evidence are left out and counted)."""
    from engine.evidence.coverage import DEFAULT_METHOD
    from engine.evidence import stored_results

    covs = stored_results(store, name, f"coverage:{DEFAULT_METHOD}")
    als = stored_results(store, name, "alignment")
    meds = stored_results(store, name, "medomit")
    vers = {k: v for k, v in stored_results(store, name, "verification").items() if not v.smoke_test and not v.reason}

    def groups(attr: str) -> list[dict]:
        by: dict[str, list] = {}
        for s in ds.summaries:
            by.setdefault(getattr(s, attr) or "(none)", []).append(s)
        rows = []
        for g, ss in sorted(by.items()):
            cov = [covs[s.summary_id].global_score for s in ss if s.summary_id in covs]
            sup = [als[s.summary_id].mean_support for s in ss if s.summary_id in als]
            weak = [sum(a.weak for a in als[s.summary_id].sentences) / max(1, len(als[s.summary_id].sentences))
                    for s in ss if s.summary_id in als]
            med = [meds[s.summary_id].document_weight for s in ss
                   if s.summary_id in meds and meds[s.summary_id].document_weight is not None]
            ver = [vers[s.summary_id] for s in ss if s.summary_id in vers]
            mean = (lambda xs: round(sum(xs) / len(xs), 3) if xs else None)
            rows.append({"group": g, "summaries": len(ss), "with coverage": len(cov), "omission score": mean(cov),
                         "mean support": mean(sup), "weak sentences": mean(weak), "with MED-OMIT": len(med),
                         "MED-OMIT weight": mean(med), "verified": len(ver),
                         "unsupported claims": sum(len(v.unsupported_claims) for v in ver) if ver else None,
                         "with an unsupported claim": sum(bool(v.unsupported_claims) for v in ver) if ver else None})
        return rows

    return groups("generator_model"), groups("quality_group")


def build(store, name: str, judge_config: Optional[str] = None, n_boot: int = 1000,
          count_tokens=None, spot_checks_in_reference: bool = False) -> ReportData:
    """Everything the report shows, for one dataset and one judge configuration (default: the one covering the
    most summaries). ``spot_checks_in_reference``: the clinicians' spot checks also enter the human reference
    (the panel statistics never include them); the choice is printed in the report."""
    from engine.analysis.configured import UnknownConfiguration, analyse_configuration

    try:
        done = analyse_configuration(store, name, judge_config, n_boot=n_boot, count_tokens=count_tokens,
                                     spot_checks_in_reference=spot_checks_in_reference)
    except UnknownConfiguration as exc:
        raise ReportError(str(exc)) from exc
    ds, rep, config, configs = done.dataset, done.report, done.chosen.config, done.chosen.configs
    results, llm = done.chosen.results, done.chosen.llm
    by_gen, by_q = _evidence_groups(store, name, ds)
    raters: dict[tuple[str, str], int] = {}
    for r in ds.ratings:
        if r.rater_group not in RESERVED_RATER_GROUPS:  # the panel; spot checks and adjudications have sections
            raters[(r.rater_id, r.rater_group)] = raters.get((r.rater_id, r.rater_group), 0) + 1
    style = ds.citation_style()
    texts = {s.summary_id: citations.compact(s.text, style).replace("[", "(note ").replace("]", ")")
             for s in ds.summaries}  # "<NoteID:5>" reads "(note 5)"
    top = [d for d in disagreements(rep) if d["|LLM − human|"] is not None][:5] if llm else []
    for d in top:
        d["excerpt"] = " ".join(texts.get(d["summary_id"], "").split())[:240]
    prov = {"app": APP_VERSION, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "dataset": name, "bootstrap resamples": n_boot,
            "human reference": "rater panel median" + (" with the clinicians' spot checks"
                                                       if spot_checks_in_reference else " (spot checks reported "
                                                                                         "apart)")}
    if config:
        first = next(r for r in results)
        prov.update({"judge configuration": config.key, "model file": config.model,
                     "model sha256": config.model_sha256 or "(server model: no file hash)",
                     "backend": config.backend, "prompt version": config.prompt_version,
                     "parameters": readable_params(config.params),
                     "llama-cpp-python": first.provenance.llama_cpp_python or "—"})
    return ReportData(name, prov["created"], len(ds.cases), len(ds.summaries),
                      _counts(ds.case(s.case_id).target_specialty for s in ds.summaries),
                      _counts(s.generator_model for s in ds.summaries),
                      sorted((r, g, n) for (r, g), n in raters.items()), config, configs, rep, headline(rep),
                      by_gen, by_q, top, prov, _scores_used(store, name, config))


def readable_params(params: dict) -> str:
    """A judge configuration's parameters in words ("1 greedy sample · 0-shot · no explanations · seed 1234 · …")."""
    bits = [sampling_words(params), f"{params.get('shots', 0)}-shot",
            "explanations" if params.get("explain") else "no explanations", f"seed {params.get('seed', '?')}",
            "oldest notes dropped when too long" if params.get("trim") else "refused when too long"]
    if params.get("max_tokens"):
        bits.append(f"reply budget {params['max_tokens']} tokens")
    return " · ".join(bits)


def _scores_used(store, name: str, config: Optional[JudgeConfig]) -> list[dict]:
    """Per 1-5 item: the score triage uses (calibrated, combination or the judge's), why, and its validity."""
    from engine.judge import used_scores

    return used_scores.for_configuration(store, name, config) if config is not None else []


# ----------------------------------------------------------------------------------------------- SVG


TITLE_CHAR_PX = 7  # a generous width of one bold 12 px sans-serif character
BAND_CHAR_PX = 6  # of one 10 px character


def _wrap(text: str, per_line: int) -> list[str]:
    """``text`` in lines of at most ``per_line`` characters, broken at spaces."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= per_line:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


CHARTS = "charts.svg.j2"


@functools.lru_cache(maxsize=1)
def _charts():
    """The macros of ``charts.svg.j2`` (autoescape, every value through :func:`engine.core.untrusted.html`)."""
    return untrusted.markup_environment(Path(__file__).parent).get_template(CHARTS).module


def forest_svg(rows: Sequence[HeadlineRow], which: str, title: str) -> str:
    """A forest plot: one line per item, the estimate with its 95 % CI over the Koo & Li bands."""
    width, left, right, step = 760, 190, 700, 24
    est = [(r, r.humans if which == "humans" else r.llm) for r in rows]
    lows = [e.ci_low for _, e in est if e is not None and e.ci_low is not None] + [0.0]
    lo = max(-1.0, min(-0.1, math.floor(min(lows) * 10) / 10))
    title_lines = _wrap(title, (width - 16) // TITLE_CHAR_PX)
    top = 14 * len(title_lines) + 48  # room for the band labels on two rows
    height = top + step * len(rows) + 30

    def x(v: float) -> float:
        return left + (min(max(v, lo), 1.0) - lo) / (1.0 - lo) * (right - left)

    bands = []
    prev, last_end, row = lo, -math.inf, 0
    for limit, name in KOO_LI_BANDS:
        hi = min(limit, 1.0)
        if hi > prev:
            mid, half = (x(prev) + x(hi)) / 2, len(name) * BAND_CHAR_PX / 2
            row = 1 - row if mid - half < last_end + 4 else 0  # a label that would touch its neighbour goes up a row
            last_end = mid + half if row == 0 else max(last_end, mid + half)
            bands.append({"x": x(prev), "width": x(hi) - x(prev), "fill": BAND_COLOURS[name], "mid": mid,
                          "label_y": top - 14 - 12 * row, "name": name})
        prev = max(prev, hi)
    items = []
    for k, (r, e) in enumerate(est):
        ci = e is not None and e.ci_low is not None and e.ci_high is not None
        items.append({"y": top + k * step + 6, "label": r.label, "value": None if e is None else e.value,
                      "at": None if e is None else x(e.value), "low": x(e.ci_low) if ci else None,
                      "high": x(e.ci_high) if ci else None})
    axis_y = top + step * len(rows) + 4
    ticks = [{"x": x(t), "tick": t} for t in sorted({round(v / 10, 1) for v in range(int(round(lo * 10)), 11, 2)}
                                                      | {0.0})]
    return str(_charts().forest(width=width, height=height, title=title, title_lines=title_lines,
                                band_top=top - 10, band_height=step * len(rows) + 4, bands=bands, rows=items,
                                left=left, right=right, dot="#1f6feb" if which == "humans" else "#cf222e",
                                axis_y=axis_y, ticks=ticks))


def bars_svg(counts: dict[str, tuple[int, int]], title: str) -> str:
    """Score distribution of one item: for levels 1–5, the share of summaries per level, humans vs LLM."""
    width, height, left, base = 300, 130, 30, 100
    tot_h = sum(h for h, _ in counts.values()) or 1
    tot_l = sum(v for _, v in counts.values()) or 1
    levels = [{"x": left + k * 52, "humans": 80 * counts[level][0] / tot_h, "llm": 80 * counts[level][1] / tot_l,
               "level": level} for k, level in enumerate(sorted(counts))]
    return str(_charts().bars(width=width, height=height, left=left, base=base, title=title, levels=levels))


# ----------------------------------------------------------------------------------------------- HTML


CSS = """
body{font:14px/1.5 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;max-width:960px;margin:24px auto;
padding:0 24px}
h1{font-size:24px;margin-bottom:0}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0;font-size:12.5px}th,td{border:1px solid #d0d7de;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f6f8fa}.muted{color:#57606a}.warn{color:#9a6700}
.smoke{position:fixed;top:0;left:0;right:0;background:#cf222e;color:white;font-weight:bold;text-align:center;
padding:3px;font-size:12px;z-index:9}.smoke-pad{height:26px}.verdict{margin:2px 0}
.legend span{display:inline-block;padding:0 8px;margin-right:4px}
@media print{body{margin:0 auto}h2,h2+p{break-after:avoid}table,svg{break-inside:avoid}.smoke,.smoke-pad{display:none}}
@page{margin:16mm 12mm}
"""
SMOKE_PAGE_CSS = """@page{@top-center{content:"LLM figures from the embedded smoke-test model (Gemma 3 270M): not clinically
 meaningful";color:#cf222e;font:bold 10px sans-serif}}"""


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return untrusted.html(v)


def _distributions(rep: AgreementReport) -> str:
    out = []
    for item in ITEMS:
        if not item.is_likert:
            continue
        counts: dict[str, list[int]] = {str(v): [0, 0] for v in range(1, 6)}
        for r in rep.per_summary:
            h, v = r.get(f"{item.key}:human_median"), r.get(f"{item.key}:llm")
            if h is not None:
                counts[str(int(math.floor(h + 0.5)))][0] += 1
            if v is not None:
                counts[str(int(math.floor(v + 0.5)))][1] += 1
        out.append(bars_svg({k: (a, b) for k, (a, b) in counts.items()}, item.label))
    return "".join(out)


TEMPLATE = Path(__file__).with_name("report.html.j2")


@functools.lru_cache(maxsize=1)
def _template():
    """The report's Jinja2 template, autoescaping every value (``StrictUndefined``: a missing name is an error)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE.parent)), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
    env.filters["cell"] = lambda v: Markup(_cell(v))  # _cell escapes (engine.core.untrusted.html)
    env.filters["numbers"] = formatted_rows  # one rule for a column's numbers, as the app's tables write them
    return env.get_template(TEMPLATE.name)


def render_html(d: ReportData) -> str:
    """The committee report as one self-contained HTML page, rendered from ``report.html.j2``."""
    from markupsafe import Markup

    rep = d.agreement
    smoke = bool(d.config and d.config.smoke_test)
    mm = rep.mixed_model
    vs, pairs = spot_check_rows(rep.spot_checks)
    length_rows = [{"item": get_item(c.item).label, "score": c.y.replace("_", " "), "summaries": c.n,
                    "Spearman ρ": c.spearman.value if c.spearman else None,
                    "p": format_p(c.spearman.p_value) if c.spearman else "—"} for c in rep.length]
    others = ([{"configuration": c.key, "model": c.model, "prompt": c.prompt_version, "summaries": c.n_results}
               for c in d.configs if not d.config or c.key != d.config.key] if len(d.configs) > 1 else [])
    return _template().render(
        d=d, smoke=smoke, app_version=APP_VERSION, css=Markup(CSS), interval_note=INTERVAL_NOTE,
        smoke_css=Markup(SMOKE_PAGE_CSS.replace(chr(10), "") if smoke else ""),
        specialties=[{"specialty": k, "summaries": v} for k, v in d.specialties],
        generators=[{"generator": k, "summaries": v} for k, v in d.generators],
        raters=[{"rater": r, "group": g, "ratings": n} for r, g, n in d.raters],
        band_colours=list(BAND_COLOURS.items()),
        verdicts=[committee_verdict(h) for h in d.headline],
        forest_humans=Markup(forest_svg(d.headline, "humans", HUMANS_TITLE)),
        forest_llm=Markup(forest_svg(d.headline, "llm", LLM_TITLE) if rep.has_llm else ""),
        spot_vs=vs, spot_pairs=pairs, has_llm=rep.has_llm,
        llm_rows=llm_vs_human_rows(rep, d.headline) if rep.has_llm else [],
        mixed=mm, mixed_rows=mixed_model_rows(mm) if mm.get("table") else [],
        distributions=Markup(_distributions(rep)), length_rows=length_rows, notes=rep.notes,
        provenance=[{"field": k, "value": v} for k, v in d.provenance.items()], other_configs=others,
        references=REFERENCES)


# ----------------------------------------------------------------------------------------------- PDF


def chromium_path() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def print_pdf(html_path: Path, pdf_path: Path, timeout: float = 120) -> Path:
    """Print the HTML file to PDF with headless Chromium (offline: the file fetches nothing)."""
    exe = chromium_path()
    if exe is None:
        raise ReportError("no Chromium found to print the PDF; install it (Debian: apt-get install chromium) or open "
                          "the HTML file and print it from a browser")
    with tempfile.TemporaryDirectory(prefix="sumcheck-pdf-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--no-pdf-header-footer", f"--print-to-pdf={pdf_path}",
               html_path.resolve().as_uri()]
        try:
            run = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise ReportError(f"Chromium did not finish printing within {timeout:.0f} s") from exc
    if not pdf_path.exists() or pdf_path.stat().st_size == 0:
        raise ReportError(f"Chromium printed no PDF (exit {run.returncode}): {run.stderr.decode(errors='replace')[-300:]}")
    return pdf_path


def write(store, name: str, out_html: Path, out_pdf: Optional[Path] = None, judge_config: Optional[str] = None,
          n_boot: int = 1000, count_tokens=None, spot_checks_in_reference: bool = False) -> ReportData:
    data = build(store, name, judge_config, n_boot, count_tokens, spot_checks_in_reference)
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_html.write_text(render_html(data), encoding="utf-8")
    if out_pdf is not None:
        Path(out_pdf).parent.mkdir(parents=True, exist_ok=True)
        print_pdf(out_html, Path(out_pdf))
    return data
