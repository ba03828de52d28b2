"""What every command shares: printing, the workspace, load options, resolving a dataset argument (a name or a
path to import first), JSON-lines output, the judge's backend and concurrency, the token counter.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from engine.core.untrusted import term
from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions, RatingsMapping
from engine.data.settings import load_settings, workspace_path
from engine.data.store import Store, StoreError


def say(text: object = "", **kw) -> None:
    """Print one line made from data: every control character is shown as a visible escape (engine.core.untrusted.term),
    so a name, key, header or note cannot recolour, move or forge terminal output."""
    print(term(text), **kw)


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


def dataset_and_ids(args):
    """(store, dataset, name, summary ids) for commands over summaries; raises StoreError / DatasetInvalid."""
    store = open_store(args)
    ds, name = resolve_dataset(store, args.target, args)
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

    from engine.data.settings import ENV_API_KEY, SOURCE_GGUF, SOURCE_SERVER

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
    from engine.judge.source import open_judge_backend

    return open_judge_backend(judge_settings(args), store=store)


def concurrency_for(args, backend) -> int:
    """Requests in flight: ``--concurrency``, else the setting for a server; always 1 in process (one llama.cpp
    context)."""
    from engine.data.settings import MAX_CONCURRENCY

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
    from engine.llm.modelfiles import judge_token_counter

    count, what = judge_token_counter(load_settings().llama_model_path)
    if what != "judge-model tokens":
        say(f"warning: note length counted in {what}", file=sys.stderr)
    return count


def concurrency_arg(text: str) -> int:
    from engine.data.settings import MAX_CONCURRENCY

    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_CONCURRENCY}")
    return n


def run_recorded(job, store, quiet: bool = False):
    """Run a recorded job (:mod:`engine.data.job_records`) in the foreground, its progress on stderr, and return
    it ended; when the same work is already running in another window or command, follow that run to its end
    instead and return its :class:`~engine.data.job_records.JobRecord` (Ctrl-C stops following; it goes on)."""
    from engine.core.jobs import run_in_foreground
    from engine.data.job_records import default_owner, follow, start_or_join

    job.owner = default_owner()
    mine, other = start_or_join(job)
    if mine is None:
        say(f"the same work is already running: {other.describe()}", file=sys.stderr)
        say(f"following it (Ctrl-C stops following; `python -m engine status {other.dataset} --cancel "
            f"{other.job_id}` cancels it)", file=sys.stderr)
        return follow(store, other.job_id, quiet=quiet)
    run_in_foreground(mine, every_s=1e9 if quiet else 5.0)
    return mine
