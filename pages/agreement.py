"""Agreement page: how well the raters agree and how the LLM judge compares — a headline a committee reads in ten
seconds, the full tables a click away, one judge configuration at a time, and the committee report."""
import streamlit as st

from components import agreement_view as av, state
from engine.core import untrusted
from engine.core.rubric import get_item
from engine.data.store import StoreError
from engine.judge import calibration
from engine.views.agreement import agreement_page_view, disagreement_rows, fit_calibration, length_correlation

st.title("Agreement")
name, ds = state.require_dataset()
if not ds.summaries:
    st.info("This dataset has no summaries yet: import summaries and ratings on the Data page.")
    st.stop()
if not ds.ratings:
    st.info("This dataset has no human ratings: agreement needs PDSQI-9 ratings from at least two raters. Import a "
            "ratings file on the Data page (tidy ratings table or a REDCap-style export), or rate summaries on the "
            "Spot-check page.")
    st.stop()

configs = state.guarded(state.judge_configurations, name, default=[])
config = None
if configs:
    labels = {c.key: c.short_label for c in configs}
    key = st.selectbox("LLM judge configuration (results of different models, prompts or parameters are never "
                       "pooled)", list(labels), format_func=lambda k: labels[k], key="agreement_config")
    config = next(c for c in configs if c.key == key)
    st.caption(untrusted.md(config.label))  # the whole configuration, never cut
    if config.smoke_test:
        st.warning(f"**Smoke-test model.** These LLM figures come from {untrusted.md(config.model)}, the embedded "
                   "270M model: they prove the pipeline runs and are not clinically meaningful.")
spot_ref = st.toggle("Count clinicians' spot checks in the human reference", key="agreement_spot_ref",
                     help="Off: the LLM is compared with the imported rater panel's median, and spot checks are "
                          "reported apart. On: the spot checks also enter that median. The panel's own agreement "
                          "figures never include them.")
try:
    rep = state.agreement(name, config_key=config.key if config else None, spot_checks=spot_ref)
except Exception as exc:  # the engine raises; the page reports and keeps running
    st.error(f"The statistics could not be computed: {untrusted.md(exc)}")
    st.stop()
if not rep.has_llm:
    st.info("No LLM judge results for this dataset yet: the figures below are for the human raters only. Run the "
            "judge on the Judge page to compare.")
st.caption(f"{rep.n_summaries} summaries · rater panel: {untrusted.md(', '.join(rep.raters))} · "
           f"computed in {rep.seconds:.1f} s (cached until the data change)")

view = state.guarded(agreement_page_view, state.store(), name, ds, rep, config,
                     state.guarded(state.stigma_results, name, default=[]), stop=True)
LIKERT = view.likert
t_head, t_rel, t_dist, t_len, t_llm, t_cal, t_dis, t_fa = st.tabs(
    ["Headline", "Full table", "Distributions", "Note length", "LLM vs humans", "Calibration", "Disagreements",
     "Structure"])
with t_head:
    av.headline(view.forest_humans, view.forest_llm, view.verdicts)
    av.spot_checks(view.spot_vs, view.spot_pairs, rep.spot_checks_in_reference)
    if rep.notes:
        with st.expander(f"{len(rep.notes)} statistic(s) could not be computed — why"):
            st.markdown("\n".join(f"- {untrusted.md(n)}" for n in rep.notes))
    av.report_button(name, config.key if config else None, spot_ref)
    # the two stigmatizing-language items: the lexicon detector beside the raters and the LLM judge
    st.markdown("**Stigmatizing language: the detector (lexicon, no LLM) and the LLM judge against the raters**")
    for label, note in view.stigma_notes:
        st.caption(f"{untrusted.md_inline(label)}: {untrusted.md(note)}")
    av.table(view.stigma_rows, "stigma_items", "No rater answered the stigmatizing-language items.")
    st.caption("Reference: the adjudicated answer, else the raters' median (a tie of yes and no is left out). "
               "Cohen's κ with its asymptotic 95% CI. The detector finds the wording its lexicon lists; the raters "
               "judge meaning — read disagreements on the Case page's 'Stigmatizing language' tab.")
with t_rel:
    st.markdown("**ICC(3,k)** (two-way mixed, consistency, mean of k raters) with its F-based 95 % CI, on "
                "the summaries every rater scored; Krippendorff α and Gwet AC with CIs. ΔICC: the LLM as an extra "
                "rater, and replacing each human in turn (mean), with a 1000-resample bootstrap CI and two-tailed p.")
    av.table(view.reliability, "reliability")
    if rep.cronbach:
        st.caption(f"Cronbach α (items, mean human score per summary): {rep.cronbach.value:.3f} "
                   f"[{rep.cronbach.ci_low:.3f}, {rep.cronbach.ci_high:.3f}] (Feldt)")
    av.table(view.group_tests, "group_tests",
             "No group comparison: needs high- and low-quality summaries, or junior and senior raters scoring the "
             "same summaries.")
with t_dist:
    fig, data = av.distributions(rep.per_summary, LIKERT)
    av.show(fig, data, "distributions")
with t_len:
    item = st.selectbox("Item", LIKERT, index=LIKERT.index("thorough"), key="len_item",
                        format_func=lambda k: get_item(k).label)
    c1, c2 = st.columns(2)
    for col, y in ((c1, "human_mean"), (c2, "human_sd")):
        rho, p = length_correlation(rep, item, y)
        with col:
            fig, data = av.length_scatter(rep.per_summary, item, y, rho, p)
            av.show(fig, data, f"length_{item}_{y}")
    av.table(view.length_table, "length",
             "No length correlation: needs at least 4 summaries whose scores vary.")
with t_llm:
    if not rep.has_llm:
        st.info("Needs LLM judge results.")
    else:
        item = st.selectbox("Item", LIKERT, key="llm_item", format_func=lambda k: get_item(k).label)
        c1, c2 = st.columns(2)
        with c1:
            fig, data = av.bland_altman(rep.per_summary, item)
            av.show(fig, data, f"bland_altman_{item}")
        with c2:
            fig, data = av.confusion(rep.per_summary, item)
            av.show(fig, data, f"confusion_{item}")
        st.markdown("**LLM vs the raters, per item**")
        av.table(view.llm_vs_humans, "llm_vs_humans")
        st.markdown("**Mixed-effects model** of (LLM − human median) over the 1–5 items, random intercept per case")
        if view.mixed_model:
            av.table(view.mixed_model, "mixed_model")
        else:
            st.info(f"Not fitted: {untrusted.md(view.mixed_model_error)}")
with t_cal:
    st.markdown("**Calibrate the judge to these raters.** Per 1–5 item a monotone (isotonic) map from the judge's "
                "expected score to the raters' median, evaluated by leave-one-case-out cross-validation. A "
                "calibration belongs to the judge configuration chosen above and is applied only to its results.")
    if config is None:
        st.info("Needs LLM judge results: run the judge on the Judge page.")
    else:
        store = state.store()
        kind = st.radio("Inputs", list(calibration.CALIBRATION_KINDS), horizontal=True, key="cal_kind",
                        format_func=lambda k: {"judge": "judge's expected score",
                                               "judge+evidence": "expected score + evidence (coverage, support, "
                                                                 "citations, stigma, length)"}[k])
        if st.button("Fit calibration", key="cal_fit"):
            try:
                with st.spinner("Fitting and cross-validating…"):
                    fitted = fit_calibration(store, name, config.key, kind)
            except calibration.CalibrationRefused as exc:
                st.error(f"Calibration refused: {untrusted.md(exc)}")
            except StoreError as exc:
                state.show_store_error(exc)
            else:
                st.success(f"Stored as version {fitted.version}: {untrusted.md(fitted.label)}.")
                view = state.guarded(agreement_page_view, store, name, ds, rep, config,
                                     state.guarded(state.stigma_results, name, default=[]), stop=True)
        current = view.calibration
        if current is None:
            st.info("No calibration stored for this judge configuration yet.")
        else:
            st.caption(f"Version {current.version} · {untrusted.md(current.label)} · inputs: "
                       f"{untrusted.md(current.kind)} · fitted {untrusted.md(current.created_at)}. 'Before' is the raw "
                       "expected score, 'after' the cross-validated calibrated score; ICC(2,1) with its F-based 95% "
                       "CI, Spearman ρ and mean absolute error with case-bootstrap 95% CIs.")
            av.table(view.calibration_rows, "calibration")
        st.markdown("**Which score stands for each item** in triage and spot-check sampling, and how valid it is")
        av.table(view.scores_used, "scores_used")
with t_dis:
    c1, c2, c3, c4 = st.columns(4)
    item = c1.selectbox("Item", ["all"] + LIKERT, key="dis_item",
                        format_func=lambda k: "all" if k == "all" else get_item(k).label)
    smoke = bool(config and config.smoke_test)
    exclude_smoke = st.checkbox("Exclude smoke-test results", value=False, key="dis_exclude_smoke",
                                help="Leave out the summaries whose LLM scores come from the embedded 270M "
                                     "smoke-test model: their disagreements say nothing about a real judge.")
    rows = disagreement_rows(rep, item, smoke, exclude_smoke)
    if smoke and exclude_smoke:
        st.info(f"Every LLM score in this configuration comes from the smoke-test model "
                f"{untrusted.md_inline(config.model)}, so all {len(rep.per_summary)} summaries are excluded. Choose a "
                "configuration with a real model above, or untick 'Exclude smoke-test results'.")
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
        target = st.selectbox("Open a summary", [r["summary_id"] for r in rows], key="dis_open")
        if st.button("Open in the Case page"):
            st.session_state["case_id"] = next(r["case_id"] for r in rows if r["summary_id"] == target)
            st.session_state["summary_id"] = target
            st.switch_page("pages/case.py")
        if st.button("Spot-check / adjudicate this summary"):
            st.session_state["case_id"] = next(r["case_id"] for r in rows if r["summary_id"] == target)
            st.session_state["summary_id"] = target
            st.switch_page("pages/review.py")
with t_fa:
    fa = rep.factor_analysis
    if fa.get("eigenvalues"):
        fig, data = av.scree(fa["eigenvalues"])
        av.show(fig, data, "scree")
    if view.factor_error:
        st.info(f"Factor analysis not run: {untrusted.md(view.factor_error)}")
    else:
        st.caption(f"KMO {view.kmo if view.kmo is not None else float('nan'):.3f} · method: "
                   f"{untrusted.md(view.factor_method)}")
    fig, data = av.heatmap(rep.item_correlation["items"], rep.item_correlation["matrix"])
    av.show(fig, data, "item_correlations")
