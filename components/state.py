"""Shared Streamlit plumbing: the workspace store, the models and the tokenizer, each opened once per process
(``st.cache_resource``); dataset reads kept under the store's data fingerprint; the shared selection."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import streamlit as st

from engine.core import Dataset, untrusted
from engine.sample import SAMPLE_NAME, open_workspace
from engine.data import AppSettings, DatasetInfo, SettingsError, Store, StoreError, load_settings, workspace_path


APP_RAN = "_sumcheck_app_ran"  # set by app.py before it imports this module
PAGE_PARAM = "page"  # app.py opens this page (url path) when a request reached a page without it


def _use_app_navigation() -> None:
    """A deep link (e.g. /agreement) opened as the server's very first request makes Streamlit run the page file
    in its legacy `pages/` mode, without app.py's st.navigation. This runs once, when a page first imports this
    module: if app.py has not run in this session and a browser asked for the page (``st.context.url``; page tests
    run files directly and have none), go to app.py with the page asked for in the query, and app.py opens it
    through its own navigation."""
    from urllib.parse import urlparse

    if st.session_state.get(APP_RAN) or not st.context.url:
        return
    path = urlparse(st.context.url).path.strip("/").split("/")[-1]
    st.switch_page("app.py", query_params={**st.query_params.to_dict(), **({PAGE_PARAM: path} if path else {})})


_use_app_navigation()


@st.cache_resource(show_spinner=False)
def _store_for(path: str) -> Store:
    return open_workspace(path)


def show_store_error(exc: Exception) -> None:
    """The one message for a workspace that cannot be used right now (busy, locked, unreadable): what the store
    said, and that a retry may help. Never a traceback."""
    st.error(f"The workspace is busy or unavailable, retry in a moment: {untrusted.md(exc)}")


def guarded(fn: Callable[..., Any], *args, default: Any = None, stop: bool = False, **kwargs) -> Any:
    """``fn(*args, **kwargs)``; on a :class:`StoreError` show :func:`show_store_error` and return ``default``
    (or stop the page, with ``stop``). Pages wrap their store calls in it and keep running."""
    try:
        return fn(*args, **kwargs)
    except StoreError as exc:
        show_store_error(exc)
        if stop:
            st.stop()
        return default


def settings() -> AppSettings:
    try:
        return load_settings()
    except SettingsError as exc:
        st.error(f"{untrusted.md(exc)}. Using defaults.")
        return AppSettings()


def medomit_facts() -> str:
    """MED-OMIT's fact source from the settings; a source the registry does not know (a hand-edited settings
    file) is named in an error and the default is used."""
    from engine.evidence.medomit import AUTO, FACT_SOURCES

    key = settings().medomit_facts
    if key in FACT_SOURCES or key == AUTO:
        return key
    st.error(f"MED-OMIT fact source {untrusted.md(key)} in the settings is unknown (known: {AUTO}, "
             f"{', '.join(FACT_SOURCES)}). Using {AUTO}.")
    return AUTO


def store() -> Store:
    """The workspace store for the configured path (opened once, sample imported on first use)."""
    return _store_for(str(workspace_path(settings())))


@st.cache_data(max_entries=16, show_spinner=False)
def _dataset(path: str, name: str, version: int, fingerprint: str) -> Dataset:
    return _store_for(path).load_dataset(name)


def data_version() -> int:
    return st.session_state.setdefault("data_version", 0)


def bump_data_version() -> None:
    """Call after any write, so cached reads are refreshed."""
    st.session_state["data_version"] = data_version() + 1


def dataset(name: str) -> Dataset:
    s = store()
    return _dataset(s.location, name, data_version(), s.data_fingerprint(name, content_only=True))


def datasets() -> list[DatasetInfo]:
    return store().list_datasets()


# ------------------------------------------------------------------------------------- the current selection
# One selection for every page: dataset, case and summary live in session state under these keys and are mirrored
# in the URL query (?dataset=…&case=…&summary=…), so a copied link opens the same view. Values from the URL are
# untrusted: each is used only when it names something that exists.
SELECTION = {"dataset": "dataset", "case": "case_id", "summary": "summary_id"}


def _selection_from_url() -> None:
    """Once per session: take the selection from the URL the session was opened with."""
    if st.session_state.get("_selection_from_url"):
        return
    st.session_state["_selection_from_url"] = True
    asked = {}
    for param, key in SELECTION.items():
        value = st.query_params.get(param)
        if value:
            st.session_state[key] = value
            asked[key] = value
    st.session_state[URL_ASKED] = asked


URL_ASKED = "_selection_asked_by_url"  # what the link named, until each is either found or reported missing


def _missing_from_link(state_key: str, label: str, asked: str, instead: str) -> None:
    """The link named a dataset / case / summary that is not there: say so once (never open another silently)."""
    st.warning(f"The link names {label.lower()} '{untrusted.md_inline(asked)}', which "
               + ("the workspace does not have" if state_key == "dataset" else "this dataset does not have")
               + f"; showing '{untrusted.md_inline(instead)}' instead.")


def publish_selection() -> None:
    """Write the current selection into the URL query (only what changed)."""
    for param, key in SELECTION.items():
        value = st.session_state.get(key)
        if value and st.query_params.get(param) != value:
            st.query_params[param] = value


def _keyed_choice(where, widget, label: str, options: list, key: str, state_key: str, **kwargs):
    """A widget whose value is the shared selection ``state_key``: it opens on the shared value (which another page
    may have changed) and writes the user's choice back before the page runs."""
    current = st.session_state.get(state_key)
    asked = st.session_state.get(URL_ASKED, {})
    if current not in options:
        if asked.get(state_key) == current and current is not None:
            _missing_from_link(state_key, label, current, str(options[0]))
        current = options[0]
        st.session_state[state_key] = current
    asked.pop(state_key, None)
    # always (re)set: a widget with this key on another page is another widget, whose old value would not carry
    st.session_state[key] = current

    def _chosen() -> None:
        st.session_state[state_key] = st.session_state[key]

    choice = getattr(where, widget)(label, options, key=key, on_change=_chosen, **kwargs)
    st.session_state[state_key] = choice
    return choice


def selected_dataset_name() -> Optional[str]:
    _selection_from_url()
    names = [d.name for d in guarded(datasets, default=[], stop=True)]
    if not names:
        return None
    current = st.session_state.get("dataset")
    if current not in names:
        fallback = SAMPLE_NAME if SAMPLE_NAME in names else names[0]
        asked = st.session_state.get(URL_ASKED, {})
        if current is not None and asked.pop("dataset", None) == current:
            _missing_from_link("dataset", "Dataset", current, fallback)
        current = fallback
        st.session_state["dataset"] = current
    return current


def dataset_picker(where=st.sidebar) -> Optional[str]:
    names = [d.name for d in guarded(datasets, default=[], stop=True)]
    if not names:
        where.info("No dataset yet: import one on the Data page.")
        return None
    selected_dataset_name()
    choice = _keyed_choice(where, "selectbox", "Dataset", names, "dataset_picker", "dataset")
    publish_selection()
    return choice


def switch_dataset(name: str) -> None:
    """Make ``name`` the current dataset (after an import); the caller says so on the page."""
    st.session_state["dataset"] = name
    st.session_state.pop("case_id", None)
    st.session_state.pop("summary_id", None)


def summary_picker(ds, case, where=None, key: str = "summary_widget", label: str = "Summary", **kwargs) -> str:
    """The current summary of ``case`` (the shared selection; the first summary when the shared one is not in this
    case), as a radio in ``where`` (default: the sidebar). ``key`` names the widget; the selection is shared."""
    sids = [s.summary_id for s in ds.summaries_for(case.case_id)]
    choice = _keyed_choice(where or st.sidebar, "radio", label, sids, key, "summary_id",
                           format_func=untrusted.md_inline, **kwargs)
    publish_selection()
    return choice


def workspace_label() -> str:
    return str(workspace_path(settings()))


@st.cache_resource(max_entries=1, show_spinner="Loading the judge model…")
def _judge_backend(model_path: str, n_ctx: int, n_threads: int, n_gpu_layers: int, embedded_key: str = ""):
    from engine.judge import open_llama_backend

    return open_llama_backend(model_path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers,
                              store=store(), embedded_key=embedded_key)


def judge_backend():
    """(backend, model sha256) for the configured judge model source: llama.cpp for the embedded model, a GGUF file
    or a model found on this machine (loaded once per model and settings); an OpenAI-compatible server (asked what
    it serves on every run; sha256 None). On failure the page shows why and gets None."""
    from engine.llm import BackendError
    from engine.judge import open_judge_backend
    from engine.data import SOURCE_SERVER

    cfg = settings()
    try:
        if cfg.source == SOURCE_SERVER:
            with st.spinner("Asking the model server what it serves…"):
                return open_judge_backend(cfg)
        from engine.data import SOURCE_EMBEDDED

        return _judge_backend(cfg.llama_model_path, int(cfg.n_ctx), int(cfg.n_threads), int(cfg.n_gpu_layers),
                              cfg.embedded_model if cfg.source == SOURCE_EMBEDDED else "")
    except BackendError as exc:
        what = "The model server could not be used" if cfg.source == SOURCE_SERVER else "The model could not be loaded"
        st.error(f"{what}: {untrusted.md(exc)}")
        return None


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder():
    """The bundled all-MiniLM-L6-v2, loaded once per process, with the workspace as its persistent embedding
    cache (a source is embedded once per model across restarts; a workspace that cannot be opened only means
    no persistent cache)."""
    from engine.evidence import Embedder

    try:
        ws = store()
    except StoreError:
        ws = None
    return Embedder(store=ws)


def require_dataset():
    """The picked dataset as (name, Dataset); shows why and stops the page when there is none."""
    name = dataset_picker()
    if name is None:
        st.stop()
    try:
        return name, dataset(name)
    except Exception as exc:  # the engine raises; the page reports and keeps running
        st.error(f"Could not load dataset '{untrusted.md(name)}': {untrusted.md(exc)}"
                 + (" Retry in a moment." if isinstance(exc, StoreError) else ""))
        st.stop()


@st.cache_resource(show_spinner=False)
def _token_counter(model_path: str):
    from engine.llm import judge_token_counter

    return judge_token_counter(model_path)[0]


def token_counter():
    """Counts tokens with the configured judge model's tokenizer (loaded once, vocabulary only)."""
    return _token_counter(settings().llama_model_path)


def case_picker(ds):
    """The case picked in the sidebar: the shared selection, kept across pages and in the URL."""
    case_ids = [c.case_id for c in ds.cases]
    if not case_ids:
        st.info("This dataset has no cases.")
        st.stop()
    case_id = _keyed_choice(st.sidebar, "selectbox", "Case", case_ids, "case_picker", "case_id")
    publish_selection()
    return ds.case(case_id)


@st.cache_data(ttl=60, show_spinner="Looking for Ollama and LM Studio models…")
def _local_models(ollama: tuple[str, ...], lmstudio: tuple[str, ...]):
    from engine.llm import discover

    return discover(ollama=[Path(d) for d in ollama], lmstudio=[Path(d) for d in lmstudio])


def local_models(refresh: bool = False):
    """The GGUF models Ollama and LM Studio keep on this machine (engine.llm.local_models.discover), remembered for a
    minute per set of folders."""
    from engine.llm import lmstudio_dirs, ollama_dirs

    if refresh:
        _local_models.clear()
    return _local_models(tuple(str(d) for d in ollama_dirs()), tuple(str(d) for d in lmstudio_dirs()))
