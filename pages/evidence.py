"""Evidence page: omission evidence for every summary of a dataset, sortable, by generator and quality group."""

import streamlit as st

from components import evidence_view, jobs_view, state
from engine.core import untrusted
from engine.views import evidence as view


def _medomit(store, name: str, ds):
    """MED-OMIT over every summary (a background job) and its panel."""
    st.markdown("#### MED-OMIT omissions per summary")
    busy = jobs_view.running("medomit_all")
    if st.button("Run MED-OMIT on every summary", help="Resumable: finished summaries and steps are kept.",
                 disabled=busy):
        loaded = state.judge_backend()
        if loaded is not None:
            jobs_view.start("medomit_all", view.medomit_all_job(loaded, store, ds, name, state.embedder(),
                                                                state.medomit_facts()))
    jobs_view.panel("medomit_all", on_finish=lambda job: state.bump_data_version())


def _medomit_tables(v) -> None:
    rows = v.medomit_rows
    if v.medomit_smoke_tests:
        evidence_view.smoke_badge(v.medomit_smoke_model, f"MED-OMIT figures ({v.medomit_smoke_tests} of "
                                                            f"{v.medomit_results} results)")
    if not v.medomit_results:
        st.info("No MED-OMIT result for this dataset yet. Press 'Run MED-OMIT on every summary' to extract the notes' "
                "facts and weigh the ones each summary leaves out (needs the judge model; resumable), or run it on one "
                "summary from the Case page.")
    evidence_view.render_table(rows, "MED-OMIT weight = sum of the omitted facts' scores; omitted facts = how many "
                               "facts from the notes are missing; facts not found in the notes are never counted; "
                               "'left out, all other summaries state' = omitted facts that every other summary of the "
                               "case states (decided on the same facts by the same model; empty without one). "
                               "'smoke-test model' = yes: computed with the embedded 270M model, not clinically "
                               "meaningful. Incomplete runs have no weight.", key="medomit_per_summary")
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**By generator model**")
        evidence_view.render_table(v.medomit_by_group["generator"], key="medomit_by_generator",
                                   empty="No MED-OMIT weight yet.")
    with c2:
        st.markdown("**By quality group**")
        evidence_view.render_table(v.medomit_by_group["quality group"], key="medomit_by_quality_group",
                                   empty="No MED-OMIT weight yet.")
    for sentence in v.disagreement.values():
        st.warning(sentence)


def _embedding(store, name: str, ds, v) -> None:
    st.markdown("#### Embedding evidence per summary (coverage, support, citations)")
    st.caption("Unit coverage (the default omission method), sentence support and citation checks; computed once per "
               "summary and kept in the workspace.")
    if st.button("Compute for every summary", disabled=jobs_view.running("evidence_all"),
                 help="Offline; each summary is computed once and kept in the workspace (a new run resumes)."):
        jobs_view.start("evidence_all", view.evidence_all_job(store, name, ds,
                                                              state.embedder()))  # loaded here, in the page's thread
    jobs_view.panel("evidence_all", on_finish=lambda job: state.bump_data_version())

    emb_rows = v.embedding_rows
    if not v.has_embedding:
        st.info("No embedding evidence for this dataset yet. Press 'Compute for every summary' to compute topic "
                "coverage (omission score), sentence support and citation checks for every summary; it runs offline "
                "and is kept in the workspace.")
    else:
        evidence_view.render_table(emb_rows, "combined g = ½(z(mean support) + z(coverage)) over the summaries "
                                   "computed so far. Blank cells: not computed for that summary yet.",
                                   key="embedding_evidence")
    with st.expander("What the columns mean"):
        st.markdown(evidence_view.explain_columns(
            ["omission score", "flagged", "note flags", "mean support", "weak sentences", "coverage", "density",
             "combined g", "citation issues", "unsupported claims", "lowest P(supported)", "MED-OMIT weight",
             "omitted facts", "left out, all other summaries state", "not found in the notes", "smoke-test model"]))


def _chart(v) -> None:
    st.markdown("#### By generator and quality group")
    chart_rows = v.chart_rows
    by = st.radio("Group by", ["generator", "quality group"], horizontal=True, key="evidence_chart_by")
    fig, data = evidence_view.group_chart(v.chart(by), by, view.CHART_METRICS)
    if fig is None:
        st.info("Nothing to chart yet: compute the embedding evidence or run MED-OMIT first.")
    else:
        st.plotly_chart(fig, width="stretch", key="chart_evidence_groups",
                        config={"displaylogo": False, "toImageButtonOptions": {"filename": "evidence_groups"}})
        st.caption("Mean omission score (higher = less of the notes covered), mean support (higher = better backed) "
                   "and mean MED-OMIT weight (higher = more pertinent facts left out) per group."
                   + (" MED-OMIT weights include smoke-test results: not clinically meaningful."
                      if v.medomit_smoke_tests else ""))
        st.download_button("Download chart data (CSV)", untrusted.dataframe_csv(data),
                           untrusted.filename(f"evidence_by_{by}", ".csv"), "text/csv", key="dl_evidence_chart")


def _stigma(v) -> None:
    st.markdown("#### Stigmatizing language")
    st.caption("The lexicon detector (no LLM): which summaries carry stigmatizing language forward from the notes and "
               "which introduce it, per generator and quality group. Details per summary on the Case page's "
               "'Stigmatizing language' tab.")
    stig_rows = v.stigma_rows
    if v.lexicon_version:
        st.caption(f"Lexicon version {untrusted.md_inline(v.lexicon_version)}.")
    evidence_view.render_table(stig_rows, key="stigma_per_summary", empty="No summary to check.")


    if stig_rows:
        c1, c2 = st.columns(2)
        with c1:
            st.markdown("**By generator model**")
            evidence_view.render_table(v.stigma_by_group["generator"], key="stigma_by_generator")
        with c2:
            st.markdown("**By quality group**")
            evidence_view.render_table(v.stigma_by_group["quality group"], key="stigma_by_quality_group")


def main() -> None:
    st.title("Evidence")
    name, ds = state.require_dataset()
    store = state.store()
    st.caption("Where each summary may leave something out or say something the notes do not back, for every summary "
               "of the dataset. Hover a column header for what it means; click it to sort. Blank cells: not computed "
               "yet (or the run was incomplete).")

    # ------------------------------------------------------------------------------------------------- MED-OMIT
    _medomit(store, name, ds)
    v = state.guarded(view.evidence_page_view, store, name, ds, stop=True)
    _medomit_tables(v)
    _embedding(store, name, ds, v)
    _chart(v)
    _stigma(v)


main()
