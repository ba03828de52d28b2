"""Agreement page: how well the raters agree and how the LLM judge compares — a headline a committee reads in ten
seconds, the full tables a click away, one judge configuration at a time, and the committee report."""
import streamlit as st

from components import agreement_view as av, state
from engine.judge import calibration, used_scores
from engine.core import untrusted
from engine.stats.items import LIKERT
from engine.stats.detector import detector_agreement
from engine.stats.agreement import disagreements, reliability_rows
from engine.stats.formatting import format_estimate, format_p
from engine.stats.headline import headline, llm_vs_human_rows, mixed_model_rows
from engine.stats.analysis import configured_results
from engine.stats.report import HUMANS_TITLE, LLM_TITLE, forest_svg
from engine.core.rubric import get_item
from engine.stats.spot_checks import spot_check_rows
from engine.data.store import StoreError

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
    labels = {c.key: c.label for c in configs}
    key = st.selectbox("LLM judge configuration (results of different models, prompts or parameters are never "
                       "pooled)", list(labels), format_func=lambda k: labels[k], key="agreement_config")
    config = next(c for c in configs if c.key == key)
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

rows = headline(rep)
t_head, t_rel, t_dist, t_len, t_llm, t_cal, t_dis, t_fa = st.tabs(
    ["Headline", "Full table", "Distributions", "Note length", "LLM vs humans", "Calibration", "Disagreements",
     "Structure"])
with t_head:
    av.headline(forest_svg(rows, "humans", HUMANS_TITLE), forest_svg(rows, "llm", LLM_TITLE) if rep.has_llm else None,
                [{"label": r.label, "verdict": r.verdict, "warning": r.warning, "block": r.block,
                  "secondary": r.secondary} for r in rows])
    av.spot_checks(*spot_check_rows(rep.spot_checks), rep.spot_checks_in_reference)
    if rep.notes:
        with st.expander(f"{len(rep.notes)} statistic(s) could not be computed — why"):
            st.markdown("\n".join(f"- {untrusted.md(n)}" for n in rep.notes))
    av.report_button(name, config.key if config else None, spot_ref)
    # the two stigmatizing-language items: the lexicon detector beside the raters and the LLM judge
    st.markdown("**Stigmatizing language: the detector (lexicon, no LLM) and the LLM judge against the raters**")
    store = state.store()
    det = {r.summary_id: r.item_answers for r in state.guarded(state.stigma_results, name, default=[])}
    llm_med = {}
    if config is not None:
        chosen = state.guarded(configured_results, store, name, config.key, default=None)
        llm_med = chosen.llm if chosen is not None else {}
    stig_rows = []
    for a in detector_agreement(ds, det, llm_med):
        stig_rows.append({"item": a.label, "summaries": a.n, "raters: yes": a.reference_yes,
                          "detector: yes": a.detector_yes,
                          "detector agrees": f"{a.detector_agree} of {a.n}" if a.n else "",
                          "detector κ (95% CI)": format_estimate(a.detector_kappa) if a.detector_kappa else "",
                          "LLM: yes": str(a.llm_yes) if a.llm_n else "",
                          "LLM agrees": f"{a.llm_agree} of {a.llm_n}" if a.llm_n else "",
                          "LLM κ (95% CI)": format_estimate(a.llm_kappa) if a.llm_kappa else ""})
        for n in a.notes:
            st.caption(f"{untrusted.md_inline(a.label)}: {untrusted.md(n)}")
    av.table(stig_rows, "stigma_items", "No rater answered the stigmatizing-language items.")
    st.caption("Reference: the adjudicated answer, else the raters' median (a tie of yes and no is left out). "
               "Cohen's κ with its asymptotic 95% CI. The detector finds the wording its lexicon lists; the raters "
               "judge meaning — read disagreements on the Case page's 'Stigmatizing language' tab.")
with t_rel:
    st.markdown("**ICC(3,k)** (two-way mixed, consistency, mean of k raters) with its F-based 95 % CI, on "
                "the summaries every rater scored; Krippendorff α and Gwet AC with CIs. ΔICC: the LLM as an extra "
                "rater, and replacing each human in turn (mean), with a 1000-resample bootstrap CI and two-tailed p.")
    av.table(reliability_rows(rep), "reliability")
    if rep.cronbach:
        st.caption(f"Cronbach α (items, mean human score per summary): {rep.cronbach.value:.3f} "
                   f"[{rep.cronbach.ci_low:.3f}, {rep.cronbach.ci_high:.3f}] (Feldt)")
    av.table([{"item": get_item(g.item).label, "test": g.label, "median A": g.median_a, "median B": g.median_b,
               "p": None if g.test is None else format_p(g.test.p_value)}
              for g in rep.quality_groups + rep.junior_vs_senior], "group_tests",
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
        corr = next((c for c in rep.length if c.item == item and c.y == y), None)
        rho = corr.spearman.value if corr and corr.spearman else None
        p = corr.spearman.p_value if corr and corr.spearman else None
        with col:
            fig, data = av.length_scatter(rep.per_summary, item, y, rho, p)
            av.show(fig, data, f"length_{item}_{y}")
    av.table([{"item": get_item(c.item).label, "score": c.y.replace("_", " "), "summaries": c.n,
               "Spearman ρ": None if c.spearman is None else round(c.spearman.value, 3),
               "p (ρ)": "—" if c.spearman is None else format_p(c.spearman.p_value),
               "Pearson r": None if c.pearson is None else round(c.pearson.value, 3),
               "p (r)": "—" if c.pearson is None else format_p(c.pearson.p_value)} for c in rep.length], "length",
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
        av.table(llm_vs_human_rows(rep, rows), "llm_vs_humans")
        st.markdown("**Mixed-effects model** of (LLM − human median) over the 1–5 items, random intercept per case")
        if rep.mixed_model.get("table"):
            av.table(mixed_model_rows(rep.mixed_model), "mixed_model")
        else:
            st.info(f"Not fitted: {untrusted.md(rep.mixed_model.get('error', 'unknown reason'))}")
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
                    fitted = calibration.fit_from_store(store, name, config.key, kind)
            except calibration.CalibrationRefused as exc:
                st.error(f"Calibration refused: {untrusted.md(exc)}")
            except StoreError as exc:
                state.show_store_error(exc)
            else:
                st.success(f"Stored as version {fitted.version}: {untrusted.md(fitted.label)}.")
        current = state.guarded(calibration.latest, store, name, config.key, default=None)
        if current is None:
            st.info("No calibration stored for this judge configuration yet.")
        else:
            st.caption(f"Version {current.version} · {untrusted.md(current.label)} · inputs: "
                       f"{untrusted.md(current.kind)} · fitted {untrusted.md(current.created_at)}. 'Before' is the raw "
                       "expected score, 'after' the cross-validated calibrated score; ICC(2,1) with its F-based 95% "
                       "CI, Spearman ρ and mean absolute error with case-bootstrap 95% CIs.")
            av.table(calibration.table_rows(current), "calibration")
        st.markdown("**Which score stands for each item** in triage and spot-check sampling, and how valid it is")
        av.table(state.guarded(used_scores.for_configuration, store, name, config, default=[]), "scores_used")
with t_dis:
    c1, c2, c3, c4 = st.columns(4)
    item = c1.selectbox("Item", ["all"] + LIKERT, key="dis_item",
                        format_func=lambda k: "all" if k == "all" else get_item(k).label)
    smoke = bool(config and config.smoke_test)
    exclude_smoke = st.checkbox("Exclude smoke-test results", value=False, key="dis_exclude_smoke",
                                help="Leave out the summaries whose LLM scores come from the embedded 270M "
                                     "smoke-test model: their disagreements say nothing about a real judge.")
    # one judge configuration at a time: either all of its LLM scores come from the smoke-test model, or none
    excluded = [r["summary_id"] for r in rep.per_summary] if (exclude_smoke and smoke) else []
    rows = disagreements(rep, None if item == "all" else item, exclude=excluded)
    if smoke and exclude_smoke:
        st.info(f"Every LLM score in this configuration comes from the smoke-test model "
                f"{untrusted.md_inline(config.model)}, so all {len(excluded)} summaries are excluded. Choose a "
                "configuration with a real model above, or untick 'Exclude smoke-test results'.")
    elif smoke:
        st.warning(f"**Smoke-test model:** these LLM scores come from {untrusted.md_inline(config.model)}; the "
                   "disagreements are not clinically meaningful. Tick 'Exclude smoke-test results' to leave them "
                   "out.")
    if rows:
        for r in rows:
            r["smoke-test model"] = "yes" if smoke else ""
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
    if fa.get("error"):
        st.info(f"Factor analysis not run: {untrusted.md(fa['error'])}")
    else:
        st.caption(f"KMO {fa.get('kmo', float('nan')):.3f} · method: {untrusted.md(fa.get('method', '').split(';')[0])}")
    fig, data = av.heatmap(rep.item_correlation["items"], rep.item_correlation["matrix"])
    av.show(fig, data, "item_correlations")
