"""Workspace backups: automatic before every destructive command, and on request; restore.

A backup is a complete copy of the workspace made with SQLite's online backup API (a consistent snapshot even while
other connections read or write), written to a temporary file in ``backups/`` beside the workspace and moved into
place only when complete, so an interrupted backup leaves no half file under a backup's name. Backups are pruned to
the newest :func:`keep_count` (``SUMCHECK_BACKUPS_KEEP``, default 20).

:func:`restore` first backs up the current workspace, checks that the file is a workspace this program can read
(opened read-only: a file that is not one is never modified), then copies it over the workspace with the backup API
in one transaction: an interrupted restore leaves the workspace as it was before.
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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "manual"


def backup(store, reason: str = "manual") -> Path:
    """Write a backup of ``store``'s workspace; returns its path."""
    folder = backups_dir(store.path)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    dest = folder / f"{store.path.stem}-{stamp}-{_slug(reason)}{SUFFIX}"
    tmp = folder / f".{dest.name}.{os.getpid()}.partial"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _copy(store.path, tmp, store.busy_timeout)
        os.replace(tmp, dest)
    except (OSError, sqlite3.Error) as exc:
        raise BackupError(f"could not write a backup of {store.path} to {folder}: {exc}. Nothing was changed; "
                          "free disk space or make the folder writable, then retry") from exc
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    prune(store.path)
    return dest


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
        _copy(Path(path), store.path, store.busy_timeout)
    except sqlite3.Error as exc:
        raise BackupError(f"could not restore {path} into {store.path}: {exc}. The workspace is unchanged; the "
                          f"state before the attempt is also in {before}") from exc
    store.migrate()
    return before
