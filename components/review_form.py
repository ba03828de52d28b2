"""The PDSQI-9 review form: every item with its question, guidance and level anchors, a value and a comment,
and the keyboard shortcuts of the Spot-check page (a tiny inline script, nothing loaded from the network)."""
from __future__ import annotations

import json
from typing import Mapping, Optional, Sequence

import streamlit as st
from markupsafe import Markup

from components.html import fragment
from engine.core import Item, Scale, format_value, parse_value

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
    return format_value(item, value)  # the one display rule: yes/no, or the level


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
            opts = value_options(item)
            current = option_for(item, defaults.get(item.key), item.key in defaults)
            # radios, not drop-downs: the anchors stay visible and the keyboard shortcuts can pick a level
            chosen[item.key] = st.radio(
                f"{item.label} value", opts, index=opts.index(current), key=f"{key}:{item.key}:value",
                format_func=lambda o, it=item: _option_label(it, o), label_visibility="collapsed",
                horizontal=item.scale is Scale.BINARY)
            notes[item.key] = st.text_input(
                f"{item.label} comment", value=comments.get(item.key, ""), key=f"{key}:{item.key}:comment",
                placeholder="Comment (optional)", label_visibility="collapsed")
        submitted = st.form_submit_button(submit_label, type="primary")
    if not submitted:
        return None
    values = {k: parse_value(next(i for i in items if i.key == k), v) for k, v in chosen.items() if v != NOT_RATED}
    return {"values": values, "comments": {k: notes[k].strip() for k in values}}


SAVE_LABEL = "Save review"
NEXT_LABEL = "Next summary"
PREV_LABEL = "Previous summary"
FORM_MARKER = "sumcheck-review-form"  # class of a hidden span next to the form: the script acts only on that page
# Static markup of our own (no data in it): the marker span and the style that keeps the form column in view.
STICKY_FORM_STYLE = fragment("sticky_form_style", marker=FORM_MARKER)
FORM_COLUMN_MARKER = fragment("column_marker", marker=FORM_MARKER)  # marks the column the sticky style keeps in view

SHORTCUTS_HELP = ("**Keyboard shortcuts** — **1**–**5** set the level of the highlighted item, **0** = NA "
                  "(Synthesized) · **y** / **n** answer a yes/no item · **j** / **k** highlight the next / previous "
                  "item (a key that sets a value moves on by itself) · **]** / **[** next / previous summary · "
                  "**Ctrl+Enter** (or **Enter** outside a comment) saves. Keys are ignored while you type in a "
                  "comment, except Ctrl+Enter.")


def _js(value: object) -> Markup:
    """``value`` as a JavaScript literal for our inline script: JSON with ``<`` and ``>`` as escapes, so no text
    can close the script; markup for the template, which writes it as it is."""
    return Markup(json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e"))


def shortcuts_script(items: Sequence[Item]) -> str:
    """The keyboard-shortcut listener as one inline script (the ``shortcuts_script`` fragment: inline only, no
    src=, no fetch, no URL). It runs in a same-origin srcdoc iframe and listens on the page itself."""
    spec = [{"key": i.key, "binary": i.scale is Scale.BINARY, "na": i.allows_na} for i in items]
    return fragment("shortcuts_script", items=_js(spec), save=_js(SAVE_LABEL), next_label=_js(NEXT_LABEL),
                    prev=_js(PREV_LABEL), marker=_js(FORM_MARKER))


def render_shortcuts(items: Sequence[Item]) -> None:
    """The shortcut help and the listener (a 1-px same-origin iframe; Streamlit has no key handling of its own)."""
    st.caption(SHORTCUTS_HELP)
    # an HTML string gives a srcdoc iframe that may reach its same-origin parent page (our own script only)
    st.iframe(shortcuts_script(items), height=1, tab_index=-1)
