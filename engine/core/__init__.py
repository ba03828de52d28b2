"""Types and plumbing every other package builds on: the data model (cases, notes, summaries, ratings), the PDSQI-9 rubric, citation forms, time stamps and content keys, escaping of untrusted text, background jobs with progress and cancel, and run plans.

Imports: nothing of the engine outside this package.
"""
