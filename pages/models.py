"""Get a model page: the one explicit download of SumCheck (a judge GGUF from the catalogue, checked against the hub's
sha256), and "Use this model", which makes the downloaded file the judge model at once."""
import time

import streamlit as st

from components import state
from engine.core import untrusted
from engine.views import models as view

md = untrusted.md
ss = st.session_state


def _use_model(path: str) -> None:
    """'Use this model' after a download: the GGUF file becomes the judge model, saved at once."""
    try:
        saved = view.use_model(state.settings(), path)
    except view.SettingsError as exc:
        ss["settings_flash"] = ("error", f"Not saved: {md(exc)}")
        return
    ss["set_source"] = view.GGUF_LABEL
    ss["set_gguf_path"] = path
    ss["settings_flash"] = ("success", f"The judge model is now {md(path)} (saved to {md(saved)}).")
    state.bump_data_version()


def _download(row, c1, downloaded: dict, dest: str) -> None:
    bar = c1.progress(0.0, text="Contacting the hub…")
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if total and (now - last[0] >= 0.25 or done >= total):
            last[0] = now
            bar.progress(min(done / total, 1.0), text=f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB")

    try:
        got = view.download_model(row.key, progress)
    except view.DownloadError as exc:
        c1.error(md(exc))
    except OSError as exc:
        c1.error(f"Could not write to {md(dest)}: {md(exc)}")
    else:
        bar.progress(1.0, text=f"Done: {got.size_bytes / 1e6:,.0f} MB, sha256 verified")
        downloaded[row.key] = {"path": got.path, "sha256": got.sha256}


def main() -> None:
    st.title("Get a judge model")
    flash = ss.pop("settings_flash", None)  # set by the "Use this model" callback
    if flash:
        getattr(st, flash[0])(flash[1])
    downloaded = ss.setdefault("downloaded", {})
    v = view.models_view(state.settings(), {k: d["path"] for k, d in downloaded.items()})
    st.caption("Downloading is the only network action in SumCheck: it happens only when you press **Download**, "
               "fetches one model file from " + (f"the mirror {md(v.endpoint)} (set by `{view.ENV_HUB_ENDPOINT}`)"
                                                  if v.endpoint else "the Hugging Face hub")
               + f", and sends no data. Files go to {md(v.dest)} (`SUMCHECK_MODELS_DIR` changes the folder); an "
               "interrupted download resumes, and every file is checked against the hub's sha256.")
    for row in v.rows:
        with st.container(border=True):
            c1, c2 = st.columns([4, 1])
            c1.markdown(f"**{md(row.label)}**")
            c1.caption(md(row.caption))
            if c2.button("Download", key=f"dl_{row.key}"):
                _download(row, c1, downloaded, v.dest)
                row = next(r for r in view.models_view(state.settings(), {k: d["path"] for k, d in
                                                                          downloaded.items()}).rows if r.key == row.key)
            if row.path:
                sha = downloaded.get(row.key, {}).get("sha256", "") if downloaded.get(row.key, {}).get("path") == \
                    row.path else ""
                c1.success(f"Downloaded: {md(row.path)}" + (f" · sha256 {md(sha)}" if sha else ""))
                c2.button("In use" if row.in_use else "Use this model", key=f"use_{row.key}", disabled=row.in_use,
                          on_click=_use_model, args=(row.path,))


main()
