"""Evidence about a summary that needs no judge, by concept:

* ``text`` — sentences, words, stems and numbers;
* ``coverage`` — uncovered source regions (unit coverage, EmbedKDECheck and the others), salience, note-level flags;
* ``support`` — sentence support, false specifics, restatements, claim verification;
* ``medomit`` — MED-OMIT omitted facts with importance weights;
* ``stigma`` — stigmatizing language.

Beside them: the embedding model (``embeddings``), the registry of stored evidence kinds (``kinds``), the batch
runner of the embedding evidence (``batch``) and the check of stored evidence, claim verification included, against a
defect manifest (``defect_check``).

Imports: engine.core, engine.llm, engine.data.
"""
