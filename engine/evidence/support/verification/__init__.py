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
