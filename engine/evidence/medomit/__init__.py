"""MED-OMIT: the pertinent facts a summary left out, with importance weights.

* ``pipeline`` — the LLM steps (fact extraction, differential, importance, clusters) and the run over summaries;
* ``decision`` — is a fact stated in the summary (the model's P(yes) and the fact's coverage);
* ``result`` — the typed result and its arithmetic; ``checks`` — replies empty of content; ``rows`` — table rows.

Imports: engine.core, engine.llm, engine.data and the evidence below it (text, embeddings, coverage, support).
"""
from engine.evidence.medomit.decision import (DEFAULT_DECISION, DecisionParams, ask_stated, combine, decide,
                                              fact_coverage, fact_parts, model_decides)
from engine.evidence.medomit.facts import (AUTO, AUTO_DESCRIPTION, AUTO_LABEL, DEFAULT_FACT_SOURCE, FACT_SOURCES,
                                           FACT_SOURCE_NOTE)
from engine.evidence.medomit.gaps import GapParams, passage_facts
from engine.evidence.medomit.keys import result_key
from engine.evidence.medomit.peers import Consensus, consensus, stored_case_results
from engine.evidence.medomit.pipeline import MedOmit, medomit_job, run_medomit
from engine.evidence.medomit.relink import read_stored, relink_case
from engine.evidence.medomit.result import FactScore, METHOD_VERSION, MedOmitResult, StepRecord
from engine.evidence.medomit.rows import dataset_rows, group_means, not_found_rows, omitted_fact_rows, same_weight_note
from engine.evidence.medomit.statements import statement_facts

__all__ = ["AUTO", "AUTO_DESCRIPTION", "AUTO_LABEL", "Consensus", "DEFAULT_DECISION", "DEFAULT_FACT_SOURCE",
           "DecisionParams", "FACT_SOURCES", "FACT_SOURCE_NOTE", "FactScore", "GapParams", "METHOD_VERSION", "MedOmit",
           "MedOmitResult", "StepRecord", "ask_stated", "combine", "consensus", "dataset_rows", "decide",
           "fact_coverage", "fact_parts", "group_means", "medomit_job", "model_decides", "not_found_rows",
           "omitted_fact_rows", "passage_facts", "read_stored", "relink_case", "result_key", "run_medomit",
           "same_weight_note", "statement_facts", "stored_case_results"]
