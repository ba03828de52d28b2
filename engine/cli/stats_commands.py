"""Commands of the statistics: stats (one judge configuration's agreement analysis) and the committee report.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.cli.common import judge_token_counter, open_store, resolve_dataset, say
from engine.data.validation import DatasetInvalid


def cmd_stats(args) -> int:
    from engine.analysis.configured import UnknownConfiguration, analyse_configuration

    store = open_store(args)
    try:
        _, name = resolve_dataset(store, args.target, args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    count = judge_token_counter() if not args.words else (lambda t: len(t.split()))
    try:
        done = analyse_configuration(store, name, args.judge_config, n_boot=args.boot, seed=args.seed,
                                     count_tokens=count, spot_checks_in_reference=args.spot_checks_in_reference)
    except UnknownConfiguration as exc:
        say(str(exc), file=sys.stderr)
        return 1
    for c in done.chosen.configs:
        say(("* " if done.chosen.config and c.key == done.chosen.config.key else "  ") + c.label, file=sys.stderr)
    rep, llm = done.report, done.chosen.llm
    text = json.dumps(rep.to_dict(), indent=1)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        say(f"report written to {args.out} ({rep.n_summaries} summaries, LLM results for {len(llm)}, "
              f"{rep.seconds:.1f} s)")
    else:
        print(text)
    return 0


def cmd_report(args) -> int:
    from engine.analysis.report import ReportError, write

    from engine.sample import SAMPLE_NAME, ensure_sample

    store = open_store(args)
    if args.target == SAMPLE_NAME and args.target not in store.dataset_names():
        ensure_sample(store)  # "sample" always means the bundled synthetic dataset
    if args.target not in store.dataset_names():
        say(f"no dataset named {args.target!r} in the workspace; known: "
              f"{', '.join(store.dataset_names()) or 'none (import one first)'}", file=sys.stderr)
        return 1
    count = judge_token_counter() if not args.words else (lambda t: len(t.split()))
    try:
        data = write(store, args.target, Path(args.out), Path(args.pdf) if args.pdf else None, args.judge_config,
                     args.boot, count, args.spot_checks_in_reference)
    except ReportError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    cfg = data.config.label if data.config else "no LLM judge results"
    say(f"report written to {args.out}" + (f" and {args.pdf}" if args.pdf else "") + f" (judge: {cfg})")
    return 0
