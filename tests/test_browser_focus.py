"""End to end in a real headless Chromium: on the Case page, picking a possibly omitted region, or a summary sentence
under "Sentence support", outlines its passage in the note and scrolls it into view, both inside the note's scroll
box and in the window, also when the passage lies far below the top of the box."""
import re

import pytest

from components.evidence_view import aligned_passages, focus_id
from conftest import LAUNCH_ARGS, _start, _stop
from conftest import CHROMIUM, Watch, _audit, _settle

pytestmark = pytest.mark.requires_chromium

MAX_REGIONS = 30  # as pages/case.py lists them
VIEWPORT = {"width": 1280, "height": 800}

# Where the focused passage sits: its rectangle, its scroll box's, the window's, and how far down the box's content
# it lies (content coordinates: independent of the box's scroll).
GEOMETRY_JS = """(id) => {
  const el = document.getElementById(id);
  if (!el) return null;
  const box = el.parentElement, r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
  const style = getComputedStyle(el);
  return {top: r.top, bottom: r.bottom, height: r.height, boxTop: b.top, boxBottom: b.bottom,
          boxClient: box.clientHeight, boxScroll: box.scrollTop, depth: r.top - b.top + box.scrollTop,
          overflow: getComputedStyle(box).overflowY, winHeight: window.innerHeight,
          outline: style.outlineStyle, outlineWidth: parseFloat(style.outlineWidth), text: el.textContent,
          scroll: el.getAttribute('data-scroll'), html: box.parentElement.getAttribute('data-testid')};
}"""
IN_VIEW_JS = """(id) => {
  const el = document.getElementById(id);
  if (!el || !el.isConnected) return false;
  const box = el.parentElement, r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
  return r.height > 0 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1 && r.top >= 0
         && r.bottom <= window.innerHeight;
}"""


def _first_case_evidence(ws):
    """The page's default case and summary, with its possibly omitted regions at the default threshold and its
    sentence alignment, from the workspace the server imported the sample into (stored: nothing is computed)."""
    from engine.evidence.support.alignment import alignment_cached
    from engine.evidence.coverage.regions import DEFAULT_METHOD, DEFAULT_THRESHOLDS, coverage_cached, merge_regions
    from engine.evidence.coverage.results import CoverageParams
    from engine.data.store import Store

    def not_stored():
        pytest.fail("the sample's evidence should ship precomputed")

    store = Store(ws)
    ds = store.load_dataset("sample")
    case = ds.cases[0]
    summary = ds.summaries_for(case.case_id)[0]
    cov = coverage_cached(store, "sample", case, summary, not_stored, CoverageParams(method=DEFAULT_METHOD))
    hi = max(u.score for u in cov.units)
    from engine.core.citations import strip

    regions = merge_regions(case, cov.units, min(DEFAULT_THRESHOLDS[DEFAULT_METHOD], hi), top=MAX_REGIONS,
                            summary_text=strip(summary.text))  # ranked as the Case page ranks them
    al = alignment_cached(store, "sample", case, summary, not_stored)
    return case, regions, al


def _wait_in_view(page, fid: str) -> dict:
    """Wait for the picked passage (marked for a window scroll) to be in view, give the page's late re-checks
    time to run, and return where it ends up."""
    page.wait_for_selector(f"#{fid}[data-scroll=page]", state="attached", timeout=120_000)
    _settle(page)
    page.wait_for_function(IN_VIEW_JS, arg=fid, timeout=10_000)
    page.wait_for_timeout(2000)  # it must stay there (the script's re-checks, the rest of the page settling)
    return page.evaluate(GEOMETRY_JS, fid)


def _assert_focused(g: dict, text: str, where: str) -> None:
    assert g is not None, where
    assert g["html"] == "stHtml" and g["text"] == text, (where, g)
    assert g["outline"] == "solid" and g["outlineWidth"] >= 2, (where, g)  # outlined
    assert g["overflow"] == "auto" and g["boxClient"] > 0, (where, g)  # it sits in a scroll box
    # it lies below the first screenful of its box, so the box had to be scrolled to show it
    assert g["depth"] > g["boxClient"] and g["boxScroll"] > 0, (where, g)
    # inside the box's visible rectangle ...
    assert g["top"] >= g["boxTop"] - 1 and g["bottom"] <= g["boxBottom"] + 1, (where, g)
    # ... and inside the window
    assert g["top"] >= 0 and g["bottom"] <= g["winHeight"], (where, g)


def test_picked_region_and_sentence_are_outlined_and_scrolled_into_view(tmp_path):
    from playwright.sync_api import sync_playwright

    proc, url = _start(tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            watch = Watch(page, url)
            page.goto(url + "/case", wait_until="domcontentloaded")
            page.get_by_role("heading", name="Case", exact=True).first.wait_for(timeout=120_000)
            page.get_by_text("Rater scores").first.wait_for(timeout=150_000)
            page.locator("mark[id^=sc-focus-]").first.wait_for(state="attached", timeout=150_000)
            _settle(page)
            case, regions, al = _first_case_evidence(tmp_path / "ws.sqlite")

            # ---- Uncovered source regions: the listed region that lies deepest in its note
            k = max(range(1, len(regions)), key=lambda i: regions[i].start)
            region = regions[k]
            note = case.note(region.note_id).text
            fid = focus_id("coverage", note, (region.start, region.end))
            page.get_by_role("tab", name="Uncovered source regions").click()
            page.get_by_role("radiogroup", name="Region").locator("[data-testid=stRadioOption]").nth(k).click()
            g = _wait_in_view(page, fid)
            _assert_focused(g, note[region.start:region.end], f"region {k}")

            # ---- Sentence support: the sentence whose best aligned passage lies deepest in its note
            page.get_by_role("tab", name="Sentence support").click()
            first = aligned_passages(al.sentences[0])[1]
            fid0 = focus_id("support", case.note(first.note_id).text, (first.start, first.end))
            # the default sentence's passage, rendered while its tab was hidden, is centred in its box once shown
            page.wait_for_function(
                "(id) => { const el = document.getElementById(id); if (!el) return false;"
                " const r = el.getBoundingClientRect(), b = el.parentElement.getBoundingClientRect();"
                " return r.height > 0 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1; }", arg=fid0, timeout=10_000)
            best = {i: aligned_passages(a)[1] for i, a in enumerate(al.sentences)}
            j = max((i for i in best if i and best[i] is not None), key=lambda i: best[i].start)
            ref = best[j]
            note = case.note(ref.note_id).text
            fid = focus_id("support", note, (ref.start, ref.end))
            page.get_by_role("radiogroup", name=re.compile("^Summary sentences")) \
                .locator("[data-testid=stRadioOption]").nth(j).click()
            g = _wait_in_view(page, fid)
            _assert_focused(g, note[ref.start:ref.end], f"sentence {j + 1}")
            _audit(page, watch, "Case page after focusing")  # still no egress, no payload markup, no script in md
            browser.close()
    finally:
        _stop(proc)
