"""Stigmatizing language, without an LLM: the lexicon detector (``detector``), its context rules (``_rules``) and
the clinicians' own lexicon entries (``entries``).

Imports: engine.core, engine.data, engine.evidence.text (its word tokenizer); nothing else of engine.evidence. The
package is entered by its front door: code outside it imports the names of ``__all__`` from
``engine.evidence.stigma`` itself.
"""
from engine.evidence.stigma.detector import (NOTES_ITEM, SUMMARY_ITEM, Lexicon, LexiconError, StigmaScan,
                                             SummaryStigma, assess, assess_dataset, detect, load_lexicon, scan_notes)
from engine.evidence.stigma.entries import add_clinician_entry, workspace_entries

__all__ = ["Lexicon", "LexiconError", "NOTES_ITEM", "SUMMARY_ITEM", "StigmaScan", "SummaryStigma",
           "add_clinician_entry", "assess", "assess_dataset", "detect", "load_lexicon", "scan_notes",
           "workspace_entries"]
