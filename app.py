"""SumCheck — local workbench for checking LLM-written clinical summaries (PDSQI-9).

Run with `make run` (or `streamlit run app.py`); binds to 127.0.0.1, sends no usage statistics.
"""
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import streamlit as st  # noqa: E402

st.session_state["_sumcheck_app_ran"] = True  # components.state.APP_RAN: pages reached through this navigation

from components import jobs_view, state, uploads  # noqa: E402
from engine.core import untrusted
from engine.data import StoreError  # noqa: E402
from engine.views.runs import cancel_run, running_runs  # noqa: E402

# A local file, served by this server: a ":material/…:" page icon would make the browser fetch the favicon from a
# font CDN on every page load.
ICON = Path(__file__).resolve().parent / "assets" / "favicon.png"
st.set_page_config(page_title="SumCheck · clinical summary workbench", page_icon=str(ICON), layout="wide")
uploads.sweep_once()  # upload copies a killed server left in the temp folder

pages = {
    "Start": [st.Page("pages/start.py", title="Start", icon=":material/home:", default=True)],
    "Review": [st.Page("pages/case.py", title="Case", icon=":material/description:"),
               st.Page("pages/judge.py", title="Judge", icon=":material/gavel:"),
               st.Page("pages/evidence.py", title="Evidence", icon=":material/troubleshoot:"),
               st.Page("pages/agreement.py", title="Agreement", icon=":material/query_stats:"),
               st.Page("pages/review.py", title="Spot-check", icon=":material/rate_review:")],
    "Setup": [st.Page("pages/data.py", title="Data", icon=":material/database:"),
              st.Page("pages/settings.py", title="Settings", icon=":material/settings:"),
              st.Page("pages/models.py", title="Get a model", icon=":material/download:"),
              st.Page("pages/lexicon.py", title="Lexicon", icon=":material/spellcheck:")],
}
nav = st.navigation(pages)
asked = st.query_params.get(state.PAGE_PARAM)
if asked is not None:  # a page reached before this navigation existed (see components.state): open it here
    del st.query_params[state.PAGE_PARAM]
    target = next((p for group in pages.values() for p in group if p.url_path == asked), None)
    if target is not None and target.url_path != nav.url_path:
        st.switch_page(target, query_params=st.query_params.to_dict())  # the selection in the link is kept
try:
    state.store()  # opens the workspace once and imports the sample dataset on first run
except Exception as exc:  # a broken workspace path must not take the whole app down
    st.error(f"The workspace could not be opened: {untrusted.md(exc)}. Fix the path on the Settings page, or "
             "retry in a moment if it is busy.")
st.sidebar.caption("Offline workbench · data stays on this machine")
with st.sidebar:  # every page: the long work running in this workspace, from any window or command
    jobs_view.other_runs(lambda: running_runs(state.store()), lambda job_id: cancel_run(state.store(), job_id),
                         key="runs_sidebar", title="Running now", include_mine=True)
try:
    nav.run()
except StoreError as exc:  # the last line of defence: a page hit a busy / broken workspace outside its own guards
    state.show_store_error(exc)
