"""Commands on data and the workspace: validate, import, datasets, delete, backup, backups, restore, workspace copy,
the team's review plan (assign, queue, disagreements), the REDCap and FHIR exports, and sample.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.cli.common import add_command, add_load_opts, load_options, open_store, say
from engine.core import untrusted
from engine.data import DatasetInvalid, Store, load_paths


def cmd_validate(args) -> int:
    try:
        _, report = load_paths(args.paths, load_options(args))
    except DatasetInvalid as exc:
        print(exc.report.format_text())
        return 1
    print(report.format_text())
    return 0


def cmd_import(args) -> int:
    store = open_store(args, write=True)
    if args.replace and args.into:
        print("error: --replace cannot be combined with --into ('into' adds records to a dataset, 'replace' replaces "
              "a whole dataset); use one of them", file=sys.stderr)
        return 1
    context = store.load_dataset(args.into) if args.into else None
    try:
        ds, report = load_paths(args.paths, load_options(args), context=context, name=args.name)
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
               + f" (workspace {store.location})"))
    for c in res.carried:
        say((f"  {c.text()}"))
    if res.backup:
        say((f"  backup of the workspace before the replace: {res.backup}"))
    return 0


def cmd_datasets(args) -> int:
    store = open_store(args)
    infos = store.list_datasets()
    if args.json:
        print(json.dumps([i.__dict__ for i in infos], indent=2))
        return 0
    if not infos:
        say((f"no datasets in {store.location}; import one with 'python -m engine import PATH'"))
    for i in infos:
        print("\t".join(untrusted.term(x) for x in (i.name, f"{i.n_cases} cases", f"{i.n_summaries} summaries",
                                           f"{i.n_ratings} ratings by {i.n_raters} raters", i.created_at, i.source)))
    return 0


def cmd_delete(args) -> int:
    store = open_store(args, write=True)
    if not args.yes:
        say((f"this deletes dataset {args.name!r} with all its ratings, reviews and results (a backup of the "
                   "workspace is written first); add --yes to confirm"))
        return 2
    path = store.delete_dataset(args.name)
    say((f"deleted dataset {args.name!r}; backup of the workspace before the delete: {path}"))
    return 0


def cmd_backup(args) -> int:
    from engine.data import backups

    store = open_store(args)
    say((str(backups.backup(store, args.reason))))
    return 0


def cmd_backups(args) -> int:
    from engine.data import backups

    store = open_store(args)
    infos = backups.list_backups(backups.anchor(store))
    if args.json:
        print(json.dumps([i.__dict__ for i in infos], indent=2))
        return 0
    if not infos:
        say((f"no backups of {store.location} yet"))
    for b in infos:
        print("\t".join(untrusted.term(x) for x in (b.created_at, b.reason, f"{b.size_bytes / 1e6:.1f} MB", b.path)))
    return 0


def cmd_restore(args) -> int:
    from engine.data import backups

    store = open_store(args, write=True)
    if not args.yes:
        say((f"this replaces everything in the workspace {store.location} with {args.path} (the current state is "
                   "backed up first); add --yes to confirm"))
        return 2
    before = backups.restore(store, Path(args.path))
    say((f"restored {args.path} into {store.location}; the state before the restore is in {before}"))
    return 0


def cmd_sample(args) -> int:
    from engine.sample import ensure_sample

    store = open_store(args, write=True)
    res = ensure_sample(store)
    say("sample dataset already in workspace" if res is None else f"sample dataset imported: {res.counts}")
    if args.export_verification:
        from engine.sample import VERIFY_METHODS, export_evidence

        n = export_evidence(store, Path(args.export_verification), VERIFY_METHODS)
        say(f"{n} verification results written to {args.export_verification}")
    if args.export_medomit:
        from engine.sample import MEDOMIT_METHODS, export_evidence

        n = export_evidence(store, Path(args.export_medomit), MEDOMIT_METHODS)
        say(f"{n} MED-OMIT results written to {args.export_medomit}")
    if args.precompute:
        from engine.evidence import Embedder, evidence_job
        from engine.core import run_in_foreground
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


def cmd_workspace_copy(args) -> int:
    """Copy a whole workspace between an SQLite file and a PostgreSQL server (either way), verified per table."""
    from engine.data import copy_workspace

    from engine.data import is_url

    if not is_url(args.source) and not Path(args.source).expanduser().is_file():
        say(f"error: the source workspace {args.source} does not exist", file=sys.stderr)
        return 2
    src = Store(args.source)
    dst = Store(args.target)
    try:
        report = copy_workspace(src, dst, force=args.force)
    finally:
        src.close()
        dst.close()
    for t in report.tables:
        say(f"{t.table}: {t.rows_target} rows, sha256 {t.digest_target[:12]}… {'identical' if t.ok else 'DIFFERENT'}")
    say(f"copied {report.rows} rows in {len(report.tables)} tables from {report.source} to {report.target}"
        + (" (its previous content replaced)" if report.replaced else "") + "; every table identical to its source")
    return 0


def cmd_assign(args) -> int:
    """Make and store a blinded review plan: each summary to --per-summary reviewers, balanced and stratified."""
    from engine.data import plan_assignments, save_plan

    store = open_store(args, write=True)
    ds = store.load_dataset(args.dataset)
    names = [n.strip() for n in args.reviewers.split(",") if n.strip()]
    try:
        plan = plan_assignments(ds.summaries, names, args.per_summary, args.seed)
    except ValueError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 2
    save_plan(store, args.dataset, plan)
    for name in names:
        mine = [a for a in plan if a.reviewer == name]
        say(f"{name}: {len(mine)} summaries")
    say(f"stored a plan of {len(plan)} reviews for {len(ds.summaries)} summaries of {args.dataset!r} "
        f"({args.per_summary} reviewers each, seed {args.seed}); it replaces any earlier plan")
    return 0


def cmd_queue(args) -> int:
    """One reviewer's assigned summaries, the ones still to review first."""
    from engine.data import reviewer_queue

    store = open_store(args)
    entries = reviewer_queue(store, args.dataset, args.reviewer)
    if not entries:
        say(f"no summaries of {args.dataset!r} are assigned to {args.reviewer!r}", file=sys.stderr)
        return 1
    for e in entries:
        say(f"{'done' if e.done else 'to do'}\t{e.summary_id}\t{e.stratum}")
    return 0


def cmd_disagreements(args) -> int:
    """The adjudication queue: items where reviewers' spot checks differ by more than --margin."""
    from engine.data import disagreements

    store = open_store(args)
    queue = disagreements(store, args.dataset, args.margin)
    for d in queue:
        values = ", ".join(f"{r}: {'NA' if v is None else f'{v:g}'}" for r, v in d.values.items())
        say(f"{d.summary_id}\t{d.item}\tspread {d.spread:g}\t{values}")
    say(f"{len(queue)} item(s) to adjudicate (margin {args.margin:g})", file=sys.stderr)
    return 0


def cmd_redcap_export(args) -> int:
    """The team's spot-check ratings as a REDCap import file and its data dictionary."""
    from engine.core import untrusted
    from engine.data import export_redcap

    store = open_store(args)
    out = export_redcap(store, args.dataset)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / untrusted.filename(args.dataset, "_pdsqi_redcap.csv")
    dictionary = folder / untrusted.filename(args.dataset, "_pdsqi_dictionary.csv")
    data.write_text(out.data_csv, encoding="utf-8")
    dictionary.write_text(out.dictionary_csv, encoding="utf-8")
    say(str(data))
    say(str(dictionary))
    say(f"{out.rows} ratings ({out.records} summaries); import the dictionary into REDCap first, then the data "
        f"file; 'python -m engine import {data.name} --into DATASET' reads it back", file=sys.stderr)
    return 0


def cmd_fhir_export(args) -> int:
    """The dataset as a FHIR R4 Bulk Data export: its notes and summaries as DocumentReferences, and the PDSQI-9 as a
    Questionnaire with every rating, spot check and judge result as a QuestionnaireResponse."""
    from engine.data.fhir import ResponseRecord, dataset_resources, write_bulk
    from engine.data import SPOT_CHECK, current_reviews, rater_id
    from engine.judge import judge_records, stored_judge_results

    store = open_store(args)
    ds = store.load_dataset(args.dataset)
    records: list[ResponseRecord] = []
    by_reviewer: dict[tuple[str, str], list] = {}
    for r in current_reviews(store, args.dataset):
        if r.kind == SPOT_CHECK:
            by_reviewer.setdefault((r.summary_id, r.reviewer), []).append((r.item, r.value))
    for (sid, reviewer), values in by_reviewer.items():
        records.append(ResponseRecord(sid, rater_id(reviewer), "rater", tuple(values), None, reviewer))
    results = stored_judge_results(store, args.dataset) if not args.no_judge else []
    judged = judge_records(results)
    try:
        out = write_bulk(dataset_resources(ds, records + judged, binary_every=args.binary_every), args.out)
    except ValueError as exc:  # a resource its FHIR model refuses, named in one line; nothing was written
        say(f"error: cannot export dataset {args.dataset!r} as FHIR: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        say(f"error: cannot write the FHIR export to {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for name, n in out.files.items():
        say(f"{out.folder / name}: {n} resources")
    say(f"{len(by_reviewer)} spot-check reviews and {len(judged)} scored judge results as QuestionnaireResponses "
        f"({len(results) - len(judged)} unscored left out); 'python -m engine import {out.folder} --summary-type "
        "llm-summary' reads it back", file=sys.stderr)
    return 0


def register(sub) -> None:
    """Add the data and workspace commands to the top parser's subparsers ``sub``, in their order in --help."""
    _register_inputs(sub)
    _register_backups(sub)
    _register_team(sub)
    _register_sample(sub)


def _register_inputs(sub) -> None:
    sp = add_command(sub, "validate", cmd_validate, "check input files; prints a report, exits 1 on any error")
    add_load_opts(sp)

    sp = add_command(sub, "import", cmd_import, "validate and import into the workspace (all-or-nothing)")
    add_load_opts(sp)
    sp.add_argument("--name", help="dataset name (default: the first path's name)")
    sp.add_argument("--into", help="add to this existing dataset (e.g. more ratings)")
    sp.add_argument("--replace", action="store_true",
                    help="replace a dataset of the same name (reviews and results of unchanged summaries are kept; "
                         "a backup is written first)")
    sp.add_argument("--force", action="store_true",
                    help="with --replace: drop the reviews and results whose summaries are gone (refused otherwise)")

    sp = add_command(sub, "datasets", cmd_datasets, "list datasets in the workspace")
    sp.add_argument("--json", action="store_true")

    sp = add_command(sub, "delete", cmd_delete, "delete a dataset")
    sp.add_argument("name")
    sp.add_argument("--yes", action="store_true", help="confirm")


def _register_backups(sub) -> None:
    sp = add_command(sub, "backup", cmd_backup, "write a backup of the workspace into backups/ beside it")
    sp.add_argument("--reason", default="manual", help="a word or two kept in the file name")

    sp = add_command(sub, "backups", cmd_backups, "list the workspace's backups, newest first")
    sp.add_argument("--json", action="store_true")

    sp = add_command(sub, "restore", cmd_restore, "replace the workspace with a backup (the current state is backed "
                                                  "up first)")
    sp.add_argument("path")
    sp.add_argument("--yes", action="store_true", help="confirm")

    ws = sub.add_parser("workspace", help="workspace operations")
    ws = ws.add_subparsers(dest="workspace_command", required=True)
    sp = add_command(ws, "copy", cmd_workspace_copy, "copy a whole workspace between stores (SQLite file or "
                                                     "postgresql://...), verifying row counts and content hashes per "
                                                     "table")
    sp.add_argument("source")
    sp.add_argument("target")
    sp.add_argument("--force", action="store_true", help="replace everything in a target that is not empty")


def _register_team(sub) -> None:
    sp = add_command(sub, "assign", cmd_assign, "a blinded review plan: every summary to N reviewers, balanced and "
                                                "stratified by generator and quality group (replaces the dataset's "
                                                "earlier plan)")
    sp.add_argument("dataset")
    sp.add_argument("--reviewers", required=True, help="comma-separated reviewer names")
    sp.add_argument("--per-summary", type=int, default=2, help="reviewers per summary (default 2)")
    sp.add_argument("--seed", type=int, default=0)

    sp = add_command(sub, "queue", cmd_queue, "a reviewer's assigned summaries, the ones still to review first")
    sp.add_argument("dataset")
    sp.add_argument("--reviewer", required=True)

    sp = add_command(sub, "disagreements", cmd_disagreements, "the adjudication queue: items where reviewers differ "
                                                              "by more than --margin and no adjudicated score exists")
    sp.add_argument("dataset")
    sp.add_argument("--margin", type=float, default=1.0)

    sp = add_command(sub, "redcap-export", cmd_redcap_export, "the team's spot-check ratings as a REDCap import file "
                                                              "(one repeating instance per reviewer) and its data "
                                                              "dictionary")
    sp.add_argument("dataset")
    sp.add_argument("--out", required=True, help="folder for the two CSV files")

    sp = add_command(sub, "fhir-export", cmd_fhir_export, "the dataset as a FHIR R4 Bulk Data export (NDJSON per "
                                                          "resource type): notes and summaries as DocumentReferences, "
                                                          "the PDSQI-9 as a Questionnaire, ratings, spot checks and "
                                                          "judge results as QuestionnaireResponses")
    sp.add_argument("dataset")
    sp.add_argument("--out", required=True, help="folder for the NDJSON files")
    sp.add_argument("--binary-every", type=int, default=0, metavar="N",
                    help="put every N-th note's text in a Binary the document points to (default: all inline)")
    sp.add_argument("--no-judge", action="store_true", help="leave the judge results out")


def _register_sample(sub) -> None:
    sp = add_command(sub, "sample", cmd_sample, "import the bundled sample dataset if missing")
    sp.add_argument("--precompute", action="store_true",
                    help="also store coverage and sentence support for every sample summary (taken from the shipped "
                         "sample_data/evidence_results.jsonl where current, computed otherwise)")
    sp.add_argument("--export-evidence", help="with --precompute: write the sample's evidence rows to this file")
    sp.add_argument("--export-verification", help="write the sample's stored claim verification rows to this file")
    sp.add_argument("--export-medomit", help="write the sample's stored MED-OMIT rows to this file")
