"""End to end in a real headless Chromium: the running app shows a sample case's note text on the Case page."""
import csv
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import BUNDLE, ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    if os.environ.get("CI"):
        pytest.fail("Debian's chromium is required in CI ('make test' installs it)", pytrace=False)
    pytest.skip("chromium not installed (run 'make test', which installs Debian's chromium)",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(tmp_path / "ws.sqlite"),
           "SUMCHECK_CONFIG": str(tmp_path / "settings.json")}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + proc.stdout.read().decode(errors="replace")[-2000:])
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_case_page_shows_sample_note_text(server):
    from playwright.sync_api import sync_playwright

    with (BUNDLE / "notes.csv").open(encoding="utf-8", newline="") as fh:
        first = next(csv.DictReader(fh))
    snippet = " ".join(first["text"].split()[:6])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page()
        page.goto(server, wait_until="domcontentloaded")
        page.get_by_role("heading", name="Case").first.wait_for(timeout=60_000)
        page.get_by_text(snippet, exact=False).first.wait_for(timeout=60_000)
        page.get_by_text("Rater scores").first.wait_for(timeout=60_000)  # the page renders top-down
        body = page.inner_text("body")
        browser.close()
    assert first["case_id"] in body
    assert "Rater scores" in body


def test_deep_link_as_first_request_uses_the_app_navigation(server):
    """/judge opened before anything else must still go through app.py's navigation (not Streamlit's legacy
    pages/ listing)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page()
        page.goto(server + "/judge", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Judge").first.wait_for(timeout=60_000)
        page.get_by_text("Spot-check").first.wait_for(timeout=30_000)
        nav = page.inner_text("[data-testid=stSidebarNav]")
        browser.close()
    assert "Spot-check" in nav and "Setup" in nav and "review" not in nav.split()
