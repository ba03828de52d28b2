"""Plain rows of MED-OMIT results for tables: a summary's omitted facts and facts not found in the notes, one row
per summary of a dataset, and group means."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional

from engine.evidence.medomit.peers import Consensus, consensus
from engine.evidence.medomit._partly import written_items
from engine.evidence.medomit.relink import placed_when_read
from engine.evidence.medomit.result import MedOmitResult


def omitted_fact_rows(result: MedOmitResult, cons: Optional[Consensus] = None, summary_text: Optional[str] = None,
                      notes: Optional[dict[str, str]] = None) -> list[dict]:
    """Plain rows for the UI: the omitted facts, heaviest first and, among equal weights, the least covered
    first; with ``cons`` (the comparable other summaries of the case) the facts most of the other summaries state
    come before all others. A fact the summary states only in part lists the parts it leaves out (``left out``) and
    is headed by them (``headline``); ``regions`` are the spans of its note its omission points to
    (``FactScore.regions``); ``others`` says how many of the other summaries state the fact ("" without a
    comparison). With ``summary_text`` (and ``notes``, the case's note texts by id), a list fact decided whole
    that the summary writes in part (:func:`engine.evidence.medomit._partly.written_items`) lists the items it leaves
    out the same way, and the items it writes (``written``); ``parts from`` says whether the parts are the
    decision's ("decision") or read from the summary's words ("words")."""
    rows = []
    omitted = sorted(result.omitted, key=lambda s: (-(cons.share_of(s.fact_id) if cons else 0.0), -s.score,
                                                    1.0 if s.coverage is None else s.coverage, s.fact_id))
    for s in omitted:
        f = result.fact(s.fact_id)
        left, written, regions = [m[0] for m in s.missing], [], [(a, b) for _, a, b in s.regions(f)]
        source = "decision" if left else ""
        if not left and summary_text is not None:
            items = written_items(f.text, summary_text)
            if items.partly:
                left, written, source = [i.text for i in items.unwritten], [i.text for i in items.written], "words"
                note = (notes or {}).get(f.note_id or "")
                spans = [f.part_span(note, i.text, i.start, i.end) for i in items.unwritten] if note else []
                regions = [sp for sp in spans if sp is not None] or regions
        c = cons.of(s.fact_id) if cons is not None else None
        rows.append({"fact_id": f.fact_id, "text": f.text, "left out": left, "written": written,
                     "parts from": source,
                     "others": c.text() if c is not None else "",
                     "stated by others": (c.stated_by, c.others) if c is not None else None,
                     "headline": ("in part — left out: " + " … ".join(left)) if left else f.text,
                     "regions": regions, "weight": s.score, "importance": s.importance,
                     "importance P": s.importance_p, "importance weight": s.importance_weight,
                     "P(omitted)": s.p_omitted, "P(stated) by the model": s.p_stated, "coverage": s.coverage,
                     "uniqueness": s.uniqueness, "clusters": s.clusters,
                     "explanation": with_threshold(s.explanation, s.p_omitted, result),
                     "note_id": f.note_id, "start": f.start, "end": f.end, "link": f.link})
    return rows


def with_threshold(explanation: str, p_omitted: Optional[float], result: MedOmitResult) -> str:
    """A fact's explanation with the line it was decided against ("P(omitted) 0.49 ≥ 0.40, the decision's
    threshold"), so a number under ½ next to "omitted" reads as what it is."""
    thr = (result.provenance.get("decision") or {}).get("threshold") if isinstance(result.provenance, dict) else None
    if p_omitted is None or not isinstance(thr, (int, float)):
        return explanation
    side = "≥" if p_omitted >= thr else "<"
    return f"{explanation} — omitted when P(omitted) ≥ {thr:.2f} (this fact: {p_omitted:.2f} {side} {thr:.2f})"


SAME_WEIGHT_SHARE = 0.8  # the share of a result's facts with one weight from which the weights are said not to rank
SAME_WEIGHT_MIN_FACTS = 10


def same_weight_note(result: MedOmitResult, compared: bool = False) -> str:
    """A warning for the omitted-fact list when the weights do not rank the facts: at least
    :data:`SAME_WEIGHT_SHARE` of the result's scored facts (and :data:`SAME_WEIGHT_MIN_FACTS` of them) carry one
    and the same score. A small model may rate nearly every fact "important"; the list then reads like a ranking by
    clinical importance when its order comes from elsewhere (``compared``: the other summaries of the case, else
    the coverage). "" when the weights do separate the facts."""
    scores = [round(s.score, 3) for s in result.weighed]
    if len(scores) < SAME_WEIGHT_MIN_FACTS:
        return ""
    value, k = Counter(scores).most_common(1)[0]
    if k < SAME_WEIGHT_SHARE * len(scores):
        return ""
    rated = Counter(s.importance for s in result.weighed if round(s.score, 3) == value).most_common(1)[0][0]
    order = "what the other summaries state, then how little of each fact the summary carries" if compared else \
        "how little of each fact the summary carries"
    head = f"All {k} facts" if k == len(scores) else f"{k} of {len(scores)} facts"
    how = "do not" if k == len(scores) else "hardly"
    return (f"{head} weigh the same ({value:g}" + (f", rated \u201c{rated}\u201d" if rated else "")
            + f"): the model's weights {how} separate this case's facts, so the order below comes from {order}, "
            "not from how much each fact matters clinically.")


def not_found_rows(result: MedOmitResult) -> list[dict]:
    """Plain rows for the UI: the facts not found in the notes (never scored)."""
    return [{"fact_id": f.fact_id, "text": f.text, "best match": f.link_score} for f in result.not_found]


@dataclass(frozen=True)
class SummaryOmissions:
    """One summary's MED-OMIT figures: weight and count are None when it was not run or the run is incomplete."""

    summary_id: str
    case_id: str
    generator: str
    quality_group: str
    status: str  # "complete" | "incomplete" | "not run"
    weight: Optional[float]
    omitted: Optional[int]
    not_found: Optional[int]  # facts not found in the notes (never counted)
    smoke_test: Optional[bool]  # computed by the smoke-test model
    others_keep: Optional[int] = None  # omitted facts every other summary of the case states (None: no comparison)
    facts_from: str = ""  # the result's fact source in words ("" when not run)

    def group(self, by: str) -> str:
        """The summary's value of a grouping (``GROUPINGS``)."""
        return {"generator": self.generator, "quality group": self.quality_group}[by]

    def display(self) -> dict:
        """The row as a table shows it (column labels)."""
        return {"summary": self.summary_id, "case": self.case_id, "generator": self.generator,
                "quality group": self.quality_group, "status": self.status, "MED-OMIT weight": self.weight,
                "omitted facts": self.omitted, "left out, all other summaries state": self.others_keep,
                "not found in the notes": self.not_found, "facts from": self.facts_from,
                "smoke-test model": "yes" if self.smoke_test else ""}


GROUPINGS = ("generator", "quality group")


def dataset_rows(ds, results: dict[str, "MedOmitResult"]) -> list[SummaryOmissions]:
    """One row per summary of ``ds`` with its MED-OMIT result's figures (``results``: by summary id; each read as
    :func:`engine.evidence.medomit.relink.placed_when_read` reads it, so the facts not found in the notes are those
    the Case page lists), and how many of its omitted facts every comparable other summary of its case states
    (:mod:`.consensus`)."""
    by_case: dict[str, list[MedOmitResult]] = {}
    for r in results.values():
        by_case.setdefault(r.case_id, []).append(r)
    out = []
    for s in ds.summaries:
        r = results.get(s.summary_id)
        if r is not None and r.not_found:  # "not found in the notes" as the Case page says it
            r = placed_when_read(r, ds.case(s.case_id))
        cons = consensus(r, by_case.get(r.case_id, [])) if r is not None else None
        keep = (sum(1 for f in r.omitted if cons.share_of(f.fact_id) == 1.0) if cons is not None else None)
        out.append(SummaryOmissions(s.summary_id, s.case_id, s.generator_model or "", s.quality_group or "",
                                    r.status if r else "not run", r.document_weight if r else None,
                                    r.omission_count if r else None, len(r.not_found) if r else None,
                                    r.smoke_test if r else None, keep, r.fact_source_label if r else ""))
    return out


def group_means(rows: list[SummaryOmissions], by: str) -> list[dict]:
    """Per group of ``by`` (one of ``GROUPINGS``): summaries with a weight, mean weight, mean omitted facts, and the
    mean number of omitted facts all other summaries of the case state (over the summaries compared; None when none
    was)."""
    groups: dict[str, list[SummaryOmissions]] = {}
    for r in rows:
        if r.weight is not None:
            groups.setdefault(r.group(by) or "(none)", []).append(r)
    out = []
    for g, v in sorted(groups.items()):
        kept = [x.others_keep for x in v if x.others_keep is not None]
        out.append({by: g, "summaries": len(v), "mean weight": round(sum(x.weight for x in v) / len(v), 3),
                    "mean omitted facts": round(sum(x.omitted for x in v) / len(v), 2),
                    "mean left out, all others state": round(sum(kept) / len(kept), 2) if kept else None})
    return out
