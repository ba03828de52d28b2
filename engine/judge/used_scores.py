"""Which score stands for each PDSQI-9 item where decisions are made (triage, the committee report), and why.

Per item, in this order:
  1. **calibrated** — the stored calibration of this judge configuration, when it fitted the item and its
     leave-one-case-out ranking is at least the raw expected score's
     (:attr:`engine.judge.calibration.ItemCalibration.keeps_ranking`);
  2. **combination** — the item's default combination of the judge with its own evidence
     (:mod:`engine.judge.combination`), when the item has one;
  3. **judge** — the judge's expected score.
A calibration that loses ranking is never used: the item falls back to 2 — or to 3 when on the same raters the
combination ranked worse than the judge alone (both have no fitted parameter) — and the reason says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from engine.judge.calibration import Calibration
from engine.judge.combination import Scales, combine, describe, has_combination
from engine.judge.features import Features


@dataclass(frozen=True)
class ScoreChoice:
    item: str
    source: str  # "calibrated" | "combination" | "judge"
    why: str


def choices(items, cal: Optional[Calibration]) -> dict[str, ScoreChoice]:
    """item -> which score is used for it and why."""
    out = {}
    for item in items:
        ic = cal.items.get(item) if cal is not None else None
        fallback = "combination" if has_combination(item) else "judge"
        if ic is not None and ic.status == "fitted" and ic.keeps_ranking is not False:
            out[item] = ScoreChoice(item, "calibrated", f"{cal.label} (v{cal.version}, {cal.kind})")
        elif ic is not None and ic.status == "fitted":
            comb = ic.combination.spearman.value if ic.combination else None
            judge = ic.before.spearman.value if ic.before else None
            if fallback == "combination" and comb is not None and judge is not None and comb < judge:
                fallback = "judge"  # on these raters the evidence made the ranking worse
            out[item] = ScoreChoice(item, fallback, "the calibration ranks worse than the judge (leave-one-case-out "
                                    "Spearman): not used")
        elif ic is not None:
            out[item] = ScoreChoice(item, fallback, f"not calibrated: {ic.reason}")
        else:
            out[item] = ScoreChoice(item, fallback, "no calibration stored" if cal is None else "not calibrated")
    return out


def used_scores(expected: Mapping[str, Optional[float]], feats: Optional[Features], cal: Optional[Calibration],
                picks: Mapping[str, ScoreChoice], scales: Optional[Mapping[str, Scales]] = None
                ) -> dict[str, Optional[float]]:
    """item -> the score used for one summary (``expected``: item -> the judge's expected score; ``scales``: item
    -> the combination's reference scales over the dataset, :func:`engine.judge.combination.dataset_scales`)."""
    out: dict[str, Optional[float]] = {}
    for item, e in expected.items():
        pick = picks.get(item)
        if e is None or pick is None or pick.source == "judge":
            out[item] = e
        elif pick.source == "calibrated":
            out[item] = cal.items[item].apply(e, feats)
        else:
            c = combine(item, e, feats, (scales or {}).get(item))
            out[item] = c.value if c is not None else e
    return out


@dataclass
class DatasetScores:
    """The scores used for one judge configuration's scored summaries of a dataset, and what they are made of."""

    config_key: str
    calibration: Optional[Calibration]
    picks: dict  # item -> ScoreChoice
    scales: dict  # item -> engine.judge.combination.Scales (the "z" form's, over these summaries)
    expected: dict  # summary id -> item -> the judge's expected score
    features: dict  # summary id -> Features or None
    used: dict  # summary id -> item -> the score used

    @property
    def source(self) -> str:
        """One line: which items use which score (over the items the judge scored)."""
        return source_text({k: v for k, v in self.picks.items() if any(k in r for r in self.expected.values())})

    def breakdown(self, summary_id: str) -> list[dict]:
        """Per 1-5 item of one summary: the judge's expected score, the score used, which one and what it is
        made of (a combination's parts with their weights and, in the z form, standard scores)."""
        from engine.core import get_item

        exp, used = self.expected.get(summary_id), self.used.get(summary_id)
        if exp is None or used is None:
            return []
        rows = []
        for item, e in exp.items():
            pick = self.picks.get(item)
            if pick is None or e is None:
                continue
            made = ""
            if pick.source == "combination":
                c = combine(item, e, self.features.get(summary_id), self.scales.get(item))
                made = c.label + " (on the 1-5 scale: " + "; ".join(
                    f"{p.signal} {p.scaled:.2f}" + (f", z {p.z:+.2f}" if p.z is not None else "")
                    for p in c.parts) + ")"
            elif pick.source == "calibrated":
                made = pick.why
            rows.append({"item": get_item(item).label, "judge's expected score": round(e, 2),
                         "score used": None if used.get(item) is None else round(used[item], 2),
                         "which": pick.source, "made of": made})
        return rows


def for_dataset(store, name: str, config_key: Optional[str] = None, evidence: Optional[Mapping] = None,
                ds=None) -> Optional[DatasetScores]:
    """The scores used for every summary of a stored dataset scored by one judge configuration (default: the one
    covering most summaries): its newest calibration, each item's choice, the combination's scales over those
    summaries. ``evidence``: summary id -> EvidenceSummary when the caller has read it already. None when the
    dataset has no judge results (of that configuration)."""
    from engine.judge.calibration import LIKERT_KEYS, latest
    from engine.judge.combination import dataset_scales
    from engine.judge.configs import configurations, find, results_for
    from engine.judge.features import evidence_for
    from engine.judge.results import primary_score
    from engine.judge.stored import stored_judge_results

    results = stored_judge_results(store, name)
    config = find(configurations(results), config_key)
    if config is None:
        return None
    if evidence is None:
        evidence = evidence_for(store, name, ds if ds is not None else store.load_dataset(name))
    mine = [r for r in results_for(results, config.key) if r.status == "scored"]
    cal = latest(store, name, config.key)
    raw = {r.summary_id: {k: primary_score(k, v) for k, v in r.items.items()} for r in mine}
    picks = choices(LIKERT_KEYS, cal)
    feats = {sid: evidence[sid].features if sid in evidence else None for sid in raw}
    scales = dataset_scales(raw, feats)
    used = {sid: used_scores(raw[sid], feats[sid], cal, picks, scales) for sid in raw}
    return DatasetScores(config.key, cal, picks, scales, raw, feats, used)


def source_text(picks: Mapping[str, ScoreChoice]) -> str:
    """One line: which items use which score."""
    groups: dict[str, list[str]] = {}
    for p in picks.values():
        groups.setdefault(p.source, []).append(p.item)
    names = {"calibrated": "calibrated", "combination": "judge + evidence combination", "judge": "judge's score"}
    return "; ".join(f"{names[k]}: {', '.join(v)}" for k, v in groups.items())


COMBINATION_VALIDITY = Path(__file__).resolve().parents[1] / "resources" / "combination_validity.json"
VALIDITY_SET = "our judge-validity set, test split (7 cases with graded defects we wrote; not clinicians' ratings)"


def combination_validity() -> dict[str, dict]:
    """item -> the combination's measured figures (``bench/combination_validity.py``), empty when not measured."""
    try:
        d = json.loads(COMBINATION_VALIDITY.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {r["item"]: r for r in d.get("items", []) if isinstance(r, dict) and "item" in r}


REAL_TEXT_VALIDITY = Path(__file__).resolve().parents[1] / "resources" / "combination_validity_real.json"


def real_text_validity() -> dict[str, dict]:
    """item -> the judge's and the combination's Spearman ρ on real text (``bench/thorough_realdev.py --record``:
    real clinical notes with known omissions), with what it was measured on; empty when not measured."""
    try:
        d = json.loads(REAL_TEXT_VALIDITY.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {r["item"]: {**r, "on": d.get("on", "")} for r in d.get("items", []) if isinstance(r, dict) and "item" in r}


def _fmt(v: Optional[float]) -> str:
    return "—" if v is None else f"{v:.2f}"


def validity_rows(items, cal: Optional[Calibration], judge_figures: Sequence[dict] = ()) -> list[dict]:
    """Per item: the score used where decisions are made, why, its measured validity and on what data, and its
    figure on real text where one was measured (``on real text``).
    ``judge_figures``: the judge model's rows from its validity benchmark (item, spearman_raw, …)."""
    from engine.core import get_item

    picks = choices(items, cal)
    comb = combination_validity()
    real = real_text_validity()
    judge = {r["item"]: r for r in judge_figures if r.get("samples", 1) == 1}
    rows = []
    for item in items:
        p = picks[item]
        if p.source == "calibrated":
            ic = cal.items[item]
            fig = (f"ρ {_fmt(ic.after.spearman.value)}, ICC {_fmt(ic.after.icc.value)} (judge alone: ρ "
                   f"{_fmt(ic.before.spearman.value)})")
            on = f"this dataset's raters, leave-one-case-out ({ic.n_rated} summaries)"
        elif p.source == "combination" and item in comb:
            c = comb[item]
            fig = f"ρ {_fmt(c.get('spearman_combination'))} (judge alone: ρ {_fmt(c.get('spearman_judge'))})"
            on = VALIDITY_SET
        elif item in judge:
            fig = f"ρ {_fmt(judge[item].get('spearman_raw'))}"
            on = VALIDITY_SET
        else:
            fig, on = "not measured", "—"
        r = real.get(item)
        if r is None or p.source == "calibrated":
            on_real = "not measured" if r is None else "— (the calibration is measured on this dataset's raters)"
        else:
            key = "spearman_combination" if p.source == "combination" else "spearman_judge"
            on_real = f"ρ {_fmt(r.get(key))} (judge alone: ρ {_fmt(r.get('spearman_judge'))}) on {r['on']}"
        rows.append({"item": get_item(item).label, "score used": p.source, "why": p.why,
                     "combination": describe(item) if p.source == "combination" else "", "validity": fig,
                     "measured on": on, "on real text": on_real})
    return rows


def for_configuration(store, dataset: str, config) -> list[dict]:
    """:func:`validity_rows` for one judge configuration (a :class:`engine.judge.configs.JudgeConfig`) of a stored
    dataset: its newest calibration, and the judge's own figures when it is an embedded model."""
    from engine.judge.calibration import LIKERT_KEYS, latest
    from engine.llm import embedded_key_of, validity_figures

    key = embedded_key_of(config.model_sha256 or config.model)
    return validity_rows(LIKERT_KEYS, latest(store, dataset, config.key), validity_figures(key) if key else [])


def defaults(model_key: str) -> list[dict]:
    """:func:`validity_rows` before any calibration, for an embedded judge model."""
    from engine.judge.calibration import LIKERT_KEYS
    from engine.llm import validity_figures

    return validity_rows(LIKERT_KEYS, None, validity_figures(model_key))
