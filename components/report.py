"""Validation report and dataset list rendering."""
from __future__ import annotations

import streamlit as st

from components.frames import show
from engine.core import untrusted


WRAPPED_ISSUES = 50  # up to this many issues are shown in a table whose cells wrap


def render_report(ok: bool, files: list[dict], counts: dict, issues: list[dict], n_errors: int | None = None,
                  more: str = "") -> None:
    """files: {file, format}; issues: {severity, file, row, field, message, fix} (at most a few hundred shown);
    ``n_errors``: the report's full error count; ``more``: the line saying how many issues are not shown."""
    if files:
        show(files)
    if counts:
        st.caption("Found: " + ", ".join(untrusted.md_inline(f"{v} {k}") for k, v in counts.items()))
    n_err = n_errors if n_errors is not None else sum(1 for i in issues if i["severity"] == "error")
    if ok:
        st.success("Valid." + (f" {len(issues)} warning(s)." if issues else ""))
    else:
        st.error(f"{n_err} error(s): nothing was imported. Each row below names the file, row and field.")
    if issues:
        show(issues, wrap=len(issues) <= WRAPPED_ISSUES)  # a short list wraps, so every fix reads whole
    if more:
        st.caption(untrusted.md(more))


def render_backups(rows: list[dict]) -> None:
    if not rows:
        st.info("No backup of this workspace yet.")
        return
    show(rows)


def render_datasets(rows: list[dict]) -> None:
    if not rows:
        st.info("The workspace has no dataset yet.")
        return
    show(rows)
