"""Rendering of judge results: per-item LLM vs human table, samples with raw output, provenance."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from components.frames import show
from engine.core import untrusted
from engine.data import judge_cell


def when_text(judged_now: bool, created_at: str = "") -> str:
    """How fresh a result is: 'judged now', or 'from the workspace cache (judged on <date>)'."""
    if judged_now:
        return "judged now"
    day = (created_at or "")[:16].replace("T", " ")
    return f"from the workspace cache (judged on {day} UTC)" if day else "from the workspace cache"


def render_status(status: str, reason: str, when: str = "", smoke_model: str = "") -> None:
    """The result's status with its freshness (``when_text``); ``smoke_model``: the smoke-test badge naming it."""
    note = f" — {untrusted.md_inline(when)}" if when else ""
    if status == "scored":
        st.success(f"Scored{note}." + (f" {untrusted.md(reason)}" if reason else ""))
    elif status == "refused":
        st.error(f"Refused{note}: {untrusted.md(reason)}")
    else:
        st.warning(f"Unscored{note}: {untrusted.md(reason)}. The raw replies are below; no score was guessed.")
    if smoke_model:
        smoke_badge(smoke_model)


def smoke_badge(model: str, what: str = "LLM judge scores") -> None:
    from components.evidence_view import smoke_badge as badge

    badge(model, what)


def render_item_table(rows: list[dict]) -> None:
    """rows: item, expected score, LLM median, spread, human median, difference."""
    from components.frames import clean

    show(rows)
    st.caption("Expected score = the judge's main number: the probability-weighted score from the greedy sample's "
               "token probabilities (P(yes) for yes/no items); a small model's median hardly moves, its expected "
               "score does. LLM median over the samples; spread = max − min of the sample scores; human median over "
               "the raters.")


def render_explanations(expl: list[tuple[str, str, str]]) -> None:
    """``expl``: (item label, the judge's explanation, how it contradicts the evidence or "")."""
    if expl:
        st.markdown("**Explanations**")
        for item, text, contradicts in expl:
            st.markdown(f"- **{untrusted.md_inline(item)}**: {untrusted.md_inline(text)}"
                        + (f"  \n  ⚠ *Contradicts the evidence: {untrusted.md_inline(contradicts)}*"
                           if contradicts else ""))


def render_conflicts(conflicts: dict[str, str]) -> None:
    """Items whose verdict the product's own evidence contradicts (item label -> what the evidence finds)."""
    if conflicts:
        st.warning("The judge's verdict contradicts the evidence on: " + "; ".join(
            f"**{untrusted.md_inline(k)}** — {untrusted.md_inline(v)}" for k, v in conflicts.items()))


def readable_reply(raw: str) -> str:
    """A judge's raw reply as a reader reads it: JSON indented one key per line; anything else as it came."""
    if not raw:
        return "(empty reply)"
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw


def render_samples(samples: list[dict]) -> None:
    for s in samples:
        label = untrusted.md_inline(f"Sample {s['index']} · T={s['temperature']} · seed {s['seed']} · " + (
            "ok" if not s["error"] else "UNSCORED"))
        with st.expander(label):
            if s["error"]:
                st.error(untrusted.md(s["error"]))
            for w in s["warnings"]:
                st.warning(untrusted.md(w))
            st.code(readable_reply(s["raw"]), language="json", wrap_lines=True)


PROVENANCE_LABELS = {"model_file": "model file", "model_sha256": "model sha256", "backend": "backend",
                     "prompt_version": "prompt version", "llama_cpp_python": "llama-cpp-python",
                     "prompt_tokens": "prompt tokens", "prompt_s": "reading the prompt (s)",
                     "decode_s": "writing the answer (s)", "total_s": "total (s)",
                     "prompt_tokens_per_s": "prompt tokens per second", "decode_tokens_per_s": "tokens written per second"}


def provenance_rows(prov: dict, timing: dict) -> list[dict]:
    """Provenance and timing as (what, value) rows: nested parameters one per row, numbers rounded."""
    rows = []

    def add(section: str, key: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                add(section, f"{key} · {k}", v)
            return
        if isinstance(value, float):
            value = f"{value:.2f}" if abs(value) < 1000 else f"{value:,.0f}"
        rows.append({"": section, "what": PROVENANCE_LABELS.get(key, key.replace("_", " ")),
                     "value": "" if value is None else str(value)})

    for k, v in prov.items():
        add("provenance", k, v)
    for k, v in timing.items():
        add("timing", k, v)
    return rows


def render_provenance(prov: dict, timing: dict) -> None:
    with st.expander("Provenance and timing"):
        show(provenance_rows(prov, timing))


def render_dataset_results(rows: list[dict]) -> None:
    if not rows:
        st.info("No judge results for this dataset yet.")
        return
    from components.frames import clean

    df = clean(rows)
    show(df)
    st.caption("1-5 items: the expected score; yes/no items: the judge's answer; NA: the judge found the item not "
               "applicable; blank: not scored.")
    if "smoke-test model" in df.columns and (df["smoke-test model"] == "yes").any():
        st.caption("smoke-test model = yes: graded by the embedded 270M model; those scores are not clinically "
                   "meaningful.")
    st.download_button("Download table (CSV)", untrusted.dataframe_csv(df), "judge_results.csv", "text/csv",
                       key="dl_judge_results")


def partial_rows(partial) -> list[dict]:
    """Table rows for a partial result handed over while sampling runs (``engine.judge.runner.PartialResult``): per item the
    median over the samples so far, the greedy sample's expected score, and whether the median is already that of
    the full run. Empty when it holds no scores."""
    from engine.core import ITEMS

    if not partial.items:
        return []
    rows = []
    for item in ITEMS:
        sc = partial.items.get(item.key)
        if sc is None:
            continue
        rows.append({"item": item.label, "median so far": judge_cell(item, sc),
                     "expected": "" if sc.expected is None else f"{sc.expected:.2f}",
                     "decided": "yes" if partial.decided.get(item.key) else ""})
    return rows


def render_partial(partial, rows: list[dict]) -> None:
    taken, n, sid = partial.taken, partial.n_samples, partial.summary_id
    count = f" after {taken} of {n} samples" if taken and n else ""
    st.caption(f"{untrusted.md_inline(sid)}: scores so far{count} (the first are the greedy sample's); "
               "decided = no further sample can change that median.")
    show(rows)
