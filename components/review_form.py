"""The PDSQI-9 review form: every item with its question, guidance and level anchors, a value and a comment."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import streamlit as st

from engine.rubric import Item, Scale, parse_value

NOT_RATED = "—"


def value_options(item: Item) -> list[str]:
    """The choices offered for an item: not rated, then the scale (1–5, yes/no), then NA where allowed."""
    if item.scale is Scale.BINARY:
        return [NOT_RATED, "yes", "no"]
    return [NOT_RATED, "1", "2", "3", "4", "5"] + (["NA"] if item.allows_na else [])


def option_for(item: Item, value: Optional[float], rated: bool) -> str:
    """The option that shows a stored value (``rated`` False = not rated yet)."""
    if not rated:
        return NOT_RATED
    if value is None:
        return "NA" if item.allows_na else NOT_RATED
    if item.scale is Scale.BINARY:
        return "yes" if value >= 0.5 else "no"
    return f"{value:g}"


def _option_label(item: Item, option: str) -> str:
    if option == NOT_RATED:
        return "— not rated"
    if option == "NA":
        return "NA — not applicable"
    if item.anchors and option.isdigit():
        anchor = item.anchor(int(option))
        return f"{option} — {anchor if len(anchor) <= 90 else anchor[:87] + '…'}"
    return option


def render_item_help(item: Item) -> None:
    """Question, guidance and all level anchors of one item (inside an expander)."""
    with st.expander(f"{item.label}: guidance and anchors"):
        st.markdown(f"**{item.question}**")
        if item.guidance:
            st.caption(item.guidance)
        if item.anchors:
            st.markdown("\n".join(f"{level}. {text}" for level, text in enumerate(item.anchors, start=1)))
        elif item.scale is Scale.BINARY:
            st.markdown("Answer **yes** or **no**.")


def render_review_form(key: str, items: Sequence[Item], defaults: Mapping[str, Optional[float]],
                       comments: Optional[Mapping[str, str]] = None,
                       submit_label: str = "Save review") -> Optional[dict]:
    """Draw the form. ``defaults``: item key -> current value (None = NA; a missing key = not rated).

    Returns ``{"values": {item: float | None}, "comments": {item: str}}`` for the items given a value, when
    the form was submitted; otherwise None. Items left at "not rated" are not returned.
    """
    comments = comments or {}
    with st.form(key):
        chosen: dict[str, str] = {}
        notes: dict[str, str] = {}
        for item in items:
            st.markdown(f"**{item.label}** — {item.question}")
            render_item_help(item)
            left, right = st.columns([2, 3])
            opts = value_options(item)
            current = option_for(item, defaults.get(item.key), item.key in defaults)
            chosen[item.key] = left.selectbox(
                f"{item.label} value", opts, index=opts.index(current), key=f"{key}:{item.key}:value",
                format_func=lambda o, it=item: _option_label(it, o), label_visibility="collapsed")
            notes[item.key] = right.text_input(
                f"{item.label} comment", value=comments.get(item.key, ""), key=f"{key}:{item.key}:comment",
                placeholder="Comment (optional)", label_visibility="collapsed")
        submitted = st.form_submit_button(submit_label, type="primary")
    if not submitted:
        return None
    values = {k: parse_value(next(i for i in items if i.key == k), v) for k, v in chosen.items() if v != NOT_RATED}
    return {"values": values, "comments": {k: notes[k].strip() for k in values}}
