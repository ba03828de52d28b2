"""SumCheck — local workbench for checking LLM-written clinical summaries (PDSQI-9).

Run with `make run` (or `streamlit run app.py`); binds to 127.0.0.1, sends no usage statistics.
"""
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import streamlit as st  # noqa: E402

from components import state, uploads  # noqa: E402
from engine import untrusted  # noqa: E402
from engine.store import StoreError  # noqa: E402

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
              st.Page("pages/settings.py", title="Settings", icon=":material/settings:")],
}
nav = st.navigation(pages)
try:
    state.store()  # opens the workspace once and imports the sample dataset on first run
except Exception as exc:  # a broken workspace path must not take the whole app down
    st.error(f"The workspace could not be opened: {untrusted.md(exc)}. Fix the path on the Settings page, or "
             "retry in a moment if it is busy.")
st.sidebar.caption("Offline workbench · data stays on this machine")
try:
    nav.run()
except StoreError as exc:  # the last line of defence: a page hit a busy / broken workspace outside its own guards
    state.show_store_error(exc)
