"""Agreement charts (plotly): distributions, length scatter, Bland–Altman, confusion matrix, heatmap, scree.

Every function takes plain rows (dicts) and returns a figure; ``show`` draws it with the download button of
plotly's toolbar (PNG) and a CSV download of the data behind it. Text from data reaches a figure only through
``untrusted.plot`` and a CSV only through ``untrusted.dataframe_csv``.
"""
from __future__ import annotations

from typing import Callable, Optional

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from engine.core import item_label, untrusted
from engine.views.agreement import BA_STEP, INTERVAL_NOTE, rho_caption, trend_line


def show(fig: go.Figure, data: pd.DataFrame, key: str) -> None:
    st.plotly_chart(fig, width="stretch", key=f"chart_{key}",
                    config={"displaylogo": False, "toImageButtonOptions": {"filename": key, "scale": 2}})
    st.download_button("Download data (CSV)", untrusted.dataframe_csv(data), untrusted.filename(key, ".csv"),
                       "text/csv", key=f"dl_{key}")


def distributions(rows: list[dict], items: list[str]) -> tuple[go.Figure, pd.DataFrame]:
    recs = []
    for r in rows:
        for it in items:
            for who, col in (("humans (median)", f"{it}:human_median"), ("LLM judge", f"{it}:llm")):
                if r.get(col) is not None:
                    recs.append({"item": it, "who": who, "score": r[col]})
    df = pd.DataFrame(recs, columns=["item", "who", "score"])
    fig = go.Figure()
    for who, side, colour in (("humans (median)", "negative", "#1f6feb"), ("LLM judge", "positive", "#cf222e")):
        d = df[df.who == who]
        fig.add_trace(go.Violin(x=d["item"], y=d["score"], name=who, side=side, line_color=colour,
                                points=False, meanline_visible=True, spanmode="hard"))
    fig.update_layout(violingap=0, violinmode="overlay", yaxis_title="score", height=420,
                      title="Score distributions per item: humans vs LLM")
    return fig, df


def length_scatter(rows: list[dict], item: str, y: str, rho: float | None, p: float | None
                   ) -> tuple[go.Figure, pd.DataFrame]:
    df = pd.DataFrame([{"summary": r["summary_id"], "note tokens": r["note_tokens"], y: r[f"{item}:{y}"]}
                       for r in rows if r.get(f"{item}:{y}") is not None], columns=["summary", "note tokens", y])
    fig = px.scatter(_for_plot(df), x="note tokens", y=y, hover_name="summary", height=360)
    line = trend_line(df["note tokens"].tolist(), df[y].tolist())
    if line is not None:
        b, a = line
        lo, hi = float(df["note tokens"].min()), float(df["note tokens"].max())
        xs = [lo + (hi - lo) * i / 19 for i in range(20)]
        fig.add_trace(go.Scatter(x=xs, y=[a + b * x for x in xs], mode="lines", name="linear trend",
                                 line_color="#cf222e"))
    stat = rho_caption(rho, p).removeprefix(" — ")
    # the statistic in its own line: in a half-width chart one line cut it at "Spearman ρ = -("
    fig.update_layout(title=dict(text=untrusted.plot(f"{item_label(item)}: note length vs {y.replace('_', ' ')}"),
                                 subtitle=dict(text=untrusted.plot(stat or "too few summaries for Spearman ρ"))),
                      margin=dict(t=90), showlegend=False)
    return fig, df


BA_PLOT_PX = (330, 220)  # the plotting area of a half-width chart at 1,280 px (width, height), for the bubble size


def bland_altman(ba, item: str) -> tuple[go.Figure, pd.DataFrame]:
    """``ba``: engine.views.agreement.BlandAltmanData. The judge's expected score is continuous, so neighbouring
    points sat a few pixels apart and their bubbles and counts covered each other: points are drawn on the view's
    grid, one bubble per grid point, sized and labelled by how many summaries it holds, and no bubble is wider than
    the grid's spacing on screen."""
    df = pd.DataFrame(ba.points, columns=["summary", "mean", "LLM − human"])
    grouped = pd.DataFrame(ba.bubbles, columns=["mean", "LLM − human", "summaries", "names"])
    limits, step = ba.limits, BA_STEP
    ys = grouped["LLM − human"].tolist() + (list(limits) if limits is not None else [])
    xs = grouped["mean"].tolist()
    y_range = [min(ys, default=-1) - 2 * step, max(ys, default=1) + 2 * step]
    x_range = [min(xs, default=1) - 2 * step, max(xs, default=5) + 2 * step]
    spacing = min(BA_PLOT_PX[1] * step / (y_range[1] - y_range[0]), BA_PLOT_PX[0] * step / (x_range[1] - x_range[0]))
    diameter = max(6.0, min(18.0, spacing - 2))
    fig = px.scatter(_for_plot(grouped), x="mean", y="LLM − human", size="summaries",
                     text="summaries" if diameter >= 12 else None, hover_name="names", height=380,
                     size_max=diameter)
    fig.update_traces(textposition="middle center", textfont_size=9, marker=dict(opacity=0.55))
    if limits is not None:
        m, lower, upper = limits
        for v, label, dash in ((m, f"bias {m:+.2f}", "solid"), (upper, "+1.96 SD", "dash"),
                               (lower, "−1.96 SD", "dash")):
            fig.add_hline(y=v, line_dash=dash, annotation_text=label)
    fig.update_yaxes(range=y_range)
    fig.update_xaxes(range=x_range)
    fig.update_layout(title=dict(text=untrusted.plot(f"Bland–Altman: {item_label(item)}"), subtitle=dict(
        text=f"{len(df)} summaries; a bubble's size = summaries on it (hover for them)")), margin=dict(t=90))
    return fig, df


def confusion(levels: list[int], counts: list[list[int]], item: str) -> tuple[go.Figure, pd.DataFrame]:
    """``levels``, ``counts``: engine.views.agreement.confusion_counts (rows: the raters' median, columns: the
    judge)."""
    m = pd.DataFrame(counts, index=levels, columns=levels)
    fig = px.imshow(m, text_auto=True, labels={"x": "LLM judge", "y": "human median (rounded)", "color": "summaries"},
                    height=360, color_continuous_scale="Blues")
    fig.update_layout(title=untrusted.plot(f"Confusion: {item_label(item)}"))
    labels = [str(v) for v in levels]  # every score on both axes (plotly's own ticks showed only 2 and 4)
    fig.update_xaxes(tickmode="array", tickvals=levels, ticktext=labels, side="bottom")
    fig.update_yaxes(tickmode="array", tickvals=levels, ticktext=labels)
    return fig, m.reset_index(names="human")


def heatmap(items: list[str], matrix: list[list[float | None]]) -> tuple[go.Figure, pd.DataFrame]:
    df = pd.DataFrame(matrix, index=items, columns=items)
    labels = [untrusted.plot(i) for i in items]
    fig = px.imshow(pd.DataFrame(matrix, index=labels, columns=labels), text_auto=".2f", zmin=-1, zmax=1,
                    color_continuous_scale="RdBu", height=420)
    fig.update_layout(title="Item correlations (Spearman, mean human score per summary)")
    return fig, df.reset_index(names="item")


def scree(eigenvalues: list[float]) -> tuple[go.Figure, pd.DataFrame]:
    df = pd.DataFrame({"factor": range(1, len(eigenvalues) + 1), "eigenvalue": eigenvalues})
    fig = px.line(df, x="factor", y="eigenvalue", markers=True, height=320)
    fig.add_hline(y=1, line_dash="dash", annotation_text="Kaiser criterion")
    fig.update_layout(title="Scree plot")
    return fig, df


def table(rows: list[dict], key: str, empty: str = "Nothing to show for this dataset.") -> None:
    """A table with its CSV download (``key`` names both and must be unique on the page); an empty state that
    says why when there are no rows."""
    if not rows:
        st.info(empty)
        return
    from components.frames import clean, show

    df = clean(rows)
    show(df)
    st.download_button("Download table (CSV)", untrusted.dataframe_csv(df), untrusted.filename(key, ".csv"),
                       "text/csv", key=f"dl_table_{key}")


def _for_plot(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text columns (hover names) are safe as plotly text; the data behind the CSV
    download stays as it is."""
    out = df.copy()
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col].dtype):
            out[col] = out[col].map(untrusted.plot)
    return out


def headline(humans_svg: str, llm_svg: str | None, verdicts: list[dict]) -> None:
    """The committee headline: forest plots (inline SVG drawn by the engine's report module, data already escaped there) and one
    verdict per item in words."""
    c1, c2 = st.columns(2)
    with c1:
        st.html(humans_svg)
    if llm_svg:
        with c2:
            st.html(llm_svg)
    st.caption("Bands after Koo & Li (2016): below 0.5 poor, 0.5–0.75 moderate, 0.75–0.9 good, above 0.9 excellent. "
               + INTERVAL_NOTE)
    for v in verdicts:
        st.markdown(f"**{untrusted.md(v['label'])}.** {untrusted.md(v['verdict'])}"
                    + (f" {untrusted.md(v['secondary'])} (secondary)." if v.get("secondary") else "")
                    + (f" *({untrusted.md(v['warning'])})*" if v["warning"] else ""))
        if v.get("block"):
            st.caption(untrusted.md(v["block"]))


def spot_checks(vs_panel: list[dict], pairs: list[dict], in_reference: bool) -> None:
    """The clinicians' spot checks as their own comparison, apart from the panel."""
    st.markdown("**Clinicians' spot checks** — each clinician against the panel's median of the same summaries; "
                "the panel figures above never include them. Human reference: "
                + ("panel median **with** the spot checks." if in_reference else "panel median only."))
    if not vs_panel:
        st.caption("No spot check saved yet (Spot-check page).")
        return
    table(vs_panel, "spot_checks_vs_panel")
    if pairs:
        st.caption("Clinicians who spot-checked the same summaries, against each other:")
        table(pairs, "spot_checks_pairs")


def report_button(make: Callable[[], tuple[bytes, Optional[bytes]]], key: tuple, dataset: str) -> None:
    """Make the committee report (self-contained HTML, and a PDF when Chromium is installed: ``make()`` returns
    both) once and offer both: the files are kept for ``key`` (dataset, configuration, data), so downloading one
    leaves the other (no second generation); the download buttons do not rerun the page."""
    from engine.views.agreement import ReportError

    if st.button("Make the committee report (HTML + PDF)", key="make_report"):
        with st.spinner("Writing the report…"):
            try:
                html, pdf = make()
            except ReportError as exc:
                st.error(untrusted.md(exc))
                return
            st.session_state["committee_report"] = {"key": key, "html": html, "pdf": pdf}
    made = st.session_state.get("committee_report")
    if not made or made["key"] != key:
        return
    st.download_button("Download the report (HTML)", made["html"], untrusted.filename(dataset, "-pdsqi9-report.html"),
                       "text/html", key="dl_report_html", on_click="ignore")
    if made["pdf"] is not None:
        st.download_button("Download the report (PDF)", made["pdf"], untrusted.filename(dataset, "-pdsqi9-report.pdf"),
                           "application/pdf", key="dl_report_pdf", on_click="ignore")
    else:
        st.caption("No Chromium found to print a PDF: open the HTML file and print it from a browser.")
