"""Does the evidence surface the documented defects? A check of stored evidence against a defect manifest.

A *manifest* documents, per summary, the defects put into it on purpose (the bundled sample's
``sample_data/manifest.json`` has this shape)::

    {"summaries": {"<summary id>": {"case_id": ..., "defects": [
        {"type": "fabricated_fact" | "falsified_fact", "summary_span": ...},
        {"type": "wrong_citation" | "missing_citation", "summary_span": ...},
        {"type": "dropped_fact", "note_id": ..., "source_span": ...},
        {"type": "stigmatizing_language", "summary_span": ...},
        {"type": "redundancy", "summary_spans": [...]}]}}}

Each defect is *found* when the evidence a reader is shown for it names it:

* a fabricated or falsified fact: a sentence overlapping the span is marked weak, or its citation is marked wrong
  (the cited note does not support it or does not give its values);
* a wrong citation: a sentence overlapping the span has the verdict ``wrong`` or ``unknown``;
* a missing citation: a sentence overlapping the span has the verdict ``missing``;
* a dropped fact: one of the first :data:`TOP_REGIONS` uncovered regions overlaps the source span, or a note-level
  omission flag (:mod:`engine.evidence.coverage.note_flags`: a note never cited, a result still pending) points to a
  passage overlapping it;
* stigmatizing language: the lexicon detector marks a word inside the span;
* redundancy (two spans saying the same thing): a sentence overlapping one span is marked as restating a sentence
  overlapping the other.

A defect type with no evidence kind is listed and counted as not checked (``found`` None).

:func:`check_verification` checks the same manifest against claim verification: a fabricated or falsified fact is
found when an unsupported claim lies on its span, a wrong citation when the citation verdict on it is ``wrong`` or
``unknown``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from engine.evidence.support import AlignmentResult
from engine.evidence.support.verification import VerificationResult
from engine.evidence.coverage import CoverageResult, FLAG_KINDS, omission_flags
from engine.core import Dataset

TOP_REGIONS = 5
CHECKED = ("fabricated_fact", "falsified_fact", "wrong_citation", "missing_citation", "dropped_fact",
           "stigmatizing_language", "redundancy")


@dataclass(frozen=True)
class DefectCheck:
    summary_id: str
    kind: str
    span: str
    found: Optional[bool]  # None: no evidence kind checks this defect type
    evidence: str  # what the evidence shows for it, in words


def _overlapping(al: AlignmentResult, text: str, span: str):
    pos = text.find(span)
    if pos < 0:
        return []
    return [s for s in al.sentences if s.start < pos + len(span) and s.end > pos]


def check_defect(ds: Dataset, summary_id: str, defect: Mapping, alignment: Optional[AlignmentResult],
                 coverage: Optional[CoverageResult]) -> DefectCheck:
    """One documented defect against the evidence of its summary."""
    from engine.evidence import stigma

    kind = defect.get("type", "")
    summary = ds.summary(summary_id)
    span = defect.get("summary_span") or defect.get("source_span") or ""
    if kind in ("fabricated_fact", "falsified_fact", "wrong_citation", "missing_citation"):
        if alignment is None:
            return DefectCheck(summary_id, kind, span, False, "no sentence-support evidence stored")
        sents = _overlapping(alignment, summary.text, span)
        if not sents:
            return DefectCheck(summary_id, kind, span, False, "the span is in no sentence of the summary")
        if kind in ("fabricated_fact", "falsified_fact"):
            hits = [s for s in sents if s.weak or s.citation_verdict in ("wrong", "unknown")]
            words = "; ".join((s.weak_reason if s.weak else s.citation_detail) for s in hits)
        elif kind == "wrong_citation":
            hits = [s for s in sents if s.citation_verdict in ("wrong", "unknown")]
            words = "; ".join(s.citation_detail for s in hits)
        else:
            hits = [s for s in sents if s.citation_verdict == "missing"]
            words = "no note citation" if hits else ""
        shown = words or "; ".join(f"sentence {s.index + 1}: citation {s.citation_verdict}, support "
                                   f"{s.support_score}" for s in sents)
        return DefectCheck(summary_id, kind, span, bool(hits), shown)
    if kind == "dropped_fact":
        if coverage is None:
            return DefectCheck(summary_id, kind, span, False, "no coverage evidence stored")
        note = ds.case(summary.case_id).note(defect.get("note_id", ""))
        pos = note.text.find(span) if note is not None else -1
        rank = next((i for i, r in enumerate(coverage.regions) if note is not None and r.note_id == note.note_id
                     and r.start < pos + len(span) and r.end > pos), None) if pos >= 0 else None
        where = (f"uncovered region {rank + 1} of {len(coverage.regions)}" if rank is not None
                 else f"in none of the {len(coverage.regions)} stored uncovered regions")
        if rank is not None and rank < TOP_REGIONS:
            return DefectCheck(summary_id, kind, span, True, where)
        flag = next((f for f in omission_flags(ds.case(summary.case_id), summary.text, coverage.units,
                                               coverage.threshold, ds.citation_style())
                     if note is not None and pos >= 0 and f.note_id == note.note_id
                     and f.start < pos + len(span) and f.end > pos), None)
        if flag is not None:
            return DefectCheck(summary_id, kind, span, True, f"flag: {FLAG_KINDS[flag.kind].label} — {flag.reason} "
                                                             f"({where})")
        return DefectCheck(summary_id, kind, span, False, where)
    if kind == "stigmatizing_language":
        pos = summary.text.find(span)
        hits = [h for h in stigma.detect(summary.text).hits if pos >= 0 and h.start < pos + len(span) and h.end > pos]
        return DefectCheck(summary_id, kind, span, bool(hits),
                           ", ".join(summary.text[h.start:h.end] for h in hits) or "no lexicon term in the span")
    if kind == "redundancy" and len(defect.get("summary_spans", [])) == 2:
        first, second = defect["summary_spans"]
        shown = " / ".join(defect["summary_spans"])
        if alignment is None:
            return DefectCheck(summary_id, kind, shown, False, "no sentence-support evidence stored")
        a = {s.index for s in _overlapping(alignment, summary.text, first)}
        b = {s.index for s in _overlapping(alignment, summary.text, second)}
        hits = [s for s in alignment.sentences if s.restates is not None
                and ((s.index in b and s.restates in a) or (s.index in a and s.restates in b))]
        return DefectCheck(summary_id, kind, shown, bool(hits),
                           "; ".join(f"sentence {s.index + 1} {s.restates_detail}" for s in hits)
                           or "no sentence marked as a restatement")
    return DefectCheck(summary_id, kind, " / ".join(defect.get("summary_spans", [])) or span, None,
                       "no evidence kind checks this defect type")


def check_manifest(ds: Dataset, manifest: Mapping, alignments: Mapping[str, AlignmentResult],
                   coverages: Mapping[str, CoverageResult]) -> list[DefectCheck]:
    """Every documented defect of the manifest's summaries that are in ``ds``."""
    ids = {s.summary_id for s in ds.summaries}
    out = []
    for sid, entry in manifest.get("summaries", {}).items():
        if sid not in ids:
            continue
        for d in entry.get("defects", []):
            out.append(check_defect(ds, sid, d, alignments.get(sid), coverages.get(sid)))
    return out


def summary_rows(checks: list[DefectCheck]) -> list[dict]:
    """Per defect type: documented, found, and the share."""
    kinds = sorted({c.kind for c in checks}, key=lambda k: (k not in CHECKED, k))
    rows = []
    for k in kinds:
        cs = [c for c in checks if c.kind == k]
        found = [c for c in cs if c.found]
        rows.append({"defect": k.replace("_", " "), "documented": len(cs),
                     "found": "not checked" if cs[0].found is None else len(found)})
    return rows


# ------------------------------------------------------------------ claim verification against the manifest
VERIFICATION_DEFECT_TYPES = ("fabricated_fact", "falsified_fact", "wrong_citation")



def _claim_spans(text: str, res: VerificationResult):
    for s in res.sentences:
        for c in s.claims:
            at = text.find(c.text, s.start)
            a, b = (at, at + len(c.text)) if 0 <= at < s.end else (s.start, s.end)
            yield s, c, a, b


def check_verification_defect(ds: Dataset, summary_id: str, defect: Mapping,
                              res: Optional[VerificationResult]) -> DefectCheck:
    """One documented defect against a summary's claim verification: a fabricated or falsified fact is found when an
    unsupported claim lies on its span (the claim found inside its sentence; the whole sentence where it is not found
    verbatim); a wrong citation when a sentence on the span has the citation verdict ``wrong`` or ``unknown``."""
    kind, span = defect.get("type", ""), defect.get("summary_span", "")
    if res is None:
        return DefectCheck(summary_id, kind, span, False, "no claim verification stored")
    text = ds.summary(summary_id).text
    pos = text.find(span)
    if pos < 0:
        return DefectCheck(summary_id, kind, span, False, "the span is not in the summary")
    end = pos + len(span)
    if kind == "wrong_citation":
        hits = [s for s in res.sentences if s.start < end and s.end > pos and s.citation_verdict in ("wrong", "unknown")]
        return DefectCheck(summary_id, kind, span, bool(hits), "; ".join(s.citation_detail for s in hits)
                           or "; ".join(f"citation {s.citation_verdict or 'not checked'}" for s in res.sentences
                                        if s.start < end and s.end > pos))
    on = [(c, a, b) for _s, c, a, b in _claim_spans(text, res) if a < end and b > pos]
    hits = [c for c, _a, _b in on if c.verdict == "unsupported"]
    shown = "; ".join(f"“{c.text}” P {c.p_supported:.2f}" + (f" ({'; '.join(c.notes_say)})" if c.notes_say else "")
                      for c in hits) or "; ".join(f"“{c.text}” {c.verdict}"
                                                  + (f" P {c.p_supported:.2f}" if c.p_supported is not None else "")
                                                  for c, _a, _b in on)
    return DefectCheck(summary_id, kind, span, bool(hits), shown or "no claim on the span")


def check_verification(ds: Dataset, manifest: Mapping,
                       results: Mapping[str, VerificationResult]) -> list[DefectCheck]:
    """The manifest's defects that claim verification is meant to surface (:data:`VERIFICATION_DEFECT_TYPES`; the
    others are not this evidence's business and are not listed), each checked against its summary's result."""
    ids = {s.summary_id for s in ds.summaries}
    return [check_verification_defect(ds, sid, d, results.get(sid)) for sid, entry in manifest.get("summaries", {}).items()
            if sid in ids for d in entry.get("defects", []) if d.get("type") in VERIFICATION_DEFECT_TYPES]
