"""Calibration of the judge's expected scores to the local raters.

A small judge ranks summaries usefully by its **expected score** (:func:`engine.judge.runner.primary_score`) but not on
the raters' scale: it may put every summary between 4.3 and 4.9 where the raters use 2 to 5. Per 1-5 item,
:func:`fit` learns a monotone map from the judge's expected score to the raters' median score:

* ``judge``: the predictor is the expected score.
* ``judge+evidence``: the predictor is the item's default combination of the expected score with its own evidence
  (:mod:`engine.judge.combination`, fixed weights, no raters needed) plus a ridge correction on the standardised
  evidence (:class:`Features`) fitted to the raters' residuals and shrunk towards zero (:data:`PRIOR_ALPHA`): on
  a few dozen rated summaries the fit stays close to the default combination instead of learning a new weighting
  from scratch. A combination in the ``"z"`` form standardises its signals over every summary the configuration
  scored in the dataset (rated or not); those scales are stored with the calibration, so applying it later gives
  the same predictor whatever is added to the dataset. A calibration stored without scales applies the
  combination's ``"mean"`` form it was fitted with.

The map from predictor to the raters' scale is **strictly increasing**, so it never ties or reorders summaries
the predictor ranks apart (:func:`monotone_knots`, :func:`monotone_apply`): isotonic regression (scikit-learn
``IsotonicRegression``) gives the levels, each block of equal fitted level becomes one knot at its mean predictor,
the map interpolates linearly between knots and bends smoothly towards 1 and 5 beyond them; with a single block a
small slope (:data:`TIE_SLOPE`) keeps the order.

Validity is estimated by **leave-one-case-out** cross-validation (every summary of the held-out case is predicted
by a map fitted on the other cases), and reported before (raw expected score) and after (cross-validated
calibrated score) as ICC(2,1) absolute agreement with its F-based 95 % CI, Spearman's ρ and mean absolute error,
each with a 95 % percentile CI from a bootstrap over cases. Because the map is strictly increasing, the calibrated
score ranks summaries exactly as its predictor does: the "after" Spearman is that of the held-out predictor (for
``judge`` it equals "before" by construction; for ``judge+evidence`` the correction is fitted without the held-out
case). Pooling the held-out *mapped* scores instead would mix in how far each fold's levels sit from the others
(a fold that leaves out a well-rated case fits lower levels), which reorders summaries of different cases and
is not a property of any one calibration.

A calibration is refused, per item, with the reason when there is too little to learn from: fewer than
:data:`MIN_RATED` rated summaries with a judge score, fewer than two distinct levels, or a level inside the
observed range with no example (the map would jump over a level it never saw). A calibration belongs to one judge
configuration (its key) and records the rated summaries it used; it is applied only to results of that
configuration, never pooled across configurations.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np

from engine import statistics as rel
from engine.statistics import TIE_SLOPE, monotone_apply, monotone_knots
from engine.judge.features import Features
from engine.core import ITEMS

MIN_RATED = 20
CALIBRATION_VERSION = "calib-v4"  # v2: strictly increasing map; judge+evidence starts from the default combination;
# v3: the correction also reads the length of the case's notes and the summary's length relative to them;
# v4: the default combination's reference scales (its "z" form) are taken over the configuration's scored
# summaries and stored with the calibration
PRIOR_ALPHA = 50.0  # ridge penalty of the correction to the default combination (in standardised units)
CALIBRATION_KINDS = ("judge+evidence", "judge")  # the first is the default
LIKERT_KEYS = tuple(i.key for i in ITEMS if i.is_likert)
N_BOOT = 1000


@dataclass
class Metric:
    value: Optional[float]
    ci: Optional[tuple[float, float]] = None

    def text(self, digits: int = 2) -> str:
        if self.value is None or not math.isfinite(self.value):
            return "—"
        ci = f" ({self.ci[0]:.{digits}f} to {self.ci[1]:.{digits}f})" if self.ci else ""
        return f"{self.value:.{digits}f}{ci}"


@dataclass
class Validity:
    """Agreement of one score with the raters' median over the same summaries."""

    n: int
    icc: Metric
    spearman: Metric
    mae: Metric


@dataclass
class ItemCalibration:
    item: str
    status: str  # "fitted" or "refused"
    reason: str = ""
    kind: str = "judge"
    map_kind: str = "step"  # "step": the isotonic step function (calib-v1); "strict": strictly increasing (v2)
    spread: float = 1.0  # the predictor's standard deviation on the fitted data (the strict map's tails)
    n_rated: int = 0
    levels: dict = field(default_factory=dict)  # human level -> count
    # the fitted map on all rated summaries: predictor knots -> calibrated score (isotonic step function)
    x_knots: list = field(default_factory=list)
    y_knots: list = field(default_factory=list)
    # judge+evidence: ridge coefficients on standardised [expected, *features], with the means and scales
    coef: list = field(default_factory=list)
    intercept: float = 0.0
    means: list = field(default_factory=list)
    scales: list = field(default_factory=list)
    before: Optional[Validity] = None
    after: Optional[Validity] = None
    combination: Optional[Validity] = None  # the default combination (no fitted parameter), judge+evidence only
    # the default combination's reference scales (engine.judge.combination.Scales.to_dict) over the summaries the
    # configuration scored when this was fitted; empty: the combination's "mean" form (as before they existed)
    combination_scales: dict = field(default_factory=dict)

    @property
    def keeps_ranking(self) -> Optional[bool]:
        """Whether the calibrated score ranks at least as well as the raw expected score (leave-one-case-out
        Spearman); None when either is undefined."""
        b = self.before.spearman.value if self.before else None
        a = self.after.spearman.value if self.after else None
        if b is None or a is None or not (math.isfinite(a) and math.isfinite(b)):
            return None
        return a >= b - 1e-9

    def predictor(self, expected: float, feats: Optional[Features]) -> Optional[float]:
        if self.kind == "judge":
            return expected
        # a calibration stored before features were added has fewer coefficients: it reads the features it was
        # fitted on (new features are appended to FEATURE_NAMES, never inserted)
        row = (feats or Features()).vector()[:len(self.means) - (1 if self.map_kind == "step" else 0)]
        if self.map_kind == "step":  # calib-v1: a ridge on [expected, *features] from scratch
            return float(self.intercept + np.dot(self.coef, _standardised([expected, *row], self.means, self.scales)))
        z = _standardised(row, self.means, self.scales)
        from engine.judge.combination import Scales, combine

        base = combine(self.item, expected, feats, Scales.from_dict(self.combination_scales)).value
        return float(base + self.intercept + np.dot(self.coef, z))

    def apply(self, expected: Optional[float], feats: Optional[Features] = None) -> Optional[float]:
        if self.status != "fitted" or expected is None:
            return None
        x = self.predictor(expected, feats)
        if self.map_kind == "step":
            return float(np.interp(x, self.x_knots, self.y_knots))
        return monotone_apply(x, self.x_knots, self.y_knots, self.spread)


@dataclass
class Calibration:
    """A set of per-item maps for one dataset and one judge configuration."""

    dataset: str
    config_key: str
    kind: str
    summary_ids: list  # the rated summaries it was fitted on
    n_raters: int
    items: dict  # item key -> ItemCalibration
    created_at: str = ""
    version: int = 0  # assigned by the store (1, 2, … per dataset and configuration)
    method_version: str = CALIBRATION_VERSION

    @property
    def label(self) -> str:
        return f"calibrated on {len(self.summary_ids)} summaries rated by {self.n_raters} raters"

    @property
    def fitted_items(self) -> list[str]:
        return [k for k, v in self.items.items() if v.status == "fitted"]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Calibration":
        d = json.loads(text)
        items = {}
        for k, v in d["items"].items():
            for side in ("before", "after", "combination"):
                if v.get(side):
                    s = v[side]
                    v[side] = Validity(s["n"], *(Metric(s[m]["value"], tuple(s[m]["ci"]) if s[m]["ci"] else None)
                                                 for m in ("icc", "spearman", "mae")))
            items[k] = ItemCalibration(**v)
        d["items"] = items
        return cls(**d)


def _standardised(values, means, scales) -> list[float]:
    """(value − mean) / scale per column; a missing value takes the mean (0)."""
    return [0.0 if v is None else (v - m) / sc for v, m, sc in zip(values, means, scales)]


class CalibrationRefused(ValueError):
    """No item could be calibrated; the message gives each item's reason."""


# ------------------------------------------------------------------------------------------------ fitting


def _features(row: np.ndarray) -> Features:
    return Features(*[None if np.isnan(v) else float(v) for v in row])


def _combined(item: str, expected: np.ndarray, feats: np.ndarray, scales: Optional[dict] = None) -> np.ndarray:
    from engine.judge.combination import Scales, combine

    sc = Scales.from_dict(scales)
    return np.array([combine(item, float(e), _features(f), sc).value for e, f in zip(expected, feats)])


def _fit_item(item: str, kind: str, expected: np.ndarray, feats: np.ndarray, y: np.ndarray,
              scales: Optional[dict] = None) -> ItemCalibration:
    ic = ItemCalibration(item, "fitted", kind=kind, map_kind="strict", n_rated=len(y))
    if kind == "judge+evidence":
        ic.combination_scales = dict(scales or {})
        base = _combined(item, expected, feats, scales)
        r = rel.ridge_standardised(feats, y - base, alpha=PRIOR_ALPHA)
        ic.coef, ic.intercept, ic.means, ic.scales = list(r.coef), r.intercept, list(r.means), list(r.scales)
        ic.intercept = 0.0  # the map's levels carry the offset; the correction only reorders
        pred = np.array([ic.predictor(e, _features(f)) for e, f in zip(expected, feats)])
    else:
        pred = expected
    ic.spread = float(np.std(pred)) or 1.0
    ic.x_knots, ic.y_knots = monotone_knots(pred, y)
    return ic


def refusal_reason(y: Sequence[float]) -> str:
    """Why an item cannot be calibrated on these human medians ('' when it can)."""
    if len(y) < MIN_RATED:
        return f"only {len(y)} rated summaries with a judge score (at least {MIN_RATED} are needed)"
    levels = sorted({int(round(v)) for v in y})
    if len(levels) < 2:
        return f"the raters gave every summary the same level ({levels[0]}): nothing to calibrate to"
    gaps = [lv for lv in range(levels[0], levels[-1] + 1) if lv not in levels]
    if gaps:
        return (f"no rated summary at level {', '.join(map(str, gaps))} between the lowest ({levels[0]}) and the "
                f"highest ({levels[-1]}) level the raters used")
    return ""


def validity(score: np.ndarray, human: np.ndarray, groups: np.ndarray, n_boot: int = N_BOOT,
             seed: int = 0, rank_score: Optional[np.ndarray] = None) -> Validity:
    """ICC(2,1) (absolute agreement, F-based CI), Spearman ρ and MAE of ``score`` against ``human``, the last two
    with a case-bootstrap CI. ``rank_score``: rank by this instead of ``score`` for Spearman (the predictor of a
    strictly increasing map, whose ranking the calibrated score has)."""
    ranked = score if rank_score is None else rank_score
    icc = Metric(None)
    if len(score) >= 3 and not (np.all(score == score[0]) and np.all(human == human[0])):
        try:
            e = rel.icc(np.column_stack([human, score]), "ICC2")
            icc = Metric(float(e.value), e.ci)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            icc = Metric(None)
    sp = rel.spearman_clustered(ranked, human, groups, n_boot, seed)
    mae = rel.mean_absolute_error_clustered(score, human, groups, n_boot, seed)
    return Validity(len(score), icc, Metric(sp.value, sp.ci), Metric(mae.value, mae.ci))


def fit(dataset: str, config_key: str, rows: Sequence[tuple[str, str, dict, Optional[Features]]],
        human: Mapping[str, Mapping[str, float]], n_raters: int, kind: str = "judge", n_boot: int = N_BOOT,
        seed: int = 0) -> Calibration:
    """Fit and cross-validate one calibration.

    ``rows``: (summary id, case id, item -> judge primary score, evidence features or None) for the judge results
    of **one** configuration; ``human``: summary id -> item -> the raters' median. Raises
    :class:`CalibrationRefused` when no item can be fitted."""
    if kind not in CALIBRATION_KINDS:
        raise ValueError(f"calibration kind {kind!r} is unknown; use one of {', '.join(CALIBRATION_KINDS)}")
    items: dict[str, ItemCalibration] = {}
    used: set[str] = set()
    from engine.judge.combination import scales_of

    for key in LIKERT_KEYS:
        # the combination's reference population: every summary the configuration scored, rated or not (no rating
        # is read, so taking it over held-out cases leaks nothing)
        pop = scales_of(key, [(sc.get(key), f) for _, _, sc, f in rows]) if kind == "judge+evidence" else None
        pop = pop.to_dict() if pop is not None else {}
        sel = [(sid, cid, sc[key], f) for sid, cid, sc, f in rows
               if sc.get(key) is not None and human.get(sid, {}).get(key) is not None]
        y = np.array([human[sid][key] for sid, *_ in sel], dtype=float)
        reason = refusal_reason(y)
        levels = {str(lv): int(sum(1 for v in y if int(round(v)) == lv)) for lv in range(1, 6)}
        if reason:
            items[key] = ItemCalibration(key, "refused", reason, kind, len(y), levels)
            continue
        x = np.array([e for _, _, e, _ in sel], dtype=float)
        groups = np.array([cid for _, cid, _, _ in sel])
        feats = np.array([[np.nan if v is None else v for v in (f or Features()).vector()] for *_, f in sel],
                         dtype=float)
        cv = np.full(len(y), np.nan)
        cvp = np.full(len(y), np.nan)  # the held-out predictor: the calibrated score's ranking
        for g in np.unique(groups):
            test = groups == g
            train = ~test
            if len(np.unique(np.round(y[train]))) < 2:
                continue
            m = _fit_item(key, kind, x[train], feats[train], y[train], pop)
            for i in np.flatnonzero(test):
                cv[i] = m.apply(float(x[i]), _features(feats[i]))
                cvp[i] = m.predictor(float(x[i]), _features(feats[i]))
        ic = _fit_item(key, kind, x, feats, y, pop)
        ic.levels = levels
        ok = ~np.isnan(cv)
        ic.before = validity(x, y, groups, n_boot, seed)
        ic.after = validity(cv[ok], y[ok], groups[ok], n_boot, seed, rank_score=cvp[ok])
        if kind == "judge+evidence":
            ic.combination = validity(_combined(key, x, feats, pop), y, groups, n_boot, seed)
        items[key] = ic
        used.update(sid for sid, *_ in sel)
    if not any(v.status == "fitted" for v in items.values()):
        raise CalibrationRefused("; ".join(f"{k}: {v.reason}" for k, v in items.items()))
    from datetime import datetime, timezone

    return Calibration(dataset, config_key, kind, sorted(used), n_raters, items,
                       datetime.now(timezone.utc).isoformat(timespec="seconds"))


def apply(cal: Calibration, scores: Mapping[str, Optional[float]], feats: Optional[Features] = None
          ) -> dict[str, Optional[float]]:
    """item -> calibrated score (None where the item was refused or the judge gave no score)."""
    return {k: ic.apply(scores.get(k), feats) for k, ic in cal.items.items()}


# ------------------------------------------------------------------------------------ from a workspace


def fit_from_store(store, dataset: str, config_key: Optional[str] = None, kind: str = "judge+evidence",
                   n_boot: int = N_BOOT, save: bool = True) -> Calibration:
    """Fit a calibration on a stored dataset: its imported ratings (the raters' median; the judge and adjudicated
    scores left out) against one judge configuration's results (``config_key`` None: the configuration covering
    most summaries). With ``kind="judge+evidence"`` the stored evidence is used too. Saved as the next version
    unless ``save`` is False. Raises :class:`CalibrationRefused` (with the reasons) or ValueError."""
    from engine.judge.stored import stored_judge_results
    from engine.judge.results import primary_score
    from engine.judge.configs import configurations, find, results_for
    from engine.core import RESERVED_RATER_GROUPS
    from engine.data import medians

    ds = store.load_dataset(dataset)
    results = stored_judge_results(store, dataset)
    config = find(configurations(results), config_key)
    if config is None:
        raise CalibrationRefused(f"dataset {dataset!r} has no judge results"
                                 + (f" of configuration {config_key!r}" if config_key else "")
                                 + ": judge it first")
    panel = [r for r in ds.ratings if r.rater_group not in RESERVED_RATER_GROUPS]
    raters = {r.rater_id for r in panel}
    human = {}
    for s in ds.summaries:
        m = medians(r for r in panel if r.summary_id == s.summary_id)
        human[s.summary_id] = {k: v for k, v in m.items() if k in LIKERT_KEYS and v is not None}
    feats = {}
    if kind == "judge+evidence":
        from engine.judge.features import evidence_for

        feats = {k: v.features for k, v in evidence_for(store, dataset, ds).items()}
    rows = [(r.summary_id, r.case_id, {k: primary_score(k, v) for k, v in r.items.items()}, feats.get(r.summary_id))
            for r in results_for(results, config.key) if r.status == "scored"]
    cal = fit(dataset, config.key, rows, human, len(raters), kind, n_boot)
    if save:
        store.put_calibration(cal)
    return cal


def latest(store, dataset: str, config_key: str) -> Optional[Calibration]:
    """The newest stored calibration of this dataset for exactly this judge configuration (never another's)."""
    rows = store.calibrations(dataset, config_key)
    return Calibration.from_json(rows[0]) if rows else None


def calibrated_scores(store, dataset: str, config_key: str, results, cal: Optional[Calibration] = None
                      ) -> tuple[Optional[Calibration], dict[str, dict[str, Optional[float]]]]:
    """(calibration, summary id -> item -> calibrated score) for ``results`` of ``config_key``; results of another
    configuration are left out. No stored calibration: (None, {})."""
    from engine.judge.results import primary_score
    from engine.judge.configs import config_key_of

    cal = cal or latest(store, dataset, config_key)
    if cal is None:
        return None, {}
    feats = {}
    if cal.kind == "judge+evidence":
        from engine.judge.features import evidence_for

        ids = [r.summary_id for r in results if r.status == "scored" and config_key_of(r) == config_key]
        feats = {k: v.features for k, v in evidence_for(store, dataset, store.load_dataset(dataset),
                                                         summary_ids=ids).items()}
    out = {}
    for r in results:
        if r.status != "scored" or config_key_of(r) != config_key:
            continue
        out[r.summary_id] = apply(cal, {k: primary_score(k, v) for k, v in r.items.items()}, feats.get(r.summary_id))
    return cal, out


def table_rows(cal: Calibration) -> list[dict]:
    """Plain rows for a table or a terminal: per item, before and after (leave-one-case-out) with CIs."""
    from engine.core import get_item

    rows = []
    for k, ic in cal.items.items():
        label = get_item(k).label
        if ic.status != "fitted":
            rows.append({"item": label, "n": ic.n_rated, "status": "refused", "reason": ic.reason})
            continue
        b, a = ic.before, ic.after
        keeps = ic.keeps_ranking
        rows.append({"item": label, "n": ic.n_rated, "status": "fitted",
                     "ICC before": b.icc.text(), "ICC after": a.icc.text(),
                     "Spearman before": b.spearman.text(),
                     "Spearman combination": ic.combination.spearman.text() if ic.combination else "—",
                     "Spearman after": a.spearman.text(),
                     "MAE before": b.mae.text(), "MAE after": a.mae.text(),
                     "ranking": {True: "kept", False: "LOST: triage keeps the uncalibrated ranking",
                                 None: "—"}[keeps], "reason": ""})
    return rows
