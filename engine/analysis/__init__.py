"""Agreement and reporting: the agreement analysis (ICC, α, AC, κ, LLM vs raters), spot-check comparisons, the analysis of one judge configuration and the committee report.

Imports: every package below it (core, statistics, llm, data, evidence, judge).
"""
from engine.analysis.agreement import AgreementReport, analyse, disagreements, reliability_rows
from engine.analysis.check import CheckSetup, PARTS, check_job
from engine.analysis.configured import UnknownConfiguration, analyse_configuration, configured_results
from engine.analysis.detector import detector_agreement
from engine.analysis.formatting import INTERVAL_NOTE, format_estimate, format_p, format_score
from engine.analysis.headlines import HeadlineRow, headline, llm_vs_human_rows, mixed_model_rows
from engine.analysis.items import LIKERT
from engine.analysis.report import ReportError
from engine.analysis.spot_checks import spot_check_rows
from engine.analysis import report  # modules read as namespaces

__all__ = ["AgreementReport", "CheckSetup", "HeadlineRow", "INTERVAL_NOTE", "LIKERT", "PARTS", "ReportError",
           "UnknownConfiguration", "analyse", "analyse_configuration", "check_job", "configured_results",
           "detector_agreement", "disagreements", "format_estimate", "format_p", "format_score", "headline",
           "llm_vs_human_rows", "mixed_model_rows", "reliability_rows", "report", "spot_check_rows"]
