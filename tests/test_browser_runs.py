"""A run started from the command line, seen and cancelled from a browser window: the Case page of a second
session shows its progress (and the sidebar lists it on every page), and its Cancel stops the command."""
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import CHROMIUM, LAUNCH_ARGS, ROOT, _start, _stop

pytestmark = pytest.mark.requires_chromium


def test_a_cli_run_shows_on_the_case_page_of_another_session_and_is_cancelled_there(tmp_path):
    from playwright.sync_api import sync_playwright

    from engine.llm.modelfiles import SMOKE_EMBEDDED, embedded_model_path

    proc, url = _start(tmp_path)
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(tmp_path / "ws.sqlite"),
           "SUMCHECK_CONFIG": str(tmp_path / "settings.json")}
    cli = None
    try:
        # every summary of the sample with the smoke-test model: minutes of work, nothing of it stored yet
        cli = subprocess.Popen([sys.executable, "-m", "engine", "verify", "sample", "--model",
                                str(embedded_model_path(SMOKE_EMBEDDED)), "--quiet"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page()
            page.goto(url + "/case?dataset=sample&case=card-01&summary=card-01-s1", wait_until="domcontentloaded")
            heading = page.get_by_text("Running on this summary in other windows or commands")
            heading.first.wait_for(timeout=150_000)
            page.get_by_text("python -m engine verify sample").first.wait_for(timeout=60_000)  # drawn after its heading
            body = page.inner_text("body")
            assert "python -m engine verify sample" in body and "Claim verification" in body
            assert "Running now" in body  # the sidebar lists it too
            # the verification is planned in tokens: an estimate while the first record is read (before: "0 %" and
            # "estimating time left…" for the whole first summary), and a bar that has moved
            page.get_by_text(re.compile(r"about \d+ (?:s|min \d+ s) left")).first.wait_for(timeout=60_000)
            moved = page.wait_for_function("""() => [...document.querySelectorAll('[role="progressbar"]')]
                .some(e => Number(e.getAttribute('aria-valuenow')) > 0)""", timeout=60_000)
            assert moved
            page.get_by_role("button", name="Cancel this run").first.click()
            page.get_by_text("Cancel asked").first.wait_for(timeout=30_000)
            browser.close()
        rc = cli.wait(timeout=120)
        err = cli.stderr.read()
    finally:
        if cli is not None and cli.poll() is None:
            cli.kill()
            cli.wait()
        _stop(proc)
    assert rc == 1 and "cancelled" in err, err[-2000:]


def test_a_run_whose_process_died_is_shown_stopped_never_running(tmp_path):
    from engine.data.job_log import job_records, recorded
    from engine.data.store import Store
    from engine.core.jobs import Job

    store = Store(tmp_path / "ws.sqlite")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    job = recorded(Job("Claim verification", 1, lambda j: None), store, "d", ["s1"])
    job.start()
    job.wait()
    row = store.job_rows("d")[0]
    store.add_job({**row, "job_id": "dead", "pid": gone.pid, "state": "running", "heartbeat": time.time(),
                   "started_at": row["started_at"]})
    recs = {r.job_id: r for r in job_records(store, "d")}
    assert recs["dead"].state == "stopped" and f"its process ({gone.pid}) ended" in recs["dead"].reason
    assert recs[job.record_id].state == "done"
    assert job_records(store, "d", running_only=True) == []
