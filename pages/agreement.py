"""Agreement page: how well the raters agree and how the LLM judge compares — a headline a committee reads in ten
seconds, the full tables a click away, one judge configuration at a time, and the committee report."""
import streamlit as st

from components import agreement_view as av, state
from engine.core import untrusted
from engine.views import agreement as view

md = untrusted.md


def _label(k: str) -> str:
    return view.ITEM_LABELS[k]


def _configuration(page):
    """The judge configuration picked (results of different configurations are never pooled), or None."""
    configs = page.configurations
    if not configs:
        return None
    labels = {c.key: c.short_label for c in configs}
    key = st.selectbox("LLM judge configuration (results of different models, prompts or parameters are never "
                       "pooled)", list(labels), format_func=lambda k: labels[k], key="agreement_config")
    config = next(c for c in configs if c.key == key)
    st.caption(md(config.label))  # the whole configuration, never cut
    if config.smoke_test:
        st.warning(f"**Smoke-test model.** These LLM figures come from {md(config.model)}, the embedded "
                   "270M model: they prove the pipeline runs and are not clinically meaningful.")
    return config


def _headline(page, v, name: str, config, spot_ref: bool) -> None:
    rep = page.report
    av.headline(v.forest_humans, v.forest_llm, v.verdicts)
    av.spot_checks(v.spot_vs, v.spot_pairs, rep.spot_checks_in_reference)
    if rep.notes:
        with st.expander(f"{len(rep.notes)} statistic(s) could not be computed — why"):
            st.markdown("\n".join(f"- {md(n)}" for n in rep.notes))
    av.report_button(lambda: page.report_files(state.token_counter(), spot_ref),
                     (name, config.key if config else None, state.data_version(), spot_ref), name)
    # the two stigmatizing-language items: the lexicon detector beside the raters and the LLM judge
    st.markdown("**Stigmatizing language: the detector (lexicon, no LLM) and the LLM judge against the raters**")
    for label, note in v.stigma_notes:
        st.caption(f"{untrusted.md_inline(label)}: {md(note)}")
    av.table(v.stigma_rows, "stigma_items", "No rater answered the stigmatizing-language items.")
    st.caption("Reference: the adjudicated answer, else the raters' median (a tie of yes and no is left out). "
               "Cohen's κ with its asymptotic 95% CI. The detector finds the wording its lexicon lists; the raters "
               "judge meaning — read disagreements on the Case page's 'Stigmatizing language' tab.")


def _reliability(page, v) -> None:
    rep = page.report
    st.markdown("**ICC(3,k)** (two-way mixed, consistency, mean of k raters) with its F-based 95 % CI, on "
                "the summaries every rater scored; Krippendorff α and Gwet AC with CIs. ΔICC: the LLM as an extra "
                "rater, and replacing each human in turn (mean), with a 1000-resample bootstrap CI and two-tailed p.")
    av.table(v.reliability, "reliability")
    if rep.cronbach:
        st.caption(f"Cronbach α (items, mean human score per summary): {rep.cronbach.value:.3f} "
                   f"[{rep.cronbach.ci_low:.3f}, {rep.cronbach.ci_high:.3f}] (Feldt)")
    av.table(v.group_tests, "group_tests",
             "No group comparison: needs high- and low-quality summaries, or junior and senior raters scoring the "
             "same summaries.")


def _length(page, v) -> None:
    likert = v.likert
    item = st.selectbox("Item", likert, index=likert.index("thorough"), key="len_item", format_func=_label)
    c1, c2 = st.columns(2)
    for col, y in ((c1, "human_mean"), (c2, "human_sd")):
        rho, p = page.length_correlation(item, y)
        with col:
            fig, data = av.length_scatter(page.report.per_summary, item, y, rho, p)
            av.show(fig, data, f"length_{item}_{y}")
    av.table(v.length_table, "length", "No length correlation: needs at least 4 summaries whose scores vary.")


def _llm(page, v) -> None:
    if not page.report.has_llm:
        st.info("Needs LLM judge results.")
        return
    item = st.selectbox("Item", v.likert, key="llm_item", format_func=_label)
    c1, c2 = st.columns(2)
    with c1:
        fig, data = av.bland_altman(page.bland_altman(item), item)
        av.show(fig, data, f"bland_altman_{item}")
    with c2:
        fig, data = av.confusion(*page.confusion(item), item)
        av.show(fig, data, f"confusion_{item}")
    st.markdown("**LLM vs the raters, per item**")
    av.table(v.llm_vs_humans, "llm_vs_humans")
    st.markdown("**Mixed-effects model** of (LLM − human median) over the 1–5 items, random intercept per case")
    if v.mixed_model:
        av.table(v.mixed_model, "mixed_model")
    else:
        st.info(f"Not fitted: {md(v.mixed_model_error)}")


def _calibration(page, v, config) -> None:
    st.markdown("**Calibrate the judge to these raters.** Per 1–5 item a monotone (isotonic) map from the judge's "
                "expected score to the raters' median, evaluated by leave-one-case-out cross-validation. A "
                "calibration belongs to the judge configuration chosen above and is applied only to its results.")
    if config is None:
        st.info("Needs LLM judge results: run the judge on the Judge page.")
        return
    kind = st.radio("Inputs", list(view.CALIBRATION_KINDS), horizontal=True, key="cal_kind",
                    format_func=lambda k: {"judge": "judge's expected score",
                                           "judge+evidence": "expected score + evidence (coverage, support, "
                                                             "citations, stigma, length)"}[k])
    if st.button("Fit calibration", key="cal_fit"):
        try:
            with st.spinner("Fitting and cross-validating…"):
                fitted = page.fit_calibration(kind)
        except view.CalibrationRefused as exc:
            st.error(f"Calibration refused: {md(exc)}")
        except view.StoreError as exc:
            state.show_store_error(exc)
        else:
            st.success(f"Stored as version {fitted.version}: {md(fitted.label)}.")
            v = page.view
    current = v.calibration
    if current is None:
        st.info("No calibration stored for this judge configuration yet.")
    else:
        st.caption(f"Version {current.version} · {md(current.label)} · inputs: "
                   f"{md(current.kind)} · fitted {md(current.created_at)}. 'Before' is the raw "
                   "expected score, 'after' the cross-validated calibrated score; ICC(2,1) with its F-based 95% "
                   "CI, Spearman ρ and mean absolute error with case-bootstrap 95% CIs.")
        av.table(v.calibration_rows, "calibration")
    st.markdown("**Which score stands for each item** in triage and spot-check sampling, and how valid it is")
    av.table(v.scores_used, "scores_used")


def _open_buttons(rows: list[dict]) -> None:
    target = st.selectbox("Open a summary", [r["summary_id"] for r in rows], key="dis_open")
    for label, where in (("Open in the Case page", "pages/case.py"),
                         ("Spot-check / adjudicate this summary", "pages/review.py")):
        if st.button(label):
            st.session_state["case_id"] = next(r["case_id"] for r in rows if r["summary_id"] == target)
            st.session_state["summary_id"] = target
            st.switch_page(where)


def _disagreements(page, v, config) -> None:
    c1, c2, c3, c4 = st.columns(4)
    item = c1.selectbox("Item", ["all"] + v.likert, key="dis_item",
                        format_func=lambda k: "all" if k == "all" else _label(k))
    smoke = bool(config and config.smoke_test)
    exclude_smoke = st.checkbox("Exclude smoke-test results", value=False, key="dis_exclude_smoke",
                                help="Leave out the summaries whose LLM scores come from the embedded 270M "
                                     "smoke-test model: their disagreements say nothing about a real judge.")
    rows = page.disagreements(item, exclude_smoke)
    if smoke and exclude_smoke:
        st.info(f"Every LLM score in this configuration comes from the smoke-test model "
                f"{untrusted.md_inline(config.model)}, so all {len(page.report.per_summary)} summaries are excluded. "
                "Choose a configuration with a real model above, or untick 'Exclude smoke-test results'.")
    elif smoke:
        st.warning(f"**Smoke-test model:** these LLM scores come from {untrusted.md_inline(config.model)}; the "
                   "disagreements are not clinically meaningful. Tick 'Exclude smoke-test results' to leave them "
                   "out.")
    for col, key in ((c2, "specialty"), (c3, "generator"), (c4, "quality_group")):
        opts = sorted({r[key] for r in rows})
        pick = col.multiselect(key.replace("_", " "), opts, key=f"dis_{key}")
        if pick:
            rows = [r for r in rows if r[key] in pick]
    av.table(rows, "disagreements", "No summary left: all are excluded as smoke-test results."
             if smoke and exclude_smoke else "No summary matches these filters.")
    if rows:
        _open_buttons(rows)


def _structure(page, v) -> None:
    rep = page.report
    fa = rep.factor_analysis
    if fa.get("eigenvalues"):
        fig, data = av.scree(fa["eigenvalues"])
        av.show(fig, data, "scree")
    if v.factor_error:
        st.info(f"Factor analysis not run: {md(v.factor_error)}")
    else:
        st.caption(f"KMO {v.kmo if v.kmo is not None else float('nan'):.3f} · method: {md(v.factor_method)}")
    fig, data = av.heatmap(rep.item_correlation["items"], rep.item_correlation["matrix"])
    av.show(fig, data, "item_correlations")


def _analyse(page, config, spot_ref: bool):
    """The report and its view for ``config``; the page stops with the reason when it cannot be computed."""
    try:
        with st.spinner("Computing agreement statistics…"):
            v = page.analyse(config, spot_ref, count_tokens=state.token_counter())
    except Exception as exc:  # the engine raises; the page reports and keeps running
        st.error(f"The statistics could not be computed: {md(exc)}")
        st.stop()
    rep = page.report
    if not rep.has_llm:
        st.info("No LLM judge results for this dataset yet: the figures below are for the human raters only. Run "
                "the judge on the Judge page to compare.")
    st.caption(f"{rep.n_summaries} summaries · rater panel: {md(', '.join(rep.raters))} · "
               f"computed in {rep.seconds:.1f} s (kept until the data change)")
    return v


def main() -> None:
    st.title("Agreement")
    name, ds = state.require_dataset()
    if not ds.summaries:
        st.info("This dataset has no summaries yet: import summaries and ratings on the Data page.")
        st.stop()
    if not ds.ratings:
        st.info("This dataset has no human ratings: agreement needs PDSQI-9 ratings from at least two raters. Import "
                "a ratings file on the Data page (tidy ratings table or a REDCap-style export), or rate summaries on "
                "the Spot-check page.")
        st.stop()
    page = state.guarded(view.agreement_page, state.store(), name, ds, stop=True)
    config = _configuration(page)
    spot_ref = st.toggle("Count clinicians' spot checks in the human reference", key="agreement_spot_ref",
                         help="Off: the LLM is compared with the imported rater panel's median, and spot checks are "
                              "reported apart. On: the spot checks also enter that median. The panel's own "
                              "agreement figures never include them.")
    v = _analyse(page, config, spot_ref)
    tabs = st.tabs(["Headline", "Full table", "Distributions", "Note length", "LLM vs humans", "Calibration",
                    "Disagreements", "Structure"])
    with tabs[0]:
        _headline(page, v, name, config, spot_ref)
    with tabs[1]:
        _reliability(page, v)
    with tabs[2]:
        fig, data = av.distributions(page.report.per_summary, v.likert)
        av.show(fig, data, "distributions")
    with tabs[3]:
        _length(page, v)
    with tabs[4]:
        _llm(page, v)
    with tabs[5]:
        _calibration(page, v, config)
    with tabs[6]:
        _disagreements(page, v, config)
    with tabs[7]:
        _structure(page, v)


main()
