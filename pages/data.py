"""Data page: import (upload or path) with a validation report, dataset list, delete with confirmation.

Uploads are read from private temporary copies (components.uploads) that live for one script run only."""
from contextlib import nullcontext
from pathlib import Path

import pandas as pd
import streamlit as st

from components import report as report_view, state, uploads
from engine.core import untrusted
from engine.views import data as view

md = untrusted.md
SHOWN_ISSUES = 200


def _report_rows(rep, shown) -> tuple[list[dict], list[dict]]:
    files = [{"file": shown(f), "format": rep.formats.get(f, "?")} for f in rep.files[:SHOWN_ISSUES]]
    issues = [{"severity": i.severity, "file": shown(i.file), "row": i.row, "line": i.line, "field": i.field or "",
               "message": i.message, "fix": i.hint} for i in rep.shown_issues(SHOWN_ISSUES)]
    return files, issues


def _show_report(ok: bool, rep, shown) -> None:
    files, issues = _report_rows(rep, shown)
    report_view.render_report(ok, files, rep.counts, issues, n_errors=rep.error_count,
                              more=rep.more_text(SHOWN_ISSUES))


def _wide_mapping(wide):
    """The column mapping of a wide ratings export, as guessed and edited by the user."""
    p, header, guess = wide
    st.markdown(f"**Column mapping** for the ratings export {md(Path(p).name)} (edit if a column was not "
                "recognised)")
    opts = ["(none)"] + header
    table = pd.DataFrame([{"field": "summary id", "column": guess.summary_col or "(none)"},
                          {"field": "rater id", "column": guess.rater_col or "(none)"},
                          {"field": "rater group", "column": guess.rater_group_col or "(none)"}]
                         + [{"field": it.key, "column": guess.items.get(it.key, "(none)")} for it in view.ITEMS])
    edited = st.data_editor(table, hide_index=True, disabled=["field"], width="stretch",
                            column_config={"column": st.column_config.SelectboxColumn(options=opts)})
    ignore = st.multiselect("Columns to ignore", header)
    col = {r["field"]: ("" if r["column"] == "(none)" else r["column"]) for r in edited.to_dict("records")}
    return view.RatingsMapping(col["summary id"], col["rater id"], col["rater group"],
                               {it.key: col[it.key] for it in view.ITEMS if col.get(it.key)}, ignore)


def _other_columns(others: list[str], mapping):
    """Columns of the other tables to ignore or rename (into ``mapping``)."""
    with st.expander("Columns of the other tables: ignore or rename (e.g. an extra 'dataset' column in a "
                     "dialogue CSV)"):
        ignore_other = st.multiselect("Columns to ignore", others, key="ignore_other")
        renames = st.data_editor(pd.DataFrame({"column in the file": pd.Series(dtype=str),
                                               "expected name": pd.Series(dtype=str)}),
                                 num_rows="dynamic", hide_index=True, key="rename_other",
                                 column_config={"column in the file": st.column_config.SelectboxColumn(
                                     options=others)})
        rename = {str(r["column in the file"]).strip(): str(r["expected name"]).strip()
                  for r in renames.to_dict("records")
                  if isinstance(r.get("column in the file"), str) and isinstance(r.get("expected name"), str)
                  and r["column in the file"].strip() and r["expected name"].strip()}
        if ignore_other or rename:
            base = mapping or view.RatingsMapping()
            mapping = view.RatingsMapping(base.summary_col, base.rater_col, base.rater_group_col, base.items,
                                          list(base.ignore) + list(ignore_other), base.default_rater_group, rename)
    return mapping


def _ehr_options():
    with st.expander("EHR and research exports (FHIR, MIMIC-IV-Note)"):
        e1, e2, e3 = st.columns(3)
        summary_codes = e1.text_input("Document type codes that mark the summaries (FHIR)", value="llm-summary",
                                      help="Comma-separated codes (or SYSTEM|CODE) of the DocumentReference type or "
                                           "category your summarizer's output carries; the sample uses llm-summary.")
        case_by = e2.radio("One case per", ["patient", "encounter"], horizontal=True, key="fhir_case_by")
        hold_out = e3.text_input("Note types held out as the reference summary", value="",
                                 help="e.g. DS: MIMIC discharge notes are kept out of the source notes and imported "
                                      "as the clinician's summary of the admission.")
        st.caption("Summaries can also come in their own CSV with a text column and one of hadm_id, encounter_id, "
                   "patient_id; docs/data.md describes every format.")
    return summary_codes, case_by, hold_out


def _imported(res) -> None:
    state.bump_data_version()
    if res.unchanged:
        st.info(f"Dataset '{md(res.dataset)}' already holds exactly this content: nothing changed.")
        return
    st.success(f"Imported into '{md(res.dataset)}': " + ", ".join(md(f"{v} {k}") for k, v in res.counts.items())
               + "".join(f" · {md(c.text())}" for c in res.carried)
               + (f" · backup first: {md(res.backup)}" if res.backup else ""))
    if st.session_state.get("dataset") != res.dataset:
        previous = st.session_state.get("dataset")
        state.switch_dataset(res.dataset)
        st.info(f"Now showing dataset '{md(res.dataset)}' on every page"
                + (f" (it was '{md(previous)}'; switch back in the sidebar)." if previous else "."))


def _validate_and_import(store, paths, options, target, name, replace, force, inputs, shown) -> bool:
    """The Validate and Import buttons; True when an import changed the workspace."""
    attempt = repr((inputs, options, target, name))  # what a Validate checked: Import waits until it passes
    failed = st.session_state.get("_data_failed")
    blocked = bool(failed) and failed[0] == attempt
    b1, b2 = st.columns([1, 5])
    do_validate = b1.button("Validate", disabled=not paths)
    do_import = b2.button("Import", type="primary", disabled=not paths or blocked,
                          help="Validate found problems in these files with these settings: fix them (see the "
                               "table below) or change the files first." if blocked else None)
    if blocked and not do_validate:
        _show_report(False, failed[1], shown)
    if not (do_validate or do_import):
        return False
    try:
        ds, rep = view.validate(store, paths, options, into=target, name=name or None)
    except view.DatasetInvalid as exc:
        st.session_state["_data_failed"] = (attempt, exc.report)
        if not blocked:
            st.rerun()  # the buttons are drawn again with Import off, the report below them
        _show_report(False, exc.report, shown)
        return False
    except view.StoreError as exc:
        state.show_store_error(exc)
        return False
    except (ValueError, OSError) as exc:
        st.error(md(exc))
        return False
    st.session_state.pop("_data_failed", None)
    _show_report(True, rep, shown)
    if not do_import:
        return False
    try:
        res = view.import_validated(store, ds, paths, name=name or None, into=target, replace=replace,
                                    force=bool(force))
    except view.StoreError as exc:
        state.show_store_error(exc)
        return False
    _imported(res)
    return True


def _import(store, v) -> bool:
    """The import section; True when an import changed the workspace."""
    st.markdown("#### Import")
    src = st.radio("Source", ["Upload files", "Paths on this machine"], horizontal=True)
    ups, raw = [], ""
    if src == "Upload files":
        ups = st.file_uploader("Case JSON files, bundle tables (CSV/JSONL), a wide ratings CSV, a dialogue CSV, a "
                               "FHIR Bundle or Bulk Data export (NDJSON files), MIMIC-IV-Note CSV (.csv or .csv.gz)",
                               type=["json", "csv", "jsonl", "ndjson", "gz"], accept_multiple_files=True) or []
    else:
        raw = st.text_area("One file or folder per line", placeholder="/data/pdsqi/cases/\n/data/pdsqi/ratings.csv")

    def shown(f: str) -> str:
        """An uploaded copy is named by its upload name, never by its private temp path."""
        return Path(f).name if ups and f else f

    copies = uploads.private_copies([(u.name, u.getvalue()) for u in ups]) if ups else nullcontext(
        [ln.strip() for ln in raw.splitlines() if ln.strip()])
    with copies as paths:  # uploaded copies are deleted when this block ends (also on error, stop or rerun)
        c1, c2, c3 = st.columns(3)
        name = c1.text_input("New dataset name", value=Path(paths[0]).stem if paths else "")
        into = c2.selectbox("…or add to existing dataset", ["(new dataset)"] + v.dataset_names)
        specialty = c3.text_input("Target specialty for inputs without one (dialogue CSV)", value="Unspecified")
        replace = st.checkbox("Replace a dataset of the same name",
                              help="Reviews, adjudications and results of summaries whose content is unchanged are "
                                   "kept (re-attached when only the id changed); a backup is written first.")
        force = st.checkbox("…and drop the reviews and results of summaries that are gone", value=False,
                            disabled=not replace, key="replace_force",
                            help="Without this, a replace that would drop any reviewer's work is refused with the "
                                 "count.")
        columns = view.input_columns(paths)
        mapping = _wide_mapping(columns.wide) if columns.wide else None
        if columns.others:
            mapping = _other_columns(columns.others, mapping)
        summary_codes, case_by, hold_out = _ehr_options()
        options = view.LoadOptions(mapping=mapping, default_specialty=specialty or "Unspecified",
                                   summary_types=tuple(x.strip() for x in summary_codes.split(",") if x.strip()),
                                   case_by=case_by,
                                   hold_out_types=tuple(x.strip() for x in hold_out.split(",") if x.strip()))
        target = None if into == "(new dataset)" else into
        inputs = [(u.name, u.size, u.file_id) for u in ups] if ups else paths  # an upload's copy is new each run
        return _validate_and_import(store, paths, options, target, name, replace, force, inputs, shown)


def _write_then_rerun(write, said) -> None:
    """A workspace change the reader confirmed: ``write()``, then the page again with ``said(its result)`` shown
    (the store's error instead when it cannot be made)."""
    try:
        out = write()
    except view.StoreError as exc:
        state.show_store_error(exc)
        return
    state.bump_data_version()
    st.session_state["data_flash"] = said(out)
    st.rerun()


def _datasets(store, v) -> None:
    st.markdown("#### Datasets in the workspace")
    st.caption(f"Workspace: {md(state.workspace_label())}")
    report_view.render_datasets(v.dataset_rows)
    if v.dataset_names:
        with st.expander("Delete a dataset"):
            victim = st.selectbox("Dataset to delete", v.dataset_names, key="delete_name")
            sure = st.checkbox(f"Yes, delete '{untrusted.md_inline(victim)}' with all its ratings and results",
                               key="delete_sure")
            if st.button("Delete", disabled=not sure):
                _write_then_rerun(lambda: view.delete(store, victim),
                                  lambda saved: f"Deleted '{md(victim)}'; the workspace before the delete is backed "
                                                f"up in {md(saved)}.")
    flash = st.session_state.pop("data_flash", None)
    if flash:
        st.success(flash)


def _backups(store, v) -> None:
    st.markdown("#### Backups")
    st.caption("A backup of the whole workspace is written automatically before every delete and replace, and on "
               "request; the newest are kept (SUMCHECK_BACKUPS_KEEP, default 20). Restoring backs up the current "
               "state first.")
    if st.button("Back up now", key="backup_now"):
        try:
            made = view.back_up(store)
        except view.StoreError as exc:
            state.show_store_error(exc)
        else:
            st.success(f"Backup written: {md(made)}")
            v = state.guarded(view.data_page_view, store, stop=True)  # the new backup is listed
    backups = v.backups
    report_view.render_backups(v.backup_rows)
    if backups:
        with st.expander("Restore a backup"):
            chosen = st.selectbox("Backup", [b.path for b in backups], key="restore_pick",
                                  format_func=lambda p: next(f"{b.created_at} · {b.reason}" for b in backups
                                                             if b.path == p))
            sure_r = st.checkbox("Yes, replace everything in the workspace with this backup", key="restore_sure")
            if st.button("Restore", disabled=not sure_r, key="restore_go"):
                _write_then_rerun(lambda: view.restore(store, chosen),
                                  lambda before: f"Restored {md(chosen)}; the state before the restore is in "
                                                 f"{md(before)}.")


def main() -> None:
    st.title("Data")
    store = state.guarded(state.store, stop=True)
    v = state.guarded(view.data_page_view, store, stop=True)
    if _import(store, v):  # an import changed the workspace: read it again
        v = state.guarded(view.data_page_view, store, stop=True)
    _datasets(store, v)
    _backups(store, v)


main()
