"""Workspaces that cannot be written, and files that are not workspaces: a clear message on every command, never a
traceback, and a foreign file is never modified."""
import sqlite3
import subprocess
import sys

import pytest

from conftest import BUNDLE, ROOT
from engine.data.store import Store, StoreError, StoreReadOnly


def _cli(*args, env=None):
    import os

    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def read_only_workspace(tmp_path):
    """A workspace with the sample in it, on a read-only bind mount (what a non-root user sees on a file they may
    not write; permissions do not stop root, a read-only mount does)."""
    src, mnt = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    mnt.mkdir()
    st = Store(src / "ws.sqlite")
    ds_ok = _cli("import", str(BUNDLE), "--name", "s", env={"SUMCHECK_WORKSPACE": str(src / "ws.sqlite")})
    assert ds_ok.returncode == 0, ds_ok.stderr
    del st
    if subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True).returncode:
        pytest.skip("a read-only bind mount needs root and mount rights")
    subprocess.run(["mount", "-o", "remount,bind,ro", str(mnt)], check=True)
    yield mnt / "ws.sqlite"
    subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("args", [["import", str(BUNDLE), "--name", "t"], ["delete", "s", "--yes"], ["sample"],
                                  ["judge-import", "s", str(BUNDLE / "cases.csv")], ["backup"],
                                  ["import", str(BUNDLE), "--name", "s", "--replace"]])
def test_every_writing_command_on_a_read_only_workspace_says_so(read_only_workspace, args):
    r = _cli(*args, env={"SUMCHECK_WORKSPACE": str(read_only_workspace)})
    assert r.returncode in (1, 2), (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    assert "read-only" in (r.stderr + r.stdout).lower() or "permission" in (r.stderr + r.stdout).lower()


def test_a_read_only_workspace_can_still_be_read(read_only_workspace):
    r = _cli("datasets", env={"SUMCHECK_WORKSPACE": str(read_only_workspace)})
    assert r.returncode == 0 and r.stdout.startswith("s\t"), r.stderr
    store = Store(read_only_workspace)
    assert store.read_only and store.load_dataset("s").summaries
    with pytest.raises(StoreReadOnly, match="read-only"):
        store.delete_dataset("s")


def test_a_foreign_sqlite_file_is_refused_and_not_modified(tmp_path):
    f = tmp_path / "other.db"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE patients (id INTEGER)")
    con.commit()
    con.close()
    before = f.read_bytes()
    with pytest.raises(StoreError, match="not a SumCheck workspace.*not changed"):
        Store(f)
    assert f.read_bytes() == before
    con = sqlite3.connect(f)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # never switched to WAL
    con.close()
    r = _cli("datasets", env={"SUMCHECK_WORKSPACE": str(f)})
    assert r.returncode == 1 and "not a SumCheck workspace" in r.stderr and "Traceback" not in r.stderr


def test_errors_name_the_real_cause(tmp_path):
    loop = tmp_path / "loop.sqlite"
    loop.symlink_to(loop)
    with pytest.raises(StoreError, match="symlink loop"):
        Store(loop)
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a workspace database"):
        Store(junk)


def test_validate_and_import_treat_an_unreadable_settings_file_alike(tmp_path):
    cfg = tmp_path / "settings.json"
    cfg.write_text("{not json")
    env = {"SUMCHECK_CONFIG": str(cfg), "SUMCHECK_WORKSPACE": str(tmp_path / "ws.sqlite")}
    v = _cli("validate", str(BUNDLE), env=env)
    i = _cli("import", str(BUNDLE), env=env)
    assert v.returncode == i.returncode == 1
    assert "unreadable" in v.stderr and "unreadable" in i.stderr
