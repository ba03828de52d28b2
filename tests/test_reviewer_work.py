"""A reviewer's work survives every command: re-import with --replace keeps reviews, adjudications, judge and
evidence results of unchanged summaries, re-attaches renamed ones, refuses to drop any without --force; delete and
replace write a backup first; backup / restore; summaries with identical content keep a result each."""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import BUNDLE, ROOT
from engine.data.backups import BackupError, anchor, backup, list_backups, prune, restore
from engine.cli import main
from engine.judge.runner import Judge, run_batch
from engine.judge.results import JudgeParams, JudgeResult
from engine.data.loading import load_paths
from engine.core.models import Dataset, Summary
from engine.data.reviews import ADJUDICATION, SPOT_CHECK, current_reviews, save_review
from engine.data.store import Store, StoreError
from fakes import EchoBackend, judge_result

FULL = {"cited": 4, "accurate": 5, "thorough": 3, "useful": 4, "organized": 4, "comprehensible": 5,
        "succinct": 4, "abstraction": "yes", "synthesized": 3, "stigmatizing_notes": "no",
        "stigmatizing_summary": "no"}


def _sample(store, name="s"):
    ds, _ = load_paths([BUNDLE], name=name)
    store.import_dataset(ds, name=name)
    return ds


def _work(store, ds, name="s"):
    """Two spot checks, an adjudication, a judge result and an evidence row on the first two summaries."""
    a, b = ds.summaries[0], ds.summaries[1]
    save_review(store, name, a.summary_id, "dr_a", SPOT_CHECK, FULL)
    save_review(store, name, a.summary_id, "dr_a", SPOT_CHECK, {**FULL, "cited": 2})  # an edit: history kept
    save_review(store, name, b.summary_id, "dr_b", ADJUDICATION, FULL)
    store.put_judge_result(name, judge_result(a.summary_id, a.case_id, {"accurate": 4.2}))
    store.put_evidence(name, "alignment", "k1", b.summary_id, "complete", '{"summary_id": "%s"}' % b.summary_id)


def _counts(store, name="s"):
    with store.connect() as con:
        did = con.execute("SELECT dataset_id FROM datasets WHERE name=?", (name,)).fetchone()[0]
        return {t: con.execute(f"SELECT COUNT(*) FROM {t} WHERE dataset_id=?", (did,)).fetchone()[0]
                for t in ("reviews", "judge_results", "evidence_results")}


def test_replace_with_the_same_content_keeps_every_review_and_result(store):
    ds = _sample(store)
    _work(store, ds)
    before = _counts(store)
    assert before == {"reviews": 11 + 1 + 11, "judge_results": 1, "evidence_results": 1}
    res = store.import_dataset(ds, name="s", replace=True)
    assert _counts(store) == before
    carried = {c.kind: c for c in res.carried}
    assert carried["reviews"].kept == 23 and carried["reviews"].dropped == 0
    assert carried["judge results"].kept == 1 and carried["evidence results"].kept == 1
    assert res.backup and os.path.exists(res.backup)
    cur = current_reviews(store, "s", ds.summaries[0].summary_id)
    assert {r.item: r.value for r in cur}["cited"] == 2.0  # the edit is still the current value


def test_renamed_summary_ids_are_reattached(store):
    ds = _sample(store)
    _work(store, ds)
    renamed = Dataset("s", ds.cases, [Summary("new-" + s.summary_id, s.case_id, s.text, s.generator_model,
                                              s.quality_group, s.prompt_variant) for s in ds.summaries],
                      [type(r)("new-" + r.summary_id, r.rater_id, r.item, r.value, r.rater_group) for r in ds.ratings])
    res = store.import_dataset(renamed, name="s", replace=True)
    carried = {c.kind: c for c in res.carried}
    assert carried["reviews"].reattached == 23 and carried["judge results"].reattached == 1
    sid = "new-" + ds.summaries[0].summary_id
    assert len(current_reviews(store, "s", sid)) == 11
    got = JudgeResult.from_json(store.judge_results("s")[0])
    assert got.summary_id == sid


def test_dropping_work_is_refused_without_force_and_names_the_count(store):
    ds = _sample(store)
    _work(store, ds)
    fewer = Dataset("s", ds.cases, ds.summaries[1:], [r for r in ds.ratings if r.summary_id != ds.summaries[0].summary_id])
    with pytest.raises(StoreError, match=r"would drop 12 reviews, 1 judge results"):
        store.import_dataset(fewer, name="s", replace=True)
    assert _counts(store)["reviews"] == 23  # nothing changed
    res = store.import_dataset(fewer, name="s", replace=True, force=True)
    assert {c.kind: c.dropped for c in res.carried}["reviews"] == 12
    assert _counts(store) == {"reviews": 11, "judge_results": 0, "evidence_results": 1}


def test_cli_replace_keeps_reviews_refuses_into_and_reports(tmp_path, capsys, monkeypatch):
    ws = tmp_path / "w" / "ws.sqlite"
    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(ws))
    assert main(["import", str(BUNDLE), "--name", "x"]) == 0
    store = Store(ws)
    ds = store.load_dataset("x")
    _work(store, ds, "x")
    capsys.readouterr()
    assert main(["import", str(BUNDLE), "--name", "x", "--replace"]) == 0
    out = capsys.readouterr().out
    assert "reviews: 23 kept, 0 re-attached, 0 dropped" in out and "backup of the workspace" in out
    assert _counts(store, "x")["reviews"] == 23
    assert main(["import", str(BUNDLE), "--name", "x", "--replace", "--into", "x"]) == 1
    assert "cannot be combined" in capsys.readouterr().err


def test_delete_writes_a_backup_and_restore_brings_the_reviews_back(store, capsys):
    ds = _sample(store)
    _work(store, ds)
    path = store.delete_dataset("s")
    assert "s" not in store.dataset_names() and os.path.exists(path)
    before = restore(store, path)
    assert "s" in store.dataset_names() and _counts(store)["reviews"] == 23
    assert os.path.exists(before)  # the state before the restore is itself backed up


def test_restore_refuses_a_file_that_is_not_a_workspace_and_leaves_it_alone(store, tmp_path):
    foreign = tmp_path / "other.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    data = foreign.read_bytes()
    with pytest.raises(BackupError, match="not a SumCheck workspace"):
        restore(store, foreign)
    assert foreign.read_bytes() == data


def test_backups_are_pruned_to_the_newest(store, monkeypatch):
    _sample(store)
    monkeypatch.setenv("SUMCHECK_BACKUPS_KEEP", "3")
    made = [backup(store, f"n{i}") for i in range(5)]
    kept = list_backups(anchor(store))
    assert [b.path for b in kept] == [str(p) for p in made[:1:-1]]
    assert prune(anchor(store), keep=1) == 2


def test_cli_backup_backups_restore(tmp_path, capsys, monkeypatch):
    ws = tmp_path / "ws.sqlite"
    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(ws))
    assert main(["import", str(BUNDLE), "--name", "x"]) == 0
    assert main(["backup", "--reason", "before lunch"]) == 0
    path = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["delete", "x", "--yes"]) == 0
    assert main(["backups"]) == 0
    assert "before-lunch" in capsys.readouterr().out
    assert main(["restore", path]) == 2  # needs --yes
    assert main(["restore", path, "--yes"]) == 0
    assert "x" in Store(ws).dataset_names()


# ------------------------------------------------------------------ identical content: a result per summary id


def test_identical_summaries_keep_their_own_judge_result(store, tmp_path, capsys, monkeypatch):
    ds, _ = load_paths([BUNDLE], name="d")
    case = ds.cases[0]
    text = "The patient is going home to stay with her son."
    same = [Summary(f"gen{i}", case.case_id, text, f"model-{i}") for i in range(3)]
    d = Dataset("d", [case], same)
    store.import_dataset(d, name="d")
    be = EchoBackend(FULL)
    results = list(run_batch(Judge(be, "sha", JudgeParams()), d, [s.summary_id for s in same], store=store,
                             dataset_name="d"))
    assert be.calls == 1  # computed once
    assert [r.summary_id for r in results] == ["gen0", "gen1", "gen2"]  # reported under each id
    assert sorted(JudgeResult.from_json(x).summary_id for x in store.judge_results("d")) == ["gen0", "gen1", "gen2"]
    monkeypatch.setenv("SUMCHECK_WORKSPACE", store.location)
    out = tmp_path / "e.jsonl"
    assert main(["judge-export", "d", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 3


def test_migration_keeps_results_and_splits_them_per_summary(tmp_path):
    s8 = Store(tmp_path / "w.sqlite", migrate_to=8)
    ds = _sample(s8)
    s8.put_judge_result("s", judge_result(ds.summaries[0].summary_id, ds.summaries[0].case_id, {}))
    s9 = Store(tmp_path / "w.sqlite")
    assert s9.schema_version() >= 9 and len(s9.judge_results("s")) == 1


# --------------------------------------------------------------------------------- kill -9 leaves it whole

KILL_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from engine.data.store import Store
from engine.data.loading import load_paths
from engine.data.backups import backup, restore
store = Store(sys.argv[2])
what = sys.argv[3]
ds, _ = load_paths([sys.argv[4]], name="s")
print("ready", flush=True)
while True:
    if what == "backup":
        backup(store, "loop")
    elif what == "restore":
        restore(store, sys.argv[5])
    elif what == "replace":
        store.import_dataset(ds, name="s", replace=True)
    elif what == "import":
        store.import_dataset(ds, name="other", replace="other" in store.dataset_names())
"""


@pytest.mark.parametrize("what", ["backup", "restore", "replace", "import"])
def test_kill_9_during_a_command_leaves_every_review(tmp_path, what):
    ws = tmp_path / "ws.sqlite"
    store = Store(ws)
    ds = _sample(store)
    _work(store, ds)
    good = backup(store, "good")
    for delay in (0.15, 0.4, 0.9):
        proc = subprocess.Popen([sys.executable, "-c", KILL_CHILD, str(ROOT), str(ws), what, str(BUNDLE), str(good)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        fresh = Store(ws)
        assert "s" in fresh.dataset_names()
        assert _counts(fresh)["reviews"] == 23, (what, delay)
        assert not [p for p in (tmp_path / "backups").glob("*.sqlite") if p.stat().st_size == 0]
    shutil.rmtree(tmp_path / "backups", ignore_errors=True)


def test_data_page_backs_up_and_restores():
    from streamlit.testing.v1 import AppTest

    from engine.data.settings import workspace_path

    st_ = Store(workspace_path())
    _sample(st_)
    at = AppTest.from_file(str(ROOT / "pages/data.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    next(b for b in at.button if b.key == "backup_now").click().run()
    assert any("Backup written" in s.value for s in at.success)
    st_.delete_dataset("s")
    at.run()
    at.selectbox(key="restore_pick").set_value(list_backups(st_.path)[-1].path).run()
    at.checkbox(key="restore_sure").check().run()
    next(b for b in at.button if b.key == "restore_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "s" in Store(workspace_path()).dataset_names()
