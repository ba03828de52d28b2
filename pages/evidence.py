"""Evidence page: omission evidence for every summary of a dataset, sortable, by generator and quality group."""
import streamlit as st

from components import evidence_view, state
from engine.backends import BackendError
from engine.medomit import MedOmit, MedOmitResult, dataset_rows, group_means, run_medomit

st.title("Evidence")
name = state.dataset_picker()
if name is None:
    st.stop()
try:
    ds = state.dataset(name)
except Exception as exc:
    st.error(f"Could not load dataset {name!r}: {exc}")
    st.stop()
store = state.store()

st.markdown("#### MED-OMIT omissions per summary")
if st.button("Run MED-OMIT on every summary", help="Resumable: finished summaries are kept."):
    cfg = state.settings()
    try:
        backend, sha = state.judge_backend(cfg.model_path, cfg.n_ctx, cfg.n_threads, cfg.n_gpu_layers)
    except BackendError as exc:
        st.error(f"The model could not be loaded: {exc}")
    else:
        st.button("Cancel", help="Stops after the current summary; a new run resumes.")
        bar = st.progress(0.0)
        mo = MedOmit(backend, sha, cache=store)
        for _ in run_medomit(mo, ds, [s.summary_id for s in ds.summaries], store=store, dataset_name=name,
                             progress=lambda d, t, sid, m: bar.progress(d / t, text=f"{sid}: {m} ({d}/{t})")):
            pass
results = {sid: MedOmitResult.from_json(x) for sid, x in store.evidence_results(name, "medomit").items()}
rows = dataset_rows(ds, results)
evidence_view.render_table(rows, "Click a column header to sort. Incomplete runs have no weight.")
c1, c2 = st.columns(2)
with c1:
    st.markdown("**By generator model**")
    evidence_view.render_table(group_means(rows, "generator"))
with c2:
    st.markdown("**By quality group**")
    evidence_view.render_table(group_means(rows, "quality group"))
