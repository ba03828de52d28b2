"""The PDSQI-9 LLM judge: prompt, runner, judge configurations, the judge source from settings, self-consistency, calibration to local raters and its evidence features, triage, training-data export and the stored results.

Imports: engine.core, engine.llm, engine.data, engine.evidence.batch.
"""
from engine.judge.combination import COMBINATIONS, COMBINATION_VERSION, WEIGHTS_NOTE, combine, dataset_scales, scales_of
from engine.judge.configs import (IGNORED_PARAMS, JudgeConfig, config_key_of, configurations, find, is_smoke_test,
                                  results_for, sampling_words)
from engine.judge.consistency import all_fixed
from engine.judge.features import Features, evidence_for
from engine.judge.fhir_records import judge_records
from engine.judge.import_check import import_results_file
from engine.judge.prompt import PROMPT_VERSION, build_messages, read_messages
from engine.judge.results import JudgeParams, JudgeResult, aggregate, primary_score
from engine.judge.runner import Judge, export_results, judge_job, open_llama_backend, run_batch
from engine.judge.source import (SERVER_EXAMPLES, SOURCE_LABELS, check_server, describe_source, list_server_models,
                                 open_judge_backend)
from engine.judge.stored import latest_result, stored_judge_results
from engine.judge import calibration, training_export, triage, used_scores  # modules read as namespaces

__all__ = ["COMBINATIONS", "COMBINATION_VERSION", "Features", "IGNORED_PARAMS", "Judge", "JudgeConfig", "JudgeParams",
           "JudgeResult", "PROMPT_VERSION", "SERVER_EXAMPLES", "SOURCE_LABELS", "WEIGHTS_NOTE", "aggregate",
           "all_fixed", "build_messages", "calibration", "check_server", "combine", "config_key_of", "configurations",
           "dataset_scales", "describe_source", "evidence_for", "export_results", "find", "import_results_file",
           "is_smoke_test", "judge_job", "judge_records", "latest_result", "list_server_models", "open_judge_backend",
           "open_llama_backend", "primary_score", "read_messages", "results_for", "run_batch", "sampling_words",
           "scales_of", "stored_judge_results", "training_export", "triage", "used_scores"]
