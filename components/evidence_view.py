"""Evidence rendering: highlighted note text, MED-OMIT omitted facts, per-summary evidence tables."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st

from engine import untrusted


def highlight_html(text: str, spans: Sequence[tuple[int, int, str, str]], height: int = 0) -> str:
    """``text`` with the given (start, end, css background, title) spans marked; spans may not overlap."""
    out, pos = [], 0
    for start, end, colour, title in sorted(spans):
        if start < pos or end <= start:
            continue
        out.append(untrusted.html(text[pos:start]))
        out.append(f'<mark title="{untrusted.html(title)}" style="background:{colour};padding:0 1px;'
                   f'border-radius:2px">{untrusted.html(text[start:end])}</mark>')
        pos = end
    out.append(untrusted.html(text[pos:]))
    style = "white-space:pre-wrap;font-family:inherit;line-height:1.6"
    if height:
        style += f";max-height:{height}px;overflow-y:auto"
    return f'<div style="{style}">{"".join(out)}</div>'


def weight_badge(weight: float) -> str:
    colour = "#cf222e" if weight >= 1 else "#bf8700" if weight >= 0.5 else "#6e7781"
    return (f'<span style="background:{colour};color:white;border-radius:10px;padding:1px 8px;font-size:0.85em">'
            f"{weight:.2g}</span>")


def render_medomit_summary(weight, count, ddx_difference, n_facts: int) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("MED-OMIT weight", "—" if weight is None else f"{weight:.2f}")
    c2.metric("Omitted facts", "—" if count is None else count)
    c3.metric("Facts in the notes", n_facts)
    c4.metric("DDx difference", "—" if ddx_difference is None else f"{ddx_difference:.2f}")


def render_fact_detail(fact: dict, note_text: str | None) -> None:
    """fact: text, weight, importance, uniqueness, clusters, explanation, note_id, start, end, link."""
    st.markdown(f"{weight_badge(fact['weight'])} **{untrusted.md_inline(fact['text'])}**", unsafe_allow_html=True)
    st.caption(f"importance: {untrusted.md_inline(fact['importance'] or 'uncategorised')} · uniqueness: "
               f"{', '.join(f'{u:.2g}' for u in fact['uniqueness']) or 'in no cluster'} · link to source: "
               f"{untrusted.md_inline(fact['link'])}")
    if fact["explanation"]:
        st.markdown(f"*Model's explanation:* {untrusted.md(fact['explanation'])}")
    if fact["clusters"]:
        st.markdown("Clusters: " + "; ".join(untrusted.md_inline(c) for c in fact["clusters"]))
    if note_text is not None and fact["start"] is not None:
        st.markdown(f"Source: **Note {untrusted.md_inline(fact['note_id'])}**")
        st.markdown(highlight_html(note_text, [(fact["start"], fact["end"], "#ffd33d", "omitted fact")], height=320),
                    unsafe_allow_html=True)
    elif fact["start"] is None:
        st.info("This fact could not be linked to a place in the notes (the model paraphrased it beyond matching).")


def render_table(rows: list[dict], caption: str = "") -> None:
    if not rows:
        st.info("Nothing to show yet.")
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if caption:
        st.caption(caption)
