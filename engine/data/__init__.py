"""Getting data in and keeping it: input formats and column mapping, validation, loading, the workspace store (schema and migrations, backups) on an SQLite file or a PostgreSQL server (the SQL adapter, a throw-away local server, copying a workspace between stores), settings, reviews, reviewer assignment, the REDCap export and rating tables.

Imports: engine.core, engine.llm.
"""
from engine.data.assignments import disagreements, plan_assignments, reviewer_queue, save_plan
from engine.data.files import UNREADABLE, json_lines, read_text_file, split_lines
from engine.data.job_log import (JobRecord, default_owner, follow, job_records, recorded, request_cancel, running_for,
                                 start_or_join)
from engine.data.loading import load_paths, sniff_header, sniff_wide_ratings
from engine.data.mapping import LoadOptions, RatingsMapping
from engine.data.pg import is_url
from engine.data.pg_server import PgServer
from engine.data.ratings import display_table, judge_cell, medians, reference_cell
from engine.data.redcap import export_redcap, rater_id
from engine.data.reviews import (ADJUDICATION, KIND_LABELS, REVIEW_KINDS, SPOT_CHECK, current_reviews,
                                 dataset_with_reviews, export_reviews_csv, has_reviewed, history_rows, review_history,
                                 reviews_as_ratings, save_review)
from engine.data.schema import StoreBusy, StoreError
from engine.data.settings import (AppSettings, ENV_API_KEY, ENV_HUB_ENDPOINT, ENV_WORKSPACE, MAX_CONCURRENCY,
                                  SOURCE_EMBEDDED, SOURCE_GGUF, SOURCE_LOCAL, SOURCE_SERVER, SettingsError,
                                  check_server_url, default_workspace_path, hub_endpoint, load_settings, save_settings,
                                  workspace_path)
from engine.data.store import DatasetInfo, ImportResult, Store
from engine.data.strict_json import json_type
from engine.data.validation import DatasetInvalid, Issue, ValidationReport
from engine.data.workspace_copy import copy_workspace
from engine.data import backups  # modules read as namespaces

__all__ = ["ADJUDICATION", "AppSettings", "DatasetInfo", "DatasetInvalid", "ENV_API_KEY", "ENV_HUB_ENDPOINT",
           "ENV_WORKSPACE", "ImportResult", "Issue", "JobRecord", "KIND_LABELS", "LoadOptions", "MAX_CONCURRENCY",
           "PgServer", "REVIEW_KINDS", "RatingsMapping", "SOURCE_EMBEDDED", "SOURCE_GGUF", "SOURCE_LOCAL",
           "SOURCE_SERVER", "SPOT_CHECK", "SettingsError", "Store", "StoreBusy", "StoreError", "UNREADABLE",
           "ValidationReport", "backups", "check_server_url", "copy_workspace", "current_reviews",
           "dataset_with_reviews", "default_owner", "default_workspace_path", "disagreements", "display_table",
           "export_redcap", "export_reviews_csv", "follow", "has_reviewed", "history_rows", "hub_endpoint", "is_url",
           "job_records", "json_lines", "json_type", "judge_cell", "load_paths", "load_settings", "medians",
           "plan_assignments", "rater_id", "read_text_file", "recorded", "reference_cell", "request_cancel",
           "review_history", "reviewer_queue", "reviews_as_ratings", "running_for", "save_plan", "save_review",
           "save_settings", "sniff_header", "sniff_wide_ratings", "split_lines", "start_or_join", "workspace_path"]
