"""A team's workspace on PostgreSQL: reached by URL, never holding a password, copied to and from SQLite without a
difference, and losing nothing when reviewers and judge workers write at once or a writer is killed."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUNDLE, ROOT
from engine.cli import main
from engine.data.loading import load_paths
from engine.data.pg import check_url, is_url, redact
from engine.data.reviews import ADJUDICATION, SPOT_CHECK, current_reviews
from engine.data.schema import StoreError
from engine.data.settings import AppSettings, SettingsError, workspace_path
from engine.data.store import Store
from engine.data.workspace_copy import copy_workspace, table_digest, columns
from engine.sample import ensure_sample


def _digests(store) -> dict:
    from engine.data.workspace_copy import tables

    with store.connect() as con:
        out = {}
        for t in tables(store):
            cols = [c for c in columns(con, t) if c != "rowid"]
            out[t] = table_digest(con, t, cols)
        return out


def test_urls_are_told_apart_and_passwords_refused(tmp_path, monkeypatch):
    assert is_url("postgresql://ward@db.hospital:5432/sumcheck") and is_url("postgres://h/db")
    assert not is_url(tmp_path / "w.sqlite") and not is_url("postgresql:/x")
    assert redact("postgresql://ward:s3cret@db:5432/sumcheck?sslmode=require") == "postgresql://ward@db:5432/sumcheck"
    problem = check_url("postgresql://ward:s3cret@db:5432/sumcheck")
    assert "pgpass" in problem and "s3cret" not in problem
    with pytest.raises(StoreError) as exc:
        Store("postgresql://ward:s3cret@127.0.0.1:1/sumcheck")
    assert "s3cret" not in str(exc.value)
    with pytest.raises(SettingsError) as exc:
        AppSettings(workspace_path="postgresql://ward:s3cret@db/sumcheck").validate()
    assert "s3cret" not in str(exc.value)
    assert "no database" in check_url("postgresql://ward@db:5432")
    # the address stays an address: no folder named "postgresql:" is made
    monkeypatch.setenv("SUMCHECK_WORKSPACE", "postgresql://ward@127.0.0.1:1/sumcheck")
    assert workspace_path() == "postgresql://ward@127.0.0.1:1/sumcheck"
    monkeypatch.chdir(tmp_path)
    assert main(["datasets"]) != 0
    assert not any(p.name.startswith("postgresql") for p in tmp_path.rglob("*"))


def test_unreachable_server_says_so_without_a_password(pg_server, monkeypatch):
    monkeypatch.setenv("PGPASSFILE", str(pg_server.passfile))
    with pytest.raises(StoreError) as exc:
        Store(f"postgresql://sumcheck@127.0.0.1:{pg_server.port}/no_such_database")
    text = str(exc.value)
    assert "no_such_database" in text and pg_server.password not in text


def test_sample_workspace_copied_to_postgresql_and_back_is_identical(tmp_path, pg_url, capsys):
    src = Store(tmp_path / "team.sqlite")
    ensure_sample(src)
    assert src.judge_results("sample")  # the shipped judge results and evidence travel too
    report = copy_workspace(src, pg := Store(pg_url))
    assert report.ok and report.rows > 1000 and not report.replaced
    back = Store(tmp_path / "back.sqlite")
    copy_workspace(pg, back)
    assert _digests(back) == _digests(src)
    assert back.load_dataset("sample") == src.load_dataset("sample") == pg.load_dataset("sample")
    assert pg.judge_results("sample") == src.judge_results("sample")
    # a non-empty target is refused without --force, replaced with it
    assert main(["workspace", "copy", str(tmp_path / "team.sqlite"), pg_url]) != 0
    assert "not empty" in capsys.readouterr().err
    assert main(["workspace", "copy", str(tmp_path / "team.sqlite"), pg_url, "--force"]) == 0
    out = capsys.readouterr().out
    assert "every table identical to its source" in out and "previous content replaced" in out
    # ids continue after the copied ones: a new dataset gets a fresh id
    ds, _ = load_paths([BUNDLE], name="again")
    pg.import_dataset(ds, name="again")
    assert {d.name for d in pg.list_datasets()} == {"sample", "again"}
    pg.close()


def test_backup_and_restore_of_a_postgresql_workspace(pg_url):
    from engine.data.backups import anchor, backup, list_backups, restore

    store = Store(pg_url)
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    before = store.load_dataset("s")
    assert before.cases and before.summaries and before.ratings
    path = store.delete_dataset("s")  # a backup is written first, into an SQLite file
    assert Path(path).is_file() and "s" not in store.dataset_names()
    assert [b.path for b in list_backups(anchor(store))] == [path]
    restore(store, Path(path))
    assert "s" in store.dataset_names() and store.load_dataset("s") == before
    assert len(list_backups(anchor(store))) == 2  # the state before the restore was kept too
    assert backup(store, "manual").is_file()
    store.close()


WORKER = r"""
import json, os, sys, time
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "tests")]
from engine.data.store import Store
from engine.data.reviews import save_review
role, n = sys.argv[2], int(sys.argv[3])
store = Store(os.environ["SUMCHECK_WORKSPACE"])
ids = json.loads(sys.argv[4])
print("ready", flush=True)
while not os.path.exists(sys.argv[5]):
    time.sleep(0.01)
if role.startswith("reviewer"):
    for sid in ids:
        save_review(store, "s", sid, role, "spot_check", {"cited": 1 + n % 5, "accurate": 2, "abstraction": "yes"})
        save_review(store, "s", sid, role, "adjudication", {"thorough": 3})
else:
    from fakes import judge_result
    for sid in ids:
        store.put_judge_result("s", judge_result(sid, sid.rsplit("-s", 1)[0], {"thorough": 3.0 + n}))
print("done", flush=True)
"""


def test_eight_reviewers_and_two_judge_workers_at_once_lose_nothing(pg_url, tmp_path):
    store = Store(pg_url)
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    ids = [s.summary_id for s in ds.summaries]
    go = tmp_path / "go"
    env = {**os.environ, "SUMCHECK_WORKSPACE": pg_url}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(ROOT), f"reviewer-{i}", str(i), json.dumps(ids),
                               str(go)], env=env, stdout=subprocess.PIPE, text=True) for i in range(8)]
    procs += [subprocess.Popen([sys.executable, "-c", WORKER, str(ROOT), "judge", str(i), json.dumps(ids), str(go)],
                               env=env, stdout=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go.touch()  # all ten start writing at the same moment
    for p in procs:
        assert p.wait(timeout=300) == 0
    reviews = current_reviews(store, "s")
    per = {}
    for r in reviews:
        per.setdefault((r.summary_id, r.reviewer, r.kind, r.item), []).append(r)
    assert len(reviews) == 8 * len(ids) * 4 and all(len(v) == 1 for v in per.values())  # each review exactly once
    assert {r.reviewer for r in reviews} == {f"reviewer-{i}" for i in range(8)}
    with store.connect() as con:
        assert con.execute("SELECT COUNT(*) FROM reviews").fetchone()[0] == 8 * len(ids) * 4
    results = [json.loads(r) for r in store.judge_results("s", latest_only=False)]
    # both workers judged every summary in the same configuration: one row per summary, never two
    assert len(results) == len(ids) and sorted(r["summary_id"] for r in results) == sorted(ids)
    store.close()


KILLED = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from engine.data.store import Store
store = Store(os.environ["SUMCHECK_WORKSPACE"])
with store.transaction() as con:
    con.execute("UPDATE summaries SET text = 'HALF WRITTEN' WHERE summary_id = ?", (sys.argv[2],))
    con.execute("INSERT INTO ratings VALUES ((SELECT dataset_id FROM datasets), ?, 'ghost', 'x', 'cited', 1)",
                (sys.argv[2],))
    print("inside", flush=True)
    time.sleep(600)
"""


def test_a_writer_killed_mid_transaction_leaves_nothing_half_done(pg_url):
    store = Store(pg_url)
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    sid = ds.summaries[0].summary_id
    before = store.load_dataset("s")
    p = subprocess.Popen([sys.executable, "-c", KILLED, str(ROOT), sid],
                         env={**os.environ, "SUMCHECK_WORKSPACE": pg_url}, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "inside"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    t0 = time.monotonic()
    from engine.data.reviews import save_review

    save_review(store, "s", sid, "Dr B", SPOT_CHECK, {"cited": 4})  # the killed writer's lock is gone
    assert time.monotonic() - t0 < 10
    assert store.load_dataset("s") == before  # no half-written summary, no ghost rating
    assert [r.reviewer for r in current_reviews(store, "s", sid)] == ["Dr B"]
    store.close()


def test_cli_runs_the_same_on_postgresql(pg_url, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("SUMCHECK_WORKSPACE", pg_url)
    assert main(["import", str(BUNDLE), "--name", "team"]) == 0
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "team" in out
    assert main(["stats", "team", "--boot", "20", "--out", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())
    assert main(["delete", "team", "--yes"]) == 0
    assert "backup of the workspace before the delete" in capsys.readouterr().out


PAGES = ["pages/start.py", "pages/case.py", "pages/data.py", "pages/evidence.py", "pages/judge.py",
         "pages/agreement.py", "pages/review.py", "pages/lexicon.py", "pages/settings.py"]


def test_every_page_renders_on_a_postgresql_workspace(pg_url, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SUMCHECK_WORKSPACE", pg_url)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    at.switch_page("pages/agreement.py").run()
    assert any("ICC(3,k)" in d.value.columns for d in at.dataframe)  # the sample's panel, read from the server
    s = Store(pg_url)
    assert "sample" in s.dataset_names() and s.judge_results("sample")
    s.close()


# ------------------------------------------------------------------------------ reviewers and blinded assignment

def test_plan_gives_every_summary_two_reviewers_balanced_and_stratified():
    from collections import Counter

    from engine.core.models import Summary
    from engine.data.assignments import plan_assignments, stratum_of

    for n, k, groups in ((36, 3, 2), (37, 4, 3), (10, 5, 1), (101, 7, 4)):
        summaries = [Summary(f"s{i}", f"c{i // 3}", "t", f"gen-{i % groups}", ("good", "poor")[i % 2])
                     for i in range(n)]
        names = [f"Dr {chr(65 + j)}" for j in range(k)]
        plan = plan_assignments(summaries, names, per_summary=2, seed=7)
        per_summary = Counter(a.summary_id for a in plan)
        assert set(per_summary.values()) == {2} and len(per_summary) == n
        assert all(len({a.reviewer for a in plan if a.summary_id == s}) == 2 for s in per_summary)  # distinct
        load = Counter(a.reviewer for a in plan)
        assert max(load.values()) - min(load.values()) <= 1  # balanced
        for stratum in {stratum_of(s) for s in summaries}:  # each reviewer sees each kind of summary
            size = sum(1 for s in summaries if stratum_of(s) == stratum)
            got = Counter(a.reviewer for a in plan if a.stratum == stratum)
            assert max(got.values()) <= -(-2 * size // k) + 1
        assert plan == plan_assignments(summaries, names, per_summary=2, seed=7)  # reproducible
    with pytest.raises(ValueError, match="at least 2 reviewers"):
        plan_assignments(summaries, ["Dr A"])


def test_queue_shows_only_the_reviewers_summaries_and_disagreements_go_to_adjudication(store):
    from engine.data.assignments import (assignments, disagreements, plan_assignments, reviewer_queue, reviewers,
                                         save_plan)
    from engine.data.reviews import save_review

    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    plan = plan_assignments(ds.summaries, ["Dr A", "Dr B", "Dr C"], per_summary=2)
    assert save_plan(store, "s", plan) == 2 * len(ds.summaries)
    assert reviewers(store, "s") == ["Dr A", "Dr B", "Dr C"]
    mine = reviewer_queue(store, "s", "Dr A")
    assert {e.summary_id for e in mine} == {a.summary_id for a in plan if a.reviewer == "Dr A"}
    shared = next(s for s in ds.summaries
                  if {a.reviewer for a in plan if a.summary_id == s.summary_id} == {"Dr A", "Dr B"}).summary_id
    save_review(store, "s", shared, "Dr A", SPOT_CHECK, {"cited": 5, "accurate": 4, "abstraction": "yes"})
    assert next(e for e in reviewer_queue(store, "s", "Dr A") if e.summary_id == shared).done
    assert reviewer_queue(store, "s", "Dr A")[-1].done  # the done ones last
    save_review(store, "s", shared, "Dr B", SPOT_CHECK, {"cited": 2, "accurate": 3, "abstraction": "no"})
    queue = disagreements(store, "s", margin=1)
    assert [(d.summary_id, d.item) for d in queue] == [(shared, "cited"), (shared, "abstraction")]
    assert queue[0].values == {"Dr A": 5.0, "Dr B": 2.0} and queue[0].spread == 3
    save_review(store, "s", shared, "Dr C", ADJUDICATION, {"cited": 4})
    assert [(d.summary_id, d.item) for d in disagreements(store, "s", margin=1)] == [(shared, "abstraction")]
    # a new plan replaces the old one; a plan naming an unknown summary changes nothing
    from engine.core.models import Summary

    with pytest.raises(StoreError, match="not in dataset"):
        save_plan(store, "s", plan_assignments([Summary("nope", "c", "t")], ["Dr A", "Dr B"]))
    assert len(assignments(store, "s")) == 2 * len(ds.summaries)


def test_two_reviewers_rate_blind_on_the_server_and_the_adjudication_queue_shows_their_disagreement(pg_url,
                                                                                                       monkeypatch):
    """Two sessions of the Spot-check page on one PostgreSQL workspace, as two assigned reviewers: the second does
    not see the first one's scores until saving their own, and the adjudicator's queue then lists the item."""
    from streamlit.testing.v1 import AppTest

    from engine.data.assignments import plan_assignments, save_plan

    monkeypatch.setenv("SUMCHECK_WORKSPACE", pg_url)
    store = Store(pg_url)
    ensure_sample(store)
    ds = store.load_dataset("sample")
    save_plan(store, "sample", plan_assignments(ds.summaries, ["Dr A", "Dr B"], per_summary=2))
    sid = ds.summaries[0].summary_id

    def session():
        at = AppTest.from_file(str(ROOT / "pages/review.py"), default_timeout=120)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    def act(at, widget):
        widget.run()
        assert not at.exception, [e.value for e in at.exception]

    def rate(at, who, cited, abstraction, synthesized):
        act(at, next(t for t in at.text_input if t.label == "Reviewer").input(who))
        assert any(e.label == "Your assigned summaries: 36 to do of 36" for e in at.expander)
        shown = " ".join([m.value for m in at.markdown] + [i.value for i in at.info])
        assert "Blinded" in shown and "Dr A" not in shown and "LLM median" not in shown
        assert not [d for d in at.dataframe if "rater" in d.value.columns]
        next(r for r in at.radio if r.label == "Cited value").set_value(str(cited))
        next(r for r in at.radio if r.label == "Abstraction needed value").set_value(abstraction)
        next(r for r in at.radio if r.label == "Synthesized value").set_value(synthesized)
        act(at, next(b for b in at.button if b.label == "Save review").click())
        assert any("Saved 3 item(s)" in s.value for s in at.success), [e.value for e in at.error]

    a, b = session(), session()
    assert next(t for t in a.text_input if t.label == "Reviewer").value == "sumcheck"  # the server's role
    assert any(c.value.startswith("Summary 1 of 36 ·") for c in a.caption)  # not in the plan: every summary
    rate(a, "Dr A", 5, "yes", "4")
    assert any(c.value.startswith("Summary 1 of 36 assigned to you") for c in a.caption)  # Next walks the plan
    rate(b, "Dr B", 2, "no", "NA")  # blind to Dr A's scores until saved
    raters = next(d.value for d in b.dataframe if "rater" in d.value.columns)
    assert {"Dr A", "Dr B"} <= set(raters["rater"])  # revealed after saving
    adjudicator = session()
    act(adjudicator, next(t for t in adjudicator.text_input if t.label == "Reviewer").input("Dr C"))
    act(adjudicator, next(r for r in adjudicator.radio if r.label == "Kind").set_value("adjudication"))
    queue = next(d.value for d in adjudicator.dataframe if "spread" in d.value.columns)
    rows = {(r["summary"], r["item"]): r["reviewers"] for _, r in queue.iterrows()}
    assert rows[(sid, "Cited")] == "Dr A: 5, Dr B: 2" and rows[(sid, "Abstraction needed")] == "Dr A: 1, Dr B: 0"
    store.close()


def test_redcap_export_with_dictionary_reimports_unchanged(store, tmp_path, monkeypatch, capsys):
    import csv
    import io

    from engine.data.redcap import DICTIONARY_COLUMNS, INSTRUMENT, export_redcap, rater_id
    from engine.data.reviews import save_review

    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    a, b = ds.summaries[0].summary_id, ds.summaries[1].summary_id
    save_review(store, "s", a, "Dr A", SPOT_CHECK, {"cited": 5, "accurate": 4, "abstraction": "yes", "synthesized": 3})
    save_review(store, "s", a, "Dr B", SPOT_CHECK, {"cited": 2, "abstraction": "no", "synthesized": "NA",
                                                    "stigmatizing_summary": "yes"})
    save_review(store, "s", b, "=Dr C", SPOT_CHECK, {"thorough": 1})
    save_review(store, "s", b, "Dr A", ADJUDICATION, {"thorough": 2})  # not a team rating: not exported
    out = export_redcap(store, "s")
    assert (out.records, out.rows) == (2, 3)
    data = list(csv.DictReader(io.StringIO(out.data_csv)))
    assert [(r["record_id"], r["redcap_repeat_instrument"], r["redcap_repeat_instance"], r["reviewer"])
            for r in data] == [(a, INSTRUMENT, "1", "Dr_A"), (a, INSTRUMENT, "2", "Dr_B"), (b, INSTRUMENT, "1", "Dr_C")]
    assert data[1]["pdsqi_synthesized"] == "NA" and data[1]["pdsqi_stigmatizing_summary"] == "1"
    assert all(r[f"{INSTRUMENT}_complete"] == "2" for r in data)
    dictionary = list(csv.reader(io.StringIO(out.dictionary_csv)))
    assert tuple(dictionary[0]) == DICTIONARY_COLUMNS and all(len(r) == 18 for r in dictionary)
    fields = {r[0]: r for r in dictionary[1:]}
    # every data column is a dictionary field or a REDCap system column, and every value is one of its choices
    assert set(data[0]) - set(fields) == {"redcap_repeat_instrument", "redcap_repeat_instance", f"{INSTRUMENT}_complete"}
    for r in data:
        for name, value in r.items():
            if value and fields.get(name, [""] * 6)[3] == "radio":
                assert value in [c.split(",")[0].strip() for c in fields[name][5].split("|")], (name, value)
    assert fields["pdsqi_synthesized"][11] == "[pdsqi_abstraction] = '1'"
    # the same file comes back through the wide-ratings loader, with no mapping
    path = tmp_path / "team_redcap.csv"
    path.write_text(out.data_csv, encoding="utf-8")
    back, _ = load_paths([path], context=store.load_dataset("s"))
    sent = {(r.summary_id, rater_id(r.reviewer), r.item, r.value) for r in current_reviews(store, "s")
            if r.kind == SPOT_CHECK}
    assert {(x.summary_id, x.rater_id, x.item, x.value) for x in back.ratings} == sent
    monkeypatch.setenv("SUMCHECK_WORKSPACE", store.location)
    assert main(["redcap-export", "s", "--out", str(tmp_path / "rc")]) == 0
    files = capsys.readouterr().out.split()
    assert Path(files[0]).read_text(encoding="utf-8") == out.data_csv
    assert main(["import", files[0], "--into", "s"]) == 0
    assert len([x for x in store.load_dataset("s").ratings if x.rater_id in ("Dr_A", "Dr_B", "Dr_C")]) == len(sent)


def test_text_postgresql_cannot_hold_is_refused_whole(pg_url):
    """A NUL character is valid in an SQLite text but not in PostgreSQL: the import is refused with the reason and
    nothing of it is stored."""
    from engine.core.models import Case, Dataset, Note, Summary

    store = Store(pg_url)
    ds = Dataset("n", [Case("c1", "Medicine", (Note("1", "fine"), Note("2", "bad \x00 byte")))],
                 [Summary("c1-s1", "c1", "ok <NoteID:1>")], [])
    with pytest.raises(StoreError, match="NUL character"):
        store.import_dataset(ds)
    assert store.dataset_names() == []
    store.close()


@pytest.mark.requires_chromium
def test_two_browser_sessions_review_blind_and_the_adjudication_queue_shows_their_disagreement(pg_url, pg_server,
                                                                                              tmp_path):
    """Headless Chromium, two browser contexts (two sessions, two reviewers) on one app served from a PostgreSQL
    workspace: the second reviewer sees the first one's scores only after saving, and the adjudication queue then
    lists their disagreement."""
    from conftest import CHROMIUM, LAUNCH_ARGS, Watch, _settle, _start, _stop

    from playwright.sync_api import sync_playwright

    from engine.data.assignments import plan_assignments, save_plan

    store = Store(pg_url)
    ensure_sample(store)
    ds = store.load_dataset("sample")
    save_plan(store, "sample", plan_assignments(ds.summaries, ["Dr A", "Dr B"], per_summary=2))
    store.close()
    proc, url = _start(tmp_path, {"SUMCHECK_WORKSPACE": pg_url, "PGPASSFILE": str(pg_server.passfile)})
    keys = {"Dr A": ["5", "5", "3", "4", "4", "5", "4", "y", "3", "n", "n"],
            "Dr B": ["2", "5", "3", "4", "4", "5", "4", "y", "3", "n", "n"]}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            pages, watches = {}, []
            for who in keys:
                page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
                watches.append(Watch(page, url))
                page.goto(url + "/review", wait_until="domcontentloaded")
                page.get_by_text("Keyboard shortcuts").first.wait_for(timeout=90_000)
                page.get_by_label("Reviewer").fill(who)
                page.keyboard.press("Enter")
                page.get_by_text("Your assigned summaries: 36 to do of 36").first.wait_for(timeout=60_000)
                pages[who] = page

            def rate(who):
                page = pages[who]
                page.wait_for_function("() => !!window.__sumcheckKeyHandler && document.querySelectorAll("
                                       "'[data-testid=stForm] [data-testid=stRadio]').length === 11", timeout=60_000)
                page.evaluate("() => document.activeElement && document.activeElement.blur()")
                for i, key in enumerate(keys[who]):
                    page.keyboard.press(key)
                    want = {"y": "yes", "n": "no"}.get(key, key)
                    page.wait_for_function("([i, want]) => { const g = document.querySelectorAll("
                                           "'[data-testid=stForm] [data-testid=stRadio]')[i]; const c = g && "
                                           "g.querySelector('input:checked'); return !!c && c.closest('label')"
                                           ".innerText.trim().split(' ')[0] === want; }", arg=[i, want],
                                           timeout=30_000)
                page.keyboard.press("Control+Enter")
                page.get_by_text("Saved 11 item(s)").first.wait_for(timeout=60_000)

            rate("Dr A")
            b = pages["Dr B"]
            b.reload(wait_until="domcontentloaded")  # Dr A has saved; Dr B's page is drawn afresh
            b.get_by_label("Reviewer").fill("Dr B")
            b.keyboard.press("Enter")
            b.get_by_text("Your assigned summaries").first.wait_for(timeout=60_000)
            _settle(b)
            blinded_before = b.get_by_text("Blinded: the other raters").count() > 0
            saw_a_before = b.get_by_text("Dr A", exact=True).count() > 0  # text, or a table's grid cell
            rate("Dr B")
            b.get_by_text("Rater scores (PDSQI-9)").first.wait_for(timeout=60_000)
            b.get_by_text("Dr A", exact=True).first.wait_for(state="attached", timeout=60_000)
            saw_a_after = b.get_by_text("Dr A", exact=True).count() > 0
            b.get_by_text("Adjudicated final score").first.click()
            b.get_by_text("Adjudication queue").first.wait_for(timeout=60_000)
            b.get_by_text("Adjudication queue").first.click()
            b.get_by_text("Dr A: 5, Dr B: 2").first.wait_for(state="attached", timeout=60_000)  # a grid cell
            browser.close()
    finally:
        _stop(proc)
    assert blinded_before and not saw_a_before and saw_a_after
    assert not any(w.outside for w in watches), [w.outside for w in watches]
