"""Settings page: judge model (embedded or a GGUF path), llama.cpp parameters, workspace path."""
import os

import streamlit as st

from components import state
from engine import untrusted
from engine.modelfiles import EMBEDDED_MODEL_LABEL, ModelError, resolve_model_path
from engine.settings import AppSettings, SettingsError, default_workspace_path, save_settings, workspace_path, ENV_WORKSPACE

st.title("Settings")
cur = state.settings()

st.markdown("#### Judge model")
use_embedded = st.radio("Model", ["Embedded default", "GGUF file"], index=0 if not cur.model_path else 1,
                        horizontal=True) == "Embedded default"
if use_embedded:
    st.warning(f"The embedded model is **{EMBEDDED_MODEL_LABEL}**: a smoke-test-sized model that proves the "
               "pipeline works end to end. Its scores are not clinically meaningful. For real evaluations point to "
               "a real GGUF, e.g. Llama 3.1 8B Instruct Q4_K_M.")
    model_path = ""
else:
    model_path = st.text_input("Path to a .gguf file", value=cur.model_path,
                               placeholder="/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf")
c1, c2, c3 = st.columns(3)
n_ctx = c1.number_input("Context size (tokens)", 512, 1_048_576, int(cur.n_ctx), step=512)
n_threads = c2.number_input("CPU threads (0 = automatic)", 0, 256, int(cur.n_threads))
n_gpu = c3.number_input("GPU layers (0 = CPU, -1 = all)", -1, 1000, int(cur.n_gpu_layers))

st.markdown("#### Workspace")
ws = st.text_input("Workspace file (SQLite)", value=cur.workspace_path,
                   placeholder=str(default_workspace_path()))
st.caption(f"In use now: {untrusted.md(state.workspace_label())}"
           + (f" (set by the environment variable {ENV_WORKSPACE}, which overrides this setting)"
              if ENV_WORKSPACE in os.environ else ""))

if st.button("Save settings", type="primary"):
    new = AppSettings(model_path=model_path.strip(), n_ctx=int(n_ctx), n_threads=int(n_threads),
                      n_gpu_layers=int(n_gpu), workspace_path=ws.strip())
    try:
        path = save_settings(new)
    except SettingsError as exc:
        st.error(f"Not saved: {untrusted.md(exc)}")
    else:
        state.bump_data_version()
        st.success(f"Saved to {untrusted.md(path)}. Workspace: {untrusted.md(workspace_path(new))}")

with st.expander("Check the model file"):
    if st.button("Locate model"):
        try:
            p = resolve_model_path(model_path.strip())
        except ModelError as exc:
            st.error(untrusted.md(exc))
        else:
            st.success(f"Model file: {untrusted.md(p)} ({p.stat().st_size / 1e6:.0f} MB)")
