"""CLI: validate and import over the same engine functions; failures leave the workspace unchanged."""
import shutil
import subprocess
import sys

from conftest import BUNDLE, FORMATS, ROOT
from engine.cli import main
from engine.settings import workspace_path
from engine.store import Store


def test_validate_ok_and_bad(tmp_path, capsys):
    assert main(["validate", str(BUNDLE)]) == 0
    out = capsys.readouterr().out
    assert "result: OK" in out and "bundle table 'ratings'" in out
    bad = tmp_path / "d.csv"
    bad.write_text("encounter_id,dialogue\n1,hello\n")
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and str(bad) in out


def test_import_is_idempotent_and_all_or_nothing(tmp_path, capsys):
    assert main(["import", str(BUNDLE), "--name", "s"]) == 0
    assert "created" in capsys.readouterr().out
    assert main(["import", str(BUNDLE), "--name", "s"]) == 0
    assert "nothing changed" in capsys.readouterr().out
    store = Store(workspace_path())
    before = store.list_datasets()
    # a broken bundle: one bad score among thousands of good rows -> nothing imported
    b = tmp_path / "b"
    shutil.copytree(BUNDLE, b)
    text = (b / "ratings.csv").read_text().splitlines()
    text[-1] = text[-1].rsplit(",", 1)[0] + ",9"
    (b / "ratings.csv").write_text("\n".join(text) + "\n")
    assert main(["import", str(b), "--name", "broken"]) == 1
    assert "nothing was imported" in capsys.readouterr().out
    assert store.list_datasets() == before


def test_import_ratings_into_dataset(capsys):
    assert main(["import", str(FORMATS / "case_json"), "--name", "cj"]) == 0
    assert main(["import", str(FORMATS / "redcap_ratings.csv"), "--into", "cj"]) == 0
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "cj\t2 cases\t2 summaries" in out


def test_delete_needs_confirmation(capsys):
    main(["import", str(FORMATS / "dialogue.csv"), "--name", "d"])
    assert main(["delete", "d"]) == 2
    assert main(["delete", "d", "--yes"]) == 0
    assert Store(workspace_path()).list_datasets() == []


def test_module_entry_point(tmp_path):
    r = subprocess.run([sys.executable, "-m", "engine", "validate", str(FORMATS / "dialogue.csv")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and "dialogue CSV" in r.stdout


def test_judge_export_import_round_trip(tmp_path, capsys):
    """Results move between workspaces with their provenance; results of another prompt version are refused."""
    import json
    from engine.sample import SAMPLE_JUDGE

    assert main(["sample"]) == 0
    out = tmp_path / "j.jsonl"
    assert main(["judge-export", "sample", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 36 and lines == sorted(lines, key=lines.index)
    assert main(["import", str(BUNDLE), "--name", "copy"]) == 0
    assert main(["judge-import", "copy", str(out)]) == 0
    assert "36 judge results imported" in capsys.readouterr().out
    old = json.loads(SAMPLE_JUDGE.read_text().splitlines()[0])
    old["provenance"]["prompt_version"] = "pdsqi9-judge-v0+old"
    bad = tmp_path / "old.jsonl"
    bad.write_text(json.dumps(old) + "\n")
    assert main(["judge-import", "copy", str(bad)]) == 1
    assert "re-run the judge" in capsys.readouterr().err


# ------------------------------------------------------------------------------------- hostile input, busy workspace


def test_mapping_file_of_the_wrong_shape_is_reported_without_traceback(tmp_path, capsys):
    bad = tmp_path / "mapping.json"
    bad.write_text('{"items": ["accurate"], "ignore": "x"}')
    assert main(["validate", str(FORMATS / "redcap_ratings.csv"), "--mapping", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"error: mapping file {bad}: key 'items' must be an object" in err and "Traceback" not in err
    bad.write_text('[1, 2]')
    r = subprocess.run([sys.executable, "-m", "engine", "validate", str(FORMATS / "redcap_ratings.csv"),
                        "--mapping", str(bad)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1 and "must hold one JSON object" in r.stderr and "Traceback" not in r.stderr


def test_validate_a_fifo_does_not_hang(tmp_path, capsys):
    import os

    fifo = tmp_path / "cases.csv"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "engine", "validate", str(fifo)], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "named pipe (FIFO), not a regular file" in r.stdout


def test_busy_workspace_exits_2_with_a_message(tmp_path, monkeypatch, capsys):
    import sqlite3

    Store(workspace_path())  # create it
    monkeypatch.setenv("SUMCHECK_BUSY_TIMEOUT", "0.3")
    other = sqlite3.connect(workspace_path(), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        assert main(["import", str(FORMATS / "dialogue.csv"), "--name", "d"]) == 2
        err = capsys.readouterr().err
        assert f"error: the workspace {workspace_path()} is busy: another SumCheck process or program is writing " \
               "to it. Wait a moment and retry." in err
        r = subprocess.run([sys.executable, "-m", "engine", "import", str(FORMATS / "dialogue.csv"), "--name", "d"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "is busy" in r.stderr and "Traceback" not in r.stderr
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert main(["import", str(FORMATS / "dialogue.csv"), "--name", "d"]) == 0


def test_judge_import_reports_every_bad_line_and_writes_nothing(tmp_path, capsys):
    import json

    from test_hostile_input import judge_lines

    assert main(["import", str(BUNDLE), "--name", "s"]) == 0
    store = Store(workspace_path())
    sids = [s.summary_id for s in store.load_dataset("s").summaries[:2]]
    lines = judge_lines(store, "s", sids)
    bad = json.loads(lines[1])
    bad["items"]["accurate"]["median"] = 99
    f = tmp_path / "r.jsonl"
    f.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    capsys.readouterr()
    assert main(["judge-import", "s", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"{f}, row 2, field 'items.accurate.median'" in err and "nothing was imported" in err
    assert store.judge_results("s") == []
    f.write_text("\n".join(lines) + "\n")
    assert main(["judge-import", "s", str(f)]) == 0
    assert "2 judge results imported" in capsys.readouterr().out
