"""Workspace backups: automatic before every destructive command, and on request; restore.

A backup is a complete copy of the workspace made with SQLite's online backup API (a consistent snapshot even while
other connections read or write), written to a temporary file in ``backups/`` beside the workspace and moved into
place only when complete, so an interrupted backup leaves no half file under a backup's name. Backups are pruned to
the newest :func:`keep_count` (``SUMCHECK_BACKUPS_KEEP``, default 20).

:func:`restore` first backs up the current workspace, checks that the file is a workspace this program can read
(opened read-only: a file that is not one is never modified), then copies it over the workspace with the backup API
in one transaction: an interrupted restore leaves the workspace as it was before.

A PostgreSQL workspace is backed up the same way into an SQLite file (:mod:`engine.data.workspace_copy`, verified
per table) under the user's data folder, ``postgresql/backups/``, named after the server address; restoring one
copies it back into the server in one transaction.
"""
from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from engine.data.schema import StoreError

ENV_KEEP = "SUMCHECK_BACKUPS_KEEP"
DEFAULT_KEEP = 20
SUFFIX = ".sqlite"


class BackupError(StoreError):
    """A backup or restore could not be done; the message says why."""


@dataclass(frozen=True)
class BackupInfo:
    path: str
    name: str
    created_at: str  # from the file name, UTC
    reason: str
    size_bytes: int


def keep_count() -> int:
    try:
        return max(1, int(os.environ.get(ENV_KEEP, DEFAULT_KEEP)))
    except ValueError:
        return DEFAULT_KEEP


def backups_dir(workspace: Path) -> Path:
    return Path(workspace).expanduser().parent / "backups"


def anchor(store) -> Path:
    """The path backups of ``store`` are named after: its file, or for a PostgreSQL workspace a name made from the
    server address in the user's data folder (the address itself carries no password)."""
    if store.pg is None:
        return store.path
    from platformdirs import user_data_dir

    return Path(user_data_dir("sumcheck")) / "postgresql" / f"{_slug(store.location.split('://', 1)[-1])}{SUFFIX}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "manual"


def backup(store, reason: str = "manual") -> Path:
    """Write a backup of ``store``'s workspace; returns its path."""
    where = anchor(store)
    folder = backups_dir(where)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    dest = folder / f"{where.stem}-{stamp}-{_slug(reason)}{SUFFIX}"
    tmp = folder / f".{dest.name}.{os.getpid()}.partial"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if store.pg is None:
            _copy(store.path, tmp, store.busy_timeout)
        else:
            _copy_from_server(store, tmp)
        os.replace(tmp, dest)
    except (OSError, sqlite3.Error) as exc:
        raise BackupError(f"could not write a backup of {store.location} to {folder}: {exc}. Nothing was changed; "
                          "free disk space or make the folder writable, then retry") from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            try:
                leftover.unlink(missing_ok=True)
            except OSError:
                pass
    prune(where)
    return dest


def _copy_from_server(store, dest: Path) -> None:
    from engine.data.workspace_copy import copy_workspace

    target = type(store)(dest)  # an SQLite workspace of the same Store class
    copy_workspace(store, target)
    with target.connect() as con:  # one self-contained file: fold the write-ahead log in
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("PRAGMA journal_mode = DELETE")


def list_backups(workspace: Path) -> list[BackupInfo]:
    """The workspace's backups, newest first."""
    folder = backups_dir(workspace)
    stem = Path(workspace).stem
    out = []
    try:
        files = [p for p in folder.iterdir() if p.name.startswith(stem + "-") and p.suffix == SUFFIX]
    except OSError:
        return []
    for p in files:
        m = re.match(re.escape(stem) + r"-(\d{8}T\d{12}Z)-(.*)" + re.escape(SUFFIX) + "$", p.name)
        if not m:
            continue
        when = datetime.strptime(m.group(1), "%Y%m%dT%H%M%S%fZ").replace(tzinfo=timezone.utc)
        try:
            size = p.stat().st_size
        except OSError:
            continue
        out.append(BackupInfo(str(p), p.name, when.isoformat(timespec="seconds"), m.group(2), size))
    return sorted(out, key=lambda b: b.name, reverse=True)


def prune(workspace: Path, keep: int = 0) -> int:
    """Remove all but the newest ``keep`` backups; returns how many were removed."""
    keep = keep or keep_count()
    n = 0
    for b in list_backups(workspace)[keep:]:
        try:
            Path(b.path).unlink()
            n += 1
        except OSError:
            pass
    return n


def check_workspace_file(path: Path) -> int:
    """The schema version of a workspace file, opened read-only (never modified); raises BackupError otherwise."""
    from engine.data.schema import SCHEMA_VERSION, inspect_workspace_file

    if not Path(path).is_file():
        raise BackupError(f"{path} is not a file")
    try:
        version, tables = inspect_workspace_file(Path(path))
    except StoreError as exc:
        raise BackupError(f"{path} is not a SumCheck workspace ({exc})") from exc
    if "datasets" not in tables or version < 1:
        raise BackupError(f"{path} is not a SumCheck workspace (no datasets table)")
    if version > SCHEMA_VERSION:
        raise BackupError(f"{path} has schema version {version}, newer than this program understands")
    return version


def _copy(src: Path, dst: Path, timeout: float) -> None:
    """Copy the database ``src`` (opened read-only) into ``dst`` with SQLite's online backup API."""
    s = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=timeout)
    try:
        d = sqlite3.connect(dst, timeout=timeout)
        try:
            s.backup(d)
        finally:
            d.close()
    finally:
        s.close()


def restore(store, path: Path) -> Path:
    """Replace the workspace's content with the backup at ``path`` (after backing up the current state, whose path
    is returned). The restored workspace is migrated to the current schema when it is older."""
    if store.read_only:
        raise store.read_only_error()
    check_workspace_file(Path(path))
    before = backup(store, "before-restore")
    try:
        if store.pg is None:
            _copy(Path(path), store.path, store.busy_timeout)
        else:
            import shutil
            import tempfile

            from engine.data.workspace_copy import copy_workspace

            with tempfile.TemporaryDirectory() as tmp:  # the backup itself is never opened for writing
                work = Path(tmp) / "restore.sqlite"
                shutil.copyfile(path, work)
                copy_workspace(type(store)(work), store, force=True)
    except sqlite3.Error as exc:
        raise BackupError(f"could not restore {path} into {store.location}: {exc}. The workspace is unchanged; the "
                          f"state before the attempt is also in {before}") from exc
    store.migrate()
    return before
