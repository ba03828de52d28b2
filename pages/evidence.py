"""Evidence page: omission evidence for every summary of a dataset, sortable, by generator and quality group."""
import streamlit as st

from components import evidence_view, state
from engine import untrusted
from engine.alignment import alignment_cached, combined_scores
from engine.coverage import CoverageError, CoverageParams, coverage_cached
from engine.medomit import MedOmit, MedOmitResult, dataset_rows, group_means, run_medomit
from engine.store import StoreError

st.title("Evidence")
name, ds = state.require_dataset()
store = state.store()

st.markdown("#### MED-OMIT omissions per summary")
if st.button("Run MED-OMIT on every summary", help="Resumable: finished summaries are kept."):
    loaded = state.judge_backend()
    if loaded is not None:
        backend, sha = loaded
        st.button("Cancel", help="Stops after the current summary; a new run resumes.")
        bar = st.progress(0.0)
        mo = MedOmit(backend, sha, cache=store)
        try:
            for _ in run_medomit(mo, ds, [s.summary_id for s in ds.summaries], store=store, dataset_name=name,
                                 progress=lambda d, t, sid, m: bar.progress(
                                     d / t, text=untrusted.md_inline(f"{sid}: {m} ({d}/{t})"))):
                pass
        except StoreError as exc:
            state.show_store_error(exc)
results = {sid: MedOmitResult.from_json(x)
           for sid, x in state.guarded(store.evidence_results, name, "medomit", default={}).items()}
rows = dataset_rows(ds, results)
evidence_view.render_table(rows, "Click a column header to sort. Incomplete runs have no weight.")
c1, c2 = st.columns(2)
with c1:
    st.markdown("**By generator model**")
    evidence_view.render_table(group_means(rows, "generator"))
with c2:
    st.markdown("**By quality group**")
    evidence_view.render_table(group_means(rows, "quality group"))

st.markdown("#### Embedding evidence per summary (coverage, support, citations)")
st.caption("Topic coverage (default omission method), sentence support and citation checks; computed once per "
           "summary and kept in the workspace.")
if st.button("Compute for every summary"):
    bar = st.progress(0.0)
    emb = state.embedder()
    for k, s in enumerate(ds.summaries):
        try:
            coverage_cached(store, name, ds.case(s.case_id), s, emb, CoverageParams())
            alignment_cached(store, name, ds.case(s.case_id), s, emb)
        except CoverageError as exc:
            st.warning(f"{untrusted.md(s.summary_id)}: {untrusted.md(exc)}")
        except StoreError as exc:
            state.show_store_error(exc)
            break
        bar.progress((k + 1) / len(ds.summaries), text=untrusted.md_inline(s.summary_id))
import json  # noqa: E402
from engine.alignment import result_from_dict as alignment_from  # noqa: E402
from engine.coverage import result_from_dict as coverage_from  # noqa: E402

covs = {k: coverage_from(json.loads(v))
        for k, v in state.guarded(store.evidence_results, name, "coverage:topiccov", default={}).items()}
als = {k: alignment_from(json.loads(v))
       for k, v in state.guarded(store.evidence_results, name, "alignment", default={}).items()}
combined_scores(list(als.values()))
evidence_view.render_table([
    {"summary": s.summary_id, "generator": s.generator_model or "", "quality group": s.quality_group or "",
     "omission score": covs[s.summary_id].global_score if s.summary_id in covs else None,
     "flagged": covs[s.summary_id].flagged if s.summary_id in covs else None,
     "mean support": als[s.summary_id].mean_support if s.summary_id in als else None,
     "weak sentences": sum(a.weak for a in als[s.summary_id].sentences) if s.summary_id in als else None,
     "coverage": als[s.summary_id].coverage if s.summary_id in als else None,
     "density": als[s.summary_id].density if s.summary_id in als else None,
     "combined g": als[s.summary_id].combined if s.summary_id in als else None,
     "citation issues": len(als[s.summary_id].citation_issues) if s.summary_id in als else None}
    for s in ds.summaries], "combined g = ½(z(mean support) + z(coverage)) over the summaries computed so far.")
