"""MED-OMIT's result and its arithmetic: facts linked to the notes, the differential, clusters, per-fact scores
(importance and uniqueness), the document weight, and the differential of the notes against the summary's.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from engine.evidence.text import tokenize

METHOD_VERSION = "medomit-v5"  # (the one-step pipeline's results are keyed by engine.evidence.medomit.facts.
# ONE_STEP_VERSION as well) v5: passages no extracted fact covers are facts too; v4: omission decided per fact by
# a closed question and coverage; v3: unlinked
# facts are never scored, empty replies fail
IMPORTANCE_WEIGHT = {"critical": 1.0, "important": 0.5, "other": 0.1}
LIKELIHOOD_WEIGHT = {"probable": 1.0, "possible": 0.5, "unlikely": 0.1}


@dataclass
class Fact:
    fact_id: str
    text: str
    note_id: Optional[str]
    start: Optional[int]  # character span in the note (None when unlinked)
    end: Optional[int]
    link: str  # "exact" | "fuzzy" | "unlinked" | "passage" (a passage of the notes taken as a fact, word for word)
    link_score: float = 0.0

    def part_span(self, note_text: str, part: str, start: int, end: int) -> Optional[tuple[int, int]]:
        """Where a part of this fact (``start``/``end``: offsets in :attr:`text`) lies in its note: the same offsets
        when the fact is its source's words, else the part's words found (ignoring case) inside the fact's span;
        None when unlinked or not found."""
        if self.start is None or self.end is None:
            return None
        src = note_text[self.start:self.end]
        if src == self.text:
            return self.start + start, self.start + end
        at = src.lower().find(part.lower())
        return (self.start + at, self.start + at + len(part)) if at >= 0 and part else None

    def placed(self, note_text: str, parts) -> list[list]:
        """``parts`` (each with ``text``, ``start``, ``end`` in :attr:`text`) as ``[text, start, end]`` in the note
        (start/end None where :meth:`part_span` cannot place it): what :attr:`FactScore.missing` holds."""
        return [[p.text, *(self.part_span(note_text, p.text, p.start, p.end) or (None, None))] for p in parts]


@dataclass
class Diagnosis:
    rank: int
    name: str
    likelihood: str
    reason: str


@dataclass
class Cluster:
    diagnosis: str
    polarity: str  # "supporting" | "refuting"
    mechanism: str
    fact_ids: list[str]


@dataclass
class FactScore:
    fact_id: str
    omitted: bool
    importance: Optional[str]
    importance_weight: float
    uniqueness: list[float]
    score: float
    clusters: list[str]  # "supporting Dx / mechanism" labels
    explanation: str = ""
    p_omitted: Optional[float] = None  # the decision's P(omitted) (engine.evidence.medomit.decision); None: older
    p_stated: Optional[float] = None  # the model's P(yes) "the summary states it"; None: not asked / no answer
    coverage: Optional[float] = None  # how much of the fact the summary's words carry
    # the parts left out when the summary states the fact only in part: [text, start, end] with the part's span in
    # the fact's note (start/end None when it cannot be placed); [] when decided whole or wholly omitted
    missing: list = field(default_factory=list)
    # the importance read in one step: label -> probability (engine.evidence.medomit._importance); None when the
    # label was generated, or no reading was had (then ``importance`` is None and the reason is in the steps)
    importance_p: Optional[dict] = None

    def regions(self, fact: "Fact") -> list[tuple[str, int, int]]:
        """The spans of the notes this omission points to, as (note id, start, end): the left-out parts the
        decision names that could be placed in the note (a part in the model's own words may not be), else the
        fact's own span; [] when unlinked."""
        if fact.start is None or fact.note_id is None:
            return []
        placed = [(fact.note_id, a, b) for _, a, b in self.missing if a is not None]
        return placed or [(fact.note_id, fact.start, fact.end)]


@dataclass
class StepRecord:
    """One step of a run: its name, outcome and, for a model step, the model's seconds — measured when the step ran,
    kept with the step's cached reply, so a result served from the cache still tells what it cost (0: unknown, a
    reply cached before steps were timed)."""

    step: str
    ok: bool
    cached: bool
    error: str = ""
    raw: str = ""
    seconds: float = 0.0

    @classmethod
    def of(cls, r, error: Optional[str] = None) -> "StepRecord":
        """The record of an :class:`engine.llm.steps.StepResult` (its raw reply kept only when it failed)."""
        return cls(r.step, r.ok, r.cached, r.error if error is None else error, "" if r.ok else r.raw, r.seconds)


def step_kind(step: str) -> str:
    """The pipeline step a record belongs to ("facts[n1#0]" -> "facts"; "importance#2" -> "importance";
    "ddx[summary s1]" -> "summary DDx")."""
    if step.startswith("ddx[summary"):
        return "summary DDx"
    if step.startswith("ddx"):
        return "source DDx"
    return re.split(r"[\[#]", step, maxsplit=1)[0]


@dataclass
class DdxComparison:
    missing_from_summary: list[str]
    added_in_summary: list[str]
    difference: float  # likelihood-weighted share of the source DDx missing from the summary DDx (0..1)


@dataclass
class MedOmitResult:
    summary_id: str
    case_id: str
    status: str  # "complete" | "incomplete"
    failed_step: str
    reason: str
    facts: list[Fact]
    ddx: list[Diagnosis]
    clusters: list[Cluster]
    scores: list[FactScore]  # one per fact (omitted or not)
    document_weight: Optional[float]
    omission_count: Optional[int]
    summary_ddx: list[Diagnosis] = field(default_factory=list)
    ddx_comparison: Optional[DdxComparison] = None
    steps: list[StepRecord] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    created_at: str = ""

    @property
    def weighed(self) -> list[FactScore]:
        """The scores of the facts that were given an importance: every fact when the labels were generated, the
        omitted facts when importance was read in one step (a stated fact is not weighed: the document score counts
        only omitted ones)."""
        return [s for s in self.scores if s.importance is not None or s.importance_p is not None]

    @property
    def omitted(self) -> list[FactScore]:
        """The omitted facts that count (linked to the notes), heaviest first."""
        unlinked = {f.fact_id for f in self.not_found}
        return sorted((s for s in self.scores if s.omitted and s.fact_id not in unlinked),
                      key=lambda s: (-s.score, s.fact_id))

    @property
    def not_found(self) -> list[Fact]:
        """Facts the model stated that could not be linked to a span of the notes: shown apart, never scored."""
        return [f for f in self.facts if f.link == "unlinked"]

    @property
    def facts_in_notes(self) -> int:
        """The facts linked to the notes: the ones the decision and the weights count (the header's number)."""
        return len(self.facts) - len(self.not_found)

    @property
    def smoke_test(self) -> bool:
        """Computed with the embedded smoke-test model: its figures are not clinically meaningful."""
        from engine.llm import is_smoke_test_model

        p = self.provenance or {}
        return is_smoke_test_model(p.get("model"), p.get("model_file"))

    @property
    def fact_source(self) -> str:
        """Where the facts came from (a key of :data:`engine.evidence.medomit.facts.FACT_SOURCES`; results stored
        before there was a choice are the model's)."""
        from engine.evidence.medomit.facts import DEFAULT_FACT_SOURCE

        return str((self.provenance or {}).get("facts") or DEFAULT_FACT_SOURCE)

    @property
    def fact_source_label(self) -> str:
        """:attr:`fact_source` in words."""
        from engine.evidence.medomit.facts import FACT_SOURCES

        src = FACT_SOURCES.get(self.fact_source)
        return src.label if src is not None else self.fact_source

    def fact(self, fact_id: str) -> Fact:
        return next(f for f in self.facts if f.fact_id == fact_id)

    def seconds_by_step(self) -> dict[str, float]:
        """Seconds per pipeline step (:func:`step_kind`), as measured when each step ran — a step served from the
        cache counts the time it took then, so the figures are the cost of the result from scratch; a step cached
        before steps were timed counts 0."""
        out: dict[str, float] = {}
        for r in self.steps:
            kind = step_kind(r.step)
            out[kind] = round(out.get(kind, 0.0) + r.seconds, 3)
        return out

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "MedOmitResult":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, d: dict) -> "MedOmitResult":
        """A stored result from its parsed JSON (:meth:`from_json` without parsing the text again)."""
        res = cls._from_dict(d)
        method = (res.provenance or {}).get("method")
        if res.status == "complete" and method and method != METHOD_VERSION:
            res._rescore()  # stored by an older method: apply today's scoring to its step outputs
        return res

    def _rescore(self) -> None:
        """Recompute the scores, document weight and omission count from the stored per-fact outputs with the
        current scoring (facts not found in the notes are not scored)."""
        old = {s.fact_id: s for s in self.scores}
        scores, self.document_weight, self.omission_count = score_document(
            [f.fact_id for f in self.facts if f.fact_id in old], {k: s.omitted for k, s in old.items()},
            {k: s.importance for k, s in old.items() if s.importance}, self.clusters,
            {k: s.explanation for k, s in old.items()}, unlinked=[f.fact_id for f in self.not_found],
            probs={k: s.importance_p for k, s in old.items() if s.importance_p})
        self.scores = scores
        self.provenance = {"decision": "older: the model listed present / omitted for a batch of facts",
                           **self.provenance, "rescored_from": self.provenance.get("method"),
                           "method": METHOD_VERSION}

    @classmethod
    def _from_json(cls, text: str) -> "MedOmitResult":
        """The stored result as it was written (no rescoring of an older method's result)."""
        return cls._from_dict(json.loads(text))

    @classmethod
    def _from_dict(cls, d: dict) -> "MedOmitResult":
        return cls(summary_id=d["summary_id"], case_id=d["case_id"], status=d["status"],
                   failed_step=d["failed_step"], reason=d["reason"], facts=[Fact(**f) for f in d["facts"]],
                   ddx=[Diagnosis(**x) for x in d["ddx"]], clusters=[Cluster(**c) for c in d["clusters"]],
                   scores=[FactScore(**s) for s in d["scores"]], document_weight=d["document_weight"],
                   omission_count=d["omission_count"], summary_ddx=[Diagnosis(**x) for x in d["summary_ddx"]],
                   ddx_comparison=DdxComparison(**d["ddx_comparison"]) if d["ddx_comparison"] else None,
                   steps=[StepRecord(**s) for s in d["steps"]], provenance=d["provenance"],
                   created_at=d["created_at"])


def uniqueness_values(fact_id: str, clusters: Sequence[Cluster]) -> list[float]:
    """1/|S| for every sub-cluster S that contains the fact (a fact may sit in several)."""
    return [1.0 / len(set(c.fact_ids)) for c in clusters if fact_id in c.fact_ids]


def fact_score(importance: Optional[str], uniqueness: Sequence[float], weight: Optional[float] = None) -> float:
    """max(importance weight, uniqueness values); the weight is ``weight`` when given (read as a probability-weighted
    value), else the label's; an uncategorised fact counts only through its uniqueness."""
    w = IMPORTANCE_WEIGHT.get(importance or "", 0.0) if weight is None else weight
    return max([w, *uniqueness])


def expected_weight(probs: Optional[dict]) -> Optional[float]:
    """Σ P(label) · weight(label) over the importance labels (None without probabilities)."""
    if not probs:
        return None
    return round(sum(float(p) * IMPORTANCE_WEIGHT.get(k, 0.0) for k, p in probs.items()), 4)


def score_document(fact_ids: Sequence[str], omitted: dict[str, bool], importance: dict[str, str],
                   clusters: Sequence[Cluster], explanations: Optional[dict[str, str]] = None,
                   unlinked: Sequence[str] = (), probs: Optional[dict[str, dict]] = None
                   ) -> tuple[list[FactScore], float, int]:
    """Per-fact scores, the document MED-OMIT weight (Σ scores of omitted facts) and the omission count.
    ``probs`` (fact id -> label probabilities) gives a fact read in one step its probability-weighted importance
    weight instead of its label's. ``unlinked`` facts (not found in the notes) are left out: no score, no weight, no
    count, and they do not dilute the uniqueness of the facts they share a cluster with."""
    skip = set(unlinked)
    probs = probs or {}
    fact_ids = [f for f in fact_ids if f not in skip]
    clusters = [Cluster(c.diagnosis, c.polarity, c.mechanism, [f for f in c.fact_ids if f not in skip])
                for c in clusters] if skip else clusters
    clusters = [c for c in clusters if c.fact_ids]
    scores = []
    for fid in fact_ids:
        u = uniqueness_values(fid, clusters)
        labels = [f"{c.polarity} {c.diagnosis} / {c.mechanism}" for c in clusters if fid in c.fact_ids]
        imp = importance.get(fid)
        w = expected_weight(probs.get(fid))
        scores.append(FactScore(fid, bool(omitted.get(fid)), imp,
                                IMPORTANCE_WEIGHT.get(imp or "", 0.0) if w is None else w, u,
                                fact_score(imp, u, w), labels, (explanations or {}).get(fid, ""),
                                importance_p=probs.get(fid)))
    omitted_scores = [s.score for s in scores if s.omitted]
    return scores, round(sum(omitted_scores), 6), len(omitted_scores)


def _norm_name(name: str) -> set[str]:
    return {w for w in tokenize(name, case="lower_text") if w not in {"of", "the", "and", "with", "due", "to"}}


def _same_dx(a: str, b: str) -> bool:
    x, y = _norm_name(a), _norm_name(b)
    return bool(x and y) and len(x & y) / len(x | y) >= 0.5


def compare_ddx(source: Sequence[Diagnosis], summary: Sequence[Diagnosis]) -> DdxComparison:
    """Diagnoses of the source DDx that the summary's DDx lacks (and vice versa); difference = Σ likelihood weight
    of the missing ones / Σ likelihood weight of the source DDx (0 = same DDx, 1 = nothing in common)."""
    missing = [d for d in source if not any(_same_dx(d.name, s.name) for s in summary)]
    added = [s.name for s in summary if not any(_same_dx(s.name, d.name) for d in source)]
    total = sum(LIKELIHOOD_WEIGHT.get(d.likelihood, 0.0) for d in source)
    diff = sum(LIKELIHOOD_WEIGHT.get(d.likelihood, 0.0) for d in missing) / total if total else 0.0
    return DdxComparison([d.name for d in missing], added, round(diff, 4))


def _norm_fact(t: str) -> str:
    """A fact's normal form: lower-cased runs of letters, digits, "%" and "." ("7.2%"), one space between."""
    return " ".join(tokenize(t, case="lower_text", extra="%."))


def merge_facts(raw: Sequence[tuple[str, str, Optional[str]]]) -> list[tuple[str, str, Optional[str]]]:
    """Drop duplicates (same normalised text, or difflib ratio ≥ 0.9), keeping the first occurrence."""
    kept: list[tuple[str, str, Optional[str]]] = []
    norms: list[str] = []
    for text, quote, nid in raw:
        n = _norm_fact(text)
        if not n or any(n == k or difflib.SequenceMatcher(None, n, k).ratio() >= 0.9 for k in norms):
            continue
        kept.append((text, quote, nid))
        norms.append(n)
    return kept
