"""Faithfulness evidence from the summary's side: is what each summary sentence says supported by the notes?

* ``alignment`` — the source sentences that support each summary sentence;
* ``specifics`` — fact-level checks of one sentence (numbers, doses, dates, laterality, negation, key terms);
* ``allergies`` — allergens a sentence names that the notes never record as allergies (one of the checks);
* ``redundancy`` — restatements inside one summary;
* ``verification`` — claim-level verification by the judge model (a closed question per claim).

Imports: engine.core, engine.llm, engine.data, engine.evidence.text, engine.evidence.embeddings,
engine.evidence.coverage.
"""
