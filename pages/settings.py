"""Settings page: the judge model source (embedded, a GGUF file, a model Ollama or LM Studio keeps on this machine,
or an OpenAI-compatible server), llama.cpp parameters and the workspace path. Downloading a model is on the "Get a
model" page (pages/models.py), the clinician lexicon entries on the "Lexicon" page (pages/lexicon.py)."""
import streamlit as st

from components import settings_view, state
from engine.core import untrusted
from engine.views import settings as view

md = untrusted.md
ss = st.session_state
SOURCE_BY_LABEL = {label: key for key, label in view.SOURCE_LABELS.items()}


def _first_values(cur) -> None:
    """Widgets take their first values from the saved settings and keep the user's edits across reruns."""
    ss.setdefault("set_source", view.SOURCE_LABELS[cur.source])
    ss.setdefault("set_gguf_path", cur.model_path if cur.source == view.SOURCE_GGUF else "")
    ss.setdefault("set_server_url", cur.server_url)
    ss.setdefault("set_server_model", cur.server_model)
    ss.setdefault("set_api_key", "")  # never filled from the saved key: it is not sent back to the browser
    ss.setdefault("set_concurrency", int(cur.concurrency))
    ss.setdefault("set_n_ctx", int(cur.n_ctx))
    ss.setdefault("set_threads", int(cur.n_threads))
    ss.setdefault("set_gpu", int(cur.n_gpu_layers))
    ss.setdefault("set_ws", cur.workspace_path)


def _api_key() -> str:
    typed = (ss.get("set_api_key") or "").strip()
    if typed:
        return typed
    return "" if ss.get("set_forget_key") else state.settings().server_api_key


def _list_models() -> None:
    url = ss.get("set_server_url", "")
    try:
        models = view.list_server_models(url, _api_key())
    except view.BackendError as exc:
        ss["server_list"] = {"url": url, "error": str(exc)}
        return
    ss["server_list"] = {"url": url, "models": models}
    if models and not (ss.get("set_server_model") or "").strip():
        ss["set_server_model"] = models[0]


def _pick_model() -> None:
    if ss.get("set_server_pick"):
        ss["set_server_model"] = ss["set_server_pick"]


def _embedded(cur, page) -> str:
    """The embedded model chosen, with what it is and its measured validity."""
    keys = list(page.embedded)
    ss.setdefault("set_embedded", page.default_embedded)
    embedded_key = st.radio("Embedded model", keys, key="set_embedded", horizontal=True,
                            format_func=lambda k: page.embedded[k].short_label)
    chosen_model = page.embedded[embedded_key]
    if chosen_model.smoke_test:
        st.warning(f"**{chosen_model.short_label}** — a quick check: it proves the pipeline runs end to end and is "
                   "fast, but its scores are not clinically meaningful.")
    else:
        st.caption(f"**{chosen_model.label}** — the default judge and MED-OMIT model. Installed by "
                   f"`{chosen_model.install_hint}`.")
    st.markdown("Measured validity of the embedded models (our own labelled set, test split: Spearman of the "
                "score with the known defect severity, AUROC defect vs clean; higher is better)")
    settings_view.render_validity({k: page.embedded[k].validity for k in keys},
                                 {k: page.embedded[k].short_label for k in keys})
    st.markdown(f"Which score stands for each item in triage before any calibration ({chosen_model.short_label}); "
                "a calibration that keeps the ranking replaces it (Agreement page)")
    settings_view.render_rows(chosen_model.used_scores)
    return embedded_key


def _local(cur, page) -> tuple[str, str]:
    """(path, name) of the Ollama or LM Studio model chosen ("" when none is found)."""
    model_path, local_name = "", ""
    found = state.local_models(refresh=bool(ss.pop("rescan_local", False)))
    if not found:
        st.info("No Ollama or LM Studio model was found on this machine. Pull one (`ollama pull llama3.1:8b`, or "
                "download it in LM Studio), or download one below. Looked in: "
                + ", ".join(md(d) for d in page.local_dirs)
                + " (the variables `OLLAMA_MODELS` and `LMSTUDIO_MODELS` add a folder).")
        model_path = ""
    else:
        by_path = {m.path: m for m in found}
        if ss.get("set_local_path") not in by_path:
            if cur.source == view.SOURCE_LOCAL and cur.model_path and cur.model_path not in by_path:
                st.warning(f"The saved model {md(cur.local_model_name or cur.model_path)} is no longer found; "
                           "pick another one.")
            ss["set_local_path"] = cur.model_path if cur.model_path in by_path else found[0].path
        model_path = st.selectbox(f"Model ({len(found)} found)", list(by_path), key="set_local_path",
                                  format_func=lambda p: by_path[p].label if p in by_path else p)
        chosen = by_path[model_path]
        local_name = chosen.name
        st.caption(f"File: {md(chosen.path)}"
                   + (f" · trained context {chosen.context_length:,} tokens" if chosen.context_length else "")
                   + ". It runs in process with llama.cpp; Ollama or LM Studio need not be running.")
    st.button("Look again", on_click=lambda: ss.__setitem__("rescan_local", True),
              help="Scan the Ollama and LM Studio folders again")
    return model_path, local_name


def _server(cur) -> None:
    """An OpenAI-compatible server: its address, key, model, and the list and check buttons."""
    st.text_input("Server address", key="set_server_url", placeholder=view.SERVER_EXAMPLES["Ollama"])
    st.caption("Ollama `" + view.SERVER_EXAMPLES["Ollama"] + "` · LM Studio `" + view.SERVER_EXAMPLES["LM Studio"]
               + "` · llama.cpp server `" + view.SERVER_EXAMPLES["llama.cpp server"] + "` · vLLM and other "
               "OpenAI-compatible servers work too. The notes and summaries are sent to this server.")
    st.text_input("API key (optional)", key="set_api_key", type="password",
                  placeholder="a key is saved; leave empty to keep it" if cur.server_api_key else "none",
                  help="Stored in the settings file (readable by you only); never shown here.")
    if cur.server_api_key:
        st.checkbox("Forget the saved API key", key="set_forget_key")
    listed = ss.get("server_list") if (ss.get("server_list") or {}).get("url") == ss.get("set_server_url") else None
    if listed and listed.get("models"):
        options = listed["models"]
        current = ss.get("set_server_model")
        st.selectbox(f"Models on this server ({len(options)})", options, key="set_server_pick",
                     index=options.index(current) if current in options else None, on_change=_pick_model,
                     placeholder="choose a model")
    st.text_input("Model name", key="set_server_model", placeholder="e.g. llama3.1:8b (empty = the server's default)")
    c1, c2 = st.columns(2)
    c1.number_input("Context size (tokens), used when the server does not say", 512, 1_048_576, key="set_n_ctx",
                    step=512)
    c2.number_input("Requests in flight", 1, view.MAX_CONCURRENCY, key="set_concurrency",
                    help="How many summaries are sent to the server at once when a whole dataset is judged.")
    b1, b2 = st.columns(2)
    b1.button("List models", on_click=_list_models)
    check = b2.button("Check server")
    if listed and "error" in listed:
        st.error(f"Could not list the models: {md(listed['error'])}")
    elif listed is not None and not listed.get("models"):
        st.warning("The server lists no models; type the model name it expects.")
    if check:
        try:
            with st.spinner("Asking the server…"):
                chk = view.check_server(ss.get("set_server_url", ""), ss.get("set_server_model", ""), _api_key(),
                                   int(ss.get("set_n_ctx", cur.n_ctx)))
        except view.BackendError as exc:
            st.error(f"The server check failed: {md(exc)}")
        else:
            st.success(f"The server answered: {md(chk.dialect)} at {md(chk.endpoint)}.")
            st.markdown(
                f"- **Dialect**: {md(chk.dialect)}\n"
                f"- **Context size**: {chk.n_ctx:,} tokens (from {md(chk.n_ctx_source)})\n"
                f"- **Token counting**: {md(chk.token_count)}\n"
                f"- **Model**: {md(chk.model or '(the server default)')}\n"
                f"- **Models listed**: {md(', '.join(chk.models[:20]) or 'none')}"
                + (" …" if len(chk.models) > 20 else ""))
            if chk.model_listed is False:
                st.warning(f"The server does not list a model named {md(chk.model)}; check the name.")


def _llama(page) -> None:
    c1, c2, c3 = st.columns(3)
    c1.number_input("Context size (tokens)", 512, 1_048_576, key="set_n_ctx", step=512)
    c2.number_input("CPU threads (0 = automatic)", 0, 256, key="set_threads")
    c3.number_input("GPU layers (0 = CPU, -1 = all)", -1, 1000, key="set_gpu")
    st.caption("GPU: this llama.cpp build offloads to a GPU, so the judge puts every layer there by default (-1)."
               if page.gpu_offload else
               "GPU: this llama.cpp build is CPU-only, so the judge runs on the CPU whatever the GPU-layers value "
               "(rebuild llama-cpp-python with GPU support to use one; see docs/judge.md).")


def _workspace(page) -> str:
    st.markdown("#### Workspace")
    ws = st.text_input("Workspace (an SQLite file, or postgresql://user@host:port/database for a team)", key="set_ws",
                       placeholder=page.default_workspace)
    st.caption(f"In use now: {md(page.workspace_in_use)}"
               + (f" (set by the environment variable {page.workspace_from_env}, which overrides this setting)"
                  if page.workspace_from_env else ""))
    return ws


def _save(cur, source: str, model_path: str, local_name: str, embedded_key: str, ws: str) -> None:
    if st.button("Save settings", type="primary"):
        changes = dict(judge_source=source, model_path=model_path if source != view.SOURCE_SERVER else cur.model_path,
                       embedded_model=embedded_key if source == view.SOURCE_EMBEDDED else cur.embedded_model,
                       local_model_name=local_name if source == view.SOURCE_LOCAL else "",
                       n_ctx=int(ss.get("set_n_ctx", cur.n_ctx)), n_threads=int(ss.get("set_threads", cur.n_threads)),
                       n_gpu_layers=int(ss.get("set_gpu", cur.n_gpu_layers)), workspace_path=(ws or "").strip(),
                       server_url=(ss.get("set_server_url") or "").strip(),
                       server_model=(ss.get("set_server_model") or "").strip(),
                       server_api_key=_api_key() if source == view.SOURCE_SERVER else cur.server_api_key,
                       concurrency=int(ss.get("set_concurrency", cur.concurrency)),
                       medomit_facts=ss.get("set_medomit_facts", cur.medomit_facts))
        try:
            saved = view.save(cur, **changes)
        except view.SettingsError as exc:
            st.error(f"Not saved: {md(exc)}")
        else:
            state.bump_data_version()
            st.success(f"Saved to {md(saved.path)}. Judge model: {md(view.SOURCE_LABELS[source])}. "
                       f"Workspace: {md(saved.workspace)}")


def _locate(model_path: str, embedded_key: str, source: str) -> None:
    with st.expander("Check the model file"):
        if st.button("Locate model"):
            try:
                p = view.locate_model(model_path, embedded_key if source == view.SOURCE_EMBEDDED else "")
            except view.ModelError as exc:
                st.error(md(exc))
            else:
                st.success(f"Model file: {md(p)} ({p.stat().st_size / 1e6:.0f} MB)")


def main() -> None:
    st.title("Settings")
    cur = state.settings()
    page = view.settings_page_view(cur)
    flash = ss.pop("settings_flash", None)  # set by a button callback (e.g. "Use this model")
    if flash:
        getattr(st, flash[0])(flash[1])
    _first_values(cur)
    st.markdown("#### Judge model")
    source = SOURCE_BY_LABEL[st.radio("Model source", list(view.SOURCE_LABELS.values()), key="set_source",
                                      horizontal=True)]
    model_path, local_name, embedded_key = cur.model_path, "", cur.embedded_model
    if source == view.SOURCE_EMBEDDED:
        embedded_key, model_path = _embedded(cur, page), ""
    elif source == view.SOURCE_GGUF:
        model_path = st.text_input("Path to a .gguf file", key="set_gguf_path",
                                   placeholder="/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf").strip()
    elif source == view.SOURCE_LOCAL:
        model_path, local_name = _local(cur, page)
    else:
        _server(cur)
    if source != view.SOURCE_SERVER:
        _llama(page)
    st.markdown("#### MED-OMIT")
    ss.setdefault("set_medomit_facts", state.medomit_facts())  # an unknown saved source: named, the default offered
    settings_view.render_medomit_facts("set_medomit_facts")
    ws = _workspace(page)
    _save(cur, source, model_path, local_name, embedded_key, ws)
    if source != view.SOURCE_SERVER:
        _locate(model_path, embedded_key, source)


main()
