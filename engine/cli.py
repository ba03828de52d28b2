"""Command line over the same engine functions the UI calls: ``python -m engine COMMAND ...``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from .loading import LoadOptions, RatingsMapping, load_paths
from .settings import SettingsError, load_settings, workspace_path
from .store import Store, StoreError
from .validation import DatasetInvalid


def _store(args) -> Store:
    path = Path(args.workspace) if getattr(args, "workspace", None) else workspace_path()
    return Store(path)


def _options(args) -> LoadOptions:
    mapping = RatingsMapping.from_json(args.mapping) if getattr(args, "mapping", None) else None
    return LoadOptions(mapping=mapping, default_specialty=args.specialty, default_rater_group=args.rater_group)


def cmd_validate(args) -> int:
    try:
        _, report = load_paths(args.paths, _options(args))
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    print(report.format_text())
    return 0


def cmd_import(args) -> int:
    store = _store(args)
    context = store.load_dataset(args.into) if args.into else None
    try:
        ds, report = load_paths(args.paths, _options(args), context=context, name=args.name)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    res = store.import_dataset(ds, name=args.name, into=args.into, replace=args.replace,
                               files=tuple(str(p) for p in args.paths))
    print(report.format_text())
    if res.unchanged:
        print(f"dataset {res.dataset!r}: this content was imported before; nothing changed")
    else:
        verb = "created" if res.created else "added to"
        print(f"dataset {res.dataset!r} {verb}: " + ", ".join(f"{v} {k}" for k, v in res.counts.items())
              + f" (workspace {store.path})")
    return 0


def cmd_datasets(args) -> int:
    store = _store(args)
    infos = store.list_datasets()
    if args.json:
        print(json.dumps([i.__dict__ for i in infos], indent=2))
        return 0
    if not infos:
        print(f"no datasets in {store.path}; import one with 'python -m engine import PATH'")
    for i in infos:
        print(f"{i.name}\t{i.n_cases} cases\t{i.n_summaries} summaries\t{i.n_ratings} ratings "
              f"by {i.n_raters} raters\t{i.created_at}\t{i.source}")
    return 0


def cmd_delete(args) -> int:
    store = _store(args)
    if not args.yes:
        print(f"this deletes dataset {args.name!r} with all its ratings and results; add --yes to confirm")
        return 2
    store.delete_dataset(args.name)
    print(f"deleted dataset {args.name!r}")
    return 0


def cmd_sample(args) -> int:
    from .sample import ensure_sample

    store = _store(args)
    res = ensure_sample(store)
    print("sample dataset already in workspace" if res is None else
          f"sample dataset imported: {res.counts}")
    return 0


def cmd_model(args) -> int:
    from .modelfiles import ModelError, describe_model, resolve_model_path

    try:
        path = resolve_model_path(args.path or load_settings().model_path)
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    info = describe_model(path, with_hash=args.hash)
    print(json.dumps(info.__dict__, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine", description="Clinical summary checking workbench (CLI)")
    p.add_argument("--workspace", help="workspace SQLite file (default: SUMCHECK_WORKSPACE or the saved setting)")
    sub = p.add_subparsers(dest="command", required=True)

    def add_load_opts(sp):
        sp.add_argument("paths", nargs="+", help="files or folders (case JSON, bundle tables, ratings CSV, dialogue CSV)")
        sp.add_argument("--mapping", help="JSON column mapping for wide ratings CSVs")
        sp.add_argument("--specialty", default="Unspecified", help="target specialty for inputs without one")
        sp.add_argument("--rater-group", default="unknown", help="rater group for ratings without one")

    sp = sub.add_parser("validate", help="check input files; prints a report, exits 1 on any error")
    add_load_opts(sp)
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser("import", help="validate and import into the workspace (all-or-nothing)")
    add_load_opts(sp)
    sp.add_argument("--name", help="dataset name (default: the first path's name)")
    sp.add_argument("--into", help="add to this existing dataset (e.g. more ratings)")
    sp.add_argument("--replace", action="store_true", help="replace a dataset of the same name")
    sp.set_defaults(func=cmd_import)

    sp = sub.add_parser("datasets", help="list datasets in the workspace")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_datasets)

    sp = sub.add_parser("delete", help="delete a dataset")
    sp.add_argument("name")
    sp.add_argument("--yes", action="store_true", help="confirm")
    sp.set_defaults(func=cmd_delete)

    sp = sub.add_parser("sample", help="import the bundled sample dataset if missing")
    sp.set_defaults(func=cmd_sample)

    sp = sub.add_parser("model", help="locate (and assemble) the judge model; print its description")
    sp.add_argument("--path", help="a GGUF file (default: the configured model, else the embedded one)")
    sp.add_argument("--hash", action="store_true", help="also compute the file's sha256")
    sp.set_defaults(func=cmd_model)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (StoreError, SettingsError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
