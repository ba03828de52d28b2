"""Omission evidence from the source's side: which parts of the notes a summary does not carry.

* ``results`` — what every coverage method works with and returns (parameters, scored units, regions, result);
* ``unit_coverage`` — unit coverage, the default method; ``embedding_methods`` — EmbedKDECheck, sentence and topic
  coverage; ``regions`` — the method registry, cached runs and merging scored units into ranked regions;
* ``note_flags`` — note-level flags a multi-note record can lose whole.

Imports: engine.core, engine.llm, engine.data, engine.evidence.text, engine.evidence.embeddings (regions are
ranked by engine.evidence.text.salience).
"""
from engine.evidence.coverage.embedding_methods import stopword_set
from engine.evidence.coverage.note_flags import FLAG_KINDS, describe, omission_flags
from engine.evidence.coverage.regions import (COVERAGE_VERSION, DEFAULT_THRESHOLDS, METHODS, REGIONS_ORDER, calibrate,
                                              coverage_cached, coverage_key, listed_order_key, merge_regions,
                                              region_marks, region_rank_score, region_row, result_from_dict,
                                              score_coverage, select_regions)
from engine.evidence.coverage.results import (CoverageError, CoverageParams, CoverageResult, DEFAULT_METHOD, Region,
                                              checked_summary_text)
from engine.evidence.coverage.unit_coverage import (KEY_TERM_BASE, calibrated, key_share, lexical_set, source_units,
                                                    summary_units)
from engine.evidence.coverage import regions  # modules read as namespaces

__all__ = ["COVERAGE_VERSION", "CoverageError", "CoverageParams", "CoverageResult", "DEFAULT_METHOD",
           "DEFAULT_THRESHOLDS", "FLAG_KINDS", "KEY_TERM_BASE", "METHODS", "REGIONS_ORDER", "Region", "calibrate",
           "calibrated", "checked_summary_text", "coverage_cached", "coverage_key", "describe", "key_share",
           "lexical_set", "listed_order_key", "merge_regions", "omission_flags", "region_marks", "region_rank_score",
           "region_row", "regions", "result_from_dict", "score_coverage", "select_regions", "source_units",
           "stopword_set", "summary_units"]
