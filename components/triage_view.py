"""The triage queue as a table (plain data in, nothing computed here)."""
import streamlit as st

from components.frames import show


def rows(entries, blind: bool) -> list[dict]:
    """Table rows of :class:`engine.judge.triage.TriageEntry` items; ``blind`` hides the judge's scores in the reasons."""
    return [{"rank": i + 1, "summary": e.summary_id, "case": e.case_id, "priority": f"{e.priority:.2f}",
             "stratum": e.stratum, "why": "; ".join(e.blind_reasons if blind else e.reasons)}
            for i, e in enumerate(entries)]


def render(entries, blind: bool) -> None:
    show(rows(entries, blind), column_config={"why": st.column_config.TextColumn("why", width="large")})
