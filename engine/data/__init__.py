"""Getting data in and keeping it: input formats and column mapping, validation, loading, the workspace store (schema and migrations, backups) on an SQLite file or a PostgreSQL server (the SQL adapter, a throw-away local server, copying a workspace between stores), settings, reviews, reviewer assignment, the REDCap export and rating tables.

Imports: engine.core, engine.llm.
"""
