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
from typing import Any, Callable, Iterator, Optional

from engine.core.models import Case, Dataset, Note, Rating, Summary
from engine.data.schema import (ENV_BUSY_TIMEOUT, MIGRATIONS, SCHEMA_VERSION, StoreBusy, StoreError, StoreReadOnly,
                                busy_timeout_from_env, inspect_workspace_file, is_busy, path_problem)
from engine.core.stamps import now_iso


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
    carried: tuple = ()  # replace: per kind of reviewer work, kept / re-attached / dropped (engine.data.carry_over)
    backup: Optional[str] = None  # replace: the automatic backup written first


class Store:
    """A workspace file. Safe to share between threads (each operation uses its own connection)."""

    def __init__(self, path: str | Path, migrate_to: Optional[int] = None, busy_timeout: Optional[float] = None):
        """``busy_timeout``: seconds to wait for another process's write lock before :class:`StoreBusy`
        (default: ``SUMCHECK_BUSY_TIMEOUT``, else 30)."""
        self.path = Path(path).expanduser()
        if busy_timeout is None:
            busy_timeout = busy_timeout_from_env()
        if not (isinstance(busy_timeout, (int, float)) and math.isfinite(busy_timeout) and busy_timeout >= 0):
            raise StoreError(f"busy timeout {busy_timeout!r} is not a non-negative number of seconds")
        self.busy_timeout = float(busy_timeout)
        self.read_only = False
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

    def _busy(self, exc: BaseException) -> StoreBusy:
        return StoreBusy(f"the workspace {self.path} is busy: another SumCheck process or program is writing to it. "
                         f"Wait a moment and retry. (Waited {self.busy_timeout:g} s; {ENV_BUSY_TIMEOUT} sets how "
                         f"long to wait.)")

    # -- connections -------------------------------------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection; any "database is locked"/"busy" error inside the block becomes :class:`StoreBusy`."""
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
            raise StoreError(f"workspace {self.path} has schema version {current}, newer than this program "
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

    def _dataset_id(self, con: sqlite3.Connection, name: str) -> int:
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
        * replacing keeps the reviewer's work whose summary content is unchanged (:mod:`engine.data.carry_over`) and
          refuses to drop any (naming the counts) unless ``force``; an automatic backup is written first
          (:mod:`engine.data.backup`).
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
            from engine.data.backup import backup

            backup_path = str(backup(self, f"before-replace-{name or ds.name}"))
        with self.transaction() as con:
            if into is not None:
                did = self._dataset_id(con, into)
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
                from engine.data import carry_over

                carry = carry_over.plan(con, row["dataset_id"], carry_over.dataset_content_keys(ds))
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
                from engine.data import carry_over

                carry_over.apply(con, did, carry, {s.summary_id: s.case_id for s in ds.summaries})
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
        (:mod:`engine.data.backup`); returns the backup's path."""
        if self.read_only:
            raise self.read_only_error()
        with self.connect() as con:
            self._dataset_id(con, name)  # an unknown name is refused before any backup is written
        from engine.data.backup import backup

        path = backup(self, f"before-delete-{name}")
        with self.transaction() as con:
            did = self._dataset_id(con, name)
            con.execute("DELETE FROM datasets WHERE dataset_id = ?", (did,))
        return str(path)

    def load_dataset(self, name: str) -> Dataset:
        with self.connect() as con:
            did = self._dataset_id(con, name)
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


    # -- judge results -----------------------------------------------------------------------------
    def get_judge_result(self, dataset: str, cache_key: str, summary_id: Optional[str] = None,
                         case_id: Optional[str] = None) -> Optional[str]:
        """The stored result with this cache key. With ``summary_id``: that summary's own row, else the row of a
        summary with identical content, relabelled with ``summary_id`` (and ``case_id``) and stored under it, so every
        summary keeps its own result (computed once)."""
        with self.connect() as con:
            did = self._dataset_id(con, dataset)
            row = con.execute("SELECT summary_id, result FROM judge_results WHERE dataset_id=? AND cache_key=? "
                              "ORDER BY summary_id = ? DESC, created_at DESC LIMIT 1",
                              (did, cache_key, summary_id)).fetchone()
        if row is None:
            return None
        if summary_id is None or row[0] == summary_id:
            return row[1]
        d = json.loads(row[1])
        d["summary_id"] = summary_id
        if case_id is not None:
            d["case_id"] = case_id
        text = json.dumps(d)
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO judge_results SELECT dataset_id, cache_key, ?, status, prompt_version, "
                        "model_file, created_at, ? FROM judge_results WHERE dataset_id=? AND cache_key=? AND "
                        "summary_id=?", (summary_id, text, did, cache_key, row[0]))
        return text

    def put_judge_result(self, dataset: str, result) -> None:
        """Store a :class:`engine.judge.runner.JudgeResult` (replacing one with the same cache key and summary id: summaries
        with identical content keep a row each)."""
        self.put_judge_results(dataset, [result])

    def put_judge_results(self, dataset: str, results) -> int:
        """Store several judge results in one transaction (all or nothing); returns how many."""
        rows = [(r.cache_key, r.summary_id, r.status, r.provenance.prompt_version, r.provenance.model_file,
                 r.created_at, r.to_json()) for r in results]
        with self.transaction() as con:
            did = self._dataset_id(con, dataset)
            con.executemany("INSERT OR REPLACE INTO judge_results VALUES (?,?,?,?,?,?,?,?)",
                            [(did, *row) for row in rows])
        return len(rows)

    def judge_results(self, dataset: str, latest_only: bool = True) -> list[str]:
        """Stored results (JSON), newest first; with ``latest_only`` one per summary."""
        with self.connect() as con:
            did = self._dataset_id(con, dataset)
            rows = con.execute("SELECT summary_id, result FROM judge_results WHERE dataset_id=? "
                               "ORDER BY created_at DESC, rowid DESC", (did,)).fetchall()
        out, seen = [], set()
        for sid, res in rows:
            if latest_only and sid in seen:
                continue
            seen.add(sid)
            out.append(res)
        return out

    # -- calibrations ---------------------------------------------------------------------------------
    def put_calibration(self, cal) -> int:
        """Store an :class:`engine.judge.calibration.Calibration` as the next version for its dataset and judge
        configuration; returns that version (1, 2, …)."""
        with self.transaction() as con:
            did = self._dataset_id(con, cal.dataset)
            row = con.execute("SELECT COALESCE(MAX(version), 0) FROM calibrations WHERE dataset_id=? AND "
                              "config_key=?", (did, cal.config_key)).fetchone()
            cal.version = int(row[0]) + 1
            con.execute("INSERT INTO calibrations VALUES (?,?,?,?,?,?)",
                        (did, cal.config_key, cal.version, cal.kind, cal.created_at, cal.to_json()))
        return cal.version

    def calibrations(self, dataset: str, config_key: Optional[str] = None) -> list[str]:
        """Stored calibrations (JSON) of a dataset, newest version first; only ``config_key``'s when given."""
        with self.connect() as con:
            did = self._dataset_id(con, dataset)
            sql = "SELECT payload FROM calibrations WHERE dataset_id=?"
            args: tuple = (did,)
            if config_key is not None:
                sql, args = sql + " AND config_key=?", (did, config_key)
            return [r[0] for r in con.execute(sql + " ORDER BY config_key, version DESC", args).fetchall()]

    def cached_model_hash(self, path: Path, compute) -> str:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime)
        with self.connect() as con:
            row = con.execute("SELECT sha256 FROM model_hashes WHERE path=? AND size=? AND mtime=?", key).fetchone()
        if row:
            return row[0]
        digest = compute(path)
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO model_hashes VALUES (?,?,?,?)", (*key, digest))
        return digest


    # -- LLM step cache and evidence results -------------------------------------------------------
    def get_llm_step(self, key: str) -> Optional[str]:
        with self.connect() as con:
            row = con.execute("SELECT value FROM llm_steps WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def put_llm_step(self, key: str, step: str, model_id: str, value: str) -> None:
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO llm_steps VALUES (?,?,?,?,?)", (key, step, model_id, now_iso(), value))

    def put_evidence(self, dataset: str, method: str, cache_key: str, summary_id: str, status: str,
                     result_json: str) -> None:
        with self.transaction() as con:
            did = self._dataset_id(con, dataset)
            con.execute("INSERT OR REPLACE INTO evidence_results VALUES (?,?,?,?,?,?,?)",
                        (did, method, cache_key, summary_id, status, now_iso(), result_json))

    def get_evidence(self, dataset: str, method: str, cache_key: str, summary_id: Optional[str] = None
                     ) -> Optional[str]:
        """The stored evidence with this cache key. With ``summary_id``: that summary's own row, else the row of a
        summary with identical content, relabelled and stored under ``summary_id`` (computed once, kept for each)."""
        with self.connect() as con:
            did = self._dataset_id(con, dataset)
            row = con.execute("SELECT summary_id, result FROM evidence_results WHERE dataset_id=? AND method=? AND "
                              "cache_key=? ORDER BY summary_id = ? DESC, created_at DESC LIMIT 1",
                              (did, method, cache_key, summary_id)).fetchone()
        if row is None:
            return None
        if summary_id is None or row[0] == summary_id:
            return row[1]
        try:
            d = json.loads(row[1])
        except ValueError:
            return row[1]
        if isinstance(d, dict) and "summary_id" in d:
            d["summary_id"] = summary_id
        text = json.dumps(d)
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO evidence_results SELECT dataset_id, method, cache_key, ?, status, "
                        "created_at, ? FROM evidence_results WHERE dataset_id=? AND method=? AND cache_key=? AND "
                        "summary_id=?", (summary_id, text, did, method, cache_key, row[0]))
        return text

    def evidence_results(self, dataset: str, method: str) -> dict[str, str]:
        """Latest stored result per summary for a method: summary id -> JSON."""
        with self.connect() as con:
            did = self._dataset_id(con, dataset)
            rows = con.execute("SELECT summary_id, result FROM evidence_results WHERE dataset_id=? AND method=? "
                               "ORDER BY created_at, rowid", (did, method)).fetchall()
        return {sid: res for sid, res in rows}

    # -- embedding cache -------------------------------------------------------------------------------
    # Vectors are little-endian float32 bytes (``dim`` per row; a token entry holds n x dim); ``meta`` is JSON
    # (token entries: spans, tokens, n_windows). ``model`` names the embedding model (and its cache format),
    # so another model never reads these vectors.
    def get_embeddings(self, model: str, kind: str, sha256s) -> dict[str, tuple[int, bytes, Optional[str]]]:
        """Stored entries among ``sha256s``: sha256 -> (dim, data, meta). Absent hashes are left out."""
        keys = list(dict.fromkeys(sha256s))
        out: dict[str, tuple[int, bytes, Optional[str]]] = {}
        if not keys:
            return out
        with self.connect() as con:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                rows = con.execute(f"SELECT sha256, dim, data, meta FROM embedding_cache WHERE model=? AND kind=? "
                                   f"AND sha256 IN ({','.join('?' * len(chunk))})", (model, kind, *chunk))
                for sha, dim, data, meta in rows:
                    out[sha] = (int(dim), bytes(data), meta)
        return out

    def get_embedding(self, model: str, kind: str, sha256: str) -> Optional[tuple[int, bytes, Optional[str]]]:
        return self.get_embeddings(model, kind, [sha256]).get(sha256)

    def put_embeddings(self, model: str, kind: str, rows) -> int:
        """Store (sha256, dim, data, meta) rows in one transaction (replacing equal keys); returns how many."""
        now = now_iso()
        rows = [(model, kind, sha, int(dim), data, meta, now) for sha, dim, data, meta in rows]
        if rows:
            with self.transaction() as con:
                con.executemany("INSERT OR REPLACE INTO embedding_cache VALUES (?,?,?,?,?,?,?)", rows)
        return len(rows)

    def put_embedding(self, model: str, kind: str, sha256: str, dim: int, data: bytes,
                      meta: Optional[str] = None) -> None:
        self.put_embeddings(model, kind, [(sha256, dim, data, meta)])

    def delete_embeddings(self, model: Optional[str] = None) -> int:
        """Drop cached embeddings (of one model, or all); returns how many entries."""
        with self.transaction() as con:
            cur = con.execute("DELETE FROM embedding_cache" + (" WHERE model=?" if model is not None else ""),
                              () if model is None else (model,))
        return cur.rowcount

    # -- clinician stigmatizing-language lexicon entries -----------------------------------------------
    # Entries a clinician adds in Settings, on top of engine/resources/stigma_lexicon.json. ``stigma_entries()`` gives
    # them in the dict shape engine.evidence.stigma.load_lexicon(extra_entries) accepts; every change changes the lexicon
    # version that stigma results carry. Deactivated entries are kept (with when) and no longer used.
    _STIGMA_COLS = "entry_id, term, category, source, suggest, noun_only, patient_only, added_by, created_at, " \
                   "active, deactivated_at"

    @staticmethod
    def _stigma_dict(row: sqlite3.Row, with_meta: bool) -> dict:
        d: dict = {"term": row["term"], "category": row["category"]}
        if row["source"]:
            d["source"] = row["source"]
        if row["suggest"]:
            d["suggest"] = row["suggest"]
        if row["noun_only"]:
            d["noun_only"] = True
        if row["patient_only"]:
            d["patient_only"] = True
        if with_meta:
            d.update(entry_id=row["entry_id"], added_by=row["added_by"], created_at=row["created_at"],
                     active=bool(row["active"]), deactivated_at=row["deactivated_at"])
        return d

    @staticmethod
    def _stigma_rows(con: sqlite3.Connection, active_only: bool) -> list[sqlite3.Row]:
        return con.execute(f"SELECT {Store._STIGMA_COLS} FROM stigma_entries"
                           + (" WHERE active = 1" if active_only else "") + " ORDER BY entry_id").fetchall()

    def stigma_entries(self, active_only: bool = True, with_meta: bool = False) -> list[dict]:
        """The clinician lexicon entries, oldest first, as dicts ``engine.evidence.stigma.load_lexicon`` accepts (term,
        category, and source / suggest / noun_only / patient_only where set). ``with_meta`` adds entry_id,
        added_by, created_at, active and deactivated_at (for showing them; not for load_lexicon)."""
        with self.connect() as con:
            return [self._stigma_dict(r, with_meta) for r in self._stigma_rows(con, active_only)]

    def add_stigma_entry(self, term: str, category: str, *, check: Callable[[list[dict], dict], Any],
                         suggest: Optional[str] = None, source: str = "", noun_only: bool = False,
                         patient_only: bool = False, added_by: str = "") -> dict:
        """Add an active clinician entry and return it (``with_meta`` shape). ``check(current, raw)`` is the
        lexicon owner's validation (:func:`engine.evidence.stigma.check_clinician_entry`): it gets the active entries and
        the new one (whitespace normalised; ``added_by`` included) inside the write transaction and returns the
        entry to store, or raises saying why it cannot be used. A term that became an active entry meanwhile is
        refused with :class:`StoreError`."""
        norm = lambda v: " ".join(str(v or "").split())  # noqa: E731
        raw = {"term": norm(term), "category": str(category or "").strip(), "source": norm(source),
               "suggest": norm(suggest) or None, "noun_only": bool(noun_only), "patient_only": bool(patient_only),
               "added_by": norm(added_by)}
        raw = {k: v for k, v in raw.items() if v not in (None, "", False) or k in ("term", "category")}
        with self.transaction() as con:
            current = [self._stigma_dict(r, False) for r in self._stigma_rows(con, True)]
            new = check(current, raw)
            try:
                cur = con.execute("INSERT INTO stigma_entries (term, category, source, suggest, noun_only, "
                                  "patient_only, added_by, created_at) VALUES (?,?,?,?,?,?,?,?)",
                                  (new.term, raw["category"], raw.get("source", ""), raw.get("suggest"),
                                   int(bool(noun_only)), int(bool(patient_only)), raw.get("added_by", ""),
                                   now_iso()))
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{raw['term']!r} is already an active clinician entry; it is not added twice") \
                    from exc
            row = con.execute(f"SELECT {self._STIGMA_COLS} FROM stigma_entries WHERE entry_id=?",
                              (cur.lastrowid,)).fetchone()
        return self._stigma_dict(row, True)

    def deactivate_stigma_entry(self, entry_id: int) -> dict:
        """Stop using a clinician entry (kept, marked inactive); returns it. StoreError when there is no active
        entry with that id."""
        with self.transaction() as con:
            row = con.execute(f"SELECT {self._STIGMA_COLS} FROM stigma_entries WHERE entry_id=?",
                              (entry_id,)).fetchone()
            if row is None or not row["active"]:
                active = [str(r[0]) for r in con.execute("SELECT entry_id FROM stigma_entries WHERE active=1 "
                                                         "ORDER BY entry_id")]
                raise StoreError(f"no active clinician lexicon entry #{entry_id}"
                                 + (" (it was already deactivated)" if row is not None else "")
                                 + (f"; active entries: {', '.join(active)}" if active else
                                    "; there are no active clinician entries"))
            con.execute("UPDATE stigma_entries SET active=0, deactivated_at=? WHERE entry_id=?", (now_iso(), entry_id))
            row = con.execute(f"SELECT {self._STIGMA_COLS} FROM stigma_entries WHERE entry_id=?",
                              (entry_id,)).fetchone()
        return self._stigma_dict(row, True)


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]
