"""What the other summaries of a case state: a fact one summary leaves out and the others state.

MED-OMIT extracts a case's facts once, so every summary of a case is decided on the same facts. When a case has
several summaries (summarizers or prompts compared on the same patients), the share of the *other* summaries that
state a fact is an estimate of how much it belongs in a summary, in the spirit of the Pyramid method (Nenkova &
Passonneau, NAACL 2004: a content unit weighs as many points as the reference summaries that express it). A fact
this summary leaves out and every other summary states is a gap the other summarizers did not leave; a fact every
summary leaves out is detail they all judged unnecessary (or a blind spot they share, which this cannot see).

MED-OMIT's own importance labels cannot rank a summary's omissions with a small model: it labels nearly every fact
"important", so dozens of omissions tie on their weight. :func:`consensus` compares only results that decided the
same facts the same way (:func:`comparable`: same case, complete, same facts, same model and decision); with no
comparable other summary nothing is said. It changes no decision, weight or score: it orders the list a reviewer
reads and says, per omitted fact, how many of the other summaries state it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from engine.evidence.medomit.result import MedOmitResult


@dataclass(frozen=True)
class FactConsensus:
    """How many of the comparable other summaries of the case state one fact."""

    fact_id: str
    stated_by: int
    others: int

    @property
    def share(self) -> float:
        return self.stated_by / self.others if self.others else 0.0

    def text(self) -> str:
        return f"stated by {self.stated_by} of the {self.others} other summar{'y' if self.others == 1 else 'ies'}"


@dataclass(frozen=True)
class Consensus:
    """One summary's facts against the comparable other summaries of its case (``others``: their ids)."""

    summary_id: str
    others: tuple[str, ...]
    facts: dict  # fact id -> FactConsensus

    def of(self, fact_id: str) -> Optional[FactConsensus]:
        return self.facts.get(fact_id)

    def share_of(self, fact_id: str) -> float:
        """The share of the other summaries that state the fact (0 for a fact they were not decided on)."""
        c = self.facts.get(fact_id)
        return c.share if c is not None else 0.0

    def explain(self) -> str:
        n = len(self.others)
        return (f"Compared with the {n} other summar{'y' if n == 1 else 'ies'} of this case decided on the same "
                f"facts: the facts they state and this one leaves out come first (\"others k/{n}\": stated by k of "
                f"them). This orders the list only; no decision or weight changes.")


def _signature(r: MedOmitResult) -> tuple:
    prov = r.provenance or {}
    return (r.case_id, tuple((f.fact_id, f.text) for f in r.facts), prov.get("model"),
            repr(prov.get("decision")))


def comparable(a: MedOmitResult, b: MedOmitResult) -> bool:
    """Both complete, of the same case, decided on the same facts by the same model and decision."""
    return a.status == b.status == "complete" and _signature(a) == _signature(b)


def consensus(result: MedOmitResult, case_results: Sequence[MedOmitResult]) -> Optional[Consensus]:
    """``result``'s facts against the other summaries among ``case_results`` it is comparable with; None when
    there is none (one summary per case, other summaries not run, or run with another model or decision)."""
    others = [r for r in case_results if r.summary_id != result.summary_id and comparable(result, r)]
    if not others:
        return None
    omitted = [{s.fact_id for s in r.scores if s.omitted} for r in others]
    facts = {s.fact_id: FactConsensus(s.fact_id, sum(1 for om in omitted if s.fact_id not in om), len(others))
             for s in result.scores}
    return Consensus(result.summary_id, tuple(r.summary_id for r in others), facts)


def stored_case_results(ds, case_id: str, stored: Mapping[str, str],
                        known: Sequence[MedOmitResult] = ()) -> list[MedOmitResult]:
    """The MED-OMIT results of the case's summaries: ``known`` ones as given, the others read from ``stored``
    (summary id -> stored JSON, as the workspace returns them); rows that do not load are left out."""
    have = {r.summary_id for r in known}
    out = list(known)
    for s in ds.summaries:
        if s.case_id == case_id and s.summary_id not in have and stored.get(s.summary_id):
            try:
                out.append(MedOmitResult.from_json(stored[s.summary_id]))
            except (KeyError, TypeError, ValueError):
                continue
    return out
