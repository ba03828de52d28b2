"""Types and plumbing every other package builds on: the data model (cases, notes, summaries, ratings), the PDSQI-9 rubric, citation forms, time stamps and content keys, escaping of untrusted text, background jobs with progress and cancel, and run plans.

Imports: nothing of the engine outside this package.
"""
from engine.core.batch import run_cached
from engine.core.dates import DATE_CONVENTION, parse_note_date
from engine.core.jobs import (CACHED_COUNT, CANCELLED, Cancelled, DONE, FAILED, Job, JobStatus, RUNNING,
                              check_cancelled, current_cancel_token, format_duration, is_cancelled, report_tokens,
                              run_in_foreground)
from engine.core.models import (ADJUDICATED_GROUP, ADJUDICATED_RATER, Case, Dataset, Note, RESERVED_RATER_GROUPS,
                                RESERVED_RATER_IDS, REVIEW_RATER_SUFFIX, Rating, SPOT_CHECK_GROUP, Summary,
                                reserved_rater_problem)
from engine.core.numbers import column_format, formatted_rows
from engine.core.processes import pid_alive
from engine.core.rubric import (ITEMS, ITEM_KEYS, Item, Scale, ValueError_, format_aggregate, format_share,
                                format_value, get_item, item_label, parse_value)
from engine.core.run_plan import DEFAULT_DECODE_WEIGHT, RECENT, expected_samples, measured_speeds, work_tokens
from engine.core.stamps import json_key, now_iso
from engine.core import citations, untrusted  # modules read as namespaces

__all__ = ["ADJUDICATED_GROUP", "ADJUDICATED_RATER", "CACHED_COUNT", "CANCELLED", "Cancelled", "Case",
           "DATE_CONVENTION", "DEFAULT_DECODE_WEIGHT", "DONE", "Dataset", "FAILED", "ITEMS", "ITEM_KEYS", "Item",
           "Job", "JobStatus", "Note", "RECENT", "RESERVED_RATER_GROUPS", "RESERVED_RATER_IDS", "REVIEW_RATER_SUFFIX",
           "RUNNING", "Rating", "SPOT_CHECK_GROUP", "Scale", "Summary", "ValueError_", "check_cancelled", "citations",
           "column_format", "current_cancel_token", "expected_samples", "format_aggregate", "format_duration",
           "format_share", "format_value", "formatted_rows", "get_item", "is_cancelled", "item_label", "json_key",
           "measured_speeds", "now_iso", "parse_note_date", "parse_value", "pid_alive", "report_tokens",
           "reserved_rater_problem", "run_cached", "run_in_foreground", "untrusted", "work_tokens"]
