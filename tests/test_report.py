"""The committee report: self-contained HTML that fetches nothing, a PDF whose text holds the same figures as
`stats`, the smoke-test mark on every page, hostile data shown as text."""
import json
import os
import subprocess
import sys
import warnings

import pytest

import payload
from conftest import ROOT
from engine.analysis import report
from engine.judge.results import JudgeResult
from engine.sample import SAMPLE_JUDGE, ensure_sample
from engine.data.store import Store


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    st = Store(d / "ws.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ensure_sample(st)
    if not st.judge_results("sample"):  # recorded results of another prompt version are refused on import
        for line in SAMPLE_JUDGE.read_text().splitlines():
            if line.strip():
                st.put_judge_result("sample", JudgeResult.from_json(line))
    # the report's smoke-test marks are checked on the sample's results relabelled as the smoke-test model's
    from fakes import sample_results_as_smoke_test

    sample_results_as_smoke_test(st)
    return st, d


@pytest.fixture(scope="module")
def sample_report(sample_store):
    st, d = sample_store
    data = report.write(st, "sample", d / "r.html", n_boot=200)
    return data, d


@pytest.fixture(scope="module")
def sample_pdf(sample_report):
    """The sample report printed to PDF by Chromium (for tests marked ``requires_chromium`` only)."""
    _, d = sample_report
    return report.print_pdf(d / "r.html", d / "r.pdf")


def test_html_holds_every_section_and_item(sample_report):
    data, d = sample_report
    html = (d / "r.html").read_text()
    for heading in ("1. Dataset", "2. Methods in plain words", "3. Headline", "4. LLM judge vs raters",
                    "5. Score distributions", "6. Note length effects", "7. Omission and sentence-support",
                    "8. Largest disagreements", "9. Statistics that could not be computed", "10. Provenance"):
        assert heading in html
    for h in data.headline:
        assert h.label.replace("(", "") in html.replace("(", "")
    bare = html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # a namespace name, not a request
    assert "<script" not in bare.lower() and "http://" not in bare and "https://" not in bare
    assert data.config is not None and data.config.smoke_test
    assert "smoke-test model" in html and "@top-center" in html  # marked on every printed page
    assert data.provenance["prompt version"] == data.config.prompt_version and data.provenance["model sha256"]
    # a first-page verdict per item a committee can act on
    first = html[:html.index("1. Dataset")]
    assert "Verdict per item" in first and all(f"{h.label}:" in first for h in data.headline)
    assert "do not use the judge" in first  # the smoke-test model is at chance somewhere
    # provenance and excerpts in words (before: parameters as raw JSON, excerpts with raw "<NoteID:5>")
    assert "{" not in data.provenance["parameters"] and "sample" in data.provenance["parameters"]
    assert data.disagreements and all("<NoteID" not in d["excerpt"] for d in data.disagreements)
    assert any("(note " in d["excerpt"] for d in data.disagreements)


@pytest.mark.requires_chromium
def test_pdf_text_has_the_same_figures_as_stats(sample_store, sample_report, sample_pdf, tmp_path):
    from pypdf import PdfReader

    from engine.analysis.formatting import format_estimate
    from engine.statistics import Estimate

    data, _ = sample_report
    text = " ".join(p.extract_text() for p in PdfReader(sample_pdf).pages)
    flat = " ".join(text.split())
    st, _ = sample_store
    out = tmp_path / "stats.json"
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(st.path)}
    run = subprocess.run([sys.executable, "-m", "engine", "stats", "sample", "--out", str(out), "--boot", "200",
                          "--judge-config", data.config.key], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    stats = json.loads(out.read_text())
    by_item = {a["item"]: a for a in stats["items"]}
    checked = 0
    for h in data.headline:
        icc = by_item[h.item]["icc"].get("ICC3k") if h.kind == "likert" else by_item[h.item]["gwet_ac1"]
        if icc and icc["value"] is not None:
            # written by the one formatter (a bound past [-1, 1] at the range's end, marked †)
            figure = format_estimate(Estimate(icc["value"], icc["ci_low"], icc["ci_high"]))
            assert figure in flat, (h.item, figure)
            checked += 1
    assert checked >= 9
    # every page carries the smoke-test mark
    from pypdf import PdfReader as R

    pages = R(sample_pdf).pages
    assert len(pages) >= 3 and all("smoke-test model" in p.extract_text() for p in pages)
    # no mostly blank page (page 2 once held only a heading: the table after it would not fit and moved on)
    sizes = [len(p.extract_text()) for p in pages]
    assert all(n >= 300 for n in sizes[:-1]), sizes


@pytest.mark.requires_chromium
def test_html_opens_offline_with_no_outbound_request(sample_report):
    from playwright.sync_api import sync_playwright

    _, d = sample_report
    seen = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=report.chromium_path(), headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda r: seen.append(r.url))
        page.goto((d / "r.html").resolve().as_uri())
        page.wait_for_load_state("networkidle")
        assert page.locator("svg").count() >= 2
        browser.close()
    assert [u for u in seen if not u.startswith("file://")] == []


def test_payload_dataset_is_shown_as_text(tmp_path):
    st = Store(tmp_path / "ws.sqlite")
    name = payload.seed(st)
    data = report.write(st, name, tmp_path / "p.html", n_boot=50)
    html = (tmp_path / "p.html").read_text()
    assert "<script>alert" not in html and "<img src=http" not in html and 'href="http' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, escaped
    assert data.n_summaries >= 1


def test_unknown_configuration_is_refused(sample_store):
    st, d = sample_store
    with pytest.raises(report.ReportError, match="no judge configuration"):
        report.build(st, "sample", judge_config="nope", n_boot=50)


def test_cli_report(sample_store, tmp_path):
    st, _ = sample_store
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(st.path)}
    args = [sys.executable, "-m", "engine", "report", "sample", "--out", str(tmp_path / "c.html"), "--boot", "50",
            "--words"]
    run = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "report written" in run.stdout and (tmp_path / "c.html").stat().st_size > 10_000
    assert not list(tmp_path.glob("*.pdf"))
    bad = subprocess.run([sys.executable, "-m", "engine", "report", "nope", "--out", str(tmp_path / "x.html")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "no dataset named 'nope'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.requires_chromium
def test_cli_report_prints_the_pdf(sample_store, tmp_path):
    st, _ = sample_store
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(st.path)}
    args = [sys.executable, "-m", "engine", "report", "sample", "--out", str(tmp_path / "c.html"), "--boot", "50",
            "--pdf", str(tmp_path / "c.pdf")]
    run = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "c.pdf").read_bytes()[:4] == b"%PDF"


def _report_downloads(store, monkeypatch) -> tuple[list[str], list[str], object]:
    """Make the committee report on the Agreement page: the labels of the report's download buttons after the
    click and after one more rerun, and the app."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(store.path))
    at = AppTest.from_file(str(ROOT / "pages/agreement.py"), default_timeout=180)
    at.run()
    assert not at.exception
    assert any("Smoke-test model" in w.value for w in at.warning)  # the judge configuration is named and marked
    next(b for b in at.button if b.label.startswith("Make the committee report")).click().run()
    assert not at.exception, [e.value for e in at.exception]

    def report_labels():
        return [d.proto.label for d in at.get("download_button") if d.proto.label.startswith("Download the report")]

    labels = report_labels()
    at.run()  # any rerun (a download used to be one) keeps the files of the one generation
    assert not at.exception
    return labels, report_labels(), at


def test_report_button_on_the_agreement_page(sample_store, monkeypatch):
    """Where no Chromium can print the PDF, the page offers the HTML and says why there is no PDF."""
    from engine.views import agreement

    monkeypatch.setattr(agreement, "pdf_printer_available", lambda: False)
    labels, again, at = _report_downloads(sample_store[0], monkeypatch)
    assert labels == again == ["Download the report (HTML)"]
    assert any("No Chromium found to print a PDF" in c.value for c in at.caption)


@pytest.mark.requires_chromium
def test_report_button_offers_the_pdf_where_chromium_is_installed(sample_store, monkeypatch):
    from engine.views import agreement

    assert agreement.pdf_printer_available()
    labels, again, _ = _report_downloads(sample_store[0], monkeypatch)
    assert labels == again == ["Download the report (HTML)", "Download the report (PDF)"]


def test_report_renders_from_its_autoescaping_template(sample_report):
    """The page comes from report.html.j2 with autoescape on: a hostile value anywhere in the data is text."""
    import dataclasses

    data, _ = sample_report
    assert report.TEMPLATE.is_file()
    hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>'
    html = report.render_html(dataclasses.replace(data, dataset=hostile,
                                                  provenance={**data.provenance, "note": hostile}))
    assert "<script>alert" not in html and "<img src=x" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # title, heading, provenance


def _text_boxes(svg: str):
    """(x-start, x-end, y) of each band label and the title lines of a forest plot."""
    import html
    import re

    bands, titles = [], []
    for m in re.finditer(r'<text x="([\d.]+)" y="([\d.]+)"([^>]*)>([^<]*)</text>', svg):
        x, y, attrs, text = float(m.group(1)), float(m.group(2)), m.group(3), html.unescape(m.group(4))
        if 'font-size="10" fill="#555"' in attrs:
            half = len(text) * report.BAND_CHAR_PX / 2
            bands.append((x - half, x + half, y))
        elif "bold" in attrs:
            titles.append((x, x + len(text) * report.TITLE_CHAR_PX, y))
    return bands, titles


def test_forest_plot_band_labels_and_title_never_collide():
    """With the axis from −1 the 'good' and 'excellent' bands are narrow: their labels go on two rows instead of
    running together; a long title wraps inside the figure."""
    from engine.analysis.headlines import HeadlineRow
    from engine.statistics.base import Estimate

    def row(v, lo):
        e = Estimate(v, lo, min(1.0, v + 0.1))
        return HeadlineRow("x", "Item", "likert", 30, "ICC(3,k)", e, "good", "", None, "", "", "", "", "")

    title = ("Raters' agreement (ICC(3,k), or α when few summaries were scored by all; yes/no items: Gwet's AC1 "
             "with a long explanation that cannot fit on one line), 95% CI")
    svg = report.forest_svg([row(0.9, 0.85), row(-0.1, -1.0)], "humans", title)
    bands, titles = _text_boxes(svg)
    assert len(bands) == 4 and len(titles) == 2
    for a, b in zip(bands, bands[1:]):
        assert a[1] + 4 <= b[0] or a[2] != b[2], (a, b)  # side by side without touching, or on another row
    assert all(end <= 760 for _, end, _ in titles)
    assert max(y for *_, y in titles) + 6 < min(y for *_, y in bands) - 8  # the labels sit below the title


@pytest.mark.requires_chromium
def test_no_pdf_page_ends_with_a_heading_its_content_left_behind(sample_pdf):
    """Before: "6. Note length effects" stood alone at the foot of a page, its table on the next."""
    import re

    from pypdf import PdfReader

    for i, page in enumerate(PdfReader(sample_pdf).pages):
        lines = [x.strip() for x in page.extract_text().splitlines() if x.strip() and "smoke-test" not in x]
        assert lines and not re.fullmatch(r"\d{1,2}\. [A-Z][\w ,–-]+", lines[-1]), (i, lines[-3:])
    text = [p.extract_text() for p in PdfReader(sample_pdf).pages]
    head = "6. Note length e"  # "effects" comes out of the PDF with an ff ligature
    page = next(i for i, t in enumerate(text) if head in t)
    assert "Spearman ρ" in text[page].split(head, 1)[1]  # its table's head is on the same page


def test_report_tables_write_a_column_of_numbers_one_way(sample_report):
    import re

    data, d = sample_report
    html = (d / "r.html").read_text()
    checked = 0
    for table in re.findall(r"<table>(.*?)</table>", html, re.S):
        rows = [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
        for col in zip(*[r for r in rows if r]):
            decimals = {len(c.split(".")[1]) for c in col if re.fullmatch(r"-?\d+\.\d+", c)}
            assert len(decimals) <= 1, col  # 0.060 beside 0.163, never 0.0596; 32.000 beside 32.600
            checked += bool(decimals)
    assert checked >= 3
