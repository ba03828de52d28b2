"""Rendering of judge results: per-item LLM vs human table, samples with raw output, provenance."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine import untrusted


def render_status(status: str, reason: str, from_cache: bool) -> None:
    note = " (from the workspace cache)" if from_cache else ""
    if status == "scored":
        st.success(f"Scored{note}." + (f" {untrusted.md(reason)}" if reason else ""))
    elif status == "refused":
        st.error(f"Refused: {untrusted.md(reason)}")
    else:
        st.warning(f"Unscored: {untrusted.md(reason)}. The raw replies are below; no score was guessed.")


def render_item_table(rows: list[dict]) -> None:
    """rows: item, LLM median, spread, expected, human median, difference."""
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("LLM median over the samples (self-consistency); spread = max − min of the sample scores; "
               "expected = probability-weighted score from the greedy sample's token probabilities "
               "(P(yes) for yes/no items); human median over the raters.")


def render_explanations(expl: dict[str, str]) -> None:
    if expl:
        st.markdown("**Explanations**")
        for item, text in expl.items():
            st.markdown(f"- **{untrusted.md_inline(item)}**: {untrusted.md_inline(text)}")


def render_samples(samples: list[dict]) -> None:
    for s in samples:
        label = untrusted.md_inline(f"Sample {s['index']} · T={s['temperature']} · seed {s['seed']} · " + (
            "ok" if not s["error"] else "UNSCORED"))
        with st.expander(label):
            if s["error"]:
                st.error(untrusted.md(s["error"]))
            for w in s["warnings"]:
                st.warning(untrusted.md(w))
            st.code(s["raw"] or "(empty reply)", language="json")


def render_provenance(prov: dict, timing: dict) -> None:
    with st.expander("Provenance and timing"):
        st.json({"provenance": prov, "timing": timing})


def render_dataset_results(rows: list[dict]) -> None:
    if not rows:
        st.info("No judge results for this dataset yet.")
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
