"""Settings page: the judge model source (embedded, a GGUF file, a model Ollama or LM Studio keeps on this machine, or an
OpenAI-compatible server), llama.cpp parameters, the workspace path, and "Get a judge model" (the one explicit
download)."""
import os
import time
from dataclasses import replace

import streamlit as st

from components import settings_view, state
from engine.core import untrusted
from engine.llm.backends import BackendError
from engine.llm.llama import gpu_offload_supported
from engine.judge.source import SERVER_EXAMPLES, SOURCE_LABELS, check_server, list_server_models
from engine.llm.local_models import lmstudio_dirs, ollama_dirs
from engine.llm.model_download import CATALOG, DownloadError, default_models_dir, download
from engine.llm.modelfiles import EMBEDDED, ModelError, default_embedded_key, resolve_model_path, validity_figures
from engine.data.settings import (ENV_HUB_ENDPOINT, ENV_WORKSPACE, MAX_CONCURRENCY, SOURCE_EMBEDDED, SOURCE_GGUF,
                                  SOURCE_LOCAL, SOURCE_SERVER, SettingsError, default_workspace_path, hub_endpoint,
                                  save_settings, workspace_path)

md = untrusted.md
ss = st.session_state
SOURCE_BY_LABEL = {label: key for key, label in SOURCE_LABELS.items()}

st.title("Settings")
cur = state.settings()

flash = ss.pop("settings_flash", None)  # set by a button callback (e.g. "Use this model")
if flash:
    getattr(st, flash[0])(flash[1])

# Widgets take their first values from the saved settings and keep the user's edits across reruns.
ss.setdefault("set_source", SOURCE_LABELS[cur.source])
ss.setdefault("set_gguf_path", cur.model_path if cur.source == SOURCE_GGUF else "")
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
    return "" if ss.get("set_forget_key") else cur.server_api_key


def _list_models() -> None:
    url = ss.get("set_server_url", "")
    try:
        models = list_server_models(url, _api_key())
    except BackendError as exc:
        ss["server_list"] = {"url": url, "error": str(exc)}
        return
    ss["server_list"] = {"url": url, "models": models}
    if models and not (ss.get("set_server_model") or "").strip():
        ss["set_server_model"] = models[0]


def _pick_model() -> None:
    if ss.get("set_server_pick"):
        ss["set_server_model"] = ss["set_server_pick"]


def _use_model(path: str) -> None:
    """'Use this model' after a download: the GGUF file becomes the judge model, saved at once."""
    try:
        saved = save_settings(replace(state.settings(), judge_source=SOURCE_GGUF, model_path=path,
                                      local_model_name=""))
    except SettingsError as exc:
        ss["settings_flash"] = ("error", f"Not saved: {md(exc)}")
        return
    ss["set_source"] = SOURCE_LABELS[SOURCE_GGUF]
    ss["set_gguf_path"] = path
    ss["settings_flash"] = ("success", f"The judge model is now {md(path)} (saved to {md(saved)}).")
    state.bump_data_version()


# ---------------------------------------------------------------------------------------------------- judge model
st.markdown("#### Judge model")
source = SOURCE_BY_LABEL[st.radio("Model source", list(SOURCE_LABELS.values()), key="set_source", horizontal=True)]
model_path = cur.model_path
local_name = ""

embedded_key = cur.embedded_model
if source == SOURCE_EMBEDDED:
    keys = list(EMBEDDED)
    ss.setdefault("set_embedded", cur.embedded_model or default_embedded_key())
    embedded_key = st.radio("Embedded model", keys, key="set_embedded", horizontal=True,
                            format_func=lambda k: EMBEDDED[k].short_label)
    chosen_model = EMBEDDED[embedded_key]
    if chosen_model.smoke_test:
        st.warning(f"**{chosen_model.short_label}** — a quick check: it proves the pipeline runs end to end and is "
                   "fast, but its scores are not clinically meaningful.")
    else:
        st.caption(f"**{chosen_model.label}** — the default judge and MED-OMIT model. Installed by "
                   f"`{chosen_model.install_hint}`.")
    model_path = ""
    st.markdown("Measured validity of the embedded models (our own labelled set, test split: Spearman of the "
                "score with the known defect severity, AUROC defect vs clean; higher is better)")
    settings_view.render_validity({k: validity_figures(k) for k in keys}, {k: EMBEDDED[k].short_label for k in keys})
elif source == SOURCE_GGUF:
    model_path = st.text_input("Path to a .gguf file", key="set_gguf_path",
                               placeholder="/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf").strip()
elif source == SOURCE_LOCAL:
    found = state.local_models(refresh=bool(ss.pop("rescan_local", False)))
    if not found:
        st.info("No Ollama or LM Studio model was found on this machine. Pull one (`ollama pull llama3.1:8b`, or "
                "download it in LM Studio), or download one below. Looked in: "
                + ", ".join(md(d) for d in [*ollama_dirs(), *lmstudio_dirs()])
                + " (the variables `OLLAMA_MODELS` and `LMSTUDIO_MODELS` add a folder).")
        model_path = ""
    else:
        by_path = {m.path: m for m in found}
        if ss.get("set_local_path") not in by_path:
            if cur.source == SOURCE_LOCAL and cur.model_path and cur.model_path not in by_path:
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
else:  # an OpenAI-compatible server
    st.text_input("Server address", key="set_server_url", placeholder=SERVER_EXAMPLES["Ollama"])
    st.caption("Ollama `" + SERVER_EXAMPLES["Ollama"] + "` · LM Studio `" + SERVER_EXAMPLES["LM Studio"]
               + "` · llama.cpp server `" + SERVER_EXAMPLES["llama.cpp server"] + "` · vLLM and other "
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
    c2.number_input("Requests in flight", 1, MAX_CONCURRENCY, key="set_concurrency",
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
                chk = check_server(ss.get("set_server_url", ""), ss.get("set_server_model", ""), _api_key(),
                                   int(ss.get("set_n_ctx", cur.n_ctx)))
        except BackendError as exc:
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

if source != SOURCE_SERVER:
    c1, c2, c3 = st.columns(3)
    c1.number_input("Context size (tokens)", 512, 1_048_576, key="set_n_ctx", step=512)
    c2.number_input("CPU threads (0 = automatic)", 0, 256, key="set_threads")
    c3.number_input("GPU layers (0 = CPU, -1 = all)", -1, 1000, key="set_gpu")
    st.caption("GPU: this llama.cpp build offloads to a GPU, so the judge puts every layer there by default (-1)."
               if gpu_offload_supported() else
               "GPU: this llama.cpp build is CPU-only, so the judge runs on the CPU whatever the GPU-layers value "
               "(rebuild llama-cpp-python with GPU support to use one; see the README).")

st.markdown("#### Workspace")
ws = st.text_input("Workspace file (SQLite)", key="set_ws", placeholder=str(default_workspace_path()))
st.caption(f"In use now: {md(state.workspace_label())}"
           + (f" (set by the environment variable {ENV_WORKSPACE}, which overrides this setting)"
              if ENV_WORKSPACE in os.environ else ""))

if st.button("Save settings", type="primary"):
    new = replace(cur, judge_source=source, model_path=model_path if source != SOURCE_SERVER else cur.model_path,
                  embedded_model=embedded_key if source == SOURCE_EMBEDDED else cur.embedded_model,
                  local_model_name=local_name if source == SOURCE_LOCAL else "",
                  n_ctx=int(ss.get("set_n_ctx", cur.n_ctx)), n_threads=int(ss.get("set_threads", cur.n_threads)),
                  n_gpu_layers=int(ss.get("set_gpu", cur.n_gpu_layers)), workspace_path=(ws or "").strip(),
                  server_url=(ss.get("set_server_url") or "").strip(),
                  server_model=(ss.get("set_server_model") or "").strip(),
                  server_api_key=_api_key() if source == SOURCE_SERVER else cur.server_api_key,
                  concurrency=int(ss.get("set_concurrency", cur.concurrency)))
    try:
        path = save_settings(new)
    except SettingsError as exc:
        st.error(f"Not saved: {md(exc)}")
    else:
        state.bump_data_version()
        st.success(f"Saved to {md(path)}. Judge model: {md(SOURCE_LABELS[source])}. "
                   f"Workspace: {md(workspace_path(new))}")

if source != SOURCE_SERVER:
    with st.expander("Check the model file"):
        if st.button("Locate model"):
            try:
                p = resolve_model_path(model_path, embedded_key if source == SOURCE_EMBEDDED else "")
            except ModelError as exc:
                st.error(md(exc))
            else:
                st.success(f"Model file: {md(p)} ({p.stat().st_size / 1e6:.0f} MB)")

# ---------------------------------------------------------------------------------------------- get a judge model
st.markdown("#### Get a judge model")
dest = default_models_dir()
endpoint = hub_endpoint()
st.caption("Downloading is the only network action in SumCheck: it happens only when you press **Download**, "
           "fetches one model file from " + (f"the mirror {md(endpoint)} (set by `{ENV_HUB_ENDPOINT}`)" if endpoint
                                              else "the Hugging Face hub")
           + f", and sends no data. Files go to {md(dest)} (`SUMCHECK_MODELS_DIR` changes the folder); an "
           "interrupted download resumes, and every file is checked against the hub's sha256.")
downloaded = ss.setdefault("downloaded", {})
for entry in CATALOG:
    with st.container(border=True):
        c1, c2 = st.columns([4, 1])
        c1.markdown(f"**{md(entry.label)}**")
        c1.caption(f"≈ {entry.approx_gb:g} GB download · needs ≈ {entry.ram_gb:g} GB RAM · licence: "
                   f"{md(entry.licence)}" + (f" · {md(entry.note)}" if entry.note else ""))
        if c2.button("Download", key=f"dl_{entry.key}"):
            bar = c1.progress(0.0, text="Contacting the hub…")
            last = [0.0]

            def progress(done: int, total: int, bar=bar, last=last) -> None:
                now = time.monotonic()
                if total and (now - last[0] >= 0.25 or done >= total):
                    last[0] = now
                    bar.progress(min(done / total, 1.0), text=f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB")

            try:
                got = download(entry, dest, endpoint=endpoint, progress=progress)
            except DownloadError as exc:
                c1.error(md(exc))
            except OSError as exc:
                c1.error(f"Could not write to {md(dest)}: {md(exc)}")
            else:
                bar.progress(1.0, text=f"Done: {got.size_bytes / 1e6:,.0f} MB, sha256 verified")
                downloaded[entry.key] = {"path": got.path, "sha256": got.sha256}
        target = downloaded.get(entry.key) or ({"path": str(dest / entry.filename), "sha256": ""}
                                               if (dest / entry.filename).is_file() else None)
        if target:
            c1.success(f"Downloaded: {md(target['path'])}"
                       + (f" · sha256 {md(target['sha256'])}" if target["sha256"] else ""))
            in_use = cur.source == SOURCE_GGUF and cur.model_path == target["path"]
            c2.button("In use" if in_use else "Use this model", key=f"use_{entry.key}", disabled=in_use,
                      on_click=_use_model, args=(target["path"],))

# ------------------------------------------------------------------------------------ stigmatizing-language lexicon
from engine.evidence.stigma import LexiconError, load_lexicon
from engine.evidence.stigma_entries import add_clinician_entry, workspace_entries  # noqa: E402
from engine.data.store import StoreBusy, StoreError  # noqa: E402

STIG_FIELDS = {"stig_term": "", "stig_suggest": "", "stig_note": "", "stig_added_by": "", "stig_noun_only": False,
               "stig_patient_only": False}


def _stigma_store():
    try:
        return state.store()
    except StoreError as exc:
        ss["stig_flash"] = ("error", f"The workspace is busy or unavailable, retry in a moment: {md(exc)}")
        return None


def _stigma_failed(action: str, exc: Exception) -> None:
    if isinstance(exc, StoreBusy):
        ss["stig_flash"] = ("error", f"The workspace is busy or unavailable, retry in a moment: {md(exc)}")
    else:
        ss["stig_flash"] = ("error", f"{action}: {md(exc)}")


def _add_stigma_entry() -> None:
    """'Add entry' (a form callback: it runs before the page, so the table below already shows the new entry)."""
    s = _stigma_store()
    if s is None:
        return
    try:
        added = add_clinician_entry(s, ss.get("stig_term", ""), ss.get("stig_category", ""),
                                    suggest=ss.get("stig_suggest", ""), source=ss.get("stig_note", ""),
                                    noun_only=bool(ss.get("stig_noun_only")),
                                    patient_only=bool(ss.get("stig_patient_only")),
                                    added_by=ss.get("stig_added_by", ""))
        version = load_lexicon(workspace_entries(s)).version
    except (LexiconError, StoreError) as exc:
        _stigma_failed("Not added", exc)
        return
    for key, empty in STIG_FIELDS.items():
        ss[key] = empty
    state.bump_data_version()
    ss["stig_flash"] = ("success", f"Added {md(added['term'])} ({md(added['category'])}). The lexicon version is "
                                   f"now {md(version)}.")


def _deactivate_stigma_entry() -> None:
    s = _stigma_store()
    entry_id = ss.get("stig_deactivate")
    if s is None or entry_id is None:
        return
    try:
        gone = s.deactivate_stigma_entry(int(entry_id))
        version = load_lexicon(workspace_entries(s)).version
    except (LexiconError, StoreError) as exc:
        _stigma_failed("Not deactivated", exc)
        return
    state.bump_data_version()
    ss["stig_flash"] = ("success", f"Deactivated {md(gone['term'])}; it no longer counts. The lexicon version is "
                                   f"now {md(version)}.")


st.markdown("#### Stigmatizing-language lexicon")
base_lex = load_lexicon()
per_cat = {c: sum(e.category == c for e in base_lex.entries) for c in base_lex.categories}
st.caption(f"Built in: {len(base_lex.entries)} entries, version {md(base_lex.version)}. The terms, the context rules "
           "and the studies they come from are documented in the README, section \"Stigmatizing language\", and in "
           f"{md('engine/resources/stigma_lexicon.json')}.")
st.markdown("\n".join(f"- **{md(c)}** ({per_cat[c]}): {md(desc)}" for c, desc in base_lex.categories.items()))
if base_lex.references:
    with st.expander("Sources of the built-in lexicon"):
        st.markdown("\n".join(f"- **{md(k)}**: {md(v)}" for k, v in base_lex.references.items()))

stig_flash = ss.pop("stig_flash", None)
if stig_flash:
    getattr(st, stig_flash[0])(stig_flash[1])

stig_store = state.guarded(state.store)
if stig_store is not None:
    rows = state.guarded(stig_store.stigma_entries, active_only=False, with_meta=True, default=[])
    try:
        current_version = load_lexicon(workspace_entries(stig_store)).version
    except LexiconError as exc:
        current_version = None
        st.error(f"A clinician entry cannot be used: {md(exc)}. Deactivate it below.")
    except StoreError as exc:
        current_version = None
        state.show_store_error(exc)
    active = [r for r in rows if r["active"]]
    if current_version:
        st.markdown(f"**Lexicon version in use:** {md(current_version)} (built in + {len(active)} clinician "
                    f"{'entry' if len(active) == 1 else 'entries'})")
    st.caption("Every stigmatizing-language result keeps the lexicon version it was computed with. Adding or "
               "deactivating an entry changes the version, and results computed with an older version are recomputed "
               "with the current lexicon; the command line (`python -m engine stigma`) uses the same entries.")
    if rows:
        import pandas as pd

        st.dataframe(pd.DataFrame([{
            "#": r["entry_id"], "term": r["term"], "category": r["category"], "suggest": r.get("suggest", ""),
            "source / note": r.get("source", ""),
            "only as a noun for a person": bool(r.get("noun_only")),
            "only when the patient does it": bool(r.get("patient_only")),
            "added by": r["added_by"], "added": r["created_at"],
            "status": "active" if r["active"] else f"deactivated {r['deactivated_at'] or ''}".strip()}
            for r in rows]), hide_index=True, width="stretch")
    else:
        st.info("No clinician entries yet: the built-in lexicon is used as it is.")

    with st.form("stig_add_form"):
        st.markdown("**Add an entry**")
        for key, empty in STIG_FIELDS.items():
            ss.setdefault(key, empty)
        st.text_input("Term (a word or phrase; matched without regard to case)", key="stig_term",
                      placeholder="e.g. entitled",
                      help="Plain words, or the lexicon's term syntax: (a|b|) alternatives, '-' for an optional "
                           "hyphen, a lone '*' for up to three words.")
        st.selectbox("Category", list(base_lex.categories), key="stig_category",
                     format_func=lambda c: f"{c}: {base_lex.categories[c]}")
        c1, c2 = st.columns(2)
        c1.text_input("Neutral wording to suggest (optional)", key="stig_suggest")
        c2.text_input("Source or note (optional)", key="stig_note", placeholder="e.g. unit guidance 2025")
        st.text_input("Added by (optional)", key="stig_added_by")
        st.checkbox("Only as a noun for a person (\"diabetics\", not \"diabetic foot exam\")", key="stig_noun_only")
        st.checkbox("Only when the patient does it (not an insurer, a pharmacy or the family)",
                    key="stig_patient_only")
        st.form_submit_button("Add entry", on_click=_add_stigma_entry)

    if active:
        by_id = {r["entry_id"]: r for r in active}
        d1, d2 = st.columns([4, 1], vertical_alignment="bottom")
        d1.selectbox("Deactivate a clinician entry", list(by_id), key="stig_deactivate",
                     format_func=lambda i: f"#{i} {by_id[i]['term']} ({by_id[i]['category']})" if i in by_id
                     else str(i))
        d2.button("Deactivate", on_click=_deactivate_stigma_entry)
