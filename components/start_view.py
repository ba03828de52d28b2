"""The start page's blocks: what SumCheck does, where the current dataset stands, and the next steps as buttons."""
from __future__ import annotations

import streamlit as st

from engine.core import untrusted

WHAT = """**SumCheck checks LLM-written summaries of a patient's prior notes** before a summarizer goes live, fully
offline. For each summary it gives:

- a **PDSQI-9 grade** from a local LLM judge (expected score per item, with the raw replies and provenance);
- **evidence**: facts the summary omits, source passages it leaves uncovered, sentences the notes do not support,
  citations that point to the wrong note, stigmatizing language;
- **agreement** between your raters and the judge (ICC, Krippendorff α, Gwet AC, κ with CIs), a disagreement
  explorer, spot-checks, adjudication and a committee report."""


def what_it_does() -> None:
    st.markdown(WHAT)


TILES_PER_ROW = 4  # at 1,280 px a tile this wide shows "36 of 36" whole


def status(rows: list[list[tuple[str, str]]], judged: list[dict]) -> None:
    """``rows``: rows of (label, value) shown as metrics, at most :data:`TILES_PER_ROW` a row, each row as wide
    as four; ``judged``: rows of judge configurations with coverage."""
    for counts in rows:
        cols = st.columns(TILES_PER_ROW)
        for col, (label, value) in zip(cols, counts[:TILES_PER_ROW]):
            col.metric(label, value)
    if judged:
        from components.frames import show

        show(judged)
    else:
        st.caption("Not judged yet.")


def next_steps(steps: list[dict]) -> None:
    """``steps``: text, page, command."""
    st.markdown("#### Next")
    for i, s in enumerate(steps, 1):
        if st.button(f"{i}. {s['text']}", key=f"next_step_{i}", type="primary" if i == 1 else "secondary"):
            st.switch_page(s["page"])
        if s["command"]:
            st.caption(f"or from the command line: {untrusted.md_inline(s['command'])}")
