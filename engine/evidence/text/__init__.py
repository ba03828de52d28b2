"""Text as every evidence check reads it: the one word tokenizer and the one number-word vocabulary (``tokenizer``);
sentences with character offsets (``sentences``); the words, stems and numbers of clinical text (``lexical``); key
terms, tokens and the one Porter stemmer (``terms``); and how likely a good summary is to carry a piece of a note
(``salience``: headers, boilerplate, small talk, clinical content).

Imports: engine.core; nothing else of engine.evidence. The package is entered by its front door: code outside it
imports the names of ``__all__`` from ``engine.evidence.text`` itself.
"""
from engine.evidence.text.abbreviations import expand
from engine.evidence.text.lexical import (BACKGROUND_PATH, LIST_MARKER, canonical_number, claimed_numbers,
                                          content_stems, idf_weights, is_number_word, lexical_support, numbers,
                                          rouge_scorer, words)
from engine.evidence.text.salience import (LOW_SALIENCE, SPEAKER_TAG, classify, content_words, is_dialogue,
                                           unit_salience)
from engine.evidence.text.sentences import Sentence, segmenter, split_sentences
from engine.evidence.text.terms import (DRUG_STEMS, FINDING_ENDINGS, MONTHS, Tok, is_specific, key_terms,
                                        missing_key_terms, stem, tokens)
from engine.evidence.text.tokenizer import tokenize

__all__ = ["BACKGROUND_PATH", "DRUG_STEMS", "FINDING_ENDINGS", "LIST_MARKER", "LOW_SALIENCE", "MONTHS", "SPEAKER_TAG",
           "Sentence", "Tok", "canonical_number", "claimed_numbers", "classify", "content_stems", "content_words",
           "expand", "idf_weights", "is_dialogue", "is_number_word", "is_specific", "key_terms", "lexical_support",
           "missing_key_terms", "numbers", "rouge_scorer", "segmenter", "split_sentences", "stem", "tokenize",
           "tokens", "unit_salience", "words"]
