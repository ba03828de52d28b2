"""Get a model page: the one explicit download of SumCheck (a judge GGUF from the catalogue, checked against the hub's
sha256), and "Use this model", which makes the downloaded file the judge model at once."""
import time
from dataclasses import replace

import streamlit as st

from components import state
from engine.core import untrusted
from engine.data.settings import ENV_HUB_ENDPOINT, SOURCE_GGUF, SettingsError, hub_endpoint, save_settings
from engine.judge.source import SOURCE_LABELS
from engine.llm.model_download import CATALOG, DownloadError, default_models_dir, download

md = untrusted.md
ss = st.session_state

st.title("Get a judge model")
cur = state.settings()

flash = ss.pop("settings_flash", None)  # set by the "Use this model" callback
if flash:
    getattr(st, flash[0])(flash[1])


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


# ---------------------------------------------------------------------------------------------- get a judge model
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

