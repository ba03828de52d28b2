"""Commands of the judge: judge, judge-export, judge-import, calibrate, export-training.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from engine.cli.common import (DATASET_HELP, add_command, add_import_opts, add_server_opts, add_summary_and_out,
                               concurrency_for, dataset_and_ids, open_backend, open_store, resolve_dataset, say)
from engine.data import DatasetInvalid


def cmd_calibrate(args) -> int:
    """Fit (and store) a calibration of the judge's expected scores to the dataset's raters."""
    from engine.judge import calibration
    from engine.core import untrusted

    store = open_store(args)
    ds, name = resolve_dataset(store, args.target, args)
    try:
        cal = calibration.fit_from_store(store, name, args.judge_config, args.kind, n_boot=args.boot,
                                         save=not args.dry_run)
    except calibration.CalibrationRefused as exc:
        say(f"calibration refused: {untrusted.term(str(exc))}", file=sys.stderr)
        return 1
    say(f"dataset {untrusted.term(name)} · judge configuration {cal.config_key} · {cal.kind} · {cal.label}"
          + ("" if args.dry_run else f" · stored as version {cal.version}"))
    print("leave-one-case-out: 'before' is the raw expected score, 'after' the cross-validated calibrated score "
          "(95 % CIs)" + ("; 'combination' the default combination with the evidence (no fitted parameter)"
                          if cal.kind == "judge+evidence" else ""))
    for r in calibration.table_rows(cal):
        if r["status"] != "fitted":
            say(f"  {r['item']:<15} refused: {untrusted.term(r['reason'])}")
            continue
        comb = f" (combination {r['Spearman combination']})" if cal.kind == "judge+evidence" else ""
        say(f"  {r['item']:<15} n={r['n']:<3} ICC {r['ICC before']} -> {r['ICC after']}; Spearman "
            f"{r['Spearman before']}{comb} -> {r['Spearman after']}; MAE {r['MAE before']} -> {r['MAE after']}; "
            f"ranking {r['ranking']}")
    return 0


def cmd_scores(args) -> int:
    """The scores triage and the report use, per summary and 1-5 item, beside the judge's expected score."""
    from engine.core import untrusted
    from engine.judge import used_scores

    store = open_store(args)
    ds, name = resolve_dataset(store, args.target, args)
    used = used_scores.for_dataset(store, name, args.judge_config, ds=ds)
    if used is None:
        say(f"dataset {untrusted.term(name)} has no judge results" + (f" of configuration {untrusted.term(args.judge_config)}"
                                                          if args.judge_config else "") + ": judge it first",
            file=sys.stderr)
        return 1
    ids = [s.summary_id for s in ds.summaries if s.summary_id in used.used]
    if args.summary:
        if args.summary not in used.used:
            say(f"summary {untrusted.term(args.summary)} has no scored result of configuration {used.config_key}",
                file=sys.stderr)
            return 1
        ids = [args.summary]
    if not args.json:
        say(f"dataset {untrusted.term(name)} · judge configuration {used.config_key} · {untrusted.term(used.source)}")
    for sid in ids:
        rows = used.breakdown(sid)
        if args.json:
            print(json.dumps({"summary_id": sid, "items": rows}))
            continue
        say(f"{sid}")
        for r in rows:
            judge, got = r["judge's expected score"], r["score used"]
            say(f"  {r['item']:<15} judge {judge:.2f} -> used " + ("—" if got is None else f"{got:.2f}")
                + f" ({r['which']})" + (f": {r['made of']}" if args.summary and r["made of"] else ""))
    return 0


def cmd_export_training(args) -> int:
    """Write TRL-style SFT or DPO JSON lines from the dataset's reference ratings (contains the notes: PHI)."""
    from engine.judge import results_for, stored_judge_results, training_export

    store = open_store(args)
    ds, name = resolve_dataset(store, args.target, args)
    results = {r.summary_id: r for r in results_for(stored_judge_results(store, name), args.judge_config)}
    say(f"warning: {training_export.PHI_WARNING}", file=sys.stderr)
    out = Path(args.out)
    summ = training_export.write(ds, args.format, out, args.train_fraction, results)
    say(f"{summ.rows} rows written to {out} ({args.format}): {summ.train} train ({len(summ.train_cases)} cases), "
          f"{summ.test} test ({len(summ.test_cases)} cases); {summ.skipped} summaries without a complete reference "
          "answer left out" + (f"; {summ.rejected_from_judge} rejected answers are the judge's own"
                              if args.format == "dpo" else ""))
    return 0


def cmd_judge(args) -> int:
    import time

    from engine.llm import BackendError
    from engine.judge import Judge, JudgeParams, run_batch
    from engine.data import medians

    store, ds, name, ids = dataset_and_ids(args)
    params = JudgeParams(n_samples=args.samples, shots=args.shots, explain=args.explain, seed=args.seed,
                         temperature=args.temperature, trim=args.trim, early_stop=not args.no_early_stop)
    params.validate()
    try:
        backend, sha = open_backend(args, store)
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    judge = Judge(backend, sha, params)
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    counts = {"scored": 0, "unscored": 0, "refused": 0, "cached": 0}
    dec_tok = dec_s = 0.0
    load_start = os.getloadavg()[0]  # a judge's seconds mean little when other work shared the cores
    t0 = time.perf_counter()

    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    def progress(p):
        if not args.quiet:
            say(f"[{p.done}/{p.total}] {p.summary_id}: {p.message} {p.sample}/{p.n_samples}", file=sys.stderr)

    try:
        for r in run_batch(judge, ds, ids, store=store, dataset_name=name, progress=progress,
                           concurrency=concurrency_for(args, backend)):
            counts[r.status] += 1
            counts["cached"] += int(r.from_cache)
            if not r.from_cache:
                dec_tok += r.timing.decode_tokens
                dec_s += r.timing.decode_seconds
            human = medians(x for x in ds.ratings_for(r.summary_id) if x.rater_group != "llm")
            emit({"summary_id": r.summary_id, "case_id": r.case_id, "status": r.status, "reason": r.reason,
                  "items": {k: {"median": v.median, "na": v.is_na, "spread": v.spread, "expected": v.expected,
                                "samples": v.values} for k, v in r.items.items()},
                  "human_median": human, "prompt_tokens": r.timing.prompt_tokens,
                  "decode_tokens": r.timing.decode_tokens, "prompt_tps": r.timing.prompt_tps,
                  "decode_tps": r.timing.decode_tps, "seconds": r.timing.total_seconds, "from_cache": r.from_cache,
                  "model_file": r.provenance.model_file, "model_sha256": r.provenance.model_sha256,
                  "prompt_version": r.provenance.prompt_version, "cache_key": r.cache_key})
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        elapsed = time.perf_counter() - t0
    n = sum(counts[k] for k in ("scored", "unscored", "refused"))
    emit({"summary": True, "dataset": name, "n": n, **counts, "seconds": round(elapsed, 2),
          "summaries_per_minute": round(60 * n / elapsed, 2) if elapsed > 0 else None,
          "decode_tokens_per_second": round(dec_tok / dec_s, 2) if dec_s else None,
          "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)], "cores": os.cpu_count()})
    if out:
        out.close()
    return 0


def cmd_judge_export(args) -> int:
    from engine.judge import export_results

    store = open_store(args)
    lines = export_results(store, args.dataset)
    Path(args.out).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    say(f"{len(lines)} judge results of dataset {args.dataset!r} written to {args.out}")
    return 0


def cmd_judge_import(args) -> int:
    from engine.judge import import_results_file

    store = open_store(args, write=True)
    try:
        res = import_results_file(store, args.dataset, args.file)
    except DatasetInvalid as exc:
        print(exc.report.format_text(), file=sys.stderr)
        return 1
    say(f"{res.imported} judge results imported into dataset {args.dataset!r}")
    return 0


def register(sub) -> None:
    """Add the judge's commands to the top parser's subparsers ``sub``, in their order in --help."""
    _register_judge(sub)
    _register_scores(sub)
    _register_results(sub)


def _register_judge(sub) -> None:
    sp = add_command(sub, "judge", cmd_judge, "grade summaries with the PDSQI-9 LLM judge; one JSON line per summary",
                     target="a dataset name in the workspace, or a path to import and judge")
    sp.add_argument("--model", help="GGUF file (default: the configured model, else the embedded one)")
    sp.add_argument("--endpoint", help="OpenAI-compatible server URL instead of in-process llama.cpp")
    sp.add_argument("--endpoint-model", help="model name to send to the endpoint")
    add_server_opts(sp)
    sp.add_argument("--samples", type=int, default=1,
                    help="samples per summary: 1 (default) is one greedy pass, which gives the expected scores; more "
                         "add a self-consistency median")
    sp.add_argument("--shots", type=int, default=0, choices=(0, 1, 3, 5), help="few-shot examples")
    sp.add_argument("--explain", action="store_true", help="ask for a one-sentence reason per item")
    sp.add_argument("--temperature", type=float, default=0.7)
    sp.add_argument("--seed", type=int, default=1234)
    sp.add_argument("--trim", action="store_true", help="drop the oldest notes when the prompt is too long")
    sp.add_argument("--no-early-stop", action="store_true",
                    help="take every sample even when the medians are already decided (same medians, slower)")
    sp.add_argument("--ctx", type=int, default=0, help="context size (default: the setting)")
    sp.add_argument("--threads", type=int, default=0)
    sp.add_argument("--gpu-layers", type=int, default=None)
    add_summary_and_out(sp, "judge only this summary id (repeatable)")
    sp.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_import_opts(sp)


def _register_scores(sub) -> None:
    sp = add_command(sub, "calibrate", cmd_calibrate, "calibrate the judge's expected scores to the dataset's raters "
                                                      "(stored, versioned per judge configuration)",
                     target="a dataset name in the workspace (e.g. sample)")
    sp.add_argument("--judge-config", help="judge configuration key (default: the one covering most summaries)")
    sp.add_argument("--kind", choices=("judge+evidence", "judge"), default="judge+evidence",
                    help="judge+evidence (default): the expected score with the stored evidence (coverage, support, "
                         "citations, stigma, length); judge: the expected score alone")
    sp.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for the CIs")
    sp.add_argument("--dry-run", action="store_true", help="print the figures without storing the calibration")

    sp = add_command(sub, "scores", cmd_scores, "the score triage and the report use per summary and 1-5 item "
                                                "(calibrated, combination or the judge's), beside the judge's "
                                                "expected score",
                     target="a dataset name in the workspace (e.g. sample)")
    sp.add_argument("--judge-config", help="judge configuration key (default: the one covering most summaries)")
    sp.add_argument("--summary", help="one summary, with what each combination is made of")
    sp.add_argument("--json", action="store_true", help="one JSON line per summary")


def _register_results(sub) -> None:
    sp = add_command(sub, "export-training", cmd_export_training, "training data for a local judge (TRL SFT or DPO "
                                                                  "JSON lines; contains the notes: PHI)",
                     target=DATASET_HELP)
    sp.add_argument("--format", choices=("sft", "dpo"), required=True)
    sp.add_argument("--out", required=True)
    sp.add_argument("--train-fraction", type=float, default=0.7, help="share of cases in the train split")
    sp.add_argument("--judge-config", help="dpo: the judge configuration whose disagreeing answers become 'rejected'")

    sp = add_command(sub, "judge-export", cmd_judge_export, "write a dataset's stored judge results (full provenance) "
                                                            "as JSON lines")
    sp.add_argument("dataset")
    sp.add_argument("--out", required=True)

    sp = add_command(sub, "judge-import", cmd_judge_import, "store judge results exported by judge-export into a "
                                                            "dataset")
    sp.add_argument("dataset")
    sp.add_argument("file")
