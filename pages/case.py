"""Case page: pick a case, read its notes, the summary with its citations, and the rater scores."""
import streamlit as st

from components import case_view, state
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
