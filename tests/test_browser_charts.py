"""The Agreement page's Bland–Altman chart as a reviewer sees it in headless Chromium at 1,280 px: its title fits
the half-width column and stays clear of the chart toolbars, and its bubbles do not cover each other's counts."""
import pytest

from conftest import CHROMIUM

pytestmark = pytest.mark.requires_chromium

# Runs in the page: the Bland–Altman chart's title, toolbars and bubbles as screen rectangles.
GEOMETRY = """() => {
  const plots = [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')];
  const ba = plots.find(p => (p.querySelector('.gtitle') || {}).textContent?.startsWith('Bland'));
  if (!ba) return null;
  const r = e => { const b = e.getBoundingClientRect(); return {l: b.left, t: b.top, r: b.right, b: b.bottom}; };
  const el = ba.closest('[data-testid=stElementContainer]') || ba.parentElement;
  const tb = el.querySelector('[data-testid=stElementToolbar]');
  return {
    title: [...ba.querySelectorAll('.gtitle, .gtitle-subtitle')].map(r),
    plot: r(ba),
    modebar: ba.querySelector('.modebar') ? r(ba.querySelector('.modebar')) : null,
    toolbar: tb ? r(tb) : null,
    bubbles: [...ba.querySelectorAll('.scatterlayer .trace .points path.point')].map(r),
  };
}"""


def _meet(a, b) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


def test_bland_altman_title_fits_and_bubbles_do_not_overlap(tmp_path):
    from playwright.sync_api import sync_playwright

    from conftest import LAUNCH_ARGS, _settle, _start, _stop

    proc, url = _start(tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url + "/agreement?dataset=sample", wait_until="domcontentloaded")
            page.get_by_role("tab", name="LLM vs humans").wait_for(timeout=180_000)
            _settle(page, 180)
            page.get_by_role("tab", name="LLM vs humans").click()
            chart = page.locator("[data-testid=stMain] .js-plotly-plot").filter(has_text="Bland").first
            chart.wait_for(timeout=60_000)
            _settle(page)
            chart.hover()  # the toolbars show on hover
            page.wait_for_timeout(500)
            geo = page.evaluate(GEOMETRY)
            browser.close()
    finally:
        _stop(proc)
    assert geo is not None and geo["title"] and geo["bubbles"], geo
    # the title names the item by its label (it read "Bland–Altman: cited (36 summaries; a point's number = s")
    for t in geo["title"]:
        assert geo["plot"]["l"] <= t["l"] and t["r"] <= geo["plot"]["r"], (t, geo["plot"])  # not cut off
        for bar in (geo["modebar"], geo["toolbar"]):
            assert bar is None or not _meet(t, bar), (t, bar)  # not under a toolbar
    circles = [((b["l"] + b["r"]) / 2, (b["t"] + b["b"]) / 2, (b["r"] - b["l"]) / 2) for b in geo["bubbles"]]
    overlaps = [(a, b) for i, a in enumerate(circles) for b in circles[i + 1:]
                if ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5 < a[2] + b[2] - 1]
    assert not overlaps, overlaps
