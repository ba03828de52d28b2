"""Commands on where a dataset stands: stats (one judge configuration's agreement analysis), status (what is done,
the next steps, recorded runs to follow or cancel) and the committee report.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.cli.common import (DATASET_HELP, TARGET_HELP, add_command, add_import_opts, judge_token_counter,
                               open_store, open_target, say)


def cmd_stats(args) -> int:
    from engine.analysis import UnknownConfiguration, analyse_configuration

    store, _, name = open_target(args)
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
    from engine.analysis import report

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
        data = report.write(store, args.target, Path(args.out), Path(args.pdf) if args.pdf else None, args.judge_config,
                     args.boot, count, args.spot_checks_in_reference)
    except report.ReportError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    cfg = data.config.label if data.config else "no LLM judge results"
    say(f"report written to {args.out}" + (f" and {args.pdf}" if args.pdf else "") + f" (judge: {cfg})")
    return 0


def cmd_status(args) -> int:
    from engine.sample import SAMPLE_NAME, ensure_sample
    from engine.status import dataset_status, status_lines

    store = open_store(args)
    if args.target == SAMPLE_NAME and args.target not in store.dataset_names():
        ensure_sample(store)
    if args.target not in store.dataset_names():
        say(f"no dataset named {args.target!r} in the workspace; known: "
            f"{', '.join(store.dataset_names()) or 'none (import one first)'}", file=sys.stderr)
        return 1
    if args.follow or args.cancel:
        return _run_command(store, args)
    for line in status_lines(dataset_status(store, args.target)):
        say(line)
    return 0


def _run_command(store, args) -> int:
    """``status --follow ID`` / ``--cancel ID``: one recorded run of the dataset."""
    from engine.data import follow, job_records, request_cancel

    wanted = args.follow or args.cancel
    recs = [r for r in job_records(store, args.target, limit=200) if r.job_id == wanted]
    if not recs:
        say(f"no recorded run {wanted!r} of {args.target!r}; `python -m engine status {args.target}` lists them",
            file=sys.stderr)
        return 1
    if args.cancel:
        if not recs[0].running:
            say(f"run {wanted} is not running: {recs[0].describe()}")
            return 0
        request_cancel(store, wanted)
        say(f"asked run {wanted} to cancel ({recs[0].where()}); it stops within its current model call")
        if not args.follow:
            return 0
    rec = follow(store, wanted)
    return 0 if rec.state in ("done", "cancelled") else 1


def register(sub) -> None:
    """Add stats, status and report to the top parser's subparsers ``sub``, in their order in --help."""
    sp = add_command(sub, "stats", cmd_stats, "every agreement statistic (humans and LLM judge), per item and overall",
                     target=TARGET_HELP)
    sp.add_argument("--out", help="write the JSON report here (default: stdout)")
    sp.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--words", action="store_true", help="count note length in words, not judge tokens")
    sp.add_argument("--judge-config", help="the judge configuration (key) the LLM figures come from; default: the "
                                           "one covering the most summaries (results are never pooled)")
    sp.add_argument("--spot-checks-in-reference", action="store_true",
                    help="let the clinicians' spot checks enter the human median the LLM is compared with (the "
                         "panel statistics never include them)")
    add_import_opts(sp)

    sp = add_command(sub, "status", cmd_status, "where a dataset stands (judged, evidence, reviews) and the next steps",
                     target=DATASET_HELP)
    sp.add_argument("--follow", metavar="ID", help="print a recorded run's progress until it ends (Ctrl-C stops "
                    "following; the run goes on)")
    sp.add_argument("--cancel", metavar="ID", help="ask a recorded run to cancel (it stops within its current "
                    "model call, wherever it runs)")

    sp = add_command(sub, "report", cmd_report, "the committee report: a self-contained offline HTML file (and a PDF)",
                     target=DATASET_HELP)
    sp.add_argument("--out", required=True, help="the HTML file to write")
    sp.add_argument("--pdf", help="also print a PDF here (headless Chromium)")
    sp.add_argument("--judge-config", help="the judge configuration (key); default: the one covering most summaries")
    sp.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    sp.add_argument("--words", action="store_true", help="count note length in words, not judge tokens")
    sp.add_argument("--spot-checks-in-reference", action="store_true",
                    help="let the clinicians' spot checks enter the human reference (stated in the report)")
