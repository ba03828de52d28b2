"""SQLite workspace: datasets, cases, notes, summaries, ratings, judge runs, evidence, clinician reviews.

* One file, WAL mode, foreign keys on. The schema version is ``PRAGMA user_version``; :data:`MIGRATIONS`
  are applied in order inside a transaction each, so a workspace written by an older version is upgraded
  in place and one written by a newer version is refused with a clear message.
* Imports are all-or-nothing (one transaction) and idempotent: importing content whose hash was
  already imported into that dataset changes nothing.
* Another process writing to the same file: SQLite waits up to the busy timeout (constructor argument, else
  ``SUMCHECK_BUSY_TIMEOUT`` seconds, else 30 s), then :class:`StoreBusy` says the workspace is busy. Two
  programs opening a fresh workspace at once are safe: each migration re-reads the schema version inside its
  write transaction and skips what the other one applied.
"""
from __future__ import annotations

import gc
import json
import math
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from engine.core import Case, Dataset, Note, Rating, Summary, now_iso
from engine.data.pg import is_url
from engine.data.schema import (ENV_BUSY_TIMEOUT, MIGRATIONS, SCHEMA_VERSION, StoreBusy, StoreError, StoreReadOnly,
                                busy_timeout_from_env, inspect_workspace_file, is_busy, path_problem)
from engine.data._store_jobs import JobStore
from engine.data._store_lexicon import LexiconStore
from engine.data._store_results import ResultStore


@dataclass(frozen=True)
class DatasetInfo:
    dataset_id: int
    name: str
    source: str
    created_at: str
    n_cases: int
    n_summaries: int
    n_ratings: int
    n_raters: int


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    created: bool  # a new dataset was made
    unchanged: bool  # the same content had been imported before: nothing was written
    counts: dict[str, int]
    carried: tuple = ()  # replace: per kind of reviewer work, kept / re-attached / dropped (engine.data._carry_over)
    backup: Optional[str] = None  # replace: the automatic backup written first


class Store(ResultStore, LexiconStore, JobStore):
    """A workspace file. Safe to share between threads (each operation uses its own connection)."""

    def __init__(self, path: str | Path, migrate_to: Optional[int] = None, busy_timeout: Optional[float] = None):
        """``busy_timeout``: seconds to wait for another process's write lock before :class:`StoreBusy`
        (default: ``SUMCHECK_BUSY_TIMEOUT``, else 30)."""
        if busy_timeout is None:
            busy_timeout = busy_timeout_from_env()
        if not (isinstance(busy_timeout, (int, float)) and math.isfinite(busy_timeout) and busy_timeout >= 0):
            raise StoreError(f"busy timeout {busy_timeout!r} is not a non-negative number of seconds")
        self.busy_timeout = float(busy_timeout)
        self.read_only = False
        self.pg = None
        if is_url(path):  # a team's workspace on a PostgreSQL server (engine.data.pg)
            from engine.data.pg import PgWorkspace

            self.path = None
            self.pg = PgWorkspace(str(path), self.busy_timeout)
            self._lock = threading.Lock()
            self.migrate(migrate_to)
            return
        self.path = Path(path).expanduser()
        problem = path_problem(self.path)
        if problem:
            raise StoreError(problem)
        if self.path.exists() and self.path.stat().st_size > 0:
            # inspect before anything could write to it: a file that is not a workspace is never modified
            version, tables = inspect_workspace_file(self.path)
            if tables and "datasets" not in tables:
                raise StoreError(f"{self.path} is an SQLite database but not a SumCheck workspace (it has the tables "
                                 f"{', '.join(sorted(tables)[:8])}); it was not changed. Point the workspace setting "
                                 "to a new file or a valid workspace.")
            self._check_not_newer(version)
            if not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
                if version < SCHEMA_VERSION:
                    raise StoreReadOnly(f"the workspace {self.path} is read-only (permission denied) and was made by "
                                        f"an older version (schema {version} < {SCHEMA_VERSION}), so it cannot be "
                                        "upgraded; ask for write access or open a writable copy")
                self.read_only = True
                self._lock = threading.Lock()
                return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the workspace folder {self.path.parent}: {exc.strerror}. "
                             "Choose another workspace path in Settings or set SUMCHECK_WORKSPACE.") from exc
        if self.path.exists() and not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
            raise StoreReadOnly(f"the workspace {self.path} cannot be created or written here (permission denied); "
                                "choose a writable workspace in Settings or SUMCHECK_WORKSPACE")
        if not self.path.exists() and not os.access(self.path.parent, os.W_OK):
            raise StoreReadOnly(f"a workspace cannot be created in {self.path.parent} (permission denied); choose a "
                                "writable folder in Settings or SUMCHECK_WORKSPACE")
        self._lock = threading.Lock()
        self.migrate(migrate_to)

    @property
    def dialect(self) -> str:
        """``sqlite`` (one file) or ``postgresql`` (a server)."""
        return "postgresql" if self.pg is not None else "sqlite"

    @property
    def location(self) -> str:
        """The workspace as it may be shown: the file's path, or the server's address without any password."""
        return self.pg.display if self.pg is not None else str(self.path)

    def database_user(self) -> str:
        """The role the PostgreSQL server authenticated for this workspace ('' for an SQLite file)."""
        if self.pg is None:
            return ""
        with self.connect() as con:
            return str(con.execute("SELECT current_user").fetchone()[0])

    def close(self) -> None:
        """Close a PostgreSQL workspace's connections (an SQLite workspace holds none between operations)."""
        if self.pg is not None:
            self.pg.close()

    def _busy(self, exc: BaseException) -> StoreBusy:
        return StoreBusy(f"the workspace {self.location} is busy: another SumCheck process or program is writing to it. "
                         f"Wait a moment and retry. (Waited {self.busy_timeout:g} s; {ENV_BUSY_TIMEOUT} sets how "
                         f"long to wait.)")

    # -- connections -------------------------------------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection; any "database is locked"/"busy" error inside the block becomes :class:`StoreBusy`."""
        if self.pg is not None:
            try:
                with self.pg.connect() as con:
                    yield con
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    raise self._busy(exc) from exc
                raise
            return
        try:
            if self.read_only:
                con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=self.busy_timeout,
                                      isolation_level=None)
                try:
                    con.execute("PRAGMA user_version").fetchone()
                except sqlite3.OperationalError:  # WAL files cannot be made in a read-only folder
                    con.close()
                    con = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True, isolation_level=None)
            else:
                con = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise self._busy(exc) from exc
            raise StoreError(f"cannot open workspace {self.path}: {exc}. Check the path in Settings.") from exc
        try:
            try:
                con.execute("PRAGMA foreign_keys = ON")
                con.row_factory = sqlite3.Row
                yield con
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    raise self._busy(exc) from exc
                raise
        finally:
            con.close()

    def read_only_error(self) -> StoreReadOnly:
        import getpass

        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
        return StoreReadOnly(f"the workspace {self.path} is read-only for {user} (permission denied on the file or its "
                             "folder): it can be viewed but nothing can be imported, deleted, judged or saved. Ask for "
                             "write access, or choose a writable workspace in Settings (SUMCHECK_WORKSPACE).")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise self.read_only_error()
        with self._lock, self.connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the transaction was already rolled back (e.g. by SQLite itself); closing discards it
                raise
            else:
                con.execute("COMMIT")

    # -- schema ------------------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self.connect() as con:
            return con.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self, target: Optional[int] = None) -> list[int]:
        """Apply pending migrations up to ``target`` (default: latest). Returns the versions applied.

        Safe when several processes open a fresh workspace at once: the schema version is re-read inside each
        migration's write transaction and a migration another process applied meanwhile is skipped."""
        target = SCHEMA_VERSION if target is None else target
        applied = []
        with self._lock, self.connect() as con:
            try:
                if self.pg is None:
                    self._wal(con)
                current = con.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.DatabaseError as exc:
                if is_busy(exc):
                    raise self._busy(exc) from exc
                raise StoreError(f"{self.path} is not a workspace database ({exc}). "
                                 "Point the workspace setting to a new file or a valid workspace.") from exc
            self._check_not_newer(current)
            for m in MIGRATIONS:
                if not current < m.version <= target:
                    continue
                con.execute("BEGIN IMMEDIATE")
                try:
                    current = con.execute("PRAGMA user_version").fetchone()[0]
                    if current >= m.version:  # another process applied it while we waited for the lock
                        con.execute("COMMIT")
                        continue
                    for stmt in _statements(m.sql):
                        con.execute(stmt)
                    con.execute(f"PRAGMA user_version = {m.version}")
                except sqlite3.Error as exc:
                    try:
                        con.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    if is_busy(exc):
                        raise self._busy(exc) from exc
                    raise StoreError(f"migration {m.version} ({m.description}) failed: {exc}") from exc
                con.execute("COMMIT")
                current = m.version
                applied.append(m.version)
            self._check_not_newer(current)
        return applied

    def _check_not_newer(self, current: int) -> None:
        if current > SCHEMA_VERSION:
            raise StoreError(f"workspace {self.location} has schema version {current}, newer than this program "
                             f"understands ({SCHEMA_VERSION}). Update the program or use another workspace.")

    def _wal(self, con: sqlite3.Connection) -> None:
        """Switch to WAL. Under contention (another process switching it at the same moment) SQLite may answer
        "locked" at once without waiting, so retry until the busy timeout; a file already in WAL is left alone."""
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.005
        while True:
            try:
                if con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                    return
                con.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def journal_mode(self) -> str:
        with self.connect() as con:
            return con.execute("PRAGMA journal_mode").fetchone()[0]

    # -- datasets ----------------------------------------------------------------------------------
    def list_datasets(self) -> list[DatasetInfo]:
        with self.connect() as con:
            rows = con.execute("""
                SELECT d.dataset_id, d.name, d.source, d.created_at,
                  (SELECT COUNT(*) FROM cases c WHERE c.dataset_id = d.dataset_id),
                  (SELECT COUNT(*) FROM summaries s WHERE s.dataset_id = d.dataset_id),
                  (SELECT COUNT(*) FROM ratings r WHERE r.dataset_id = d.dataset_id),
                  (SELECT COUNT(DISTINCT rater_id) FROM ratings r WHERE r.dataset_id = d.dataset_id)
                FROM datasets d ORDER BY d.created_at, d.dataset_id""").fetchall()
        return [DatasetInfo(*r) for r in rows]

    def dataset_names(self) -> list[str]:
        return [d.name for d in self.list_datasets()]

    def dataset_id(self, con: sqlite3.Connection, name: str) -> int:
        """The id of the dataset called ``name``, read on the caller's connection ``con`` (from :meth:`connect` or
        :meth:`transaction`, SQLite or PostgreSQL). Raises :class:`StoreError` naming the known datasets when there is
        none by that name."""
        row = con.execute("SELECT dataset_id FROM datasets WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY name")]
            raise StoreError(f"no dataset named {name!r} in the workspace"
                             + (f"; known: {', '.join(known)}" if known else "; import one first"))
        return row[0]

    def import_dataset(self, ds: Dataset, name: Optional[str] = None, into: Optional[str] = None,
                       replace: bool = False, files: tuple[str, ...] = (), force: bool = False) -> ImportResult:
        """Write ``ds`` in one transaction.

        * ``into``: add the records to an existing dataset (e.g. more ratings); validation against that
          dataset must have been done by the loader (``context=``). ``replace`` with ``into`` is an error.
        * otherwise a new dataset ``name`` (default ``ds.name``). If a dataset of that name already holds
          exactly this content, nothing is written; if it holds other content, ``replace=True`` replaces it,
          else :class:`StoreError` is raised.
        * replacing keeps the reviewer's work whose summary content is unchanged (:mod:`engine.data._carry_over`) and
          refuses to drop any (naming the counts) unless ``force``; an automatic backup is written first
          (:mod:`engine.data.backups`).
        """
        if self.read_only:
            raise self.read_only_error()
        if replace and into is not None:
            raise StoreError("--replace cannot be combined with --into: 'into' adds records to a dataset, 'replace' "
                             "replaces a whole dataset; use one of them")
        h = ds.content_hash()
        counts = {"cases": len(ds.cases), "notes": sum(len(c.notes) for c in ds.cases),
                  "summaries": len(ds.summaries), "ratings": len(ds.ratings)}
        backup_path = None
        if replace and into is None and (name or ds.name) in self.dataset_names():
            from engine.data.backups import backup

            backup_path = str(backup(self, f"before-replace-{name or ds.name}"))
        with self.transaction() as con:
            if into is not None:
                did = self.dataset_id(con, into)
                if con.execute("SELECT 1 FROM imports WHERE dataset_id=? AND content_hash=?", (did, h)).fetchone():
                    return ImportResult(into, False, True, counts)
                self._insert(con, did, ds)
                con.execute("INSERT INTO imports (dataset_id, content_hash, files, counts, imported_at) "
                            "VALUES (?,?,?,?,?)", (did, h, json.dumps(files), json.dumps(counts), now_iso()))
                return ImportResult(into, False, False, counts)
            name = name or ds.name
            row = con.execute("SELECT dataset_id, content_hash FROM datasets WHERE name = ?", (name,)).fetchone()
            carry = None
            if row is not None:
                if row["content_hash"] == h and not replace:
                    return ImportResult(name, False, True, counts)
                if not replace:
                    raise StoreError(f"a dataset named {name!r} already exists with different content. "
                                     "Import under another name, or replace it (CLI --replace, or the "
                                     "'replace' box on the Data page).")
                from engine.data._carry_over import dataset_content_keys, plan

                carry = plan(con, row["dataset_id"], dataset_content_keys(ds))
                if carry.dropped_total and not force:
                    raise StoreError(f"replacing dataset {name!r} would drop {carry.dropped_text()} whose summaries "
                                     "are no longer in the new content (nothing was changed). Keep those summaries, "
                                     f"or confirm with --force (the Data page's 'drop them' box) to drop these "
                                     f"{carry.dropped_total}" + (f"; a backup was written to {backup_path}"
                                                                 if backup_path else ""))
                con.execute("DELETE FROM datasets WHERE dataset_id = ?", (row["dataset_id"],))
            cur = con.execute("INSERT INTO datasets (name, content_hash, source, created_at) VALUES (?,?,?,?)",
                              (name, h, ds.source or ", ".join(files), now_iso()))
            did = cur.lastrowid
            self._insert(con, did, ds)
            con.execute("INSERT INTO imports (dataset_id, content_hash, files, counts, imported_at) "
                        "VALUES (?,?,?,?,?)", (did, h, json.dumps(files), json.dumps(counts), now_iso()))
            if carry is not None:
                from engine.data._carry_over import apply

                apply(con, did, carry, {s.summary_id: s.case_id for s in ds.summaries})
                return ImportResult(name, False, False, counts, tuple(carry.counts.values()), backup_path)
            return ImportResult(name, True, False, counts)

    @staticmethod
    def _insert(con: sqlite3.Connection, did: int, ds: Dataset) -> None:
        was_enabled = gc.isenabled()
        gc.disable()  # the row lists below are large and acyclic: the cyclic collector's passes only cost time
        try:
            Store._insert_rows(con, did, ds)
        finally:
            if was_enabled:
                gc.enable()

    @staticmethod
    def _insert_rows(con: sqlite3.Connection, did: int, ds: Dataset) -> None:
        con.executemany("INSERT INTO cases VALUES (?,?,?)", [(did, c.case_id, c.target_specialty) for c in ds.cases])
        con.executemany("INSERT INTO notes VALUES (?,?,?,?,?,?,?,?)",
                        [(did, c.case_id, n.note_id, i, n.date, n.note_type, n.author_specialty, n.text)
                         for c in ds.cases for i, n in enumerate(c.notes)])
        con.executemany("INSERT INTO summaries VALUES (?,?,?,?,?,?,?)",
                        [(did, s.summary_id, s.case_id, s.text, s.generator_model, s.quality_group, s.prompt_variant)
                         for s in ds.summaries])
        con.executemany("INSERT INTO ratings VALUES (?,?,?,?,?,?)",
                        [(did, r.summary_id, r.rater_id, r.rater_group, r.item, r.value) for r in ds.ratings])

    def delete_dataset(self, name: str) -> str:
        """Delete a dataset with everything stored for it, after writing an automatic backup of the workspace
        (:mod:`engine.data.backups`); returns the backup's path."""
        if self.read_only:
            raise self.read_only_error()
        with self.connect() as con:
            self.dataset_id(con, name)  # an unknown name is refused before any backup is written
        from engine.data.backups import backup

        path = backup(self, f"before-delete-{name}")
        with self.transaction() as con:
            did = self.dataset_id(con, name)
            con.execute("DELETE FROM datasets WHERE dataset_id = ?", (did,))
        return str(path)

    def load_dataset(self, name: str) -> Dataset:
        with self.connect() as con:
            did = self.dataset_id(con, name)
            src = con.execute("SELECT source FROM datasets WHERE dataset_id=?", (did,)).fetchone()[0]
            notes: dict[str, list[Note]] = {}
            for r in con.execute("SELECT case_id, note_id, date, note_type, author_specialty, text FROM notes "
                                 "WHERE dataset_id=? ORDER BY case_id, position", (did,)):
                notes.setdefault(r[0], []).append(Note(r[1], r[5], r[2], r[3], r[4]))
            cases = [Case(r[0], r[1], tuple(notes.get(r[0], ())))
                     for r in con.execute("SELECT case_id, target_specialty FROM cases WHERE dataset_id=? "
                                          "ORDER BY case_id", (did,))]
            summaries = [Summary(*r) for r in con.execute(
                "SELECT summary_id, case_id, text, generator_model, quality_group, prompt_variant FROM summaries "
                "WHERE dataset_id=? ORDER BY case_id, summary_id", (did,))]
            ratings = [Rating(r[0], r[1], r[2], r[3], r[4]) for r in con.execute(
                "SELECT summary_id, rater_id, item, value, rater_group FROM ratings WHERE dataset_id=? "
                "ORDER BY summary_id, rater_id, item", (did,))]
        return Dataset(name=name, cases=cases, summaries=summaries, ratings=ratings, source=src)


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]
