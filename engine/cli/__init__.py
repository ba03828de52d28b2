"""Command line over the same engine functions the UI calls: ``python -m engine COMMAND ...``."""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from engine.cli import data_commands, evidence_commands, judge_commands, model_commands, stats_commands
from engine.cli.common import TargetInvalid, say
from engine.data import DatasetInvalid, SettingsError, StoreBusy, StoreError

# The command modules in the order their commands appear in --help; each adds its own commands with their handlers
# (evidence_commands adds verify and check, each in its own module, between align and stigma).
COMMAND_MODULES = (data_commands, judge_commands, evidence_commands, stats_commands, model_commands)


def build_parser() -> argparse.ArgumentParser:
    """The top parser (``--workspace``) with every command module's commands."""
    p = argparse.ArgumentParser(prog="python -m engine", description="Clinical summary checking workbench (CLI)")
    p.add_argument("--workspace", help="workspace: an SQLite file or postgresql://user@host:port/database (default: "
                                       "SUMCHECK_WORKSPACE or the saved setting)")
    sub = p.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Exit status: 0 ok, 1 invalid input or another error, 2 the workspace is busy (retry later) or a command
    needs confirmation."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TargetInvalid as exc:  # the report is the command's output
        print(exc.report.format_text())
        return 1
    except StoreBusy as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 2
    except DatasetInvalid as exc:
        print(exc.report.format_text(), file=sys.stderr)
        return 1
    except (StoreError, SettingsError, ValueError, OSError) as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
