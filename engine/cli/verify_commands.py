"""The ``verify`` command: claim-level verification of summaries with the judge model, stored in the workspace and
written as one JSON line per summary."""
from __future__ import annotations

import sys

from engine.cli.common import dataset_and_ids, judge_settings, open_backend, print_jsonl, say
from engine.data.settings import SOURCE_EMBEDDED
from engine.data.validation import DatasetInvalid
from engine.llm.modelfiles import default_embedded_key, embedded_sha256
from engine.sample import SAMPLE_NAME, SAMPLE_VERIFY, VERIFY_METHODS, import_shipped_evidence


def cmd_verify(args) -> int:
    from engine.evidence.support.verification.run import DEFAULT_PARAMS, compute_verification
    from engine.llm.backends import BackendError

    if args.concurrency is not None:
        say("error: --concurrency applies to 'judge' only: verification asks one question at a time, each after "
            "the record it keeps evaluated", file=sys.stderr)
        return 2
    try:
        store, ds, name, ids = dataset_and_ids(args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
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
    total = len(ids)

    def report(done=None, item=None, cached=False):
        if not args.quiet and item is not None and done is not None:
            say(f"[{done}/{total}] {item}{' (stored)' if cached else ''}", file=sys.stderr)

    try:
        batch = compute_verification(store, name, ds, ids, backend, model_id, DEFAULT_PARAMS, report)
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    print_jsonl([batch.results[sid].to_line() for sid in ids if sid in batch.results], args.out)
    if not args.quiet:
        unsupported = sum(len(r.unsupported_claims) for r in batch.results.values())
        uncertain = sum(c.verdict == "uncertain" for r in batch.results.values() for s in r.sentences
                        for c in s.claims)
        say(f"{len(batch.results)} summaries ({batch.computed} verified now, the rest stored): {unsupported} "
            f"unsupported claims, {uncertain} uncertain", file=sys.stderr)
    return 0

