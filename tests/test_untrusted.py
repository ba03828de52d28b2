"""Hostile input, display and egress: engine.core.untrusted escapes every data string for its sink (Markdown, HTML,
plotly, CSV); every page renders the payload dataset (tests/fixtures/payload) without exception and without a
Markdown sink that could form a link, image, tag, LaTeX or shortcode; exports are neutralised; uploaded copies
are private and short-lived; a busy workspace is a message, not a traceback."""
from __future__ import annotations

import csv
import html as html_lib
import io
import os
import re
import stat
import string
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import payload
from conftest import FORMATS, ROOT
from engine.core import untrusted
from engine.core.untrusted import WORD_JOINER, md, md_inline
from payload import BAD_TAG, MARKDOWN, markdown_problems, markdown_sinks

TIMEOUT = 120
PAGES = ["pages/case.py", "pages/judge.py", "pages/evidence.py", "pages/agreement.py", "pages/review.py",
         "pages/data.py", "pages/settings.py", "pages/models.py", "pages/lexicon.py"]


def plain(rendered_html: str) -> str:
    """The text a reader sees (tags dropped, entities decoded, word joiners invisible)."""
    return html_lib.unescape(re.sub(r"<[^>]*>", "", rendered_html)).replace(WORD_JOINER, "").strip()


# --------------------------------------------------------------------------------------------- md / md_inline
HOSTILE = list(payload.MARKUP) + list(payload.FORMULAS) + [
    payload.ALL, "# heading", "> quote", "- item", "1. item", "***", "a | b\n--|--\n1 | 2", "`code`", "~~x~~",
    "[ref]\n\n[ref]: http://127.0.0.2:9/", "&lt;img src=x&gt; &#60;b&#62;", "<!-- c -->", "\\![x](y)", ":smile:",
    ":material/home:", "WWW.EVIL.EXAMPLE", "ftp://127.0.0.2/", "_em_ *em* __b__", "10:30:45", "a@b.example",
    string.punctuation]


@pytest.mark.parametrize("text", HOSTILE)
def test_md_renders_exactly_the_text_and_nothing_else(text):
    source = md(text)
    assert not markdown_problems(source), markdown_problems(source)
    rendered = MARKDOWN.render(source)
    assert re.fullmatch(r"(<p>[^<]*</p>\n)+", re.sub(r"<br />", "", rendered)), rendered  # paragraphs only
    assert " ".join(plain(rendered).split()) == " ".join(text.split())


@pytest.mark.parametrize("text", HOSTILE)
def test_md_leaves_no_punctuation_unescaped(text):
    source = md(text).replace(WORD_JOINER, "")
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            assert source[i + 1] in string.punctuation, source
            i += 2
            continue
        assert ch not in string.punctuation, (ch, source)
        i += 1


def test_md_inline_folds_lines_and_truncates_before_escaping():
    text = "line one ![x](http://127.0.0.2:9/a.png)\n\n# two\r\n<script>alert(1)</script>"
    one = md_inline(text)
    assert "\n" not in one and "\r" not in one
    assert not markdown_problems(one)
    assert plain(MARKDOWN.render(one)) == " ".join(text.split())
    short = md_inline(payload.IMG * 3, 20)
    assert not markdown_problems(short) and plain(MARKDOWN.render(short)).endswith("…")
    assert len(plain(MARKDOWN.render(short))) == 20
    assert md(None) == md_inline(None) == ""


def test_word_joiner_only_where_a_text_rewrite_could_start():
    assert md("plain words 123") == "plain words 123"
    assert md("see www.x.example") == "see www" + WORD_JOINER + "\\.x\\.example"
    assert md("https://x") == "https\\:" + WORD_JOINER + "\\/\\/x"
    assert md("a@b") == "a\\@" + WORD_JOINER + "b"


# --------------------------------------------------------------------------------------------- html / plot
def test_html_escapes_text_and_attributes_and_line_breaks():
    s = untrusted.html('<img src="x" onerror=\'alert(1)\'> & a\n\nb\r')
    assert "<" not in s and ">" not in s and '"' not in s and "'" not in s and "\n" not in s and "\r" not in s
    assert html_lib.unescape(s) == '<img src="x" onerror=\'alert(1)\'> & a\n\nb\r'


def test_highlighted_note_with_blank_lines_stays_one_html_block():
    """A blank line in a note must not end our HTML block (the rest would be parsed as Markdown)."""
    from components.evidence_view import highlight_html
    from components.case_view import summary_html

    text = "first " + payload.ANCHOR + "\n\n" + payload.IMG + " " + payload.WWW + "\n\n    " + payload.MATH
    block = highlight_html(text, [(0, 5, "#ffd33d", 'title "' + payload.RAWIMG)], height=100)
    out = MARKDOWN.render(block)
    assert not BAD_TAG.search(out) and "<p>" not in out and out.count("<div") == 1, out
    assert html_lib.unescape(re.sub(r"<[^>]*>", "", out)).strip() == text
    from engine.core.citations import spans

    stext = "One " + payload.IMG + " <NoteID:1>\n\nTwo " + payload.SCRIPT + " <NoteID:9>"
    summary = summary_html(stext, spans(stext), ["1"])
    out = MARKDOWN.render(summary)
    # the one link allowed is our own badge link to a note's block (a hash id, no text from data)
    own = re.compile(r'<a href="#note-[0-9a-f]{12}" style="text-decoration:none">')
    assert len(own.findall(out)) == 1
    out = own.sub("", out).replace("</a>", "")
    assert not BAD_TAG.search(out) and "<p>" not in out, out
    assert "Note 1</span>" in out and "Note 9</span>" in out


def test_plot_text_forms_no_tag():
    assert (untrusted.plot('<a href="http://127.0.0.2:9/">x</a><br>')
            == '&lt;a href="http://127.0.0.2:9/"&gt;x&lt;/a&gt;&lt;br&gt;')


def test_filename_keeps_only_safe_characters():
    assert untrusted.filename(payload.DATASET, "-reviews.csv").endswith("-reviews.csv")
    assert re.fullmatch(r"[A-Za-z0-9._-]+", untrusted.filename(payload.DATASET, "-reviews.csv"))
    assert untrusted.filename("../../etc/passwd") == "etc_passwd"
    assert untrusted.filename("") == "data"


# --------------------------------------------------------------------------------------------- CSV
def _formula_cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text)) for c in row
            if c[:1] in untrusted.FORMULA_PREFIXES and not re.fullmatch(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?", c)]


def test_csv_cell_neutralises_formulas_and_keeps_numbers():
    for f in payload.FORMULAS + ("\t=1", "\r=1", "-cmd|' /C calc'!A0"):
        assert untrusted.csv_cell(f) == "'" + f
    for keep in ("-0.5", "+1", "1e-3", "-2E+4", "plain", "", 3, -1.5, None, True):
        assert untrusted.csv_cell(keep) == keep


def test_dataframe_csv_neutralises_every_text_column_and_header():
    df = pd.DataFrame({"name": payload.FORMULAS, "n": [1, -2, 3, 4], "x": [-0.5, 1.0, 2.0, 3.0],
                       "=bad header": ["a", "b", "c", "d"]})
    df["s"] = pd.Series(list(payload.FORMULAS), dtype="string")  # the string dtypes too
    df["c"] = pd.Series(list(payload.FORMULAS), dtype="category")
    text = untrusted.dataframe_csv(df).decode()
    assert not _formula_cells(text), _formula_cells(text)
    back = pd.read_csv(io.StringIO(text))
    assert list(back["n"]) == [1, -2, 3, 4] and list(back["x"]) == [-0.5, 1.0, 2.0, 3.0]
    assert list(back["name"]) == ["'" + f for f in payload.FORMULAS]
    assert "'=bad header" in back.columns
    assert not _formula_cells(untrusted.csv_text([payload.FORMULAS], header=["=h", "ok", "-x", "y"]))


def test_reviews_export_is_neutralised(store):
    from engine.data.reviews import CSV_COLUMNS, export_reviews_csv

    payload.seed(store)
    text = export_reviews_csv(store, payload.DATASET)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert len(rows) == sum(len(values) for _, values, _ in payload.REVIEWS)
    assert not _formula_cells(text), _formula_cells(text)
    reviewers = {r["reviewer"] for r in rows}
    assert reviewers == {"'" + name for name, _, _ in payload.REVIEWS}
    comments = {r["comment"] for r in rows}
    assert "'" + payload.REVIEWS[0][2]["cited"] in comments and "'=1+1 " + payload.SCRIPT in comments
    assert {r["dataset"] for r in rows} == {payload.DATASET}  # text that is not a formula stays as it is


def test_agreement_downloads_are_neutralised(monkeypatch):
    """The component's download buttons (tables and the data behind each chart) write neutralised CSV; the
    chart's hover names are plotly-escaped while the CSV keeps the text."""
    from components import agreement_view as av

    got = {}
    monkeypatch.setattr(av.st, "download_button", lambda label, data, file_name, mime, key: got.update({key: data}))
    monkeypatch.setattr(av.st, "dataframe", lambda *a, **k: None)
    monkeypatch.setattr(av.st, "plotly_chart", lambda *a, **k: None)
    rows = [{"summary_id": f, "specialty": f, "generator": "<b>" + f} for f in payload.FORMULAS]
    av.table(rows, "payload")
    per_summary = [{"summary_id": sid, "note_tokens": 100 + k, "thorough:human_mean": 3.0 + k / 10,
                    "thorough:human_median": 3.0, "thorough:llm": 4.0}
                   for k, sid in enumerate(payload.FORMULAS + ('<a href="http://127.0.0.2:9/">s</a>',))]
    fig, data = av.length_scatter(per_summary, "thorough", "human_mean", 0.1, 0.5)
    av.show(fig, data, "length")
    from engine.views.agreement import bland_altman_data

    fig2, data2 = av.bland_altman(bland_altman_data(per_summary, "thorough"), "thorough")
    av.show(fig2, data2, "bland")
    assert len(got) == 3
    for key, blob in got.items():
        text = blob.decode()
        assert not _formula_cells(text), (key, _formula_cells(text))
        assert "'" + payload.FORMULAS[0] in list(csv.reader(io.StringIO(text)))[1], key
    for f in (fig, fig2):
        hover = [str(h) for tr in f.data for h in (tr.hovertext if tr.hovertext is not None else [])]
        assert hover and not any("<a" in h for h in hover)
    assert '<a href="http://127.0.0.2:9/">s</a>' in [r[0] for r in csv.reader(io.StringIO(got["dl_length"].decode()))]


@pytest.fixture
def payload_workspace():
    from engine.sample import ensure_sample
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    ensure_sample(store)
    payload.seed(store)
    return store


def _payload_page(script: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    at.session_state["dataset"] = payload.DATASET
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _assert_inert(at: AppTest) -> str:
    from components.review_form import STICKY_FORM_STYLE  # our own static markup: no data in it

    sinks = [s for s in markdown_sinks(at) if s != STICKY_FORM_STYLE]
    bad = {s[:120]: p for s in sinks if (p := markdown_problems(s))}
    assert not bad, bad
    return " ".join(sinks)


@pytest.mark.parametrize("script", PAGES)
def test_every_page_renders_the_payload_dataset_inert(payload_workspace, script):
    at = _payload_page(script)
    shown = _assert_inert(at)
    case = payload_workspace.load_dataset(payload.DATASET).case("pay-01")
    expected = {
        "pages/case.py": [md_inline(case.target_specialty),
                          untrusted.html(f"Note 2 — {case.note('2').date} · {case.note('2').note_type} · "
                                         f"{case.note('2').author_specialty}")],
        "pages/judge.py": [md_inline("cited: " + payload.ALL)],
        "pages/review.py": [md_inline(case.target_specialty)],
    }.get(script, [])
    for snippet in expected:
        assert snippet in shown, snippet
    if script == "pages/agreement.py":  # spot-checkers are their own comparison, shown as written in a table
        table = next(d.value for d in at.dataframe if "clinician" in d.value.columns)
        assert payload.REVIEWS[0][0] in set(table["clinician"])


def test_case_page_payload_evidence_tabs_are_inert(payload_workspace):
    at = _payload_page("pages/case.py")
    facts = next(r for r in at.radio if r.label.startswith("Omitted facts"))
    assert facts.options and all(not markdown_problems(o) for o in facts.options)
    facts.set_value(facts.options[-1]).run()  # the unlinked fact
    assert not at.exception
    support = next(r for r in at.radio if r.label.startswith("Summary sentences"))
    support.set_value(support.options[-1]).run()  # the sentence citing a missing note
    assert not at.exception
    shown = _assert_inert(at)
    assert md_inline("unlinked " + payload.ALL) in shown  # the selected fact in bold


def test_review_page_payload_reviewer_unblinded_is_inert(payload_workspace):
    at = _payload_page("pages/review.py")
    reviewer = payload.REVIEWS[1][0]
    next(t for t in at.text_input if t.label == "Reviewer").input(reviewer).run()
    next(c for c in at.checkbox if c.label == "Blinded").uncheck().run()
    assert not at.exception
    shown = _assert_inert(at)
    assert md("model " + payload.IMG + ".gguf") in shown
    assert not at.get("download_button")[0].proto.disabled


def test_data_page_upload_keeps_no_copy_and_maps_columns(payload_workspace, tmp_path, monkeypatch):
    """Uploads are validated from private copies that are gone when the run ends; the column-mapping editor
    still gets the wide export's header."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    at = AppTest.from_file(str(ROOT / "pages/data.py"), default_timeout=TIMEOUT)
    at.run()
    uploader = at.get("file_uploader")[0]
    for p in payload.bundle_files() + [str(FORMATS / "redcap_ratings.csv")]:
        uploader.upload(Path(p).name, Path(p).read_bytes(), "text/csv")
    uploader.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Column mapping" in m.value and "redcap\\_ratings\\.csv" in m.value for m in at.markdown)
    editor = next(d.value for d in at.dataframe if "field" in d.value.columns)  # the mapping editor
    assert "summary id" in list(editor["field"]) and editor["column"].ne("(none)").any()
    header = Path(FORMATS / "redcap_ratings.csv").read_text().splitlines()[0].split(",")
    assert next(m for m in at.multiselect if m.label == "Columns to ignore").options == header
    assert not list(tmp.iterdir())
    next(b for b in at.button if b.label == "Validate").click().run()
    assert not at.exception
    # the files were read from the private copies: the report is about their rows (the REDCap ratings name
    # summaries of the sample, not of the payload bundle), never about a file that could not be opened
    assert any("nothing was imported" in e.value for e in at.error), [e.value for e in at.error]
    report = next(d.value for d in at.dataframe if "message" in d.value.columns)
    assert set(report["file"]) == {"redcap_ratings.csv"} and (report["row"] >= 1).all()
    assert report["message"].str.startswith("rating for unknown summary").all(), report["message"].unique()[:3]
    assert not list(tmp.iterdir())
    assert not list(tmp.iterdir()), list(tmp.iterdir())
    shown_files = [str(f) for d in at.dataframe if "file" in d.value.columns for f in d.value["file"]]
    assert "notes.csv" in shown_files and "redcap_ratings.csv" in shown_files  # upload names, not temp paths
    assert not any("sumcheck-upload" in f for f in shown_files)
    _assert_inert(at)


# --------------------------------------------------------------------------------------------- uploads
def test_private_copies_are_private_and_removed(tmp_path):
    from components import uploads

    with uploads.private_copies([("a.csv", b"x"), ("../../b.json", b"y")], tmp_root=str(tmp_path)) as paths:
        folder = Path(paths[0]).parent
        assert folder.name.startswith(f"sumcheck-upload-{os.getpid()}-")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert [Path(p).name for p in paths] == ["a.csv", "b.json"] and Path(paths[1]).parent == folder
        assert all(stat.S_IMODE(Path(p).stat().st_mode) == 0o600 for p in paths)
    assert not folder.exists()
    with pytest.raises(RuntimeError):
        with uploads.private_copies([("a.csv", b"x")], tmp_root=str(tmp_path)) as paths:
            raise RuntimeError("validation blew up")
    assert not Path(paths[0]).parent.exists()


def test_sweep_removes_dead_and_legacy_folders_only(tmp_path):
    from components import uploads

    dead = tmp_path / "sumcheck-upload-999999999-abc"
    legacy = tmp_path / "sumcheck-upload-x1y2"
    alive = tmp_path / f"sumcheck-upload-{os.getppid()}-abc"  # another live process (the test runner's parent)
    other = tmp_path / "not-ours"
    for d in (dead, legacy, alive, other):
        d.mkdir()
        (d / "f.csv").write_text("phi")
    folder, _ = uploads.write_private([("a.csv", b"x")], tmp_root=str(tmp_path))  # ours, in use
    gone = uploads.sweep_stale(str(tmp_path))
    assert sorted(gone) == sorted([str(dead), str(legacy)])
    assert alive.exists() and other.exists() and folder.exists()
    uploads.remove(folder)
    assert not folder.exists()


def test_copies_are_removed_at_interpreter_exit(tmp_path):
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from components import uploads\n"
            "folder, _ = uploads.write_private([('a.csv', b'x')], tmp_root=%r)\n"
            "print(folder)\n") % (str(ROOT), str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip().startswith(str(tmp_path)) and not list(tmp_path.iterdir())


# --------------------------------------------------------------------------------------------- busy workspace
def _busy_error():
    from engine.data import store as store_mod

    return getattr(store_mod, "StoreBusy", store_mod.StoreError)("the workspace is busy: database is locked")


@pytest.mark.parametrize("script,method", [("pages/case.py", "judge_results"), ("pages/judge.py", "judge_results"),
                                          ("pages/evidence.py", "evidence_results"),
                                          ("pages/review.py", "judge_results"), ("pages/data.py", "list_datasets"),
                                          ("pages/case.py", "load_dataset"), ("app.py", "list_datasets")])
def test_busy_workspace_is_a_message_not_a_traceback(monkeypatch, script, method):
    from engine.data.store import Store

    def busy(*args, **kwargs):
        raise _busy_error()

    AppTest.from_file(str(ROOT / "pages/settings.py"), default_timeout=TIMEOUT).run()  # sample imported first
    monkeypatch.setattr(Store, method, busy)
    at = AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    if script == "pages/review.py":
        at.session_state["reviewer_name"] = "dr x"
        at.session_state["review_blinded"] = False
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("busy" in e.value for e in at.error), [e.value for e in at.error]
