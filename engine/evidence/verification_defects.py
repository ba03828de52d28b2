"""Does claim verification surface a manifest's documented defects? (The manifest's shape is described in
:mod:`engine.evidence.defect_check`.)

* a fabricated or falsified fact is *found* when an unsupported claim lies on its span (the claim found in the
  summary text inside its sentence; the whole sentence where the claim is not found verbatim);
* a wrong citation is *found* when a sentence overlapping its span has the model's citation verdict ``wrong`` or
  ``unknown``.
Other defect types are not this evidence's business and are not listed.
"""
from __future__ import annotations

from typing import Mapping, Optional

from engine.core.models import Dataset
from engine.evidence.defect_check import DefectCheck
from engine.evidence.support.verification.result import VerificationResult

INJECTED_DEFECT_TYPES = ("fabricated_fact", "falsified_fact", "wrong_citation")


def _claim_spans(text: str, res: VerificationResult):
    for s in res.sentences:
        for c in s.claims:
            at = text.find(c.text, s.start)
            a, b = (at, at + len(c.text)) if 0 <= at < s.end else (s.start, s.end)
            yield s, c, a, b


def check_defect(ds: Dataset, summary_id: str, defect: Mapping, res: Optional[VerificationResult]) -> DefectCheck:
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


def check_manifest(ds: Dataset, manifest: Mapping, results: Mapping[str, VerificationResult]) -> list[DefectCheck]:
    ids = {s.summary_id for s in ds.summaries}
    return [check_defect(ds, sid, d, results.get(sid)) for sid, entry in manifest.get("summaries", {}).items()
            if sid in ids for d in entry.get("defects", []) if d.get("type") in INJECTED_DEFECT_TYPES]
