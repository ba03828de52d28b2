"""Lexicon page: the built-in stigmatizing-language lexicon (categories, version, references) and the clinician
entries added on top of it (added, validated and deactivated here; stored in the workspace)."""
import streamlit as st

from components import frames, state
from engine.core import untrusted
from engine.views import lexicon as view

md = untrusted.md
ss = st.session_state

STIG_FIELDS = {"stig_term": "", "stig_suggest": "", "stig_note": "", "stig_added_by": "", "stig_noun_only": False,
               "stig_patient_only": False}


def _stigma_store():
    try:
        return state.store()
    except view.StoreError as exc:
        ss["stig_flash"] = ("error", f"The workspace is busy or unavailable, retry in a moment: {md(exc)}")
        return None


def _stigma_failed(action: str, exc: Exception) -> None:
    if isinstance(exc, view.StoreBusy):
        ss["stig_flash"] = ("error", f"The workspace is busy or unavailable, retry in a moment: {md(exc)}")
    else:
        ss["stig_flash"] = ("error", f"{action}: {md(exc)}")


def _add_stigma_entry() -> None:
    """'Add entry' (a form callback: it runs before the page, so the table below already shows the new entry)."""
    s = _stigma_store()
    if s is None:
        return
    try:
        added, version = view.add_entry(s, ss.get("stig_term", ""), ss.get("stig_category", ""),
                                   suggest=ss.get("stig_suggest", ""), source=ss.get("stig_note", ""),
                                   noun_only=bool(ss.get("stig_noun_only")),
                                   patient_only=bool(ss.get("stig_patient_only")),
                                   added_by=ss.get("stig_added_by", ""))
    except (view.LexiconError, view.StoreError) as exc:
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
        gone, version = view.deactivate_entry(s, int(entry_id))
    except (view.LexiconError, view.StoreError) as exc:
        _stigma_failed("Not deactivated", exc)
        return
    state.bump_data_version()
    ss["stig_flash"] = ("success", f"Deactivated {md(gone['term'])}; it no longer counts. The lexicon version is "
                                   f"now {md(version)}.")


def _built_in(v) -> None:
    base = v.built_in
    st.caption(f"Built in: {len(base.entries)} entries, version {md(base.version)}. The terms, the context rules "
               "and the studies they come from are documented in docs/evidence.md, section \"Stigmatizing language\", "
               f"and in {md('engine/resources/stigma_lexicon.json')}.")
    st.markdown("\n".join(f"- **{md(c)}** ({v.per_category[c]}): {md(desc)}" for c, desc in base.categories.items()))
    if base.references:
        with st.expander("Sources of the built-in lexicon"):
            st.markdown("\n".join(f"- **{md(k)}**: {md(ref)}" for k, ref in base.references.items()))


def _entries(v) -> None:
    if v.entry_error:
        st.error(f"A clinician entry cannot be used: {md(v.entry_error)}. Deactivate it below.")
    active = v.active
    if v.version:
        st.markdown(f"**Lexicon version in use:** {md(v.version)} (built in + {len(active)} clinician "
                    f"{'entry' if len(active) == 1 else 'entries'})")
    st.caption("Every stigmatizing-language result keeps the lexicon version it was computed with. Adding or "
               "deactivating an entry changes the version, and results computed with an older version are "
               "recomputed with the current lexicon; the command line (`python -m engine stigma`) uses the same "
               "entries.")
    if v.entry_rows:
        frames.show(v.entry_rows)
    else:
        st.info("No clinician entries yet: the built-in lexicon is used as it is.")


def _forms(v) -> None:
    base_lex, active = v.built_in, v.active
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
        d1, d2 = st.columns([4, 1], vertical_alignment="bottom")
        d1.selectbox("Deactivate a clinician entry", list(active), key="stig_deactivate",
                     format_func=lambda i: f"#{i} {active[i][0]} ({active[i][1]})" if i in active else str(i))
        d2.button("Deactivate", on_click=_deactivate_stigma_entry)


def main() -> None:
    st.title("Stigmatizing-language lexicon")
    stig_store = state.guarded(state.store)
    v = state.guarded(view.lexicon_page_view, stig_store) or view.lexicon_page_view(None)
    _built_in(v)
    stig_flash = ss.pop("stig_flash", None)
    if stig_flash:
        getattr(st, stig_flash[0])(stig_flash[1])
    if not v.store_error:
        _entries(v)
        _forms(v)


main()
