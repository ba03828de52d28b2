"""The Data page: the workspace's datasets and backups, and the page's actions (validate, import, delete, back up,
restore) as single calls the page makes. Each action returns what the page reports; store errors propagate as
:class:`engine.data.store.StoreError` for the page's one error message."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from engine.core import Dataset, ITEMS
from engine.data import (DatasetInvalid, ImportResult, LoadOptions, RatingsMapping, StoreError, ValidationReport,
                         backups as backup_mod, load_paths, sniff_header, sniff_wide_ratings)

__all__ = ["ACTIONS", "DataPageView", "DatasetInvalid", "ITEMS", "InputColumns", "LoadOptions", "RatingsMapping",
           "StoreError", "ValidationReport", "back_up", "data_page_view", "delete", "import_validated",
           "input_columns", "restore", "validate"]

ACTIONS = ("back_up", "delete", "import_validated", "input_columns", "restore", "validate")


@dataclass(frozen=True)
class DataPageView:
    """What the Data page lists: dataset names (for "add to existing"), one row per dataset, one per backup."""

    dataset_names: list[str]
    dataset_rows: list[dict]
    backup_rows: list[dict]
    backups: list  # engine.data.backups.BackupInfo, newest first (the restore picker)


def data_page_view(store) -> DataPageView:
    infos = store.list_datasets()
    backups = backup_mod.list_backups(backup_mod.anchor(store))
    return DataPageView(
        dataset_names=[d.name for d in infos],
        dataset_rows=[{"name": d.name, "cases": d.n_cases, "summaries": d.n_summaries, "ratings": d.n_ratings,
                       "raters": d.n_raters, "imported": d.created_at, "source": d.source} for d in infos],
        backup_rows=[{"written (UTC)": b.created_at, "reason": b.reason, "MB": round(b.size_bytes / 1e6, 2),
                      "file": b.path} for b in backups],
        backups=backups)


def validate(store, paths: Sequence[str], options: LoadOptions, into: Optional[str] = None,
             name: Optional[str] = None) -> tuple[Dataset, ValidationReport]:
    """Read and validate ``paths`` (added to the stored dataset ``into`` when given). Raises
    :class:`engine.data.validation.DatasetInvalid` with the report when the input cannot be imported."""
    context = store.load_dataset(into) if into else None
    return load_paths(list(paths), options, context=context, name=name or None)


def import_validated(store, ds: Dataset, paths: Sequence[str], name: Optional[str] = None,
                     into: Optional[str] = None, replace: bool = False, force: bool = False) -> ImportResult:
    """Store a validated dataset in one transaction (see :meth:`engine.data.store.Store.import_dataset`)."""
    return store.import_dataset(ds, name=name or None, into=into, replace=replace,
                                files=tuple(Path(p).name for p in paths), force=bool(force))


def delete(store, name: str) -> str:
    """Delete a dataset after a backup of the workspace; returns the backup's path."""
    return store.delete_dataset(name)


def back_up(store) -> Path:
    return backup_mod.backup(store, "manual")


def restore(store, path) -> Path:
    """Replace the workspace with a backup (the state before is backed up first; its path is returned)."""
    return backup_mod.restore(store, path)


@dataclass(frozen=True)
class InputColumns:
    """The columns of the files about to be imported: ``wide``, the first wide ratings export as (path, header,
    guessed mapping), None when there is none; ``others``: the columns of the other tables, sorted."""

    wide: Optional[tuple[str, list[str], RatingsMapping]]
    others: list[str]


def input_columns(paths: Sequence[str]) -> InputColumns:
    """Read the headers of ``paths`` (a wide ratings CSV with a guessed column mapping; the other tables' columns)."""
    wide = [(p, w) for p in paths if (w := sniff_wide_ratings(p)) is not None]
    wide_paths = {p for p, _ in wide}
    others = sorted({h for p in paths if p not in wide_paths for h in (sniff_header(p) or [])})
    first = (wide[0][0], list(wide[0][1][0]), wide[0][1][1]) if wide else None
    return InputColumns(first, others)
