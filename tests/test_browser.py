"""End to end in a real headless Chromium: the running app shows a sample case's note text on the Case page, and
every page, on the sample and on the hostile payload dataset, makes no request that leaves the app's own origin,
opens no dialog and shows no link or image that came from data."""
import csv
import os
import re
import time
import tomllib
from pathlib import Path

import pytest

import payload
from conftest import BUNDLE, FORMATS, LAUNCH_ARGS, ROOT, _start, _stop
from conftest import CHROMIUM, Watch, _settle, _audit

pytestmark = pytest.mark.requires_chromium


@pytest.fixture
def server(tmp_path):
    proc, url = _start(tmp_path)
    yield url
    _stop(proc)


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
        page.goto(server + "/case", wait_until="domcontentloaded")
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
        page.goto(server + "/judge?dataset=sample&case=gi-01&summary=gi-01-s2", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Judge").first.wait_for(timeout=60_000)
        page.get_by_text("Spot-check").first.wait_for(timeout=30_000)
        nav = page.inner_text("[data-testid=stSidebarNav]")
        page.get_by_role("heading", name="gi-01-s2").first.wait_for(timeout=60_000)  # the link's selection kept
        url = page.url
        browser.close()
    assert "Spot-check" in nav and "Setup" in nav and "review" not in nav.split()
    assert "/judge" in url and "summary=gi-01-s2" in url and "page=" not in url


# ------------------------------------------------------------------------------------------------ hostile input
# (nav slug, page title, text that the page shows near its end)
PAGES = [("", "SumCheck", "Next"), ("case", "Case", "Rater scores"), ("judge", "Judge", "All judged summaries"),
         ("evidence", "Evidence", "Embedding evidence per summary"), ("agreement", "Agreement", None),
         ("review", "Spot-check & adjudicate", "Export"), ("data", "Data", "Datasets in the workspace"),
         ("settings", "Settings", "Save settings"), ("models", "Get a judge model", "Download"),
         ("lexicon", "Stigmatizing-language lexicon", "Add entry")]


def _open_all(page) -> None:
    """Show every tab and open every expander (what they hold is rendered when shown); these clicks do not rerun
    the script."""
    def expanders():
        for summary in page.locator("[data-testid=stExpander] details:not([open]) > summary").all():
            if summary.is_visible():
                summary.click()

    expanders()
    for tab in page.locator("[data-testid=stTabs] button[role=tab]").all():
        if tab.is_visible():
            tab.click()
            expanders()
    page.wait_for_timeout(300)


def _visible_text(page) -> str:
    return page.inner_text("[data-testid=stMain]").replace("\u2060", "")


def _walk(page, watch: Watch, label: str, on_page=None) -> None:
    for slug, title, marker in PAGES:
        page.locator(f"[data-testid=stSidebarNavLink][href='{watch.origin}/{slug}']").click()
        page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=120_000)
        if marker:
            page.get_by_text(marker, exact=False).first.wait_for(timeout=150_000)
        _settle(page)
        _open_all(page)
        _audit(page, watch, f"{label} / {title}")
        if on_page:
            on_page(slug, page)
            _audit(page, watch, f"{label} / {title} (after interacting)")


def _pick_payload_dataset(page) -> None:
    page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").first.click()
    page.get_by_role("option", name=re.compile(r"^payload ")).click()
    page.get_by_role("heading", name=re.compile(r"^pay-01")).first.wait_for(timeout=120_000)
    page.get_by_text("Rater scores").first.wait_for(timeout=150_000)
    _settle(page)


@pytest.fixture
def payload_server(tmp_path):
    """The app on a workspace holding the sample and the payload dataset (with hostile reviews, judge and
    MED-OMIT results), its temp folder private to the test, with two stale upload folders planted in it."""
    from engine.sample import ensure_sample
    from engine.data.store import Store

    store = Store(tmp_path / "ws.sqlite")
    ensure_sample(store)
    payload.seed(store)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    stale = [tmp / "sumcheck-upload-legacy", tmp / "sumcheck-upload-999999999-dead"]
    for d in stale:
        d.mkdir()
        (d / "notes.csv").write_text("phi")
    proc, url = _start(tmp_path, {"TMPDIR": str(tmp)})
    yield url, tmp, stale
    _stop(proc)


def test_no_egress_and_no_payload_markup_on_any_page(payload_server, tmp_path):
    """Every page, on the sample and on the payload dataset: no request leaves 127.0.0.1:<port> (fonts, icons,
    CDNs, telemetry, payload images), no dialog (payload script), no link or image from data, no traceback;
    payload text shows as written; the spot-check CSV download is neutralised; uploads leave no copy behind."""
    from playwright.sync_api import sync_playwright

    url, tmp, stale = payload_server
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())  # what the server runs with
    assert config["browser"]["gatherUsageStats"] is False and config["server"]["address"] == "127.0.0.1"
    started = time.time()
    uploads_seen: list[list[str]] = []

    def leftovers() -> list[str]:
        return sorted(p.name for p in tmp.iterdir() if p.name.startswith("sumcheck-upload-"))

    def interact(slug, page):
        if slug == "case":  # Case: the hostile specialty, note metadata and summary show as plain text
            text = _visible_text(page)
            case = next(r for r in csv.DictReader((payload.BUNDLE / "cases.csv").open(encoding="utf-8"))
                        if r["case_id"] == "pay-01")
            assert case["target_specialty"] in text
            assert payload.COLOUR in text and payload.MATH in text and payload.IMG in text
        elif slug == "judge":  # the model's hostile explanations are text
            assert "cited: " + payload.IMG in _visible_text(page)
        elif slug == "review":  # unblind, then download every review: no cell a spreadsheet would run
            page.get_by_test_id("stCheckbox").get_by_text("Blinded", exact=True).click()
            page.get_by_text("Review history of this summary", exact=True).first.wait_for(timeout=60_000)
            page.get_by_text("Median over the judge's samples").first.wait_for(timeout=60_000)
            _settle(page)
            _open_all(page)
            assert "model " + payload.IMG + ".gguf" in _visible_text(page)
            with page.expect_download() as info:
                page.get_by_role("button", name=re.compile("^Download all reviews")).click()
            download = info.value
            assert re.fullmatch(r"[A-Za-z0-9._-]+", download.suggested_filename), download.suggested_filename
            rows = list(csv.reader(Path(download.path()).open(encoding="utf-8", newline="")))
            assert len(rows) == 1 + sum(len(v) for _, v, _ in payload.REVIEWS)
            cells = [c for r in rows for c in r]
            assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")
                        and not re.fullmatch(r"[+-]?\d+(\.\d*)?", c)]
            assert "'" + payload.REVIEWS[0][0] in cells and "'" + payload.REVIEWS[0][2]["cited"] in cells
        elif slug == "data":  # upload the payload bundle and a wide ratings export, validate: no copy stays
            page.get_by_text("Upload files", exact=True).click()
            files = payload.bundle_files() + [str(FORMATS / "redcap_ratings.csv")]
            page.locator("[data-testid=stFileUploader] input[type=file]").set_input_files(files)
            page.get_by_text("Column mapping").first.wait_for(timeout=60_000)  # the header was sniffed
            _settle(page)
            uploads_seen.append(leftovers())
            page.get_by_role("button", name="Validate").click()
            page.locator("[data-testid=stAlert]").first.wait_for(timeout=60_000)
            _settle(page)
            _open_all(page)
            uploads_seen.append(leftovers())

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        context = browser.new_context(accept_downloads=True)
        page = context.new_page()
        watch = Watch(page, url)
        page.goto(url + "/case", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Case", exact=True).first.wait_for(timeout=120_000)
        page.get_by_text("Rater scores").first.wait_for(timeout=150_000)
        _settle(page)
        icons = page.eval_on_selector_all("link[rel*=icon]", "els => els.map(e => e.href)")
        assert icons and all(i.startswith(url + "/") or i.startswith("data:") for i in icons), icons
        _walk(page, watch, "sample")
        page.locator(f"[data-testid=stSidebarNavLink][href='{url}/case']").click()
        page.get_by_role("heading", name="Case", exact=True).first.wait_for(timeout=120_000)
        _settle(page)
        _pick_payload_dataset(page)
        _walk(page, watch, "payload", interact)
        browser.close()
    elapsed = time.time() - started

    assert watch.requests and not watch.outside and not watch.dialogs
    assert uploads_seen == [[], []], uploads_seen  # copies live only during a script run
    assert not any(d.exists() for d in stale), "stale upload folders are swept at start"
    assert elapsed < 300, f"browser walk took {elapsed:.0f} s"
    # nothing on any page made the server log a traceback or a table it could not serialise
    log = (tmp_path / "server.log").read_text(errors="replace")
    assert not re.search(r"Traceback|ArrowInvalid|ArrowTypeError|Serialization of dataframe to Arrow", log), \
        log[-3000:]
