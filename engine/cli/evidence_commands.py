"""Commands of the evidence: omissions (MED-OMIT or a coverage method), align, stigma, and the stored evidence
of every registered kind (evidence).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from engine.cli import check_commands, verify_commands
from engine.cli.common import (DATASET_HELP, OUT_HELP, TARGET_HELP, add_command, add_import_opts, add_model_opts,
                               add_summary_and_out, dataset_and_ids, open_backend, open_store, print_jsonl, say)
from engine.evidence.coverage import DEFAULT_METHOD as DEFAULT_COVERAGE_METHOD, METHODS as COVERAGE_METHODS
from engine.evidence.medomit import FACT_SOURCES


def cmd_omissions(args) -> int:
    from engine.llm import BackendError

    if args.concurrency is not None:
        say("error: --concurrency applies to 'judge' only: MED-OMIT sends its requests one at a time, and the "
            "coverage methods send none", file=sys.stderr)
        return 2
    store, ds, name, ids = dataset_and_ids(args)
    out = open(args.out, "w", encoding="utf-8") if args.out else None

    def emit(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if out:
            out.write(line + "\n")

    if args.method == "medomit":
        from engine.evidence.medomit import MedOmit, run_medomit

        try:
            backend, sha = open_backend(args, store)
        except BackendError as exc:
            say(f"error: {exc}", file=sys.stderr)
            return 1
        from engine.evidence import Embedder

        from engine.data import load_settings

        mo = MedOmit(backend, sha or backend.describe().get("model_file", "endpoint"), cache=store,
                     embedder=Embedder(store=store), facts=args.facts or load_settings().medomit_facts)
        prog = (lambda d, t, sid, m: None) if args.quiet else (
            lambda d, t, sid, m: say(f"[{d}/{t}] {sid}: {m}", file=sys.stderr))
        wanted: dict[str, int] = {}
        for sid in ids:
            cid = ds.summary(sid).case_id
            wanted[cid] = wanted.get(cid, 0) + 1
        done: dict[str, list] = {}
        for r in run_medomit(mo, ds, ids, store=store, dataset_name=name, progress=prog):
            done.setdefault(r.case_id, []).append(r)
            if len(done[r.case_id]) == wanted[r.case_id]:  # a case is emitted once all its summaries are in
                _emit_case(emit, ds, done.pop(r.case_id), store, name)
        for case_results in done.values():  # cases not every summary of which came back
            _emit_case(emit, ds, case_results, store, name)
    else:
        args.coverage_method = args.method
        return cmd_omissions_kde(args, ds, name, ids, emit)
    if out:
        out.close()
    return 0


def _emit_case(emit, ds, run: list, store, name: str) -> None:
    """Emit a case's results of this run, each compared with the case's other summaries as the Case page compares
    them: this run's results and the workspace's stored ones."""
    from engine.evidence.medomit import consensus, stored_case_results

    stored = store.evidence_results(name, "medomit") if store is not None else {}
    case_results = stored_case_results(ds, run[0].case_id, stored, known=run)
    for res in run:
        emit(_medomit_line(res, ds.case(res.case_id), consensus(res, case_results)))


def _medomit_line(r, case, cons) -> dict:
    """One summary's MED-OMIT result as the CLI prints it; ``stated_by_others``: how many of the other summaries
    of the case (this run's and the workspace's stored results decided on the same facts) state each omitted fact
    (null without such a summary); ``same_weight``: the Case page's warning when the weights do not rank the facts
    (:func:`same_weight_note`, "" when they do).
    The omitted facts come in the order the Case page lists them (:func:`omitted_fact_rows`)."""
    from engine.evidence.medomit import omitted_fact_rows, same_weight_note

    by_id = {s.fact_id: s for s in r.omitted}
    ordered = [by_id[row["fact_id"]] for row in omitted_fact_rows(r, cons)]

    def span(fid):
        f = r.fact(fid)
        return case.note(f.note_id).text[f.start:f.end] if f.start is not None else None

    return {"summary_id": r.summary_id, "method": "medomit", "status": r.status, "failed_step": r.failed_step,
            "reason": r.reason, "weight": r.document_weight, "count": r.omission_count,
            "compared_with": list(cons.others) if cons else [],
            "same_weight": same_weight_note(r, compared=cons is not None),
            "omitted": [{"fact_id": s.fact_id, "fact": r.fact(s.fact_id).text, "weight": s.score,
                         "importance": s.importance, "uniqueness": s.uniqueness,
                         "stated_by_others": cons.of(s.fact_id).stated_by if cons and cons.of(s.fact_id) else None,
                         "note_id": r.fact(s.fact_id).note_id, "start": r.fact(s.fact_id).start,
                         "end": r.fact(s.fact_id).end, "link": r.fact(s.fact_id).link,
                         "source_text": span(s.fact_id), "explanation": s.explanation} for s in ordered],
            "n_facts": len(r.facts), "facts_from": r.fact_source, "ddx": [d.name for d in r.ddx],
            "ddx_difference": r.ddx_comparison.difference if r.ddx_comparison else None}


def cmd_omissions_kde(args, ds, name, ids, emit) -> int:
    """A coverage method's omissions: one JSON line per summary, its regions listed in the order
    ``regions_order`` states (:data:`REGIONS_ORDER`), each with the figures that order comes from (``marks``,
    ``rank_score``, ``below_threshold``, ``salience``) beside its omission ``score``; the same sentence heads the
    output on stderr (not with --quiet)."""
    from engine.evidence.coverage import (CoverageError, CoverageParams, REGIONS_ORDER, listed_order_key, region_row,
                                          score_coverage)
    from engine.evidence import Embedder
    from engine.evidence.coverage import omission_flags

    emb = Embedder(store=open_store(args))  # the workspace keeps the embeddings across runs
    params = CoverageParams(method=args.coverage_method or DEFAULT_COVERAGE_METHOD, pca_components=args.pca,
                            bandwidth=args.bandwidth, clean=not args.no_clean, threshold=args.threshold)
    if not args.quiet:
        say(f"regions are listed in {REGIONS_ORDER}", file=sys.stderr)
    for sid in ids:
        s = ds.summary(sid)
        try:
            r = score_coverage(ds.case(s.case_id), s, emb, params)
        except CoverageError as exc:
            emit({"summary_id": sid, "method": params.method, "error": str(exc)})
            continue
        # the order select_regions stored, sorted by the printed figures so that REGIONS_ORDER holds as printed
        listed = sorted(r.regions, key=lambda g: listed_order_key(g, r.threshold))
        emit({"summary_id": sid, "method": r.method, "global_score": r.global_score, "threshold": r.threshold,
              "flagged": r.flagged, "flag_threshold": r.flag_threshold, "regions_order": REGIONS_ORDER,
              "regions": [region_row(g, r.threshold) for g in listed],
              "unsupported_summary_spans": [{"start": u.start, "end": u.end, "text": u.text, "score": u.score}
                                            for u in r.unsupported[:10]],
              "flags": [f.to_dict() for f in omission_flags(ds.case(s.case_id), s.text, r.units, r.threshold,
                                                             ds.citation_style())],
              "seconds": r.seconds})
    return 0


def cmd_align(args) -> int:
    from engine.evidence.support import align_summary, combined_scores
    from engine.evidence.coverage import CoverageError
    from engine.evidence import Embedder

    store, ds, name, ids = dataset_and_ids(args)
    emb = Embedder(store=store)
    results = []
    cites = ds.cites_notes()
    for sid in ids:
        s = ds.summary(sid)
        try:
            results.append(align_summary(ds.case(s.case_id), s, emb, cites))
        except CoverageError as exc:
            say(f"error: {sid}: {exc}", file=sys.stderr)
    combined_scores(results)
    print_jsonl(({"summary_id": r.summary_id, "coverage": r.coverage, "density": r.density,
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


def cmd_stigma(args) -> int:
    """Stigmatizing language per summary (engine.evidence.stigma.detector, no LLM): hits with spans and categories, carried forward
    from a note or introduced by the summary, the two PDSQI-9 items and the lexicon version; one JSON line each. The
    lexicon is the built-in one plus the workspace's active clinician entries (Settings) plus ``--extra-lexicon``."""
    from engine.data import medians
    from engine.evidence.stigma import NOTES_ITEM, SUMMARY_ITEM, LexiconError, assess_dataset
    from engine.evidence.stigma import workspace_entries

    store, ds, name, ids = dataset_and_ids(args)
    extra = workspace_entries(store)  # the clinician entries added on the Lexicon page (active ones)
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

    print_jsonl(map(row, results), args.out)
    return 0


def compute_dataset_evidence(store, name: str) -> None:
    """Coverage and sentence support for every summary of dataset ``name`` (engine.evidence.batch, the Evidence
    page's computation), stored in the workspace; one progress line per summary on stderr."""
    from engine.evidence import Embedder, compute_evidence

    ds = store.load_dataset(name)
    ids = [s.summary_id for s in ds.summaries]
    t0 = time.perf_counter()

    def report(done: int, item: str, step: str = "", step_index: int = 0, cached: bool = False, **_):
        if not cached:
            say(f"  [{done + 1}/{len(ids)}] {item}: {step} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    batch = compute_evidence(store, name, ds, ids, lambda: Embedder(store=store), report=report)
    computed = sum(1 for o in batch.outcomes if o.computed)
    refused = [o for o in batch.outcomes if o.refused]
    say(f"evidence of {len(ids)} summaries: {computed} computed, {len(ids) - computed} already stored"
        + (f"; coverage refused for {len(refused)} ({refused[0].summary_id}: {refused[0].refused})" if refused else ""),
        file=sys.stderr)


def cmd_evidence(args) -> int:
    """The registered evidence kinds with how many summaries of the dataset have each stored; with ``--kind``,
    that kind's stored results as JSON lines."""
    from dataclasses import asdict, is_dataclass

    from engine.evidence import EVIDENCE_KINDS, kind, stored_results

    store = open_store(args, write=bool(getattr(args, "compute", False)))
    if args.target not in store.dataset_names():
        say(f"error: no dataset {args.target!r} in the workspace; present: "
            + (", ".join(store.dataset_names()) or "none"), file=sys.stderr)
        return 1
    if getattr(args, "compute", False):
        compute_dataset_evidence(store, args.target)
    if args.kind is None:
        n = len(store.load_dataset(args.target).summaries)
        for key, k in EVIDENCE_KINDS.items():
            have = len(store.evidence_results(args.target, key))
            print(f"{key:22s} {have:4d} of {n} summaries  {k.label} ({k.computed_with}, {k.version})")
        return 0
    try:
        kind(args.kind)
    except ValueError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    rows = ({"summary_id": sid, "kind": args.kind, "result": asdict(res) if is_dataclass(res) else res}
            for sid, res in sorted(stored_results(store, args.target, args.kind).items()))
    print_jsonl(rows, args.out)
    return 0


def register(sub) -> None:
    """Add the evidence commands to the top parser's subparsers ``sub``, in their order in --help: omissions and
    align, then verify and check (each in its own module), then stigma and the stored evidence."""
    _register_omissions(sub)
    sp = add_command(sub, "align", cmd_align, "per summary sentence: aligned source sentences, support, citation "
                                              "verdict", target=TARGET_HELP)
    add_summary_and_out(sp)
    add_import_opts(sp)
    verify_commands.register(sub)
    check_commands.register(sub)
    _register_stored(sub)


def _register_omissions(sub) -> None:
    sp = add_command(sub, "omissions", cmd_omissions, "omission evidence per summary (MED-OMIT or embedding KDE)",
                     target=TARGET_HELP)
    sp.add_argument("--method", choices=("medomit", *COVERAGE_METHODS), default=DEFAULT_COVERAGE_METHOD,
                    help="medomit (the LLM pipeline) or a registered coverage method: "
                         + ", ".join(f"{k} ({m.label})" for k, m in COVERAGE_METHODS.items()))
    sp.add_argument("--pca", type=int, default=5, help="kde: PCA components")
    sp.add_argument("--bandwidth", default="scott", help="kde: 'scott', 'silverman' or a number")
    sp.add_argument("--no-clean", action="store_true", help="kde: keep stopwords and short words")
    sp.add_argument("--threshold", type=float, default=None, help="region threshold (default: the method's)")
    add_model_opts(sp, "GGUF file for MED-OMIT (default: the configured model)",
                   "OpenAI-compatible server URL instead of in-process llama.cpp")
    sp.add_argument("--facts", choices=tuple(FACT_SOURCES), default=None,
                    help="medomit: where the facts come from (default: the setting): " + "; ".join(
                        f"{k} ({f.description})" for k, f in FACT_SOURCES.items()))
    add_summary_and_out(sp)
    sp.add_argument("--quiet", action="store_true")
    add_import_opts(sp)


def _register_stored(sub) -> None:
    sp = add_command(sub, "stigma", cmd_stigma, "stigmatizing language per summary (lexicon, no LLM): hits, carried "
                                                "forward or introduced, the two PDSQI-9 items", target=TARGET_HELP)
    add_summary_and_out(sp)
    sp.add_argument("--extra-lexicon", help="JSON list of extra lexicon entries (term, category, source, suggest)")
    add_import_opts(sp)

    sp = add_command(sub, "evidence", cmd_evidence, "the registered evidence kinds and what the dataset has stored of "
                                                    "each; with --kind, that kind's stored results as JSON lines; with "
                                                    "--compute, compute and store the dataset's coverage and sentence "
                                                    "support first", target=DATASET_HELP)
    sp.add_argument("--compute", action="store_true",
                    help="compute and store coverage and sentence support (what the Evidence page computes) for "
                         "every summary that lacks them, with progress on stderr")
    sp.add_argument("--kind", help="an evidence kind's key (e.g. alignment, coverage:unitcov, medomit)")
    sp.add_argument("--out", help=OUT_HELP)
