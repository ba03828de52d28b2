"""Where MED-OMIT's facts come from: the registry of fact sources.

* ``model`` — the method's own step: the model lists the atomic facts of each note with a quote, each fact is linked
  back to its span, and the passages of the notes those facts leave uncovered are added word for word
  (:mod:`engine.evidence.medomit.gaps`). The facts read as short statements ("Blood pressure 152/94") and are
  clustered by diagnosis and mechanism for their uniqueness weight. Its generated text is most of a case's time on a
  CPU.
* ``statements`` — no generated facts: every statement of the notes (the units unit coverage reads: sentences, long
  ones in windows, at least three content words) is a fact, word for word and linked to its own span, exactly as the
  passages above are. The differential, importance weights and the omission decision are the same steps; with no
  extracted facts there are no clusters, so a fact's score is its importance weight. Chosen where the notes' own
  words should be the facts, or when the model's time for the fact lists is too long.

* ``claims`` — the one-step pipeline for a model on a CPU: every atomic statement of the notes, by rules
  (:mod:`engine.evidence.medomit.statements`: sentences cut at clause boundaries by the claim splitter verification
  uses), word for word and linked to its span. The model writes only the short source differential; importance is
  read in one step per fact (:mod:`engine.evidence.medomit._importance`) and the omission decision is one step per
  fact; no clusters and no summary differential (the alternative metric) are generated.

:func:`fact_source_for` resolves the setting ``auto`` (the default): the model's facts on a backend that writes
fast (a server, a GPU), the notes' claims on a CPU. The source is part of a result's key and provenance; results
of different sources are never compared with each other.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FactSource:
    key: str
    label: str
    description: str
    uses_model: bool  # the model generates the fact lists
    one_step: bool = False  # the one-step pipeline: the differential after the case's record, importance read in one
    # step per fact, no clusters, no summary differential


FACT_SOURCES: dict[str, FactSource] = {s.key: s for s in (
    FactSource("model", "extracted by the model",
               "the model lists each note's atomic facts with a quote; passages no fact covers are added word for "
               "word", True),
    FactSource("statements", "the notes' statements",
               "every statement of the notes is a fact, word for word; no fact lists are generated and no clusters "
               "are formed", False),
    FactSource("claims", "the notes' atomic statements, one-step questions",
               "every statement of the notes cut at its clause boundaries is a fact, word for word; the model writes "
               "only the short differential and answers one-step questions (omission; importance of the facts a "
               "summary leaves out); no clusters and no summary differential", False, one_step=True),
)}
DEFAULT_FACT_SOURCE = "model"  # what results stored before there was a choice used
ONE_STEP_VERSION = "one-step-v2"  # part of a one-step result's key: the record layout, the importance reading (v2:
# read only for the facts the summary leaves out, the only facts the document score counts)
AUTO = "auto"  # the setting's default: resolved per backend by fact_source_for
AUTO_LABEL = "automatic"
AUTO_DESCRIPTION = ("the notes' atomic statements with one-step questions when the model runs on a CPU; the model's "
                    "extracted facts on a GPU or a server, which write long replies fast")


def fact_source_for(backend, choice: str = AUTO) -> str:
    """The fact source for ``choice`` on ``backend``: the choice itself when it is a source; for :data:`AUTO` the
    model's facts on a backend that writes fast (:attr:`engine.llm.backends.Capabilities.fast_decode`), else the
    notes' claims (everything the model does is then one short generation and one-step questions)."""
    if choice in FACT_SOURCES:
        return choice
    if choice != AUTO:
        raise ValueError(f"unknown fact source {choice!r}; known: {AUTO}, {', '.join(FACT_SOURCES)}")
    return "model" if backend.capabilities.fast_decode else "claims"
FACT_SOURCE_NOTE = ("Time with the default model on 2 CPU cores, a sample case of 4 notes and 3 summaries from "
                    "scratch: the model's facts 10.0 min on idle cores (12.5-17.7 beside other work), the notes' "
                    "statements 6.2 min (5.1-7.4 over the sample's 12 cases), the notes' claims with one-step "
                    "questions 4.9 min for rheum-01's three summaries (2.5 min for the first: differential, the "
                    "omission decision, 72 importance readings for the facts it leaves out; 1.1-1.2 min for each "
                    "further one) with the record read once for the judge and claim verification too; on one "
                    "NVIDIA H200 with every layer offloaded the model's facts take 19 s and 6 s. On the sample the "
                    "notes' claims and the statements find 14 of the 16 documented dropped facts (the model's "
                    "facts 15)")
