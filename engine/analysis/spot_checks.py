"""Clinicians' spot checks as their own comparison: each clinician against the imported panel's median, and
clinicians against each other where they rated the same summaries. The panel's agreement statistics
(:mod:`engine.analysis.agreement`) never include spot checks."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from engine.core import Dataset, RESERVED_RATER_GROUPS, SPOT_CHECK_GROUP, get_item


@dataclass
class SpotCheckVsPanel:
    """One clinician's spot checks against the imported panel's median of the same summaries and items."""

    reviewer: str
    n_summaries: int
    n_likert: int  # 1-5 items compared (both sides scored)
    exact: int  # |clinician − panel median| < 0.5
    within_one: int  # |clinician − panel median| <= 1
    mean_difference: Optional[float]  # clinician − panel median, over the 1-5 items
    n_yes_no: int
    yes_no_agree: int  # yes/no items where the clinician gives the panel majority (ties left out)


@dataclass
class SpotCheckPair:
    """Two clinicians who spot-checked the same summaries: their agreement on the items both scored."""

    reviewer_a: str
    reviewer_b: str
    n_items: int  # (summary, item) pairs both scored
    exact: int
    mean_abs_difference: Optional[float]


@dataclass
class SpotCheckAgreement:
    vs_panel: list[SpotCheckVsPanel] = field(default_factory=list)
    pairs: list[SpotCheckPair] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.vs_panel


def spot_check_agreement(ds: Dataset) -> SpotCheckAgreement:
    """The clinicians' spot checks as their own comparison: each clinician vs the panel median (adjudicated final
    scores are not the panel and are left out here), and each pair of clinicians on what they both scored."""
    spot: dict[str, dict[tuple[str, str], Optional[float]]] = {}
    panel: dict[tuple[str, str], list[float]] = {}
    for r in ds.ratings:
        if r.rater_group == SPOT_CHECK_GROUP:
            spot.setdefault(r.rater_id, {})[(r.summary_id, r.item)] = r.value
        elif r.rater_group not in RESERVED_RATER_GROUPS and r.value is not None:
            panel.setdefault((r.summary_id, r.item), []).append(r.value)
    out = SpotCheckAgreement()
    for reviewer, cells in sorted(spot.items()):
        diffs, yn = [], []
        for (sid, key), v in cells.items():
            vals = panel.get((sid, key))
            if v is None or not vals:
                continue
            med = float(np.median(vals))
            if get_item(key).is_likert:
                diffs.append(v - med)
            elif med != 0.5:
                yn.append((v >= 0.5) == (med > 0.5))
        out.vs_panel.append(SpotCheckVsPanel(
            reviewer, len({sid for sid, _ in cells}), len(diffs), sum(abs(d) < 0.5 for d in diffs),
            sum(abs(d) <= 1 for d in diffs), float(np.mean(diffs)) if diffs else None, len(yn), sum(yn)))
    names = sorted(spot)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = [(spot[a][k], spot[b][k]) for k in spot[a].keys() & spot[b].keys()
                    if spot[a][k] is not None and spot[b][k] is not None]
            if both:
                out.pairs.append(SpotCheckPair(a, b, len(both), sum(x == y for x, y in both),
                                               float(np.mean([abs(x - y) for x, y in both]))))
    return out


def spot_check_rows(sc: Optional[SpotCheckAgreement]) -> tuple[list[dict], list[dict]]:
    """Plain rows for the UI and the report: clinicians vs the panel, and clinicians vs each other."""
    if sc is None:
        return [], []
    pct = (lambda k, n: f"{k} of {n} ({round(100 * k / n)}%)" if n else "—")
    vs = [{"clinician": v.reviewer, "summaries": v.n_summaries,
           "1-5 items: same level as panel median": pct(v.exact, v.n_likert),
           "within one level": pct(v.within_one, v.n_likert),
           "mean difference (clinician − panel)": "—" if v.mean_difference is None else f"{v.mean_difference:+.2f}",
           "yes/no items: panel majority": pct(v.yes_no_agree, v.n_yes_no)} for v in sc.vs_panel]
    pairs = [{"clinicians": f"{p.reviewer_a} · {p.reviewer_b}", "items both scored": p.n_items,
              "same value": pct(p.exact, p.n_items),
              "mean |difference|": "—" if p.mean_abs_difference is None else f"{p.mean_abs_difference:.2f}"}
             for p in sc.pairs]
    return vs, pairs
