"""FHIR R4 input and output: clinical notes from a Bundle or a Bulk Data NDJSON export (``source`` reads the
resources, ``_attachments`` turns a document's content into text — HTML through ``_narrative``, C-CDA documents
through ``_ccda`` —, ``reader`` builds cases, notes and summaries, ``_reading`` reports what did not become a note) and the
PDSQI-9 instrument as a ``Questionnaire`` with its ``QuestionnaireResponse`` ratings (``questionnaire``).

Resources are validated with the ``fhir.resources`` models of FHIR R4B (4.3.0), which read the R4 (4.0.1)
resources that notes use (DocumentReference, Composition, Binary, Patient, Encounter, PractitionerRole) unchanged.
"""
from engine.data.fhir.export import dataset_resources, write_bulk
from engine.data.fhir.questionnaire import ResponseRecord
from engine.data.fhir.reader import read_export
from engine.data.fhir.source import Export, ResourceRow, is_fhir_json, read_bundle, read_ndjson_file, unparsed_fhir

__all__ = ["Export", "ResourceRow", "ResponseRecord", "dataset_resources", "is_fhir_json", "read_bundle",
           "read_export", "read_ndjson_file", "unparsed_fhir", "write_bulk"]
