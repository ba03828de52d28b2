"""The workspace's schema and the errors of a workspace that cannot be used.

* :data:`MIGRATIONS` (versioned, applied in order, one transaction each) and :data:`SCHEMA_VERSION`;
* :func:`inspect_workspace_file`: the version and tables of an existing file, opened read-only;
* :class:`StoreError` and its kinds (busy, read-only), and the busy timeout (``SUMCHECK_BUSY_TIMEOUT``).

It imports nothing of the engine: the store, backups and restores build on it.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


class StoreError(Exception):
    """A workspace operation that cannot be done; the message says why and what to do."""


class StoreBusy(StoreError):
    """Another process held the workspace's write lock for longer than the busy timeout. Retrying later works."""


class StoreReadOnly(StoreError):
    """The workspace can be read but not written (file or folder permissions, a read-only medium)."""


def path_problem(path: Path) -> Optional[str]:
    """Why ``path`` cannot be a workspace file ('' / None when it may be): a folder, a symlink loop, no permission."""
    import errno

    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{path} is a symbolic link that loops back on itself (a symlink loop); point to a real file"
        if exc.errno == errno.EACCES:
            return f"{path} cannot be reached: permission denied on one of its folders"
        return f"{path} cannot be opened: {exc.strerror or exc}"
    import stat as stat_

    if stat_.S_ISDIR(st.st_mode):
        return f"{path} is a folder; the workspace is a file (e.g. {path / 'workspace.sqlite'})"
    return None


def inspect_workspace_file(path: Path) -> tuple[int, set[str]]:
    """(schema version, table names) of an existing file, opened read-only: nothing is ever written to it. Raises
    StoreError naming the cause when it cannot be read or is not an SQLite database."""
    if not os.access(path, os.R_OK):
        raise StoreError(f"cannot read the workspace {path}: permission denied. Ask for read access or choose "
                         "another workspace in Settings (SUMCHECK_WORKSPACE).")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise StoreBusy(f"the workspace {path} is locked by another program; retry in a moment") from exc
        try:  # a WAL database in a folder we may not write: read it as immutable to inspect it
            con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
            try:
                version = con.execute("PRAGMA user_version").fetchone()[0]
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            finally:
                con.close()
        except sqlite3.DatabaseError as exc2:
            raise StoreError(f"{path} is not a workspace database ({exc2}). Point the workspace setting to a new "
                             "file or a valid workspace.") from exc2
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a workspace database ({exc}). Point the workspace setting to a new file "
                         "or a valid workspace.") from exc
    return version, tables


ENV_BUSY_TIMEOUT = "SUMCHECK_BUSY_TIMEOUT"
DEFAULT_BUSY_TIMEOUT = 30.0


def is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
        return True
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text or "locked" in text and "table" in text


def busy_timeout_from_env() -> float:
    """``SUMCHECK_BUSY_TIMEOUT`` in seconds (default 30); StoreError when it is not a non-negative number."""
    env = os.environ.get(ENV_BUSY_TIMEOUT)
    if env is None or not env.strip():
        return DEFAULT_BUSY_TIMEOUT
    try:
        value = float(env)
    except ValueError:
        value = float("nan")
    if not (0 <= value <= 86_400):
        raise StoreError(f"{ENV_BUSY_TIMEOUT}={env!r} is not a number of seconds; set it to e.g. 30, or unset it")
    return value


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "core tables: datasets, cases, notes, summaries, ratings", """
        CREATE TABLE datasets (
            dataset_id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            content_hash TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
        CREATE TABLE cases (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            case_id TEXT NOT NULL,
            target_specialty TEXT NOT NULL,
            PRIMARY KEY (dataset_id, case_id)
        );
        CREATE TABLE notes (
            dataset_id INTEGER NOT NULL,
            case_id TEXT NOT NULL,
            note_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            date TEXT, note_type TEXT, author_specialty TEXT,
            text TEXT NOT NULL,
            PRIMARY KEY (dataset_id, case_id, note_id),
            FOREIGN KEY (dataset_id, case_id) REFERENCES cases(dataset_id, case_id) ON DELETE CASCADE
        );
        CREATE TABLE summaries (
            dataset_id INTEGER NOT NULL,
            summary_id TEXT NOT NULL,
            case_id TEXT NOT NULL,
            text TEXT NOT NULL,
            generator_model TEXT, quality_group TEXT, prompt_variant TEXT,
            PRIMARY KEY (dataset_id, summary_id),
            FOREIGN KEY (dataset_id, case_id) REFERENCES cases(dataset_id, case_id) ON DELETE CASCADE
        );
        CREATE TABLE ratings (
            dataset_id INTEGER NOT NULL,
            summary_id TEXT NOT NULL,
            rater_id TEXT NOT NULL,
            rater_group TEXT NOT NULL DEFAULT 'unknown',
            item TEXT NOT NULL,
            value REAL,
            PRIMARY KEY (dataset_id, summary_id, rater_id, item),
            FOREIGN KEY (dataset_id, summary_id) REFERENCES summaries(dataset_id, summary_id) ON DELETE CASCADE
        );
    """),
    Migration(2, "import log (idempotent re-imports) and rating lookup index", """
        CREATE TABLE imports (
            import_id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            content_hash TEXT NOT NULL,
            files TEXT NOT NULL,
            counts TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            UNIQUE (dataset_id, content_hash)
        );
        INSERT INTO imports (dataset_id, content_hash, files, counts, imported_at)
            SELECT dataset_id, content_hash, json_array(source), '{}', created_at FROM datasets;
        CREATE INDEX ratings_by_rater ON ratings(dataset_id, rater_id);
    """),
)
MIGRATIONS += (
    Migration(3, "judge results (cache-keyed, with provenance) and model file hashes", """
        CREATE TABLE judge_results (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            cache_key TEXT NOT NULL,
            summary_id TEXT NOT NULL,
            status TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            model_file TEXT NOT NULL,
            created_at TEXT NOT NULL,
            result TEXT NOT NULL,
            PRIMARY KEY (dataset_id, cache_key)
        );
        CREATE INDEX judge_results_by_summary ON judge_results(dataset_id, summary_id, created_at);
        CREATE TABLE model_hashes (
            path TEXT NOT NULL, size INTEGER NOT NULL, mtime REAL NOT NULL, sha256 TEXT NOT NULL,
            PRIMARY KEY (path, size, mtime)
        );
    """),
)
MIGRATIONS += (
    Migration(4, "LLM step cache and evidence results (MED-OMIT)", """
        CREATE TABLE llm_steps (
            key TEXT PRIMARY KEY, step TEXT NOT NULL, model_id TEXT NOT NULL, created_at TEXT NOT NULL,
            value TEXT NOT NULL
        );
        CREATE TABLE evidence_results (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            method TEXT NOT NULL,
            cache_key TEXT NOT NULL,
            summary_id TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL,
            result TEXT NOT NULL,
            PRIMARY KEY (dataset_id, method, cache_key)
        );
        CREATE INDEX evidence_by_summary ON evidence_results(dataset_id, method, summary_id, created_at);
    """),
)
MIGRATIONS += (
    Migration(5, "clinician reviews with history", """
        CREATE TABLE reviews (
            review_id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            summary_id TEXT NOT NULL,
            reviewer TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('spot_check', 'adjudication')),
            item TEXT NOT NULL,
            value REAL,
            comment TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            superseded_by INTEGER REFERENCES reviews(review_id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
            FOREIGN KEY (dataset_id, summary_id) REFERENCES summaries(dataset_id, summary_id) ON DELETE CASCADE
        );
        CREATE INDEX reviews_by_summary ON reviews(dataset_id, summary_id, review_id);
        CREATE UNIQUE INDEX reviews_one_current ON reviews(dataset_id, summary_id, reviewer, kind, item)
            WHERE superseded_by IS NULL;
    """),
)
MIGRATIONS += (
    Migration(6, "embedding cache: token and sentence vectors per model and content hash", """
        CREATE TABLE embedding_cache (
            model TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('token', 'sentence')),
            sha256 TEXT NOT NULL,
            dim INTEGER NOT NULL,
            data BLOB NOT NULL,
            meta TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (model, kind, sha256)
        );
    """),
)
MIGRATIONS += (
    Migration(7, "clinician stigmatizing-language lexicon entries (added in Settings)", """
        CREATE TABLE stigma_entries (
            entry_id INTEGER PRIMARY KEY,
            term TEXT NOT NULL,
            category TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '',
            suggest TEXT,
            noun_only INTEGER NOT NULL DEFAULT 0 CHECK (noun_only IN (0, 1)),
            patient_only INTEGER NOT NULL DEFAULT 0 CHECK (patient_only IN (0, 1)),
            added_by TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
            deactivated_at TEXT
        );
        CREATE UNIQUE INDEX stigma_entries_one_active_term ON stigma_entries(lower(term)) WHERE active = 1;
    """),
)
MIGRATIONS += (
    Migration(8, "calibrations of the judge to the local raters, versioned per dataset and judge configuration", """
        CREATE TABLE calibrations (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            config_key TEXT NOT NULL,
            version INTEGER NOT NULL,
            kind TEXT NOT NULL,
            created_at TEXT NOT NULL,
            payload TEXT NOT NULL,
            PRIMARY KEY (dataset_id, config_key, version)
        );
    """),
)
MIGRATIONS += (
    Migration(9, "judge and evidence results per summary: identical content keeps a row under every summary id", """
        CREATE TABLE judge_results_v9 (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            cache_key TEXT NOT NULL,
            summary_id TEXT NOT NULL,
            status TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            model_file TEXT NOT NULL,
            created_at TEXT NOT NULL,
            result TEXT NOT NULL,
            PRIMARY KEY (dataset_id, cache_key, summary_id)
        );
        INSERT INTO judge_results_v9 SELECT * FROM judge_results;
        DROP TABLE judge_results;
        ALTER TABLE judge_results_v9 RENAME TO judge_results;
        CREATE INDEX judge_results_by_summary ON judge_results(dataset_id, summary_id, created_at);
        CREATE TABLE evidence_results_v9 (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            method TEXT NOT NULL,
            cache_key TEXT NOT NULL,
            summary_id TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL,
            result TEXT NOT NULL,
            PRIMARY KEY (dataset_id, method, cache_key, summary_id)
        );
        INSERT INTO evidence_results_v9 SELECT * FROM evidence_results;
        DROP TABLE evidence_results;
        ALTER TABLE evidence_results_v9 RENAME TO evidence_results;
        CREATE INDEX evidence_by_summary ON evidence_results(dataset_id, method, summary_id, created_at);
    """),
)
MIGRATIONS += (
    Migration(10, "reviewer assignments: which reviewer reviews which summary (blinded team review)", """
        CREATE TABLE assignments (
            dataset_id INTEGER NOT NULL REFERENCES datasets(dataset_id) ON DELETE CASCADE,
            summary_id TEXT NOT NULL,
            reviewer TEXT NOT NULL,
            stratum TEXT NOT NULL DEFAULT '',
            plan TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (dataset_id, summary_id, reviewer),
            FOREIGN KEY (dataset_id, summary_id) REFERENCES summaries(dataset_id, summary_id) ON DELETE CASCADE
        );
        CREATE INDEX assignments_by_reviewer ON assignments(dataset_id, reviewer);
    """),
)
MIGRATIONS += (
    Migration(11, "jobs: long work recorded while it runs, so every window and command sees it", """
        CREATE TABLE jobs (
            job_id TEXT PRIMARY KEY,
            dataset TEXT NOT NULL,
            kind TEXT NOT NULL,
            work_key TEXT NOT NULL,
            summary_ids TEXT NOT NULL,
            label TEXT NOT NULL,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            started_at TEXT NOT NULL,
            heartbeat REAL NOT NULL,
            state TEXT NOT NULL,
            progress TEXT NOT NULL,
            reason TEXT NOT NULL,
            cancel_requested INTEGER NOT NULL,
            ended_at TEXT NOT NULL
        );
        CREATE INDEX jobs_by_dataset ON jobs(dataset, state, started_at);
    """),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
