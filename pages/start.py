"""Start page: what SumCheck does, where the current dataset stands, and what to do next."""
import streamlit as st

from components import start_view, state
from engine.core import untrusted
from engine.views import start as view


def main() -> None:
    st.title("SumCheck")
    start_view.what_it_does()
    name = state.dataset_picker()
    if name is None:
        st.page_link("pages/data.py", label="Import a dataset on the Data page")
        st.stop()
    v = state.guarded(view.start_view, state.store(), name, stop=True)
    st.markdown(f"#### Dataset '{untrusted.md_inline(v.name)}'")
    if v.about:
        st.info(v.about)
    start_view.status(v.tiles, v.judged)
    if v.reviewers:
        st.caption(untrusted.md(v.reviewers))
    start_view.next_steps(v.next_steps)


main()
