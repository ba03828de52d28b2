"""The command line's parser: every command module adds its own commands with their handlers, in one fixed order;
a target path whose input does not validate prints the report as the command's output and exits 1."""
import argparse

import pytest

from engine.cli import COMMAND_MODULES, build_parser, check_commands, main, verify_commands

ORDER = ["validate", "import", "datasets", "delete", "backup", "backups", "restore", "workspace", "assign", "queue",
         "disagreements", "redcap-export", "fhir-export", "sample", "judge", "calibrate", "scores", "export-training",
         "judge-export", "judge-import", "omissions", "align", "verify", "check", "stigma", "evidence", "stats",
         "status", "report", "model", "models", "get-model"]


class _Recorder:
    """Stands in for ``parser.add_subparsers()``: records each command a module adds, as a parser of its own."""

    def __init__(self):
        self.parsers: dict[str, argparse.ArgumentParser] = {}

    def add_parser(self, name, **kwargs):
        kwargs.pop("help", None)
        self.parsers[name] = argparse.ArgumentParser(prog=name, **kwargs)
        return self.parsers[name]


def test_the_commands_come_in_their_fixed_order_each_with_a_handler():
    parser = build_parser()
    usage = parser.format_usage().replace("\n", "")
    listed = usage[usage.index("{") + 1:usage.index("}")].replace(" ", "").split(",")
    assert listed == ORDER
    copy = parser.parse_args(["workspace", "copy", "a.sqlite", "b.sqlite"])
    assert callable(copy.func) and copy.func.__module__.startswith("engine.cli")


@pytest.mark.parametrize("module", COMMAND_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_each_module_registers_its_own_handlers(module):
    """A module's ``register`` adds commands whose handlers it defines (evidence adds verify and check from their
    own modules, each of which registers its own)."""
    rec = _Recorder()
    module.register(rec)
    own = {module.__name__} | ({check_commands.__name__, verify_commands.__name__}
                               if module.__name__.endswith("evidence_commands") else set())
    handlers = {name: sp.get_default("func") for name, sp in rec.parsers.items()}
    assert rec.parsers and all(callable(f) for n, f in handlers.items() if n != "workspace")
    assert {f.__module__ for f in handlers.values() if f} <= own
    assert set(rec.parsers) <= set(ORDER)


@pytest.mark.parametrize("command", ["stigma", "align", "stats"])
def test_a_target_path_that_does_not_validate_prints_its_report_and_exits_1(tmp_path, capsys, command):
    bad = tmp_path / "d.csv"
    bad.write_text("encounter_id,dialogue\n1,hello\n")
    assert main([command, str(bad)]) == 1
    out, err = capsys.readouterr()
    assert "INVALID" in out and str(bad) in out
    assert "INVALID" not in err and "Traceback" not in err
