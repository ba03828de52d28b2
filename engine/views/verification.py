"""What the pages show of a summary's claim verification: marks on the summary, one row per claim, a headline.

:func:`summary_view` turns a stored :class:`~.result.VerificationResult` into a :class:`VerificationView`: each
unsupported, uncertain or unscored claim is a mark on the summary text in its own colour (found inside its
sentence's span; the whole sentence where the claim cannot be found verbatim) whose hover text gives the
probability, what drove it down (a word or number the record never uses, the model's answer, a fact check), what a
fact-level check found and the record's lines it was checked against; rows list every claim, unsupported first,
then uncertain.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.evidence.support.verification import ClaimCheck, SentenceCheck, VerificationResult

UNSUPPORTED_COLOUR = "rgba(255,140,0,0.38)"
UNCERTAIN_COLOUR = "rgba(96,165,250,0.22)"  # pale blue: near the line, to read, not a finding
UNSCORED_COLOUR = "rgba(140,149,159,0.25)"
COLOURS = {"unsupported": UNSUPPORTED_COLOUR, "uncertain": UNCERTAIN_COLOUR, "unscored": UNSCORED_COLOUR}
HEADS = {"unsupported": "Unsupported", "uncertain": "Uncertain (near the line: read it, not a finding)",
         "unscored": "Unscored"}
ORDER = {"unsupported": 0, "uncertain": 1, "unscored": 2}


@dataclass(frozen=True)
class ClaimRow:
    sentence: int  # 1-based
    claim: str
    verdict: str
    p_supported: Optional[float]
    model_p_yes: Optional[float]
    notes_say: str
    checked_against: str  # the best-matching record lines, with their note ids
    reason: str
    why: str = ""  # what drove the probability down, in words


@dataclass(frozen=True)
class VerificationView:
    result: Optional[VerificationResult]
    headline: str
    marks: list = field(default_factory=list)  # (start, end, css background, title) on the summary text
    rows: list = field(default_factory=list)  # ClaimRow, unsupported first, then by sentence
    focus: list = field(default_factory=list)  # per row: (note id, start, end) of its passage (within one note)
    citations: dict = field(default_factory=dict)  # sentence start offset -> (verdict, detail) by the model

    def citation_for(self, start: int, word_rule: tuple[str, str]) -> tuple[str, str, str]:
        """(verdict, detail, by) for the sentence starting at ``start``. The verdict is ``word_rule``'s (the
        alignment's lexical check): the model's citation check, measured on the sample, flags too many correct
        citations to replace it, so where the model gave one it is added to the detail as a second opinion."""
        verdict, detail = word_rule
        if start not in self.citations:
            return verdict, detail, "word rule"
        v, d = self.citations[start]
        second = f"judge model: {'the cited note supports it' if v == 'right' else d}"
        return verdict, (f"{detail} · {second}" if detail else second), "word rule, with the judge model's opinion"


def _passage_text(c: ClaimCheck) -> str:
    return " · ".join(f"note {p.note_id}: {p.text}" for p in c.passage)


def _title(c: ClaimCheck) -> str:
    p = "no probability" if c.p_supported is None else f"P(supported) {c.p_supported:.2f}"
    parts = [f"{HEADS.get(c.verdict, c.verdict)} claim ({p}): {c.text}"]
    if c.drivers:
        parts.append("Why: " + "; ".join(c.drivers))
    if c.notes_say:
        parts.append("Fact check: " + "; ".join(c.notes_say))
    if c.reason and c.verdict == "unscored":
        parts.append(c.reason)
    if c.passage:
        parts.append("Checked against — " + _passage_text(c))
    return "\n".join(parts)


def _mark(summary_text: str, s: SentenceCheck, c: ClaimCheck) -> tuple[int, int]:
    at = summary_text.find(c.text, s.start, max(s.end, s.start + len(c.text)) + 1)
    return (at, at + len(c.text)) if at >= 0 else (s.start, s.end)


def summary_view(result: Optional[VerificationResult], summary_text: str) -> VerificationView:
    if result is None:
        return VerificationView(None, "Claims have not been verified for this summary yet.")
    if result.reason:
        return VerificationView(result, f"Not verified: {result.reason}.")
    marks, rows, focus = [], [], []
    for s in result.sentences:
        for c in s.claims:
            if c.verdict in COLOURS:
                a, b = _mark(summary_text, s, c)
                marks.append((a, b, COLOURS[c.verdict], _title(c)))
            rows.append(ClaimRow(s.index + 1, c.text, c.verdict, c.p_supported, c.p_model, "; ".join(c.notes_say),
                                 _passage_text(c), c.reason if c.verdict == "unscored" else "",
                                 "; ".join(c.drivers)))
            one_note = c.passage and all(p.note_id == c.passage[0].note_id for p in c.passage)
            last = c.passage[-1] if one_note else (c.passage[0] if c.passage else None)
            focus.append((c.passage[0].note_id, c.passage[0].start, last.end) if c.passage else None)
    order = sorted(range(len(rows)), key=lambda i: (ORDER.get(rows[i].verdict, 3), rows[i].sentence))
    n_claims = len(rows)
    n_uns = sum(r.verdict == "unsupported" for r in rows)
    n_unc = sum(r.verdict == "uncertain" for r in rows)
    n_unscored = sum(r.verdict == "unscored" for r in rows)
    band = result.params.get("combination") or {}
    line = (f"unsupported below P {result.threshold:.2f}, uncertain below {float(band['supported_from']):.2f}"
            if band else f"threshold {result.threshold:.2f}")
    head = (f"{n_uns} of {n_claims} claims unsupported in {len(result.unsupported)} of {len(result.sentences)} "
            f"sentences" + (f"; {n_unc} uncertain" if n_unc else "")
            + (f"; {n_unscored} unscored" if n_unscored else "")
            + f" · model {result.model} · {line}")
    cites = {s.start: (s.citation_verdict, s.citation_detail) for s in result.sentences if s.citation_verdict}
    wrong = sum(v == "wrong" for v, _ in cites.values())
    if cites:
        head += f" · the model's citation check (a second opinion): {wrong} of {len(cites)} cited sentences not " \
                "supported by their cited notes alone"
    return VerificationView(result, head, marks, [rows[i] for i in order], [focus[i] for i in order], cites)
