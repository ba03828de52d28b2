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
from engine.evidence.batch import compute_evidence, evidence_job
from engine.evidence.defect_check import check_manifest, check_verification, summary_rows
from engine.evidence.embeddings import Embedder, default_embedder, default_model_path
from engine.evidence.kinds import EVIDENCE_KINDS, kind, stored_result, stored_results

__all__ = ["EVIDENCE_KINDS", "Embedder", "check_manifest", "check_verification", "compute_evidence",
           "default_embedder", "default_model_path", "evidence_job", "kind", "stored_result", "stored_results",
           "summary_rows"]
