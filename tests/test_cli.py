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
