"""Plain rows of MED-OMIT results for tables: a summary's omitted facts and facts not found in the notes, one row
per summary of a dataset, and group means."""
from __future__ import annotations

from engine.evidence.medomit.result import MedOmitResult


def omitted_fact_rows(result: MedOmitResult) -> list[dict]:
    """Plain rows for the UI: the omitted facts, heaviest first."""
    rows = []
    for s in result.omitted:
        f = result.fact(s.fact_id)
        rows.append({"fact_id": f.fact_id, "text": f.text, "weight": s.score, "importance": s.importance,
                     "P(omitted)": s.p_omitted, "P(stated) by the model": s.p_stated, "coverage": s.coverage,
                     "uniqueness": s.uniqueness, "clusters": s.clusters, "explanation": s.explanation,
                     "note_id": f.note_id, "start": f.start, "end": f.end, "link": f.link})
    return rows


def not_found_rows(result: MedOmitResult) -> list[dict]:
    """Plain rows for the UI: the facts not found in the notes (never scored)."""
    return [{"fact_id": f.fact_id, "text": f.text, "best match": f.link_score} for f in result.not_found]


def dataset_rows(ds, results: dict[str, "MedOmitResult"]) -> list[dict]:
    """One row per summary with its MED-OMIT weight and count (None when not run or incomplete), the facts not
    found in the notes (not counted) and whether the smoke-test model computed it."""
    rows = []
    for s in ds.summaries:
        r = results.get(s.summary_id)
        rows.append({"summary": s.summary_id, "case": s.case_id, "generator": s.generator_model or "",
                     "quality group": s.quality_group or "", "status": r.status if r else "not run",
                     "MED-OMIT weight": r.document_weight if r else None,
                     "omitted facts": r.omission_count if r else None,
                     "not found in the notes": len(r.not_found) if r else None,
                     "smoke-test model": (r.smoke_test if r else None)})
    return rows


def group_means(rows: list[dict], by: str) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r["MED-OMIT weight"] is not None:
            groups.setdefault(r[by] or "(none)", []).append(r)
    return [{by: g, "summaries": len(v), "mean weight": round(sum(x["MED-OMIT weight"] for x in v) / len(v), 3),
             "mean omitted facts": round(sum(x["omitted facts"] for x in v) / len(v), 2)}
            for g, v in sorted(groups.items())]
