"""Rendering of coverage (uncovered regions heat overlay) and sentence-support evidence."""
from __future__ import annotations

import streamlit as st

from components.evidence_view import render_focus_note
from components.html import fragment
from engine.core import untrusted


def heat_colour(score: float, lo: float, hi: float) -> str:
    """Yellow → red with opacity rising with the score (scores below ``lo`` are not coloured)."""
    x = 0.0 if hi <= lo else min(max((score - lo) / (hi - lo), 0.0), 1.0)
    r, g, b = 255, int(200 - 150 * x), int(60 - 40 * x)
    return f"rgba({r},{g},{b},{0.25 + 0.6 * x:.2f})"


def legend(lo: float, hi: float, label: str) -> None:
    stops = [(heat_colour(lo + (hi - lo) * k / 4, lo, hi), lo + (hi - lo) * k / 4) for k in range(5)]
    st.markdown(fragment("heat_legend", label=label, stops=stops), unsafe_allow_html=True)


def render_heat_note(note_id: str, text: str, units: list[dict], threshold: float, hi: float,
                     focus: tuple[int, int] | None = None, scroll_page: bool = False) -> None:
    """units: {start, end, score} of this note; only units at or above the threshold are coloured. ``focus``: the
    selected region, outlined and scrolled into view in the note's box (and in the window with ``scroll_page``,
    i.e. right after the reader picked it)."""
    spans = [(u["start"], u["end"], heat_colour(u["score"], threshold, hi), f"omission score {u['score']:.3f}")
             for u in units if u["score"] >= threshold]
    if focus:
        spans = [s for s in spans if s[1] <= focus[0] or s[0] >= focus[1]]  # the region shows in the focus colour
    st.markdown(f"**Note {untrusted.md(note_id)}**")
    render_focus_note(text, spans, 420, focus, "coverage", scroll_page)


def verdict_badge(verdict: str) -> str:
    colour = {"ok": "#1a7f37", "missing": "#bf8700", "wrong": "#cf222e", "n/a": "#6e7781"}.get(verdict, "#cf222e")
    return fragment("verdict_badge", verdict=verdict, colour=colour)
