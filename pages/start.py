"""Start page: what SumCheck does, where the current dataset stands, and what to do next."""
import streamlit as st

from components import start_view, state
from engine.core import untrusted
from engine.sample import SAMPLE_ABOUT, SAMPLE_NAME
from engine.status import dataset_status

st.title("SumCheck")
start_view.what_it_does()
name = state.dataset_picker()
if name is None:
    st.page_link("pages/data.py", label="Import a dataset on the Data page")
    st.stop()
s = state.guarded(dataset_status, state.store(), name, stop=True)
st.markdown(f"#### Dataset '{untrusted.md_inline(name)}'")
if name == SAMPLE_NAME:
    st.info(SAMPLE_ABOUT)
start_view.status(
    [[("cases", str(s.cases)), ("summaries", str(s.summaries)), ("raters", str(s.raters))],
     [("evidence", f"{min(s.coverage, s.support)} of {s.summaries}"),
      ("claims verified", f"{s.verified} of {s.summaries}"), ("MED-OMIT", f"{s.medomit} of {s.summaries}"),
      ("spot-checked", f"{s.spot_checked} of {s.summaries}")]],
    [{"judge model": j.model + (" (smoke-test model)" if j.smoke_test else ""), "samples": j.samples,
      "summaries judged": f"{j.summaries} of {s.summaries}", "last judged (UTC)": j.judged_at,
      "configuration": j.key} for j in s.judged])
if s.reviewers:
    st.caption(f"Spot checks by {untrusted.md(', '.join(s.reviewers))} · {s.adjudicated} summaries adjudicated")
start_view.next_steps([{"text": n.text, "page": n.page, "command": n.command} for n in s.next_steps])
