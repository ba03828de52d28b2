"""Settings page pieces that show plain data: the embedded models' measured validity."""
from components.frames import show
from engine.core.rubric import item_label


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
