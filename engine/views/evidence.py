"""The Evidence page's view: every summary's stored evidence as rows (MED-OMIT, coverage with its note-level flags,
sentence support, citations, claim verification, stigmatizing language) with the per-group means and rates."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from engine.core import Dataset
from engine.evidence.support import combined_scores
from engine.evidence.coverage import DEFAULT_METHOD
from engine.evidence import stored_results
from engine.evidence.medomit import dataset_rows, group_means
from engine.evidence.coverage import describe, omission_flags

__all__ = ["CHART_METRICS", "EvidencePageView", "evidence_all_job", "evidence_page_view", "group_chart_rows",
           "medomit_all_job"]

GROUPS = ("generator", "quality group")


@dataclass
class EvidencePageView:
    medomit_rows: list[dict] = field(default_factory=list)
    medomit_results: int = 0
    medomit_smoke_tests: int = 0  # results by the embedded smoke-test model
    medomit_smoke_model: str = ""
    medomit_by_group: dict[str, list[dict]] = field(default_factory=dict)  # "generator" / "quality group"
    embedding_rows: list[dict] = field(default_factory=list)
    has_embedding: bool = False
    chart_rows: list[dict] = field(default_factory=list)  # embedding rows with the MED-OMIT weight
    stigma_rows: list[dict] = field(default_factory=list)
    stigma_by_group: dict[str, list[dict]] = field(default_factory=dict)
    lexicon_version: str = ""
    disagreement: dict[str, str] = field(default_factory=dict)  # grouping -> MED-OMIT and coverage rank it apart

    def chart(self, by: str) -> list[dict]:
        """The chart's group means by ``by`` (:func:`group_chart_rows` of :attr:`chart_rows`)."""
        return group_chart_rows(self.chart_rows, by)


# What each omission signal's validity was measured as (docs/evidence.md, "Omitted facts"), for the page to say which to trust
# when the two rank groups of summaries differently.
OMISSION_VALIDITY = ("unit coverage is the measured signal: Spearman 0.905 with the share of facts removed, per "
                     "summary, on real MTS-Dialog notes (test split); MED-OMIT's per-summary count was not measured "
                     "that way (its per-fact decision: AUROC 0.79 on real conversations, test split), so read the "
                     "coverage column first")


def group_disagreement(rows: Sequence[dict], by: str) -> str:
    """When the groups of ``by`` rank one way by mean MED-OMIT weight and the other way by mean coverage omission
    score (Spearman of the group means < 0, at least 3 groups with both), a sentence saying so and which signal has
    measured validity; "" otherwise."""
    from engine.statistics import spearman_rho

    groups: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        w, c = r.get("MED-OMIT weight"), r.get("omission score")
        if w is not None and c is not None:
            groups.setdefault(r.get(by) or "(none)", []).append((float(w), float(c)))
    if len(groups) < 3:
        return ""
    means = [(sum(w for w, _ in v) / len(v), sum(c for _, c in v) / len(v)) for v in groups.values()]
    if len({m[0] for m in means}) < 2 or len({m[1] for m in means}) < 2:
        return ""  # one signal does not tell the groups apart: no order to contradict
    rho = spearman_rho([m[0] for m in means], [m[1] for m in means]).value
    if not rho < 0:
        return ""
    return (f"By {by}, MED-OMIT and unit coverage rank the groups in opposite orders (Spearman of the group means "
            f"{rho:.2f}): {OMISSION_VALIDITY}.")


def stigma_rates(rows: Sequence[dict], by: str) -> list[dict]:
    """Per group: summaries with stigmatizing language, introducing it, carrying it forward (count and share)."""
    out = []
    for g in sorted({r[by] for r in rows}):
        grp = [r for r in rows if r[by] == g]

        def share(n: int) -> str:
            return f"{n} ({n / len(grp):.0%})"

        out.append({by: g or "(none)", "summaries": len(grp),
                    "with stigmatizing language": share(sum(r["summary stigmatizing"] == "yes" for r in grp)),
                    "introducing it": share(sum(r["introduced"] > 0 for r in grp)),
                    "carrying it forward": share(sum(r["carried forward"] > 0 for r in grp))})
    return out


def _embedding_rows(ds: Dataset, covs: dict, als: dict, ver: dict) -> list[dict]:
    combined_scores(list(als.values()))
    rows = []
    for s in ds.summaries:
        c, a, v = covs.get(s.summary_id), als.get(s.summary_id), ver.get(s.summary_id)
        rows.append({
            "summary": s.summary_id, "generator": s.generator_model or "", "quality group": s.quality_group or "",
            "omission score": c.global_score if c else None, "flagged": c.flagged if c else None,
            "note flags": describe(omission_flags(ds.case(s.case_id), s.text, c.units, c.threshold,
                                                  ds.citation_style())) if c else None,
            "mean support": a.mean_support if a else None,
            "weak sentences": sum(x.weak for x in a.sentences) if a else None,
            "coverage": a.coverage if a else None, "density": a.density if a else None,
            "combined g": a.combined if a else None,
            "citation issues": len(a.citation_issues) if a else None,
            "unsupported claims": len(v.unsupported_claims) if v else None,
            "lowest P(supported)": v.lowest_p if v else None})
    return rows


def evidence_page_view(store, name: str, ds: Dataset, stigma_results: Optional[Sequence] = None) -> EvidencePageView:
    """Everything the Evidence page shows of dataset ``name``. ``stigma_results``: the detector's result per
    summary (None: read through :func:`engine.views.memo.stigma_results`)."""
    if stigma_results is None:
        from engine.views.memo import stigma_results as remembered_stigma

        stigma_results = remembered_stigma(store, name, ds)
    view = EvidencePageView()
    results = stored_results(store, name, "medomit")
    typed = dataset_rows(ds, results)
    rows = [r.display() for r in typed]
    smoke = [r for r in results.values() if r.smoke_test]
    view.medomit_rows, view.medomit_results, view.medomit_smoke_tests = rows, len(results), len(smoke)
    if smoke:
        view.medomit_smoke_model = (smoke[0].provenance.get("model_file") or smoke[0].provenance.get("model")
                                    or "embedded model")
    view.medomit_by_group = {g: group_means(typed, g) for g in GROUPS}
    covs = stored_results(store, name, f"coverage:{DEFAULT_METHOD}")
    als = stored_results(store, name, "alignment")
    ver = stored_results(store, name, "verification")
    view.embedding_rows = _embedding_rows(ds, covs, als, ver)
    view.has_embedding = bool(covs or als)
    weights = {r.summary_id: r.weight for r in typed}
    view.chart_rows = [{**r, "MED-OMIT weight": weights.get(r["summary"])} for r in view.embedding_rows]
    view.disagreement = {g: t for g in GROUPS if (t := group_disagreement(view.chart_rows, g))}
    view.stigma_rows = [{"summary": r.summary_id, "generator": ds.summary(r.summary_id).generator_model or "",
                         "quality group": ds.summary(r.summary_id).quality_group or "",
                         "notes stigmatizing": "yes" if r.notes_have_stigma else "no",
                         "summary stigmatizing": "yes" if r.summary_has_stigma else "no",
                         "carried forward": len(r.carried), "introduced": len(r.introduced),
                         "terms": ", ".join(sorted({h.hit.text.lower() for h in r.summary_hits}))}
                        for r in stigma_results]
    if stigma_results:
        view.lexicon_version = stigma_results[0].lexicon_version
        view.stigma_by_group = {g: stigma_rates(view.stigma_rows, g) for g in GROUPS}
    return view


CHART_METRICS = ("omission score", "mean support", "MED-OMIT weight")


def group_chart_rows(rows: Sequence[dict], by: str, metrics: Sequence[str] = CHART_METRICS) -> list[dict]:
    """The mean of each metric per group of ``by`` (a missing group reads "(none)"), with how many summaries have a
    value: rows of ``by``, metric, mean (4 decimals), summaries, sorted by group and metric name."""
    sums: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        for m in metrics:
            v = r.get(m)
            if v is not None and not (isinstance(v, float) and v != v):
                sums.setdefault((r.get(by) or "(none)", m), []).append(float(v))
    keys = sorted(sums)
    return [{by: g, "metric": m, "mean": round(sum(sums[(g, m)]) / len(sums[(g, m)]), 4),
             "summaries": len(sums[(g, m)])} for g, m in keys]


def medomit_all_job(loaded, store, ds: Dataset, name: str, embedder, facts: str):
    """MED-OMIT over every summary of ``ds`` as a background job (not started); ``loaded``: (backend, model
    sha256) of the judge model."""
    from engine.evidence.medomit import MedOmit, medomit_job

    backend, sha = loaded
    mo = MedOmit(backend, sha, cache=store, embedder=embedder, facts=facts)
    return medomit_job(mo, ds, [s.summary_id for s in ds.summaries], store=store, dataset_name=name)


def evidence_all_job(store, name: str, ds: Dataset, embedder):
    """Coverage, sentence support and citation checks over every summary of ``ds`` as a background job."""
    from engine.evidence import evidence_job

    return evidence_job(store, name, ds, [s.summary_id for s in ds.summaries], embedder)
