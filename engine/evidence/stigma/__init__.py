"""Stigmatizing language, without an LLM: the lexicon detector (``detector``), its context rules (``rules``) and
the clinicians' own lexicon entries (``entries``).

Imports: engine.core, engine.data, engine.evidence.text (its word tokenizer); nothing else of engine.evidence.
"""
