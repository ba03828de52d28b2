"""Text as every evidence check reads it: the one word tokenizer and the one number-word vocabulary (``tokens``);
sentences with character offsets (``sentences``); the words, stems and numbers of clinical text (``lexical``); key
terms, tokens and the one Porter stemmer (``terms``); and how likely a good summary is to carry a piece of a note
(``salience``: headers, boilerplate, small talk, clinical content).

Imports: engine.core; nothing else of engine.evidence.
"""
