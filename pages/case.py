"""Case page: pick a case, read its notes, the summary with its citations, and the rater scores."""
import streamlit as st

from components import case_view, evidence_view, state
from engine.backends import BackendError
from engine.medomit import MedOmit, MedOmitResult, omitted_fact_rows, run_medomit
from engine.ratings import display_table

st.title("Case")
name = state.dataset_picker()
if name is None:
    st.stop()
try:
    ds = state.dataset(name)
except Exception as exc:  # engine raises; the page reports and keeps running
    st.error(f"Could not load dataset {name!r}: {exc}")
    st.stop()
if not ds.cases:
    st.info("This dataset has no cases.")
    st.stop()

case_ids = [c.case_id for c in ds.cases]
default = st.session_state.get("case_id")
case_id = st.sidebar.selectbox("Case", case_ids, index=case_ids.index(default) if default in case_ids else 0)
st.session_state["case_id"] = case_id
case = ds.case(case_id)
summaries = ds.summaries_for(case_id)

st.subheader(f"{case.case_id} — for {case.target_specialty}")
st.caption(f"{len(case.notes)} notes, {case.word_count} words · {len(summaries)} summaries")

left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown("#### Source notes")
    case_view.render_notes([n.__dict__ for n in case.notes])
with right:
    st.markdown("#### Summary")
    if not summaries:
        st.info("No summary for this case.")
        st.stop()
    sids = [s.summary_id for s in summaries]
    sid = st.radio("Summary", sids, horizontal=True, label_visibility="collapsed")
    s = ds.summary(sid)
    case_view.render_summary(s.text, [n.note_id for n in case.notes],
                             {"generator": s.generator_model, "quality group": s.quality_group,
                              "prompt": s.prompt_variant})

st.markdown("#### Rater scores (PDSQI-9)")
case_view.render_score_table(display_table(ds.ratings_for(sid)))

st.markdown("#### Evidence")
(tab_medomit,) = st.tabs(["Omitted facts (MED-OMIT)"])
with tab_medomit:
    store = state.store()
    stored = store.evidence_results(name, "medomit").get(sid)
    res = MedOmitResult.from_json(stored) if stored else None
    if st.button("Run MED-OMIT on this summary", help="Facts, DDx, importance and clusters are shared by the "
                 "case's summaries and cached; with the embedded smoke-test model the output is not meaningful."):
        cfg = state.settings()
        try:
            backend, sha = state.judge_backend(cfg.model_path, cfg.n_ctx, cfg.n_threads, cfg.n_gpu_layers)
        except BackendError as exc:
            st.error(f"The model could not be loaded: {exc}")
        else:
            with st.status("Running MED-OMIT…", expanded=True) as box:
                mo = MedOmit(backend, sha, cache=store)
                for res in run_medomit(mo, ds, [sid], store=store, dataset_name=name,
                                       progress=lambda d, t, s_, m: box.write(m)):
                    pass
                box.update(label=f"MED-OMIT {res.status}", state="complete" if res.status == "complete" else "error")
    if res is None:
        st.info("MED-OMIT has not been run on this summary yet.")
    else:
        if res.status != "complete":
            st.warning(f"Incomplete: step **{res.failed_step}** failed — {res.reason}. Nothing was invented for the "
                       "missing steps; what was found before the failure is shown below.")
            raw = next((x.raw for x in res.steps if not x.ok and x.raw), "")
            if raw:
                with st.expander("Raw reply of the failed step"):
                    st.code(raw)
        evidence_view.render_medomit_summary(res.document_weight, res.omission_count,
                                             res.ddx_comparison.difference if res.ddx_comparison else None,
                                             len(res.facts))
        rows = omitted_fact_rows(res)
        if rows:
            labels = [f"[{r['weight']:.2g}] {r['fact_id']} · {r['text'][:90]}" for r in rows]
            pick = st.radio("Omitted facts, heaviest first (select one to see it in its note)", labels)
            row = rows[labels.index(pick)]
            note_text = case.note(row["note_id"]).text if row["note_id"] else None
            evidence_view.render_fact_detail(row, note_text)
            st.caption(f"Document weight {res.document_weight:.2f} = sum of the {len(rows)} listed weights.")
        elif res.status == "complete":
            st.success("No omitted fact found.")
        with st.expander(f"Differential diagnosis ({len(res.ddx)}) and clusters ({len(res.clusters)})"):
            evidence_view.render_table([{"rank": d.rank, "diagnosis": d.name, "likelihood": d.likelihood,
                                         "reason": d.reason} for d in res.ddx])
            evidence_view.render_table([{"diagnosis": c.diagnosis, "polarity": c.polarity, "mechanism": c.mechanism,
                                         "facts": ", ".join(c.fact_ids)} for c in res.clusters])
            if res.ddx_comparison:
                st.caption("Missing from the summary's DDx: "
                           + (", ".join(res.ddx_comparison.missing_from_summary) or "none"))
        with st.expander(f"All extracted facts ({len(res.facts)})"):
            evidence_view.render_table([{"fact": f.fact_id, "text": f.text, "note": f.note_id, "link": f.link}
                                        for f in res.facts])
