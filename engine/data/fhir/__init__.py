"""FHIR R4 input and output: clinical notes from a Bundle or a Bulk Data NDJSON export (``source`` reads the
resources, ``attachments`` turns a document's content into text — HTML through ``narrative``, C-CDA documents through
``ccda`` —, ``reader`` builds cases, notes and summaries, ``reading`` reports what did not become a note) and the
PDSQI-9 instrument as a ``Questionnaire`` with its ``QuestionnaireResponse`` ratings (``questionnaire``).

Resources are validated with the ``fhir.resources`` models of FHIR R4B (4.3.0), which read the R4 (4.0.1)
resources that notes use (DocumentReference, Composition, Binary, Patient, Encounter, PractitionerRole) unchanged.
"""
