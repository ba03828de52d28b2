"""SumCheck — local workbench for checking LLM-written clinical summaries (PDSQI-9).

Run with `make run` (or `streamlit run app.py`); binds to 127.0.0.1, sends no usage statistics.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import streamlit as st  # noqa: E402

from components import state  # noqa: E402

st.set_page_config(page_title="SumCheck · clinical summary workbench", page_icon=":material/stethoscope:", layout="wide")

pages = {
    "Review": [st.Page("pages/case.py", title="Case", icon=":material/description:", default=True),
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
    st.error(f"The workspace could not be opened: {exc}. Fix the path on the Settings page.")
st.sidebar.caption("Offline workbench · data stays on this machine")
nav.run()
