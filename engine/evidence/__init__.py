"""Evidence about a summary that needs no judge: embeddings, coverage methods (uncovered source regions), sentence support and citations, restatements, false specifics, stigmatizing language, MED-OMIT omitted facts, the batch runner of the embedding evidence and the check against a defect manifest.

Imports: engine.core, engine.llm, engine.data.
"""
