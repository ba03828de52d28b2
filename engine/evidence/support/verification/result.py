"""Typed verification results — per claim, per sentence and per summary — and their stored form.

A claim is *supported*, *uncertain* or *unsupported* by its probability against the shipped bands (or, in results of
``verify-v1``, *supported* or *unsupported* against one threshold), or *unscored* with the reason (no
log-probabilities, an answer that is neither yes nor no, a record the context cannot hold): an unscored claim never
gets a guessed probability. A sentence's probability is that of its least supported scored claim; a sentence whose claims
are all unscored is unscored. A summary with no sentence is unscored as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.evidence.support.verification.passages import PassageRef

VERDICTS = ("supported", "uncertain", "unsupported", "unscored")


@dataclass(frozen=True)
class ClaimCheck:
    text: str
    start: int  # offsets in the sentence's text without citation tags
    end: int
    p_supported: Optional[float]  # None: unscored
    verdict: str
    p_model: Optional[float] = None  # the model's P(yes) before the fact-level checks
    reason: str = ""  # why unscored, or what made it unsupported beyond the model's answer
    passage: tuple[PassageRef, ...] = ()  # the record's lines that best match the claim
    notes_say: tuple[str, ...] = ()  # fact-level findings: what the notes say instead
    top: tuple[str, ...] = ()  # the model's likeliest answer tokens
    p_cited: Optional[float] = None  # P(yes) that the sentence's cited notes alone support it (None: not asked)
    drivers: tuple[str, ...] = ()  # what drove the probability down, largest part first, in words

    def to_dict(self) -> dict:
        return {"text": self.text, "start": self.start, "end": self.end, "p_supported": self.p_supported,
                "verdict": self.verdict, "p_model": self.p_model, "reason": self.reason,
                "passage": [p.to_dict() for p in self.passage], "notes_say": list(self.notes_say),
                "top": list(self.top), "p_cited": self.p_cited, "drivers": list(self.drivers)}

    @classmethod
    def from_dict(cls, d: dict) -> "ClaimCheck":
        return cls(d["text"], int(d["start"]), int(d["end"]), d.get("p_supported"), d["verdict"], d.get("p_model"),
                   d.get("reason", ""), tuple(PassageRef(**p) for p in d.get("passage", [])),
                   tuple(d.get("notes_say", [])), tuple(d.get("top", [])), d.get("p_cited"),
                   tuple(d.get("drivers", [])))


@dataclass(frozen=True)
class SentenceCheck:
    index: int
    start: int  # offsets in the summary text
    end: int
    text: str  # without citation tags
    p_supported: Optional[float]
    verdict: str
    claims: tuple[ClaimCheck, ...] = ()
    cited: tuple[str, ...] = ()  # the note ids the sentence cites
    citation_verdict: str = ""  # right | wrong | unknown | "" (no citation, or not checked)
    citation_detail: str = ""

    def to_dict(self) -> dict:
        return {"index": self.index, "start": self.start, "end": self.end, "text": self.text,
                "p_supported": self.p_supported, "verdict": self.verdict, "claims": [c.to_dict() for c in self.claims],
                "cited": list(self.cited), "citation_verdict": self.citation_verdict,
                "citation_detail": self.citation_detail}

    @classmethod
    def from_dict(cls, d: dict) -> "SentenceCheck":
        return cls(int(d["index"]), int(d["start"]), int(d["end"]), d["text"], d.get("p_supported"), d["verdict"],
                   tuple(ClaimCheck.from_dict(c) for c in d.get("claims", [])), tuple(d.get("cited", [])),
                   d.get("citation_verdict", ""), d.get("citation_detail", ""))


@dataclass(frozen=True)
class VerificationResult:
    summary_id: str
    method_version: str
    model: str  # the model file
    model_sha256: str
    smoke_test: bool  # checked by the smoke-test model: not evidence about the summary
    threshold: float  # below it a claim is unsupported (verify-v2: from it up to the params' supported_from, uncertain)
    sentences: tuple[SentenceCheck, ...] = ()
    reason: str = ""  # why the summary as a whole is unscored ("" when it is not)
    questions: int = 0
    seconds: float = 0.0  # wall time, record reading included
    record_tokens: int = 0  # tokens of the record as the model read it (0: read as excerpts per sentence)
    params: dict = field(default_factory=dict)

    @property
    def scored(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if s.p_supported is not None]

    @property
    def unsupported(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if s.verdict == "unsupported"]

    @property
    def uncertain(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if s.verdict == "uncertain"]

    @property
    def unsupported_claims(self) -> list[ClaimCheck]:
        return [c for s in self.sentences for c in s.claims if c.verdict == "unsupported"]

    @property
    def unsupported_share(self) -> Optional[float]:
        """Share of the scored sentences that are unsupported (None: nothing scored)."""
        sc = self.scored
        return len(self.unsupported) / len(sc) if sc else None

    @property
    def lowest_p(self) -> Optional[float]:
        sc = self.scored
        return min(s.p_supported for s in sc) if sc else None

    def to_dict(self) -> dict:
        return {"summary_id": self.summary_id, "method_version": self.method_version, "model": self.model,
                "model_sha256": self.model_sha256, "smoke_test": self.smoke_test, "threshold": self.threshold,
                "sentences": [s.to_dict() for s in self.sentences], "reason": self.reason,
                "questions": self.questions, "seconds": self.seconds, "record_tokens": self.record_tokens,
                "params": self.params}

    def to_line(self) -> dict:
        """The CLI's one JSON line per summary."""
        return {"summary_id": self.summary_id, "reason": self.reason, "unsupported_share": self.unsupported_share,
                "lowest_p_supported": self.lowest_p, "model": self.model, "smoke_test": self.smoke_test,
                "method_version": self.method_version,
                "sentences": [{"text": s.text, "p_supported": s.p_supported, "verdict": s.verdict,
                               "citation_verdict": s.citation_verdict, "citation_detail": s.citation_detail,
                               "claims": [c.to_dict() for c in s.claims]} for s in self.sentences]}

    @classmethod
    def from_dict(cls, d: dict) -> "VerificationResult":
        return cls(d["summary_id"], d["method_version"], d["model"], d.get("model_sha256", ""),
                   bool(d.get("smoke_test")), float(d["threshold"]),
                   tuple(SentenceCheck.from_dict(s) for s in d.get("sentences", [])), d.get("reason", ""),
                   int(d.get("questions", 0)), float(d.get("seconds", 0.0)), int(d.get("record_tokens", 0)),
                   dict(d.get("params", {})))
