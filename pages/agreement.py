"""Agreement page: humans vs the LLM judge — distributions, reliability with CIs, length effects, disagreements."""
import streamlit as st

from components import agreement_view as av, state
from engine import untrusted
from engine.agreement import LIKERT, disagreements, reliability_rows

st.title("Agreement")
name, ds = state.require_dataset()
try:
    rep = state.agreement(name)
except Exception as exc:  # the engine raises; the page reports and keeps running
    st.error(f"The statistics could not be computed: {untrusted.md(exc)}")
    st.stop()
if not rep.has_llm:
    st.info("No LLM judge results for this dataset yet: the figures below are for the human raters only. Run the "
            "judge on the Judge page to compare.")
st.caption(f"{rep.n_summaries} summaries · raters: {untrusted.md(', '.join(rep.raters))} · "
           f"computed in {rep.seconds:.1f} s "
           "(cached until the data change)")

t_rel, t_dist, t_len, t_llm, t_dis, t_fa = st.tabs(["Reliability", "Distributions", "Note length", "LLM vs humans",
                                                     "Disagreements", "Structure"])
with t_rel:
    st.markdown("Headline: **ICC(3,k)** (two-way mixed, consistency, mean of k raters) with its F-based 95 % CI, on "
                "the summaries every rater scored. ΔICC: the LLM as an extra rater, and replacing each human in turn "
                "(mean), with 1000-resample bootstrap CI and two-tailed p.")
    av.table(reliability_rows(rep))
    if rep.cronbach:
        st.caption(f"Cronbach α (items, mean human score per summary): {rep.cronbach.value:.3f} "
                   f"[{rep.cronbach.ci_low:.3f}, {rep.cronbach.ci_high:.3f}] (Feldt)")
    av.table([{"item": g.item, "test": g.label, "median A": g.median_a, "median B": g.median_b,
               "p": None if g.test is None else round(g.test.p_value, 4)} for g in rep.quality_groups + rep.junior_vs_senior])
with t_dist:
    fig, data = av.distributions(rep.per_summary, LIKERT)
    av.show(fig, data, "distributions")
with t_len:
    item = st.selectbox("Item", LIKERT, index=LIKERT.index("thorough"), key="len_item")
    c1, c2 = st.columns(2)
    for col, y in ((c1, "human_mean"), (c2, "human_sd")):
        corr = next((c for c in rep.length if c.item == item and c.y == y), None)
        rho = corr.spearman.value if corr and corr.spearman else None
        p = corr.spearman.p_value if corr and corr.spearman else None
        with col:
            fig, data = av.length_scatter(rep.per_summary, item, y, rho, p)
            av.show(fig, data, f"length_{item}_{y}")
    av.table([{"item": c.item, "y": c.y, "n": c.n,
               "Spearman ρ": None if c.spearman is None else round(c.spearman.value, 3),
               "p (ρ)": None if c.spearman is None else round(c.spearman.p_value, 4),
               "Pearson r": None if c.pearson is None else round(c.pearson.value, 3),
               "p (r)": None if c.pearson is None else round(c.pearson.p_value, 4)} for c in rep.length])
with t_llm:
    if not rep.has_llm:
        st.info("Needs LLM judge results.")
    else:
        item = st.selectbox("Item", LIKERT, key="llm_item")
        c1, c2 = st.columns(2)
        with c1:
            fig, data = av.bland_altman(rep.per_summary, item)
            av.show(fig, data, f"bland_altman_{item}")
        with c2:
            fig, data = av.confusion(rep.per_summary, item)
            av.show(fig, data, f"confusion_{item}")
        st.markdown("**Mixed-effects model** of (LLM − human median)")
        st.json(rep.mixed_model)
with t_dis:
    c1, c2, c3, c4 = st.columns(4)
    item = c1.selectbox("Item", ["all"] + LIKERT, key="dis_item")
    rows = disagreements(rep, None if item == "all" else item)
    for col, key in ((c2, "specialty"), (c3, "generator"), (c4, "quality_group")):
        opts = sorted({r[key] for r in rows})
        pick = col.multiselect(key.replace("_", " "), opts, key=f"dis_{key}")
        if pick:
            rows = [r for r in rows if r[key] in pick]
    av.table(rows)
    if rows:
        target = st.selectbox("Open a summary", [r["summary_id"] for r in rows], key="dis_open")
        if st.button("Open in the Case page"):
            st.session_state["case_id"] = next(r["case_id"] for r in rows if r["summary_id"] == target)
            st.session_state["summary_pick"] = target
            st.switch_page("pages/case.py")
        if st.button("Spot-check / adjudicate this summary"):
            st.session_state["case_id"] = next(r["case_id"] for r in rows if r["summary_id"] == target)
            st.session_state["summary_pick"] = target
            st.switch_page("pages/review.py")
with t_fa:
    fa = rep.factor_analysis
    if fa.get("eigenvalues"):
        fig, data = av.scree(fa["eigenvalues"])
        av.show(fig, data, "scree")
    st.caption(f"KMO {fa.get('kmo', float('nan')):.3f} · {untrusted.md(fa.get('method', fa.get('error', '')))}")
    fig, data = av.heatmap(rep.item_correlation["items"], rep.item_correlation["matrix"])
    av.show(fig, data, "item_correlations")
