"""Runs recorded in the workspace, on SQLite and on PostgreSQL: seen while they run, cancelled from elsewhere,
joined instead of started twice, and never shown running once their process is gone."""
from __future__ import annotations

import threading
import time

from engine.core.jobs import CANCELLED, DONE, Job, check_cancelled
from engine.data import job_log as jr
from engine.data.job_log import job_records, recorded, request_cancel, running_for, start_or_join


def _slow(gate: threading.Event):
    def work(job: Job) -> None:
        job.report(done=0, item="s1", step="working")
        while not gate.wait(0.05):
            check_cancelled()
        job.report(done=1)
    return work


def test_a_run_is_recorded_with_its_progress_and_how_it_ended(store):
    gate = threading.Event()
    job = recorded(Job("Claim verification", 1, _slow(gate)), store, "d", ["s1"], config="cfg")
    job.owner = "browser window abc"
    job.start()
    deadline = time.time() + 10
    while not [r for r in running_for(store, "d", "s1") if r.text.startswith("Claim verification: summary 1/1")]:
        assert time.time() < deadline, store.job_rows("d")
        time.sleep(0.2)
    rec = running_for(store, "d", "s1")[0]
    assert rec.owner == "browser window abc" and rec.summary_ids == ("s1",) and rec.running
    assert "browser window abc" in rec.describe() and running_for(store, "d", "other") == []
    gate.set()
    assert job.wait(10)
    done = job_records(store, "d")[0]
    assert done.state == DONE and "finished" in done.text and job_records(store, "d", running_only=True) == []


def test_a_cancel_asked_from_elsewhere_reaches_the_run_at_its_heartbeat(store, monkeypatch):
    gate = threading.Event()
    job = recorded(Job("MED-OMIT", 1, _slow(gate)), store, "d", ["s1"])
    job.start()
    time.sleep(0.2)
    rec = job_records(store, "d", running_only=True)[0]
    monkeypatch.setattr(jr, "_LOCAL", {})  # as another process sees it: only the workspace reaches the run
    store.ask_job_cancel(rec.job_id)
    assert job.wait(10)  # the heartbeat read the request and cancelled the job
    assert job.status().state == CANCELLED
    assert job_records(store, "d")[0].state == CANCELLED


def test_the_same_work_joins_the_running_run_instead_of_starting_again(store):
    gate = threading.Event()
    first = recorded(Job("Judge", 1, _slow(gate)), store, "d", ["s1", "s2"], config="k")
    started, other = start_or_join(first)
    assert started is first and other is None
    again = recorded(Job("Judge", 1, _slow(gate)), store, "d", ["s2", "s1"], config="k")
    mine, rec = start_or_join(again)
    assert mine is first and rec.job_id == first.record_id  # this process: the page attaches to it
    different = recorded(Job("Judge", 1, _slow(gate)), store, "d", ["s1", "s2"], config="another model")
    mine2, rec2 = start_or_join(different)
    assert mine2 is different and rec2 is None
    gate.set()
    assert first.wait(10) and different.wait(10)


def test_a_run_of_another_process_is_followed_not_started(store, monkeypatch):
    gate = threading.Event()
    running = recorded(Job("Check", 1, _slow(gate)), store, "d", ["s1"])
    running.start()
    monkeypatch.setattr(jr, "_LOCAL", {})
    twin = recorded(Job("Check", 1, _slow(gate)), store, "d", ["s1"])
    mine, rec = start_or_join(twin)
    assert mine is None and rec.job_id == running.record_id and twin.record_id == ""
    gate.set()
    assert running.wait(10)


def test_a_silent_run_on_another_host_is_stopped_with_the_reason(store):
    store.add_job({"job_id": "far", "dataset": "d", "kind": "Judge", "work_key": "k", "summary_ids": ["s1"],
                   "label": "", "owner": "python -m engine judge d", "host": "another-host", "pid": 1,
                   "started_at": "2026-11-28 10:00:00 UTC", "heartbeat": time.time() - jr.STALE_S - 5,
                   "state": "running", "progress": {"fraction": 0.3, "text": "Judge: summary 1/1"}, "reason": "",
                   "cancel_requested": 0, "ended_at": ""})
    store.add_job({"job_id": "near", "dataset": "d", "kind": "Judge", "work_key": "k2", "summary_ids": ["s1"],
                   "label": "", "owner": "python -m engine judge d", "host": "another-host", "pid": 1,
                   "started_at": "2026-11-28 10:00:01 UTC", "heartbeat": time.time(),
                   "state": "running", "progress": {"fraction": 0.3, "text": "Judge: summary 1/1"}, "reason": "",
                   "cancel_requested": 0, "ended_at": ""})
    recs = {r.job_id: r for r in job_records(store, "d")}
    assert recs["far"].state == "stopped" and recs["far"].reason.startswith("no sign of life for")
    assert recs["near"].running  # another host, heard from just now: it may well run
    request_cancel(store, "near")
    assert job_records(store, "d", running_only=True)[0].cancel_requested
