"""Claim-level verification: does the record state what a summary sentence says?

* :mod:`.claims` splits a summary sentence into the atomic statements it makes (rules, no model);
* :mod:`.passages` picks the record's lines that best match a claim (shown beside every answer, and the record
  itself when the whole record does not fit the model's context);
* :mod:`.ask` asks the model one closed question per claim and reads the probability of *yes* from the first
  answer token's log-probabilities, with the record evaluated once and kept for every question about it;
* :mod:`.result` holds the typed results (per claim, sentence and summary) and their stored form;
* :mod:`.run` verifies summaries (one or many), cached in the workspace by content, model and method version.

Imports only from ``engine.core``, ``engine.llm`` and ``engine.evidence``.
"""
from engine.evidence.support.verification.ask import read_yes
from engine.evidence.support.verification.claims import MIN_WORDS, split_claims, word_count
from engine.evidence.support.verification.combination import (COMBINATION_PATH, Combination, fit_monotone,
                                                              shipped_combination)
from engine.evidence.support.verification.passages import LineIndex, record_lines
from engine.evidence.support.verification.result import ClaimCheck, SentenceCheck, VerificationResult
from engine.evidence.support.verification.run import (DEFAULT_PARAMS, METHOD_KEY, METHOD_VERSION, VerifyParams,
                                                      compute_verification, verification_job, verify_summary)
from engine.evidence.support.verification.signals import FEATURES, RecordWords, claim_signals

__all__ = ["COMBINATION_PATH", "ClaimCheck", "Combination", "DEFAULT_PARAMS", "FEATURES", "LineIndex", "METHOD_KEY",
           "METHOD_VERSION", "MIN_WORDS", "RecordWords", "SentenceCheck", "VerificationResult", "VerifyParams",
           "claim_signals", "compute_verification", "fit_monotone", "read_yes", "record_lines", "shipped_combination",
           "split_claims", "verification_job", "verify_summary", "word_count"]
