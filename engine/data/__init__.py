"""Getting data in and keeping it: input formats and column mapping, validation, loading, the workspace store (schema and migrations, backups), settings, reviews and rating tables.

Imports: engine.core, engine.llm.
"""
