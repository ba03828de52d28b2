"""Evidence page: omission evidence for every summary of a dataset, sortable, by generator and quality group."""

import streamlit as st

from components import evidence_view, jobs_view, state
from engine.core import untrusted
from engine.evidence.alignment import combined_scores
from engine.evidence.batch import evidence_job
from engine.evidence.coverage import DEFAULT_METHOD
from engine.evidence.kinds import stored_results
from engine.evidence.omission_flags import describe, omission_flags
from engine.evidence.medomit import MedOmit, medomit_job
from engine.evidence.medomit_rows import dataset_rows, group_means

st.title("Evidence")
name, ds = state.require_dataset()
store = state.store()
st.caption("Where each summary may leave something out or say something the notes do not back, for every summary "
           "of the dataset. Hover a column header for what it means; click it to sort. Blank cells: not computed "
           "yet (or the run was incomplete).")

# ------------------------------------------------------------------------------------------------- MED-OMIT
st.markdown("#### MED-OMIT omissions per summary")
busy = jobs_view.running("medomit_all")
if st.button("Run MED-OMIT on every summary", help="Resumable: finished summaries and steps are kept.", disabled=busy):
    loaded = state.judge_backend()
    if loaded is not None:
        backend, sha = loaded
        mo = MedOmit(backend, sha, cache=store, embedder=state.embedder())
        jobs_view.start("medomit_all", medomit_job(mo, ds,
                                                   [s.summary_id for s in ds.summaries], store=store,
                                                   dataset_name=name))
jobs_view.panel("medomit_all", on_finish=lambda job: state.bump_data_version())
results = state.guarded(stored_results, store, name, "medomit", default={})
rows = dataset_rows(ds, results)
for r in rows:
    r["smoke-test model"] = "yes" if r["smoke-test model"] else ""
smoke = [r for r in results.values() if r.smoke_test]
if smoke:
    model = smoke[0].provenance.get("model_file") or smoke[0].provenance.get("model") or "embedded model"
    evidence_view.smoke_badge(model, f"MED-OMIT figures ({len(smoke)} of {len(results)} results)")
if not results:
    st.info("No MED-OMIT result for this dataset yet. Press 'Run MED-OMIT on every summary' to extract the notes' "
            "facts and weigh the ones each summary leaves out (needs the judge model; resumable), or run it on one "
            "summary from the Case page.")
evidence_view.render_table(rows, "MED-OMIT weight = sum of the omitted facts' scores; omitted facts = how many "
                           "facts from the notes are missing; facts not found in the notes are never counted. "
                           "'smoke-test model' = yes: computed with the embedded 270M model, not clinically "
                           "meaningful. Incomplete runs have no weight.", key="medomit_per_summary")
c1, c2 = st.columns(2)
with c1:
    st.markdown("**By generator model**")
    evidence_view.render_table(group_means(rows, "generator"), key="medomit_by_generator",
                               empty="No MED-OMIT weight yet.")
with c2:
    st.markdown("**By quality group**")
    evidence_view.render_table(group_means(rows, "quality group"), key="medomit_by_quality_group",
                               empty="No MED-OMIT weight yet.")

# ------------------------------------------------------------------------------------------------- embeddings
st.markdown("#### Embedding evidence per summary (coverage, support, citations)")
st.caption("Unit coverage (the default omission method), sentence support and citation checks; computed once per "
           "summary and kept in the workspace.")
if st.button("Compute for every summary", disabled=jobs_view.running("evidence_all"),
             help="Offline; each summary is computed once and kept in the workspace (a new run resumes)."):
    jobs_view.start("evidence_all", evidence_job(store, name, ds, [s.summary_id for s in ds.summaries],
                                                 state.embedder()))  # loaded here, in the page's thread
jobs_view.panel("evidence_all", on_finish=lambda job: state.bump_data_version())

covs = state.guarded(stored_results, store, name, f"coverage:{DEFAULT_METHOD}", default={})
als = state.guarded(stored_results, store, name, "alignment", default={})
ver = state.guarded(stored_results, store, name, "verification", default={})
combined_scores(list(als.values()))
emb_rows = [
    {"summary": s.summary_id, "generator": s.generator_model or "", "quality group": s.quality_group or "",
     "omission score": covs[s.summary_id].global_score if s.summary_id in covs else None,
     "flagged": covs[s.summary_id].flagged if s.summary_id in covs else None,
     "note flags": describe(omission_flags(ds.case(s.case_id), s.text, covs[s.summary_id].units,
                                           covs[s.summary_id].threshold, ds.citation_style()))
     if s.summary_id in covs else None,
     "mean support": als[s.summary_id].mean_support if s.summary_id in als else None,
     "weak sentences": sum(a.weak for a in als[s.summary_id].sentences) if s.summary_id in als else None,
     "coverage": als[s.summary_id].coverage if s.summary_id in als else None,
     "density": als[s.summary_id].density if s.summary_id in als else None,
     "combined g": als[s.summary_id].combined if s.summary_id in als else None,
     "citation issues": len(als[s.summary_id].citation_issues) if s.summary_id in als else None,
     "unsupported claims": len(ver[s.summary_id].unsupported_claims) if s.summary_id in ver else None,
     "lowest P(supported)": ver[s.summary_id].lowest_p if s.summary_id in ver else None}
    for s in ds.summaries]
if not covs and not als:
    st.info("No embedding evidence for this dataset yet. Press 'Compute for every summary' to compute topic "
            "coverage (omission score), sentence support and citation checks for every summary; it runs offline "
            "and is kept in the workspace.")
else:
    evidence_view.render_table(emb_rows, "combined g = ½(z(mean support) + z(coverage)) over the summaries "
                               "computed so far. Blank cells: not computed for that summary yet.",
                               key="embedding_evidence")
with st.expander("What the columns mean"):
    st.markdown(evidence_view.explain_columns(
        ["omission score", "flagged", "note flags", "mean support", "weak sentences", "coverage", "density", "combined g",
         "citation issues", "unsupported claims", "lowest P(supported)", "MED-OMIT weight", "omitted facts", "not found in the notes", "smoke-test model"]))

# ------------------------------------------------------------------------------------------------- chart
st.markdown("#### By generator and quality group")
weights = {r["summary"]: r["MED-OMIT weight"] for r in rows}
chart_rows = [{**r, "MED-OMIT weight": weights.get(r["summary"])} for r in emb_rows]
by = st.radio("Group by", ["generator", "quality group"], horizontal=True, key="evidence_chart_by")
fig, data = evidence_view.group_chart(chart_rows, by, ["omission score", "mean support", "MED-OMIT weight"])
if fig is None:
    st.info("Nothing to chart yet: compute the embedding evidence or run MED-OMIT first.")
else:
    st.plotly_chart(fig, width="stretch", key="chart_evidence_groups",
                    config={"displaylogo": False, "toImageButtonOptions": {"filename": "evidence_groups"}})
    st.caption("Mean omission score (higher = less of the notes covered), mean support (higher = better backed) "
               "and mean MED-OMIT weight (higher = more pertinent facts left out) per group."
               + (" MED-OMIT weights include smoke-test results: not clinically meaningful." if smoke else ""))
    st.download_button("Download chart data (CSV)", untrusted.dataframe_csv(data),
                       untrusted.filename(f"evidence_by_{by}", ".csv"), "text/csv", key="dl_evidence_chart")

# ------------------------------------------------------------------------------------------------- stigma
st.markdown("#### Stigmatizing language")
st.caption("The lexicon detector (no LLM): which summaries carry stigmatizing language forward from the notes and "
           "which introduce it, per generator and quality group. Details per summary on the Case page's "
           "'Stigmatizing language' tab.")
stig = state.guarded(state.stigma_results, name, default=[])
stig_rows = [{"summary": r.summary_id, "generator": ds.summary(r.summary_id).generator_model or "",
              "quality group": ds.summary(r.summary_id).quality_group or "",
              "notes stigmatizing": "yes" if r.notes_have_stigma else "no",
              "summary stigmatizing": "yes" if r.summary_has_stigma else "no",
              "carried forward": len(r.carried), "introduced": len(r.introduced),
              "terms": ", ".join(sorted({h.hit.text.lower() for h in r.summary_hits}))} for r in stig]
if stig:
    st.caption(f"Lexicon version {untrusted.md_inline(stig[0].lexicon_version)}.")
evidence_view.render_table(stig_rows, key="stigma_per_summary", empty="No summary to check.")


def _rates(rows: list[dict], by: str) -> list[dict]:
    out = []
    for g in sorted({r[by] for r in rows}):
        grp = [r for r in rows if r[by] == g]
        out.append({by: g or "(none)", "summaries": len(grp),
                    "with stigmatizing language": f"{sum(r['summary stigmatizing'] == 'yes' for r in grp)} "
                                                  f"({sum(r['summary stigmatizing'] == 'yes' for r in grp) / len(grp):.0%})",
                    "introducing it": f"{sum(r['introduced'] > 0 for r in grp)} "
                                      f"({sum(r['introduced'] > 0 for r in grp) / len(grp):.0%})",
                    "carrying it forward": f"{sum(r['carried forward'] > 0 for r in grp)} "
                                           f"({sum(r['carried forward'] > 0 for r in grp) / len(grp):.0%})"})
    return out


if stig_rows:
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**By generator model**")
        evidence_view.render_table(_rates(stig_rows, "generator"), key="stigma_by_generator")
    with c2:
        st.markdown("**By quality group**")
        evidence_view.render_table(_rates(stig_rows, "quality group"), key="stigma_by_quality_group")
