"""MED-OMIT: the pertinent facts a summary left out, with importance weights.

* ``pipeline`` — the LLM steps (fact extraction, differential, importance, clusters) and the run over summaries;
* ``decision`` — is a fact stated in the summary (the model's P(yes) and the fact's coverage);
* ``result`` — the typed result and its arithmetic; ``checks`` — replies empty of content; ``rows`` — table rows.

Imports: engine.core, engine.llm, engine.data and the evidence below it (text, embeddings, coverage, support).
"""
