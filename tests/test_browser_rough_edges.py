"""The first hour's rough edges, in a real Chromium at 1,280 px: the Start page's tiles show their values whole."""
import pytest

from conftest import CHROMIUM, LAUNCH_ARGS, _start, _stop

pytestmark = pytest.mark.requires_chromium


def test_start_page_tiles_show_their_values_whole_at_1280_px(tmp_path):
    """Before: seven tiles in one row cut "36 of 36" to "36 o…"."""
    from playwright.sync_api import sync_playwright

    proc, url = _start(tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url + "/", wait_until="domcontentloaded")
            page.get_by_text("claims verified").first.wait_for(timeout=120_000)
            cut = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
                .map(e => [e.innerText, e.scrollWidth > e.clientWidth + 1 ||
                           [...e.querySelectorAll('*')].some(c => c.scrollWidth > c.clientWidth + 1)])""")
            browser.close()
    finally:
        _stop(proc)
    assert len(cut) == 7 and any("of" in v for v, _ in cut)
    assert [v for v, truncated in cut if truncated] == []
