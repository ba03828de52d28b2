"""Settings page pieces: the embedded models' measured validity, the choice of MED-OMIT's fact source."""
from components.frames import show
from engine.core import item_label


def _f(v) -> str:
    return "—" if v is None else f"{v:.2f}"


def render_validity(figures: dict[str, list[dict]], labels: dict[str, str]) -> None:
    """``figures``: model key -> rows of the validity benchmark (item, samples, spearman_*, auroc, seconds)."""
    rows = []
    for key, rs in figures.items():
        if not rs:
            rows.append({"model": labels[key], "item": "not measured yet", "samples": "", "ρ expected": "",
                         "ρ calibrated": "", "AUROC": "", "s / summary": ""})
        for r in rs:
            rows.append({"model": labels[key], "item": item_label(r["item"]), "samples": str(r["samples"]),
                         "ρ expected": _f(r.get("spearman_raw")), "ρ calibrated": _f(r.get("spearman_calibrated")),
                         "AUROC": _f(r.get("auroc")), "s / summary": _f(r.get("sec_per_summary_median"))})
    show(rows)


def render_rows(rows: list[dict]) -> None:
    """A plain table of engine rows."""
    show(rows)


def render_medomit_facts(key: str) -> None:
    """The choice of MED-OMIT's fact source (widget ``key``; its value must already be a registry key) with what the
    chosen source is and the measured times."""
    import streamlit as st

    from engine.evidence.medomit import AUTO, AUTO_DESCRIPTION, AUTO_LABEL, FACT_SOURCES, FACT_SOURCE_NOTE

    st.radio("Where MED-OMIT's facts come from", [AUTO, *FACT_SOURCES], key=key, horizontal=True,
             format_func=lambda k: AUTO_LABEL if k == AUTO else FACT_SOURCES[k].label)
    chosen = st.session_state[key]
    st.caption((AUTO_DESCRIPTION if chosen == AUTO else FACT_SOURCES[chosen].description) + ". " + FACT_SOURCE_NOTE)
