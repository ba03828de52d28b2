"""The key a MED-OMIT result is stored under: the method, the model, the decision and passage rules, the fact
source, the notes and the summary."""
from __future__ import annotations

from dataclasses import asdict

from engine.core import Case, Summary, json_key
from engine.evidence.medomit.decision import DECISION_VERSION, DEFAULT_DECISION, EARLIER_DECISION_VERSIONS, \
    DecisionParams
from engine.evidence.medomit.facts import DEFAULT_FACT_SOURCE, FACT_SOURCES, ONE_STEP_VERSION
from engine.evidence.medomit.gaps import DEFAULT_GAPS, GapParams
from engine.evidence.medomit.result import METHOD_VERSION


def result_key(model_id: str, case: Case, summary: Summary, decision: DecisionParams = DEFAULT_DECISION,
               gaps: GapParams = DEFAULT_GAPS, facts: str = DEFAULT_FACT_SOURCE,
               decision_version: str = DECISION_VERSION) -> str:
    material = {"method": METHOD_VERSION, "model": model_id, "decision": decision.key(decision_version),
                "passages": gaps.key(), "notes": [asdict(n) for n in case.notes],
                "specialty": case.target_specialty, "summary": summary.text}
    if facts != DEFAULT_FACT_SOURCE:  # the default's keys stay those stored before fact sources existed
        material["facts"] = facts
    if FACT_SOURCES[facts].one_step:
        material["one_step"] = ONE_STEP_VERSION
    return json_key(material)


def earlier_result_keys(model_id: str, case: Case, summary: Summary, decision: DecisionParams = DEFAULT_DECISION,
                        gaps: GapParams = DEFAULT_GAPS, facts: str = DEFAULT_FACT_SOURCE) -> list[str]:
    """The keys the same result was stored under by earlier decision versions, newest first."""
    return [result_key(model_id, case, summary, decision, gaps, facts, v) for v in EARLIER_DECISION_VERSIONS]
