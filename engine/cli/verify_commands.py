"""The ``verify`` command: claim-level verification of summaries with the judge model, stored in the workspace and
written as one JSON line per summary."""
from __future__ import annotations

import sys

from engine.cli.common import dataset_and_ids, open_backend, print_jsonl, say
from engine.data.validation import DatasetInvalid


def cmd_verify(args) -> int:
    from engine.evidence.verification.run import DEFAULT_PARAMS, compute_verification
    from engine.llm.backends import BackendError

    try:
        store, ds, name, ids = dataset_and_ids(args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    from engine.sample import SAMPLE_NAME, SAMPLE_VERIFY, VERIFY_METHODS, import_shipped_evidence

    if name == SAMPLE_NAME:  # the default judge's shipped verification of the sample, where current
        import_shipped_evidence(store, SAMPLE_VERIFY, VERIFY_METHODS)
    opened: dict = {}

    def backend():
        return opened["backend"]

    try:
        opened["backend"], sha = open_backend(args, store)
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    model_id = sha or opened["backend"].describe().get("model_file", "endpoint")
    total = len(ids)

    def report(done=None, item=None, cached=False):
        if not args.quiet and item is not None and done is not None:
            say(f"[{done}/{total}] {item}{' (stored)' if cached else ''}", file=sys.stderr)

    batch = compute_verification(store, name, ds, ids, backend, model_id, DEFAULT_PARAMS, report)
    print_jsonl([batch.results[sid].to_line() for sid in ids if sid in batch.results], args.out)
    if not args.quiet:
        unsupported = sum(len(r.unsupported_claims) for r in batch.results.values())
        say(f"{len(batch.results)} summaries ({batch.computed} verified now, the rest stored): {unsupported} "
            "unsupported claims", file=sys.stderr)
    return 0
