"""The ``verify`` command: claim-level verification of summaries with the judge model, stored in the workspace and
written as one JSON line per summary."""
from __future__ import annotations

import sys

from engine.cli.common import (TARGET_HELP, add_command, add_import_opts, add_model_opts, add_summary_and_out,
                               dataset_and_ids, judge_settings, open_backend, print_jsonl, run_recorded, say)
from engine.data import SOURCE_EMBEDDED
from engine.llm import default_embedded_key, embedded_sha256
from engine.sample import SAMPLE_NAME, SAMPLE_VERIFY, VERIFY_METHODS, import_shipped_evidence


def cmd_verify(args) -> int:
    from engine.core import CACHED_COUNT, DONE
    from engine.data import JobRecord
    from engine.evidence.support.verification import DEFAULT_PARAMS, verification_job
    from engine.llm import BackendError

    if args.concurrency is not None:
        say("error: --concurrency applies to 'judge' only: verification asks one question at a time, each after "
            "the record it keeps evaluated", file=sys.stderr)
        return 2
    store, ds, name, ids = dataset_and_ids(args)
    if name == SAMPLE_NAME:  # the default judge's shipped verification of the sample, where current
        import_shipped_evidence(store, SAMPLE_VERIFY, VERIFY_METHODS)
    cfg = judge_settings(args)
    opened: dict = {}

    def backend():  # loaded only when some summary has no current stored verification
        if "backend" not in opened:
            opened["backend"] = open_backend(args, store)[0]
        return opened["backend"]

    try:
        if cfg.source == SOURCE_EMBEDDED:  # its sha256 is published: stored results are found without loading it
            model_id = embedded_sha256(cfg.embedded_model or default_embedded_key()) or ""
        else:  # a GGUF file (its sha256, computed on loading) or a server (its model name)
            opened["backend"], sha = open_backend(args, store)
            model_id = sha or opened["backend"].describe().get("model_file", "endpoint")
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    def verification():
        return verification_job(store, name, ds, ids, backend, model_id, DEFAULT_PARAMS)

    job = run_recorded(verification(), store, args.quiet)
    if isinstance(job, JobRecord):  # the same verification ran in another window or command and ended
        if job.state != DONE:
            say(f"that run ended {job.state}" + (f": {job.reason}" if job.reason else ""), file=sys.stderr)
            return 1
        job = run_recorded(verification(), store, True)  # what it stored, read now
    status = job.status() if not isinstance(job, JobRecord) else None
    if status is None or status.state != DONE:
        say(status.final_text() if status is not None else "the same verification is running again elsewhere",
            file=sys.stderr)
        return 1
    results = {r.summary_id: r for r in job.results}
    print_jsonl([results[sid].to_line() for sid in ids if sid in results], args.out)
    if not args.quiet:
        unsupported = sum(len(r.unsupported_claims) for r in results.values())
        uncertain = sum(c.verdict == "uncertain" for r in results.values() for s in r.sentences for c in s.claims)
        computed = len(results) - status.counts.get(CACHED_COUNT, 0)
        say(f"{len(results)} summaries ({computed} verified now, the rest stored): {unsupported} "
            f"unsupported claims, {uncertain} uncertain", file=sys.stderr)
    return 0


def register(sub) -> None:
    """Add ``verify`` to the top parser's subparsers ``sub``."""
    sp = add_command(sub, "verify", cmd_verify, "claim-level verification with the judge model: per summary sentence "
                                                "its claims, P(supported) and the passage checked; stored; one JSON "
                                                "line each", target=TARGET_HELP)
    add_summary_and_out(sp)
    add_model_opts(sp, "GGUF file (default: the configured model)",
                   "OpenAI-compatible server URL instead of in-process llama.cpp (it must give log-probabilities)")
    sp.add_argument("--quiet", action="store_true")
    add_import_opts(sp)
