"""Omission evidence from the source's side: which parts of the notes a summary does not carry.

* ``results`` — what every coverage method works with and returns (parameters, scored units, regions, result);
* ``unit_coverage`` — unit coverage, the default method; ``embedding_methods`` — EmbedKDECheck, sentence and topic
  coverage; ``regions`` — the method registry, cached runs and merging scored units into ranked regions;
* ``note_flags`` — note-level flags a multi-note record can lose whole.

Imports: engine.core, engine.llm, engine.data, engine.evidence.text, engine.evidence.embeddings (regions are
ranked by engine.evidence.text.salience).
"""
