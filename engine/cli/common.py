"""What every command shares: adding a command and its common options to the parser, printing, the workspace, load
options, resolving a dataset argument (a name or a path to import first), JSON-lines output, the judge's backend and
concurrency, the token counter.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from engine.core import untrusted
from engine.data import (DatasetInvalid, LoadOptions, RatingsMapping, Store, StoreError, load_paths, load_settings,
                         workspace_path)

TARGET_HELP = "a dataset name in the workspace, or a path to import first"
DATASET_HELP = "a dataset name in the workspace"
SUMMARY_HELP = "only this summary id (repeatable)"
OUT_HELP = "also write the JSON lines to this file"


def add_command(sub, name: str, func, help: str, target: Optional[str] = None) -> argparse.ArgumentParser:
    """Add command ``name`` (run as ``func(args)``) to ``sub``, the top parser's subparsers; with ``target``, its
    first argument is ``target`` (a dataset name, or a path to import first) with that help."""
    sp = sub.add_parser(name, help=help)
    sp.set_defaults(func=func)
    if target is not None:
        sp.add_argument("target", help=target)
    return sp


def add_load_opts(sp) -> None:
    """The input files and how to read them (validate, import)."""
    sp.add_argument("paths", nargs="+", help="files or folders (case JSON, bundle tables, ratings CSV, dialogue CSV, "
                                            "FHIR Bundle or Bulk Data NDJSON, MIMIC-IV-Note CSV)")
    sp.add_argument("--mapping", help="JSON column mapping for wide ratings CSVs")
    sp.add_argument("--specialty", default="Unspecified", help="target specialty for inputs without one")
    sp.add_argument("--rater-group", default="unknown", help="rater group for ratings without one")
    sp.add_argument("--summary-type", action="append", default=[], metavar="CODE",
                    help="FHIR: documents whose type or category has this code (or SYSTEM|CODE) are the "
                         "summaries of their case (repeatable)")
    sp.add_argument("--case-by", choices=("patient", "encounter"), default="patient",
                    help="FHIR: one case per patient (default) or per encounter")
    sp.add_argument("--hold-out-type", action="append", default=[], metavar="TYPE",
                    help="notes of this type (e.g. MIMIC 'DS') are kept out of the source notes and imported as "
                         "the case's reference summary (repeatable)")
    sp.add_argument("--summaries", metavar="FILE",
                    help="summaries keyed by case_id, hadm_id, encounter_id, patient_id or note_id")


def add_import_opts(sp) -> None:
    """For commands whose target may be a path imported first."""
    sp.add_argument("--mapping", help=argparse.SUPPRESS)
    sp.add_argument("--specialty", default="Unspecified", help="target specialty for inputs without one")
    sp.add_argument("--rater-group", default="unknown", help=argparse.SUPPRESS)


def add_server_opts(sp) -> None:
    """A model server's key and requests in flight."""
    sp.add_argument("--api-key", help="bearer token for the endpoint (default: SUMCHECK_API_KEY, or the saved "
                                      "key when the endpoint is the configured server)")
    sp.add_argument("--concurrency", type=concurrency_arg, default=None,
                    help="requests in flight to a server (1-32; default: the setting); in process always 1")


def add_model_opts(sp, model_help: str, endpoint_help: str) -> None:
    """The LLM steps' model: a GGUF file or a server, and its context and threads."""
    sp.add_argument("--model", help=model_help)
    sp.add_argument("--endpoint", help=endpoint_help)
    sp.add_argument("--endpoint-model", help="model name to send to the endpoint")
    add_server_opts(sp)
    sp.add_argument("--ctx", type=int, default=0)
    sp.add_argument("--threads", type=int, default=0)


def add_summary_and_out(sp, summary_help: str = SUMMARY_HELP) -> None:
    """``--summary`` (repeatable: only these summaries) and ``--out`` (a copy of the JSON lines)."""
    sp.add_argument("--summary", action="append", help=summary_help)
    sp.add_argument("--out", help=OUT_HELP)


class TargetInvalid(Exception):
    """The command's target was a path whose input does not validate: :func:`engine.cli.main` prints the report on
    stdout, where the command's output goes, and exits 1."""

    def __init__(self, report):
        super().__init__("the target's input does not validate")
        self.report = report


def say(text: object = "", **kw) -> None:
    """Print one line made from data: every control character is shown as a visible escape (engine.core.untrusted.term),
    so a name, key, header or note cannot recolour, move or forge terminal output."""
    print(untrusted.term(text), **kw)


def open_store(args, write: bool = False) -> Store:
    """The workspace; with ``write`` a read-only workspace is refused at once (before any input is read)."""
    store = Store(getattr(args, "workspace", None) or workspace_path())
    if write and store.read_only:
        raise store.read_only_error()
    return store


def load_options(args) -> LoadOptions:
    mapping = RatingsMapping.from_json(args.mapping) if getattr(args, "mapping", None) else None
    return LoadOptions(mapping=mapping, default_specialty=args.specialty, default_rater_group=args.rater_group,
                       summary_types=tuple(getattr(args, "summary_type", None) or ()),
                       case_by=getattr(args, "case_by", None) or "patient",
                       hold_out_types=tuple(getattr(args, "hold_out_type", None) or ()),
                       summaries_file=getattr(args, "summaries", None))


def resolve_dataset(store: Store, target: str, args):
    """A dataset name in the workspace, or a path that is validated and imported (idempotently) first."""
    from engine.sample import SAMPLE_NAME, ensure_sample

    if target == SAMPLE_NAME and target not in store.dataset_names():
        ensure_sample(store)  # "sample" always means the bundled synthetic dataset
    if target in store.dataset_names():
        return store.load_dataset(target), target
    if not Path(target).exists():
        raise StoreError(f"{target!r} is neither a dataset in the workspace ({', '.join(store.dataset_names()) or 'none'}) "
                         "nor an existing file or folder")
    ds, _ = load_paths([target], load_options(args))
    res = store.import_dataset(ds, files=(target,))
    if not res.unchanged:
        say(f"imported {target} as dataset {res.dataset!r}", file=sys.stderr)
    return store.load_dataset(res.dataset), res.dataset


def open_target(args):
    """(store, dataset, name) of ``args.target``: a dataset of the workspace, or a path validated and imported
    first; raises :class:`TargetInvalid` when that input does not validate, StoreError otherwise."""
    store = open_store(args)
    try:
        ds, name = resolve_dataset(store, args.target, args)
    except DatasetInvalid as exc:
        raise TargetInvalid(exc.report) from None
    return store, ds, name


def dataset_and_ids(args):
    """(store, dataset, name, summary ids) for commands over summaries (``--summary``, else every summary);
    raises :class:`TargetInvalid` or StoreError."""
    store, ds, name = open_target(args)
    ids = getattr(args, "summary", None) or [s.summary_id for s in ds.summaries]
    unknown = [i for i in ids if i not in {s.summary_id for s in ds.summaries}]
    if unknown:
        raise StoreError(f"unknown summary id(s) {', '.join(unknown)} in dataset {name!r}")
    return store, ds, name, ids


def judge_settings(args):
    """The saved settings with this command's overrides: ``--endpoint`` (+ ``--endpoint-model``, ``--api-key``)
    makes the judge a server, ``--model`` a GGUF file; ``--ctx``, ``--threads`` and ``--gpu-layers`` replace those
    settings. Without ``--endpoint`` or ``--model`` the configured source is used (as on the Judge page)."""
    import os
    from dataclasses import replace

    from engine.data import ENV_API_KEY, SOURCE_GGUF, SOURCE_SERVER

    cfg = load_settings()
    over = {}
    if getattr(args, "ctx", 0):
        over["n_ctx"] = args.ctx
    if getattr(args, "threads", 0):
        over["n_threads"] = args.threads
    if getattr(args, "gpu_layers", None) is not None:
        over["n_gpu_layers"] = args.gpu_layers
    key = getattr(args, "api_key", None) or os.environ.get(ENV_API_KEY) or ""
    if getattr(args, "endpoint", None):
        same = args.endpoint.rstrip("/") == (cfg.server_url or "").rstrip("/")
        over.update(judge_source=SOURCE_SERVER, server_url=args.endpoint,
                    server_model=args.endpoint_model or (cfg.server_model if same else ""),
                    server_api_key=key or (cfg.server_api_key if same else ""))
    elif getattr(args, "model", None):
        over.update(judge_source=SOURCE_GGUF, model_path=args.model)
    elif key:
        over["server_api_key"] = key
    return replace(cfg, **over)


def open_backend(args, store):
    from engine.judge import open_judge_backend

    return open_judge_backend(judge_settings(args), store=store)


def concurrency_for(args, backend) -> int:
    """Requests in flight: ``--concurrency``, else the setting for a server; always 1 in process (one llama.cpp
    context)."""
    from engine.data import MAX_CONCURRENCY

    if not backend.capabilities.concurrent:
        return 1
    n = args.concurrency or load_settings().concurrency
    return max(1, min(int(n), MAX_CONCURRENCY))


def print_jsonl(rows, out_path: Optional[str]) -> None:
    """Each row as one JSON line on stdout and, with ``out_path``, in that file too."""
    out = open(out_path, "w", encoding="utf-8") if out_path else None
    try:
        for row in rows:
            line = json.dumps(row)
            print(line)
            if out:
                out.write(line + "\n")
    finally:
        if out:
            out.close()


def judge_token_counter():
    """Note length in tokens of the judge model's tokenizer (words when it cannot be opened, with a warning)."""
    from engine.llm import judge_token_counter

    count, what = judge_token_counter(load_settings().llama_model_path)
    if what != "judge-model tokens":
        say(f"warning: note length counted in {what}", file=sys.stderr)
    return count


def concurrency_arg(text: str) -> int:
    from engine.data import MAX_CONCURRENCY

    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_CONCURRENCY}")
    return n


def run_recorded(job, store, quiet: bool = False):
    """Run a recorded job (:mod:`engine.data.job_log`) in the foreground, its progress on stderr, and return
    it ended; when the same work is already running in another window or command, follow that run to its end
    instead and return its :class:`~engine.data.job_log.JobRecord` (Ctrl-C stops following; it goes on)."""
    from engine.core import run_in_foreground
    from engine.data import default_owner, follow, start_or_join

    job.owner = default_owner()
    mine, other = start_or_join(job)
    if mine is None:
        say(f"the same work is already running: {other.describe()}", file=sys.stderr)
        say(f"following it (Ctrl-C stops following; `python -m engine status {other.dataset} --cancel "
            f"{other.job_id}` cancels it)", file=sys.stderr)
        return follow(store, other.job_id, quiet=quiet)
    run_in_foreground(mine, every_s=1e9 if quiet else 5.0)
    return mine
