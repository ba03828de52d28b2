"""Command line over the same engine functions the UI calls: ``python -m engine COMMAND ...``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from engine.evidence.coverage import DEFAULT_METHOD as DEFAULT_COVERAGE_METHOD
from engine.evidence.coverage import METHODS as COVERAGE_METHODS
from engine.data.mapping import LoadOptions, RatingsMapping
from engine.data.loading import load_paths
from engine.data.settings import SettingsError, load_settings, workspace_path
from engine.data.store import Store, StoreBusy, StoreError
from engine.core.untrusted import term
from engine.data.validation import DatasetInvalid


def say(text: object = "", **kw) -> None:
    """Print one line made from data: every control character is shown as a visible escape (engine.core.untrusted.term),
    so a name, key, header or note cannot recolour, move or forge terminal output."""
    print(term(text), **kw)


def _store(args, write: bool = False) -> Store:
    """The workspace; with ``write`` a read-only workspace is refused at once (before any input is read)."""
    path = Path(args.workspace) if getattr(args, "workspace", None) else workspace_path()
    store = Store(path)
    if write and store.read_only:
        raise store.read_only_error()
    return store


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
    store = _store(args, write=True)
    if args.replace and args.into:
        print("error: --replace cannot be combined with --into ('into' adds records to a dataset, 'replace' replaces "
              "a whole dataset); use one of them", file=sys.stderr)
        return 1
    context = store.load_dataset(args.into) if args.into else None
    try:
        ds, report = load_paths(args.paths, _options(args), context=context, name=args.name)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    res = store.import_dataset(ds, name=args.name, into=args.into, replace=args.replace,
                               files=tuple(str(p) for p in args.paths), force=args.force)
    print(report.format_text())
    if res.unchanged:
        say((f"dataset {res.dataset!r}: this content was imported before; nothing changed"))
        return 0
    verb = "created" if res.created else "replaced" if res.carried else "added to"
    say((f"dataset {res.dataset!r} {verb}: " + ", ".join(f"{v} {k}" for k, v in res.counts.items())
               + f" (workspace {store.path})"))
    for c in res.carried:
        say((f"  {c.text()}"))
    if res.backup:
        say((f"  backup of the workspace before the replace: {res.backup}"))
    return 0


def cmd_datasets(args) -> int:
    store = _store(args)
    infos = store.list_datasets()
    if args.json:
        print(json.dumps([i.__dict__ for i in infos], indent=2))
        return 0
    if not infos:
        say((f"no datasets in {store.path}; import one with 'python -m engine import PATH'"))
    for i in infos:
        print("\t".join(term(x) for x in (i.name, f"{i.n_cases} cases", f"{i.n_summaries} summaries",
                                           f"{i.n_ratings} ratings by {i.n_raters} raters", i.created_at, i.source)))
    return 0


def cmd_delete(args) -> int:
    store = _store(args, write=True)
    if not args.yes:
        say((f"this deletes dataset {args.name!r} with all its ratings, reviews and results (a backup of the "
                   "workspace is written first); add --yes to confirm"))
        return 2
    path = store.delete_dataset(args.name)
    say((f"deleted dataset {args.name!r}; backup of the workspace before the delete: {path}"))
    return 0


def cmd_backup(args) -> int:
    from engine.data.backup import backup

    store = _store(args)
    say((str(backup(store, args.reason))))
    return 0


def cmd_backups(args) -> int:
    from engine.data.backup import list_backups

    store = _store(args)
    infos = list_backups(store.path)
    if args.json:
        print(json.dumps([i.__dict__ for i in infos], indent=2))
        return 0
    if not infos:
        say((f"no backups of {store.path} yet"))
    for b in infos:
        print("\t".join(term(x) for x in (b.created_at, b.reason, f"{b.size_bytes / 1e6:.1f} MB", b.path)))
    return 0


def cmd_restore(args) -> int:
    from engine.data.backup import restore

    store = _store(args, write=True)
    if not args.yes:
        say((f"this replaces everything in the workspace {store.path} with {args.path} (the current state is "
                   "backed up first); add --yes to confirm"))
        return 2
    before = restore(store, Path(args.path))
    say((f"restored {args.path} into {store.path}; the state before the restore is in {before}"))
    return 0


def cmd_sample(args) -> int:
    from engine.sample import ensure_sample

    store = _store(args, write=True)
    res = ensure_sample(store)
    say("sample dataset already in workspace" if res is None else f"sample dataset imported: {res.counts}")
    if args.precompute:
        from engine.evidence.embeddings import Embedder
        from engine.evidence.batch import evidence_job
        from engine.core.jobs import run_in_foreground
        from engine.sample import SAMPLE_NAME, export_evidence, import_shipped_evidence

        ds = store.load_dataset(SAMPLE_NAME)
        import_shipped_evidence(store)  # precomputed with the sample: only stale or missing summaries are computed
        loaded: list = []

        def emb():  # the embedding model is loaded only if some summary has no current stored result
            if not loaded:
                print("loading the embedding model to compute evidence the shipped file does not cover …",
                      file=sys.stderr, flush=True)
                loaded.append(Embedder(store=store))
            return loaded[0]

        st = run_in_foreground(evidence_job(store, SAMPLE_NAME, ds, [s.summary_id for s in ds.summaries], emb))
        if st.state != "done":
            say(f"error: {st.final_text()}", file=sys.stderr)
            return 1
        say(f"coverage and sentence support ready for {st.total} sample summaries: "
              f"{st.counts.get('from the workspace', 0)} already stored (shipped in "
              f"sample_data/evidence_results.jsonl or computed before), {st.counts.get('new', 0)} computed now "
              f"({st.elapsed_s:.1f} s)")
        if args.export_evidence:
            n = export_evidence(store, Path(args.export_evidence))
            say(f"{n} evidence results written to {args.export_evidence}")
    return 0


def cmd_model(args) -> int:
    """Assemble the embedded models (the 1.5B judge when its packages are installed, and the smoke-test model) and
    describe the configured one."""
    from engine.llm.modelfiles import EMBEDDED, ModelError, describe_model, embedded_model_path, resolve_model_path

    cfg = load_settings()
    if not args.path:
        keys = [args.which] if args.which else list(EMBEDDED)
        for key in keys:
            m = EMBEDDED[key]
            try:
                path = embedded_model_path(key, rebuild=args.rebuild)
            except ModelError as exc:
                if args.which or not m.smoke_test and key != cfg.embedded_model and cfg.embedded_model:
                    say(f"error: {exc}", file=sys.stderr)
                    return 1
                say(f"{m.short_label}: not available ({exc})", file=sys.stderr)
                continue
            say(f"{m.short_label}: {path}", file=sys.stderr)
    try:
        path = resolve_model_path(args.path or ("" if args.which else cfg.llama_model_path),
                                  "" if args.path else (args.which or cfg.embedded_model))
    except ModelError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    info = describe_model(path, with_hash=args.hash)
    print(json.dumps(info.__dict__, indent=2))
    return 0


def cmd_calibrate(args) -> int:
    """Fit (and store) a calibration of the judge's expected scores to the dataset's raters."""
    from engine.judge.calibration import CalibrationRefused, fit_from_store, table_rows
    from engine.core.untrusted import term

    store = _store(args)
    ds, name = _resolve_dataset(store, args.target, args)
    try:
        cal = fit_from_store(store, name, args.judge_config, args.kind, n_boot=args.boot, save=not args.dry_run)
    except CalibrationRefused as exc:
        say(f"calibration refused: {term(str(exc))}", file=sys.stderr)
        return 1
    say(f"dataset {term(name)} · judge configuration {cal.config_key} · {cal.kind} · {cal.label}"
          + ("" if args.dry_run else f" · stored as version {cal.version}"))
    print("leave-one-case-out: 'before' is the raw expected score, 'after' the cross-validated calibrated score "
          "(95 % CIs)")
    for r in table_rows(cal):
        if r["status"] != "fitted":
            say(f"  {r['item']:<15} refused: {term(r['reason'])}")
            continue
        say(f"  {r['item']:<15} n={r['n']:<3} ICC {r['ICC before']} -> {r['ICC after']}; Spearman "
              f"{r['Spearman before']} -> {r['Spearman after']}; MAE {r['MAE before']} -> {r['MAE after']}")
    return 0


def cmd_export_training(args) -> int:
    """Write TRL-style SFT or DPO JSON lines from the dataset's reference ratings (contains the notes: PHI)."""
    from engine.judge.stored import stored_judge_results
    from engine.judge.configs import results_for
    from engine.judge.training_export import PHI_WARNING, write

    store = _store(args)
    ds, name = _resolve_dataset(store, args.target, args)
    results = {r.summary_id: r for r in results_for(stored_judge_results(store, name), args.judge_config)}
    say(f"warning: {PHI_WARNING}", file=sys.stderr)
    out = Path(args.out)
    summ = write(ds, args.format, out, args.train_fraction, results)
    say(f"{summ.rows} rows written to {out} ({args.format}): {summ.train} train ({len(summ.train_cases)} cases), "
          f"{summ.test} test ({len(summ.test_cases)} cases); {summ.skipped} summaries without a complete reference "
          "answer left out" + (f"; {summ.rejected_from_judge} rejected answers are the judge's own"
                              if args.format == "dpo" else ""))
    return 0


def cmd_models(args) -> int:
    """The GGUF models Ollama and LM Studio keep on this machine (usable with --model PATH or on the Settings
    page). Reads files only."""
    from dataclasses import asdict

    from engine.llm.local_models import discover, lmstudio_dirs, ollama_dirs

    found = discover()
    if args.json:
        print(json.dumps([{**asdict(m), "label": m.label} for m in found], indent=2))
        return 0
    if not found:
        say("no Ollama or LM Studio model found; looked in: "
              + ", ".join(str(d) for d in [*ollama_dirs(), *lmstudio_dirs()]))
        return 0
    for m in found:
        print("\t".join(term(x) for x in (m.name, m.source, f"{m.size_bytes / 1e9:.1f} GB", m.quantization, m.path)))
    return 0


def cmd_get_model(args) -> int:
    """Download a catalog model (the one network action; explicit) and print its path and sha256."""
    import time

    from engine.llm.model_download import CATALOG, CATALOG_BY_KEY, DownloadError, default_models_dir, download
    from engine.data.settings import hub_endpoint

    if args.list or not args.key:
        for e in CATALOG:
            say(f"{e.key}\t{e.label}\t~{e.approx_gb:g} GB download\t~{e.ram_gb:g} GB RAM\t{e.licence}"
                  + (f"\t{e.note}" if e.note else ""))
        if not args.list:
            print("error: name a model to download, e.g. 'python -m engine get-model " + CATALOG[0].key + "'",
                  file=sys.stderr)
            return 2
        return 0
    entry = CATALOG_BY_KEY.get(args.key)
    if entry is None:
        say(f"error: no catalog model {args.key!r}; choose one of: {', '.join(CATALOG_BY_KEY)}", file=sys.stderr)
        return 1
    dest = Path(args.dir).expanduser() if args.dir else default_models_dir()
    endpoint = args.endpoint or hub_endpoint()
    say(f"downloading {entry.label} (~{entry.approx_gb:g} GB) from {endpoint or 'the Hugging Face hub'} "
          f"into {dest}", file=sys.stderr)
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if args.quiet or not (now - last[0] >= 0.5 or (total and done >= total)):
            return
        last[0] = now
        pct = f" ({done / total:.0%})" if total else ""
        print("\r" + term(f"{entry.key}: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB{pct}"), end="", file=sys.stderr,
              flush=True)

    try:
        got = download(entry, dest, endpoint=endpoint, progress=progress)
    except DownloadError as exc:
        print(file=sys.stderr)
        say(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if last[0]:
            print(file=sys.stderr)
    say(str(got.path))
    say(f"sha256 {got.sha256}")
    say(f"use it with --model {got.path}, or choose it on the Settings page", file=sys.stderr)
    return 0


def _resolve_dataset(store: Store, target: str, args):
    """A dataset name in the workspace, or a path that is validated and imported (idempotently) first."""
    from engine.sample import SAMPLE_NAME, ensure_sample

    if target == SAMPLE_NAME and target not in store.dataset_names():
        ensure_sample(store)  # "sample" always means the bundled synthetic dataset
    if target in store.dataset_names():
        return store.load_dataset(target), target
    if not Path(target).exists():
        raise StoreError(f"{target!r} is neither a dataset in the workspace ({', '.join(store.dataset_names()) or 'none'}) "
                         "nor an existing file or folder")
    ds, _ = load_paths([target], _options(args))
    res = store.import_dataset(ds, files=(target,))
    if not res.unchanged:
        say(f"imported {target} as dataset {res.dataset!r}", file=sys.stderr)
    return store.load_dataset(res.dataset), res.dataset


def _dataset_and_ids(args):
    """(store, dataset, name, summary ids) for commands over summaries; raises StoreError / DatasetInvalid."""
    store = _store(args)
    ds, name = _resolve_dataset(store, args.target, args)
    ids = getattr(args, "summary", None) or [s.summary_id for s in ds.summaries]
    unknown = [i for i in ids if i not in {s.summary_id for s in ds.summaries}]
    if unknown:
        raise StoreError(f"unknown summary id(s) {', '.join(unknown)} in dataset {name!r}")
    return store, ds, name, ids


def cmd_judge(args) -> int:
    import time

    from engine.llm.backends import BackendError
    from engine.judge.runner import Judge, run_batch
    from engine.judge.results import JudgeParams
    from engine.data.ratings import medians

    try:
        store, ds, name, ids = _dataset_and_ids(args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    params = JudgeParams(n_samples=args.samples, shots=args.shots, explain=args.explain, seed=args.seed,
                         temperature=args.temperature, trim=args.trim, early_stop=not args.no_early_stop)
    params.validate()
    try:
        backend, sha = _open_backend(args, store)
    except BackendError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    judge = Judge(backend, sha, params)
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    counts = {"scored": 0, "unscored": 0, "refused": 0, "cached": 0}
    dec_tok = dec_s = 0.0
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
                           concurrency=_concurrency(args, backend)):
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
          "decode_tokens_per_second": round(dec_tok / dec_s, 2) if dec_s else None})
    if out:
        out.close()
    return 0


def _judge_settings(args):
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


def _open_backend(args, store):
    from engine.judge.source import open_judge_backend

    return open_judge_backend(_judge_settings(args), store=store)


def _concurrency(args, backend) -> int:
    """Requests in flight: ``--concurrency``, else the setting for a server; always 1 in process (one llama.cpp
    context)."""
    from engine.data.settings import MAX_CONCURRENCY

    if not backend.capabilities.concurrent:
        return 1
    n = args.concurrency or load_settings().concurrency
    return max(1, min(int(n), MAX_CONCURRENCY))


def cmd_omissions(args) -> int:
    from engine.llm.backends import BackendError

    if args.concurrency is not None:
        say("error: --concurrency applies to 'judge' only: MED-OMIT sends its requests one at a time, and the "
            "coverage methods send none", file=sys.stderr)
        return 2
    try:
        store, ds, name, ids = _dataset_and_ids(args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    out = open(args.out, "w", encoding="utf-8") if args.out else None

    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")

    if args.method == "medomit":
        from engine.evidence.medomit import MedOmit, run_medomit

        try:
            backend, sha = _open_backend(args, store)
        except BackendError as exc:
            say(f"error: {exc}", file=sys.stderr)
            return 1
        mo = MedOmit(backend, sha or backend.describe().get("model_file", "endpoint"), cache=store)
        prog = (lambda d, t, sid, m: None) if args.quiet else (
            lambda d, t, sid, m: say(f"[{d}/{t}] {sid}: {m}", file=sys.stderr))
        for r in run_medomit(mo, ds, ids, store=store, dataset_name=name, progress=prog):
            case = ds.case(r.case_id)
            emit({"summary_id": r.summary_id, "method": "medomit", "status": r.status, "failed_step": r.failed_step,
                  "reason": r.reason, "weight": r.document_weight, "count": r.omission_count,
                  "omitted": [{"fact_id": s.fact_id, "fact": r.fact(s.fact_id).text, "weight": s.score,
                               "importance": s.importance, "uniqueness": s.uniqueness,
                               "note_id": r.fact(s.fact_id).note_id, "start": r.fact(s.fact_id).start,
                               "end": r.fact(s.fact_id).end, "link": r.fact(s.fact_id).link,
                               "source_text": (case.note(r.fact(s.fact_id).note_id).text[
                                   r.fact(s.fact_id).start:r.fact(s.fact_id).end]
                                   if r.fact(s.fact_id).start is not None else None),
                               "explanation": s.explanation} for s in r.omitted],
                  "n_facts": len(r.facts), "ddx": [d.name for d in r.ddx],
                  "ddx_difference": r.ddx_comparison.difference if r.ddx_comparison else None})
    else:
        args.coverage_method = args.method
        return cmd_omissions_kde(args, ds, name, ids, emit)
    if out:
        out.close()
    return 0


def cmd_omissions_kde(args, ds, name, ids, emit) -> int:
    from engine.evidence.coverage import CoverageError, CoverageParams, score_coverage
    from engine.evidence.embeddings import Embedder

    emb = Embedder(store=_store(args))  # the workspace keeps the embeddings across runs
    params = CoverageParams(method=args.coverage_method or DEFAULT_COVERAGE_METHOD, pca_components=args.pca,
                            bandwidth=args.bandwidth, clean=not args.no_clean, threshold=args.threshold)
    for sid in ids:
        s = ds.summary(sid)
        try:
            r = score_coverage(ds.case(s.case_id), s, emb, params)
        except CoverageError as exc:
            emit({"summary_id": sid, "method": params.method, "error": str(exc)})
            continue
        emit({"summary_id": sid, "method": r.method, "global_score": r.global_score, "threshold": r.threshold,
              "flagged": r.flagged, "flag_threshold": r.flag_threshold, "regions": [{"note_id": g.note_id, "start": g.start, "end": g.end,
                                                  "text": g.text, "score": g.score} for g in r.regions],
              "unsupported_summary_spans": [{"start": u.start, "end": u.end, "text": u.text, "score": u.score}
                                            for u in r.unsupported[:10]],
              "seconds": r.seconds})
    return 0


def cmd_align(args) -> int:
    from engine.evidence.alignment import align_summary, combined_scores
    from engine.evidence.coverage import CoverageError
    from engine.evidence.embeddings import Embedder

    try:
        store, ds, name, ids = _dataset_and_ids(args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    emb = Embedder(store=store)
    results = []
    for sid in ids:
        s = ds.summary(sid)
        try:
            results.append(align_summary(ds.case(s.case_id), s, emb))
        except CoverageError as exc:
            say(f"error: {sid}: {exc}", file=sys.stderr)
    combined_scores(results)
    _print_jsonl(({"summary_id": r.summary_id, "coverage": r.coverage, "density": r.density,
                   "mean_support": r.mean_support, "combined": r.combined,
                   "sentences": [{"index": a.index, "text": a.text, "support": a.support, "weak": a.weak,
                                  "citations": a.citations, "citation_verdict": a.citation_verdict,
                                  "citation_detail": a.citation_detail,
                                  "aligned": [{"note_id": x.note_id, "sentence": x.sentence, "start": x.start,
                                               "end": x.end, "text": x.text, "score": x.score}
                                              for x in a.rouge_gain],
                                  "embed_topk": [{"note_id": x.note_id, "text": x.text, "score": x.score}
                                                 for x in a.embed_topk]} for a in r.sentences]}
                  for r in results), args.out)
    return 0


def _print_jsonl(rows, out_path: Optional[str]) -> None:
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


def cmd_stigma(args) -> int:
    """Stigmatizing language per summary (engine.evidence.stigma, no LLM): hits with spans and categories, carried forward
    from a note or introduced by the summary, the two PDSQI-9 items and the lexicon version; one JSON line each. The
    lexicon is the built-in one plus the workspace's active clinician entries (Settings) plus ``--extra-lexicon``."""
    from engine.data.ratings import medians
    from engine.evidence.stigma import NOTES_ITEM, SUMMARY_ITEM, LexiconError, assess_dataset, workspace_entries

    try:
        store, ds, name, ids = _dataset_and_ids(args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    extra = workspace_entries(store)  # the clinician entries added in Settings (active ones)
    if args.extra_lexicon:
        more = json.loads(Path(args.extra_lexicon).read_text(encoding="utf-8"))
        if not isinstance(more, list):
            say(f"error: {args.extra_lexicon}: expected a JSON list of lexicon entries", file=sys.stderr)
            return 1
        extra = [*extra, *more]
    try:
        results = assess_dataset(ds, ids, extra_entries=extra)
    except LexiconError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1

    def row(r) -> dict:
        human = medians(x for x in ds.ratings_for(r.summary_id) if x.rater_group != "llm")
        return {**r.to_json(), "dataset": name, "human_median": {k: human.get(k) for k in (NOTES_ITEM, SUMMARY_ITEM)}}

    _print_jsonl(map(row, results), args.out)
    return 0


def cmd_stats(args) -> int:
    from engine.stats.analysis import UnknownConfiguration, analyse_configuration

    store = _store(args)
    try:
        _, name = _resolve_dataset(store, args.target, args)
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    count = _judge_token_counter() if not args.words else (lambda t: len(t.split()))
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


def cmd_status(args) -> int:
    from engine.sample import SAMPLE_NAME, ensure_sample
    from engine.status import dataset_status, status_lines

    store = _store(args)
    if args.target == SAMPLE_NAME and args.target not in store.dataset_names():
        ensure_sample(store)
    if args.target not in store.dataset_names():
        say(f"no dataset named {args.target!r} in the workspace; known: "
            f"{', '.join(store.dataset_names()) or 'none (import one first)'}", file=sys.stderr)
        return 1
    for line in status_lines(dataset_status(store, args.target)):
        say(line)
    return 0


def cmd_report(args) -> int:
    from engine.stats.report import ReportError, write

    from engine.sample import SAMPLE_NAME, ensure_sample

    store = _store(args)
    if args.target == SAMPLE_NAME and args.target not in store.dataset_names():
        ensure_sample(store)  # "sample" always means the bundled synthetic dataset
    if args.target not in store.dataset_names():
        say(f"no dataset named {args.target!r} in the workspace; known: "
              f"{', '.join(store.dataset_names()) or 'none (import one first)'}", file=sys.stderr)
        return 1
    count = _judge_token_counter() if not args.words else (lambda t: len(t.split()))
    try:
        data = write(store, args.target, Path(args.out), Path(args.pdf) if args.pdf else None, args.judge_config,
                     args.boot, count, args.spot_checks_in_reference)
    except ReportError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    cfg = data.config.label if data.config else "no LLM judge results"
    say(f"report written to {args.out}" + (f" and {args.pdf}" if args.pdf else "") + f" (judge: {cfg})")
    return 0


def _judge_token_counter():
    """Note length in tokens of the judge model's tokenizer (words when it cannot be opened, with a warning)."""
    from engine.llm.modelfiles import judge_token_counter

    count, what = judge_token_counter(load_settings().llama_model_path)
    if what != "judge-model tokens":
        say(f"warning: note length counted in {what}", file=sys.stderr)
    return count


def cmd_judge_export(args) -> int:
    from engine.judge.runner import export_results

    store = _store(args)
    lines = export_results(store, args.dataset)
    Path(args.out).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    say(f"{len(lines)} judge results of dataset {args.dataset!r} written to {args.out}")
    return 0


def cmd_judge_import(args) -> int:
    from engine.judge.import_check import import_results_file

    store = _store(args, write=True)
    try:
        res = import_results_file(store, args.dataset, args.file)
    except DatasetInvalid as exc:
        print(exc.report.format_text(), file=sys.stderr)
        return 1
    say(f"{res.imported} judge results imported into dataset {args.dataset!r}")
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

    def add_server_opts(sp):
        sp.add_argument("--api-key", help="bearer token for the endpoint (default: SUMCHECK_API_KEY, or the saved "
                                          "key when the endpoint is the configured server)")
        sp.add_argument("--concurrency", type=_concurrency_arg, default=None,
                        help="requests in flight to a server (1-32; default: the setting); in process always 1")

    def add_import_opts(sp):  # for commands that take a dataset name or a path to import first
        sp.add_argument("--mapping", help=argparse.SUPPRESS)
        sp.add_argument("--specialty", default="Unspecified", help="target specialty for inputs without one")
        sp.add_argument("--rater-group", default="unknown", help=argparse.SUPPRESS)

    sp = sub.add_parser("validate", help="check input files; prints a report, exits 1 on any error")
    add_load_opts(sp)
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser("import", help="validate and import into the workspace (all-or-nothing)")
    add_load_opts(sp)
    sp.add_argument("--name", help="dataset name (default: the first path's name)")
    sp.add_argument("--into", help="add to this existing dataset (e.g. more ratings)")
    sp.add_argument("--replace", action="store_true",
                    help="replace a dataset of the same name (reviews and results of unchanged summaries are kept; "
                         "a backup is written first)")
    sp.add_argument("--force", action="store_true",
                    help="with --replace: drop the reviews and results whose summaries are gone (refused otherwise)")
    sp.set_defaults(func=cmd_import)

    sp = sub.add_parser("datasets", help="list datasets in the workspace")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_datasets)

    sp = sub.add_parser("delete", help="delete a dataset")
    sp.add_argument("name")
    sp.add_argument("--yes", action="store_true", help="confirm")
    sp.set_defaults(func=cmd_delete)

    sp = sub.add_parser("backup", help="write a backup of the workspace into backups/ beside it")
    sp.add_argument("--reason", default="manual", help="a word or two kept in the file name")
    sp.set_defaults(func=cmd_backup)

    sp = sub.add_parser("backups", help="list the workspace's backups, newest first")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_backups)

    sp = sub.add_parser("restore", help="replace the workspace with a backup (the current state is backed up first)")
    sp.add_argument("path")
    sp.add_argument("--yes", action="store_true", help="confirm")
    sp.set_defaults(func=cmd_restore)

    sp = sub.add_parser("sample", help="import the bundled sample dataset if missing")
    sp.add_argument("--precompute", action="store_true",
                    help="also store coverage and sentence support for every sample summary (taken from the shipped "
                         "sample_data/evidence_results.jsonl where current, computed otherwise)")
    sp.add_argument("--export-evidence", help="with --precompute: write the sample's evidence rows to this file")
    sp.set_defaults(func=cmd_sample)

    sp = sub.add_parser("judge", help="grade summaries with the PDSQI-9 LLM judge; one JSON line per summary")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import and judge")
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
    sp.add_argument("--summary", action="append", help="judge only this summary id (repeatable)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    sp.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_import_opts(sp)
    sp.set_defaults(func=cmd_judge)

    sp = sub.add_parser("calibrate", help="calibrate the judge's expected scores to the dataset's raters (stored, "
                                          "versioned per judge configuration)")
    sp.add_argument("target", help="a dataset name in the workspace (e.g. sample)")
    sp.add_argument("--judge-config", help="judge configuration key (default: the one covering most summaries)")
    sp.add_argument("--kind", choices=("judge+evidence", "judge"), default="judge+evidence",
                    help="judge+evidence (default): the expected score with the stored evidence (coverage, support, "
                         "citations, stigma, length); judge: the expected score alone")
    sp.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for the CIs")
    sp.add_argument("--dry-run", action="store_true", help="print the figures without storing the calibration")
    sp.set_defaults(func=cmd_calibrate)

    sp = sub.add_parser("export-training", help="training data for a local judge (TRL SFT or DPO JSON lines; "
                                                "contains the notes: PHI)")
    sp.add_argument("target", help="a dataset name in the workspace")
    sp.add_argument("--format", choices=("sft", "dpo"), required=True)
    sp.add_argument("--out", required=True)
    sp.add_argument("--train-fraction", type=float, default=0.7, help="share of cases in the train split")
    sp.add_argument("--judge-config", help="dpo: the judge configuration whose disagreeing answers become 'rejected'")
    sp.set_defaults(func=cmd_export_training)

    sp = sub.add_parser("judge-export", help="write a dataset's stored judge results (full provenance) as JSON lines")
    sp.add_argument("dataset")
    sp.add_argument("--out", required=True)
    sp.set_defaults(func=cmd_judge_export)

    sp = sub.add_parser("judge-import", help="store judge results exported by judge-export into a dataset")
    sp.add_argument("dataset")
    sp.add_argument("file")
    sp.set_defaults(func=cmd_judge_import)

    sp = sub.add_parser("omissions", help="omission evidence per summary (MED-OMIT or embedding KDE)")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
    sp.add_argument("--method", choices=("medomit", *COVERAGE_METHODS), default=DEFAULT_COVERAGE_METHOD,
                    help="medomit (the LLM pipeline) or a registered coverage method: "
                         + ", ".join(f"{k} ({m.label})" for k, m in COVERAGE_METHODS.items()))
    sp.add_argument("--pca", type=int, default=5, help="kde: PCA components")
    sp.add_argument("--bandwidth", default="scott", help="kde: 'scott', 'silverman' or a number")
    sp.add_argument("--no-clean", action="store_true", help="kde: keep stopwords and short words")
    sp.add_argument("--threshold", type=float, default=None, help="region threshold (default: the method's)")
    sp.add_argument("--model", help="GGUF file for MED-OMIT (default: the configured model)")
    sp.add_argument("--endpoint", help="OpenAI-compatible server URL instead of in-process llama.cpp")
    sp.add_argument("--endpoint-model", help="model name to send to the endpoint")
    add_server_opts(sp)
    sp.add_argument("--ctx", type=int, default=0)
    sp.add_argument("--threads", type=int, default=0)
    sp.add_argument("--summary", action="append", help="only this summary id (repeatable)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    sp.add_argument("--quiet", action="store_true")
    add_import_opts(sp)
    sp.set_defaults(func=cmd_omissions)

    sp = sub.add_parser("align", help="per summary sentence: aligned source sentences, support, citation verdict")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
    sp.add_argument("--summary", action="append", help="only this summary id (repeatable)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    add_import_opts(sp)
    sp.set_defaults(func=cmd_align)

    sp = sub.add_parser("stigma", help="stigmatizing language per summary (lexicon, no LLM): hits, carried forward "
                                       "or introduced, the two PDSQI-9 items")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
    sp.add_argument("--summary", action="append", help="only this summary id (repeatable)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    sp.add_argument("--extra-lexicon", help="JSON list of extra lexicon entries (term, category, source, suggest)")
    add_import_opts(sp)
    sp.set_defaults(func=cmd_stigma)

    sp = sub.add_parser("stats", help="every agreement statistic (humans and LLM judge), per item and overall")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
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
    sp.set_defaults(func=cmd_stats)

    sp = sub.add_parser("status", help="where a dataset stands (judged, evidence, reviews) and the next steps")
    sp.add_argument("target", help="a dataset name in the workspace")
    sp.set_defaults(func=cmd_status)

    sp = sub.add_parser("report", help="the committee report: a self-contained offline HTML file (and a PDF)")
    sp.add_argument("target", help="a dataset name in the workspace")
    sp.add_argument("--out", required=True, help="the HTML file to write")
    sp.add_argument("--pdf", help="also print a PDF here (headless Chromium)")
    sp.add_argument("--judge-config", help="the judge configuration (key); default: the one covering most summaries")
    sp.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    sp.add_argument("--words", action="store_true", help="count note length in words, not judge tokens")
    sp.add_argument("--spot-checks-in-reference", action="store_true",
                    help="let the clinicians' spot checks enter the human reference (stated in the report)")
    sp.set_defaults(func=cmd_report)

    sp = sub.add_parser("model", help="assemble the embedded models; describe the configured judge model")
    sp.add_argument("--path", help="a GGUF file (default: the configured model, else the embedded one)")
    sp.add_argument("--which", choices=("qwen2.5-coder-1.5b", "gemma3-270m"),
                    help="assemble only this embedded model (default: every one whose packages are installed)")
    sp.add_argument("--rebuild", action="store_true", help="assemble again even when a verified file exists")
    sp.add_argument("--hash", action="store_true", help="also compute the file's sha256")
    sp.set_defaults(func=cmd_model)

    sp = sub.add_parser("models", help="list the GGUF models Ollama and LM Studio keep on this machine")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_models)

    sp = sub.add_parser("get-model", help="download a judge model from the catalog (the only network action)")
    sp.add_argument("key", nargs="?", help="catalog key (see --list)")
    sp.add_argument("--list", action="store_true", help="print the catalog")
    sp.add_argument("--dir", help="target folder (default: SUMCHECK_MODELS_DIR or the user data folder)")
    sp.add_argument("--endpoint", help="model hub or mirror address (default: SUMCHECK_HUB_ENDPOINT, else the "
                                       "Hugging Face hub)")
    sp.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    sp.set_defaults(func=cmd_get_model)
    return p


def _concurrency_arg(text: str) -> int:
    from engine.data.settings import MAX_CONCURRENCY

    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_CONCURRENCY}")
    return n


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Exit status: 0 ok, 1 invalid input or another error, 2 the workspace is busy (retry later) or a command
    needs confirmation."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except StoreBusy as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 2
    except DatasetInvalid as exc:
        print(exc.report.format_text(), file=sys.stderr)
        return 1
    except (StoreError, SettingsError, ValueError, OSError) as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
