"""The committee walkthrough, replayed in headless Chromium on a fresh workspace with the sample: a link opens the
same view, Case → Judge keeps the summary, a dropped encounter is flagged on the Case page, a spot-check saved on the Spot-check page leaves every panel figure in
place, both report formats download from one generation, and the server logs no traceback."""
import re

import pytest

from conftest import CHROMIUM

pytestmark = pytest.mark.requires_chromium

IDLE = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # no script run in progress
VERDICT = re.compile(r"^(Cited|Accurate|Thorough|Useful|Organized|Comprehensible|Succinct|Synthesized)\. (.*)$", re.M)


def _verdicts(page, expected: int = 8) -> dict[str, str]:
    """The page's headline verdicts once the script run has ended and every one of them is drawn (on a loaded
    machine the headlines arrive over several frames)."""
    from conftest import _settle

    page.get_by_text("Bands after Koo").first.wait_for(timeout=180_000)
    page.wait_for_function(IDLE, timeout=180_000)
    for _ in range(60):
        _settle(page)
        got = {m.group(1): m.group(2) for m in VERDICT.finditer(page.inner_text("[data-testid=stMain]"))}
        if len(got) >= expected:
            break
        page.wait_for_timeout(1000)
    return got


def _nav(page, url: str, slug: str, heading: str) -> None:
    page.locator(f"[data-testid=stSidebarNavLink][href='{url}/{slug}']").click()
    page.get_by_role("heading", name=heading, exact=True).first.wait_for(timeout=120_000)
    page.wait_for_function(IDLE, timeout=120_000)


def test_committee_walkthrough(tmp_path):
    from playwright.sync_api import sync_playwright
    from conftest import LAUNCH_ARGS, _start, _stop

    proc, url = _start(tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000})
            page = context.new_page()
            # the start page says what the workbench is for and what to do next
            page.goto(url, wait_until="domcontentloaded")
            page.get_by_role("heading", name="SumCheck", exact=True).first.wait_for(timeout=120_000)
            page.get_by_text("Next", exact=True).first.wait_for(timeout=120_000)
            # a link opens the same view; Case -> Judge keeps the summary
            page.goto(url + "/case?dataset=sample&case=gi-01&summary=gi-01-s2", wait_until="domcontentloaded")
            page.get_by_text("Rater scores").first.wait_for(timeout=150_000)
            page.wait_for_function(IDLE, timeout=120_000)
            picker = page.locator("[data-testid=stMain] [data-testid=stRadio]").filter(has_text="gi-01-s1").first
            checked = picker.locator("input:checked").first  # the summary picker's choice, not another radio's
            assert checked.evaluate("i => i.closest('label').innerText.trim()") == "gi-01-s2"
            # the rater tables fit the 1,280 px window: no column cut off, nothing to scroll sideways
            page.locator("[data-testid=stMain] [data-testid=stDataFrame] .dvn-scroller").nth(1).wait_for(
                timeout=60_000)
            overflow = page.evaluate("() => [...document.querySelectorAll('[data-testid=stMain] "
                                     "[data-testid=stDataFrame] .dvn-scroller')].slice(0, 2)"
                                     ".map(s => s.scrollWidth - s.clientWidth)")
            assert len(overflow) == 2 and all(o <= 0 for o in overflow), overflow
            _nav(page, url, "judge", "Judge")
            page.get_by_role("heading", name="gi-01-s2").first.wait_for(timeout=60_000)
            assert "summary=gi-01-s2" in page.url
            # the evidence of a dropped encounter: endo-02-s2 never cites note 4, flagged above the ranked regions
            page.goto(url + "/case?dataset=sample&case=endo-02&summary=endo-02-s2", wait_until="domcontentloaded")
            page.get_by_text("⚑ Note never cited: note 4").first.wait_for(timeout=150_000)
            page.wait_for_function(IDLE, timeout=120_000)
            # the panel's figures before the spot-check
            _nav(page, url, "agreement", "Agreement")
            before = _verdicts(page)
            assert len(before) == 8 and not any("Rater agreement not computed" in v for v in before.values()), before
            # one clinician spot-checks gi-01-s2 (keyboard: 11 items, Ctrl+Enter)
            _nav(page, url, "review", "Spot-check & adjudicate")
            page.get_by_label("Reviewer").fill("Dr Walk")
            page.keyboard.press("Enter")
            page.wait_for_function("() => !!window.__sumcheckKeyHandler && document.querySelectorAll("
                                   "'[data-testid=stForm] [data-testid=stRadio]').length === 11", timeout=90_000)
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            for key in ["4", "4", "3", "4", "4", "5", "3", "y", "4", "n", "n"]:
                page.keyboard.press(key)
                page.wait_for_timeout(150)
            page.keyboard.press("Control+Enter")
            page.get_by_text("Saved 11 item(s)").first.wait_for(timeout=60_000)
            page.wait_for_function(IDLE, timeout=60_000)
            # every panel figure is still there, unchanged; the spot-check is its own comparison
            _nav(page, url, "agreement", "Agreement")
            after = _verdicts(page)
            assert after == before
            page.get_by_text("Dr Walk").first.wait_for(state="attached", timeout=60_000)  # a table cell
            assert "Human reference: panel median only." in page.inner_text("[data-testid=stMain]")
            # the committee report: one generation, both formats
            page.get_by_role("button", name="Make the committee report (HTML + PDF)").click()
            page.get_by_role("button", name="Download the report (HTML)").wait_for(timeout=180_000)
            with page.expect_download() as html_dl:
                page.get_by_role("button", name="Download the report (HTML)").click()
            page.wait_for_function(IDLE, timeout=60_000)
            pdf_button = page.get_by_role("button", name="Download the report (PDF)")
            pdf_button.wait_for(timeout=30_000)  # still offered after the HTML download: no second generation
            with page.expect_download() as pdf_dl:
                pdf_button.click()
            html = open(html_dl.value.path(), encoding="utf-8").read()
            pdf = open(pdf_dl.value.path(), "rb").read()
            browser.close()
    finally:
        _stop(proc)
    assert "Clinicians" in html and "Dr Walk" in html and pdf.startswith(b"%PDF")
    log = (tmp_path / "server.log").read_text(errors="replace")
    assert not re.search(r"Traceback|ArrowInvalid|ArrowTypeError|Serialization of dataframe to Arrow", log), \
        log[-3000:]
