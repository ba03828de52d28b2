"""The ``check`` command: every kind of evidence for one summary (or every summary of a dataset) as one job —
uncovered regions and sentence support, the PDSQI-9 judge, claim verification, MED-OMIT — cheapest first, each
result printed with its seconds as soon as it is stored."""
from __future__ import annotations

import json
import sys

from engine.cli.common import (TARGET_HELP, add_command, add_import_opts, add_model_opts, dataset_and_ids,
                               judge_settings, open_backend, say)
from engine.data import SOURCE_EMBEDDED, load_settings
from engine.evidence.medomit import FACT_SOURCES
from engine.llm import default_embedded_key, embedded_sha256
from engine.sample import (MEDOMIT_METHODS, SAMPLE_MEDOMIT, SAMPLE_NAME, SAMPLE_VERIFY, VERIFY_METHODS,
                           import_shipped_evidence)


def cmd_check(args) -> int:
    from engine.analysis import CheckSetup, PARTS, check_job
    from engine.core import run_in_foreground, untrusted
    from engine.evidence import Embedder
    from engine.llm import BackendError

    store, ds, name, ids = dataset_and_ids(args)
    if name == SAMPLE_NAME:  # the shipped rows, where current, are found instead of computed
        import_shipped_evidence(store)
        import_shipped_evidence(store, SAMPLE_VERIFY, VERIFY_METHODS)
        import_shipped_evidence(store, SAMPLE_MEDOMIT, MEDOMIT_METHODS)
    cfg = judge_settings(args)
    opened: dict = {}
    try:
        if cfg.source == SOURCE_EMBEDDED:  # its sha256 is published: stored results are found without loading it
            sha = embedded_sha256(cfg.embedded_model or default_embedded_key()) or ""
        else:
            opened["backend"], sha = open_backend(args, store)
            sha = sha or opened["backend"].describe().get("model_file", "endpoint")
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1

    def backend():
        if "backend" not in opened:
            opened["backend"] = open_backend(args, store)[0]
        return opened["backend"]

    emb: dict = {}

    def embedder():
        if "e" not in emb:
            emb["e"] = Embedder(store=store)
        return emb["e"]

    parts = tuple(args.only or [p.key for p in PARTS])
    setup = CheckSetup(embedder, backend, sha, medomit_facts=args.facts or load_settings().medomit_facts,
                       parts=parts)
    out = open(args.out, "w", encoding="utf-8") if args.out else None

    def on_part(sid, i, pr):
        line = {"summary_id": sid, "part": pr.key, "status": pr.status, "seconds": pr.seconds,
                "head_tokens_read": pr.head_tokens, "head_tokens_loaded": pr.head_loaded,
                "prompt_tokens_read": pr.prompt_tokens, "result": pr.line}
        if out:
            out.write(json.dumps(line) + "\n")
            out.flush()
        print(f"{untrusted.term(sid)} · {pr.label}: {untrusted.term(pr.line)} [{pr.status}, {pr.seconds:.1f} s; record/summary tokens "
              f"read {pr.head_tokens:,}, loaded {pr.head_loaded:,}; prompt tokens read {pr.prompt_tokens:,}]",
              flush=True)

    job = check_job(store, name, ds, ids, setup, on_part)
    status = run_in_foreground(job, every_s=1e9 if args.quiet else 5.0)
    if out:
        out.close()
    for res in job.results:
        print(f"{untrusted.term(res.summary_id)}: checked in {res.seconds:.1f} s "
              f"({', '.join(f'{p.key} {p.seconds:.1f} s' for p in res.parts)})")
    if status.state != "done":
        say(f"check {status.state}: {status.error or 'stopped'}; every finished part is stored", file=sys.stderr)
        return 1
    return 1 if any(p.status == "failed" for r in job.results for p in r.parts) else 0


def register(sub) -> None:
    """Add ``check`` to the top parser's subparsers ``sub``."""
    sp = add_command(sub, "check", cmd_check, "every kind of evidence for a summary as one job (coverage and sentence "
                                              "support, the judge, claim verification, MED-OMIT), cheapest first; "
                                              "each result printed with its seconds as soon as it is stored",
                     target=TARGET_HELP)
    sp.add_argument("--summary", action="append", help="only this summary id (repeatable; default: every summary)")
    sp.add_argument("--only", action="append", choices=("coverage", "judge", "verification", "medomit"),
                    help="only this part (repeatable)")
    sp.add_argument("--facts", choices=("auto", *FACT_SOURCES), default=None,
                    help="MED-OMIT's fact source (default: the setting; auto: the notes' claims on a CPU)")
    sp.add_argument("--out", help="also write one JSON line per finished part to this file")
    add_model_opts(sp, "GGUF file (default: the configured model)",
                   "OpenAI-compatible server URL instead of in-process llama.cpp")
    sp.add_argument("--quiet", action="store_true", help="no progress lines")
    add_import_opts(sp)
