"""The HTML and SVG fragments (components' badges, marks, legends, note blocks, review-form style and script; the
report's charts) come from Jinja2 templates with autoescape: data shows only as text, attributes stay quoted and
escaped by engine.core.untrusted.html, and ordinary inputs give exactly the markup written below."""
import re
from html.parser import HTMLParser

import jinja2
import pytest
from markupsafe import Markup

import payload
from components import case_view, coverage_view, evidence_view, review_form
from components.html import fragment
from engine.analysis import report
from engine.analysis.headlines import HeadlineRow
from engine.core import untrusted
from engine.core.rubric import ITEMS
from engine.statistics.base import Estimate

HOSTILE = [payload.SCRIPT, payload.RAWIMG, payload.ANCHOR, "\"double\" 'single' & </span></div></mark>",
           payload.ALL + " **bold** _it_ `code` # head | a | b |", "x" * 5000 + payload.SCRIPT, "one\ntwo\r\nthree\r",
           "&amp; &lt;script&gt; &#39;"]
OWN_TAGS = {"a", "br", "circle", "div", "line", "mark", "rect", "span", "svg", "text"}


class _Parsed(HTMLParser):
    """Tags, attributes (name -> values, character references resolved) and text of a fragment."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: dict[str, list[str]] = {}
        self.chunks: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        # every attribute double-quoted, its value holding no quote or angle bracket of its own
        raw = self.get_starttag_text()
        assert re.fullmatch(r'<[a-z]+(?: [a-z][a-z0-9-]*="[^"<>]*")*/?>', raw), raw
        self.tags.append(tag)
        for name, value in attrs:
            self.attrs.setdefault(name, []).append(value)

    def handle_data(self, data):
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)


def _own_markup_only(markup: str) -> _Parsed:
    """The fragment holds only our tags, every attribute quoted, and no tag or script written by data."""
    assert "<script" not in markup.lower() and "<img" not in markup.lower() and "<b>" not in markup
    assert '<a href="http' not in markup and "\n" not in markup and "\r" not in markup
    parsed = _Parsed(markup)
    assert set(parsed.tags) <= OWN_TAGS, parsed.tags
    return parsed


def _lines(text: str) -> str:
    """``text`` as a note block shows it: its line breaks are <br> tags."""
    return "".join(re.split(r"\r\n|\r|\n", text))


def _row(label, value, low, high):
    return HeadlineRow("x", label, "likert", 30, "ICC(3,k)", Estimate(value, low, high), "good", "", None, "", "",
                       "", "", "")


class _Page:
    """Stands in for ``streamlit`` in a component module: records what it is asked to draw."""

    def __init__(self):
        self.markdown_calls: list[str] = []

    def markdown(self, body, **_):
        self.markdown_calls.append(body)


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_component_fragments_show_hostile_data_as_text(data, monkeypatch):
    p = _own_markup_only(case_view._badge(data, [data]))
    assert p.attrs["title"] == [f"cites note {data} (click to show it)"] and p.text == f"Note {data}"
    assert p.attrs["href"] == ["#" + case_view.note_anchor(data)]
    p = _own_markup_only(case_view._badge(data, []))
    assert p.attrs["title"] == [f"cites note {data}, which is not in this case"] and "href" not in p.attrs
    p = _own_markup_only(case_view._flag_badge(data, data))
    assert p.attrs["data-kind"] == [data] and p.attrs["title"] == [data] and p.text == "!"
    p = _own_markup_only(case_view.stigma_legend({"credibility": data, data: "other"}))
    assert p.text.endswith(data + "other")
    note = {"note_id": data, "date": None, "note_type": data, "author_specialty": "", "text": data + " end"}
    head = f"Note {data} — {data} — {len(note['text'].split())} words"
    for block in (case_view.note_html(note), case_view.note_html(note, [(0, 3, "#ffd33d", data)])):
        p = _own_markup_only(block)
        assert p.attrs["id"] == [case_view.note_anchor(data)] and p.text == head + _lines(data + " end")
    summary = case_view.summary_html(data + " [1]", [(len(data) + 1, len(data) + 4, [data])], [data],
                                     [(0, 2, "#ff0", data)], [(len(data), "weak support", data)])
    p = _own_markup_only(summary)
    assert data in p.attrs["title"] and p.text == _lines(data) + "~ weak " + f"Note {data}"  # flag, then badge
    p = _own_markup_only(coverage_view.verdict_badge(data))
    assert p.text == "citation " + data
    page = _Page()
    monkeypatch.setattr(coverage_view, "st", page)
    coverage_view.legend(0.2, 0.8, data)
    p = _own_markup_only(page.markdown_calls[0])
    assert p.text == data + ": 0.200.350.500.650.80"
    p = _own_markup_only(evidence_view.marks_html(data + " tail", [(0, 2, "#ffd33d", data), (1, 3, "#000", "x")]))
    assert p.attrs["title"] == [data] and p.text == data + " tail"
    fid = evidence_view.focus_id("where", data, (0, 2))
    p = _own_markup_only(evidence_view.highlight_html(data, [(0, 2, "#ffd33d", data)], height=120, focus=(0, 2),
                                                      focus_id=fid, scroll_page=True))
    assert p.attrs["id"] == [fid] and p.attrs["data-scroll"] == ["page"] and p.text == data


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_report_charts_show_hostile_data_as_text(data):
    p = _own_markup_only(report.forest_svg([_row(data, 0.6, 0.4, 0.8), _row("b", -0.2, -0.5, 0.1)], "humans", data))
    title_lines = len(p.attrs["font-weight"])  # the title's lines are the bold texts, first in the figure
    assert p.attrs["aria-label"] == [data] and " ".join(p.chunks[:title_lines]) == data
    assert p.chunks[title_lines + 4:title_lines + 6] == [data, "0.60"]  # after the four band names: the row
    p = _own_markup_only(report.bars_svg({data: (1, 2), "2": (3, 0)}, data))
    assert p.attrs["aria-label"] == [data] and p.chunks[0] == data and sorted(p.chunks[1:]) == sorted([data, "2"])


def test_fragments_escape_as_the_one_html_helper_does():
    """Autoescape goes through engine.core.untrusted.html: ' as &#x27;, line breaks as references (a blank line
    cannot end the HTML block); markup the code built is kept; a value the macro needs and did not get is an error."""
    value = "it's <b>\n\nbold</b> & \"q\""
    assert coverage_view.verdict_badge(value).endswith(">citation " + untrusted.html(value) + "</span>")
    assert "&#x27;" in untrusted.html(value) and "\n" not in coverage_view.verdict_badge(value)
    assert fragment("summary_block", body=Markup("<b>x</b>")) == '<div style="line-height:1.7"><b>x</b></div>'
    assert fragment("summary_block", body="<b>x</b>") == '<div style="line-height:1.7">&lt;b&gt;x&lt;/b&gt;</div>'
    with pytest.raises(jinja2.UndefinedError):
        fragment("verdict_badge", verdict="ok")
    assert type(fragment("verdict_badge", verdict="ok", colour="#000")) is str  # plain text: `+` does not escape


def test_scripts_take_only_our_values():
    fid = evidence_view.focus_id("w", "text", (0, 2))
    script = evidence_view.focus_script(fid)
    assert script.startswith('<script>(function () {\n  var id = "' + fid + '", tries = 0;\n')
    assert script.endswith("})();</script>") and script.count("<script") == 1 and script.count(fid) == 1
    with pytest.raises(ValueError):
        evidence_view.focus_script('x"; alert(1); "')
    shortcuts = review_form.shortcuts_script(ITEMS[:2])
    assert shortcuts.startswith('<script>\n(function () {\n  var P = window.parent, D = P.document;\n  var ITEMS = '
                                '[{"key": "' + ITEMS[0].key + '", "binary": false, "na": false}')
    assert shortcuts.endswith("\n})();\n</script>") and shortcuts.count("<script") == 1
    assert 'SAVE = "Save review", NEXT = "Next summary", PREV = "Previous summary", MARK = "sumcheck-review-form";' \
        in shortcuts
    assert review_form.STICKY_FORM_STYLE == (
        '<span class="sumcheck-review-form"></span><style>div[data-testid="stColumn"]:has(.sumcheck-review-form-col)'
        '{position:sticky;top:3.5rem;align-self:flex-start}</style>')


BADGE = "color:white;border-radius:4px;padding:0 5px;font-size:0.8em;white-space:nowrap"
MARK = "padding:0 1px;border-radius:2px"


def test_ordinary_inputs_give_the_markup_written_here(monkeypatch):
    assert evidence_view.weight_badge(0.5) == ('<span style="background:#bf8700;color:white;border-radius:10px;'
                                               'padding:1px 8px;font-size:0.85em">0.5</span>')
    assert evidence_view.weight_badge(0.05).endswith(">0.05</span>")
    assert evidence_view.weight_badge(1).endswith(">1</span>")
    assert coverage_view.verdict_badge("ok") == ('<span style="background:#1a7f37;color:white;border-radius:4px;'
                                                 'padding:0 6px;font-size:0.8em">citation ok</span>')
    assert case_view._flag_badge("citation wrong", "why") == (
        '<span class="sumcheck-flag" data-kind="citation wrong" title="why" style="border:1px solid #cf222e;'
        'color:#cf222e;border-radius:4px;padding:0 4px;margin-left:3px;font-size:0.75em;white-space:nowrap">✗ cite'
        '</span>')
    assert case_view._badge("plain text", ["plain text"]) == (
        '<a href="#note-c9ecf5e54c7b" style="text-decoration:none"><span title="cites note plain text (click to '
        f'show it)" style="background:#1f6feb;{BADGE}">Note plain text</span></a>')
    assert case_view._text_html("a\nb\r\nc\rd\n\nblank") == "a<br>b<br>c<br>d<br><br>blank"
    assert case_view.note_html({"note_id": "plain text", "text": "plain text"}) == (
        '<div id="note-c9ecf5e54c7b" style="scroll-margin-top:6px;margin-bottom:14px"><div style="font-weight:600;'
        'border-bottom:1px solid #d0d7de;margin-bottom:4px">Note plain text — 2 words</div><div style="font-family:'
        'inherit;font-size:0.92em;line-height:1.55">plain text</div></div>')
    assert case_view.stigma_legend({}) == ('<div style="font-size:0.8em">Stigmatizing language (hover a mark for its '
                                           'category): </div>')
    text = 'Patient on <b>amiodarone</b> & "x" [1]. Second sentence [2, 9].\nThird **line** [3] end'
    c1, c2, c3 = text.index("[1]"), text.index("[2, 9]"), text.index("[3]")
    assert case_view.summary_html(text, [(c1, c1 + 3, ["1"]), (c2, c2 + 6, ["2", "9"]), (c3, c3 + 3, ["<3>"])],
                                  ["1", "2", "<3>"]) == (
        '<div style="line-height:1.7">Patient on &lt;b&gt;amiodarone&lt;/b&gt; &amp; &quot;x&quot; <a href="#note-'
        '6b86b273ff34" style="text-decoration:none"><span title="cites note 1 (click to show it)" style="background:'
        f'#1f6feb;{BADGE}">Note 1</span></a>. Second sentence <a href="#note-d4735e3a265e" style="text-decoration:'
        f'none"><span title="cites note 2 (click to show it)" style="background:#1f6feb;{BADGE}">Note 2</span></a> '
        f'<span title="cites note 9, which is not in this case" style="background:#cf222e;{BADGE}">Note 9</span>.'
        '<br>Third **line** <a href="#note-c559014c068e" style="text-decoration:none"><span title="cites note &lt;3'
        f'&gt; (click to show it)" style="background:#1f6feb;{BADGE}">Note &lt;3&gt;</span></a> end</div>')
    assert evidence_view.marks_html("plain text tail", [(0, 4, "#ffd33d", "plain text"), (2, 3, "#000", "x"),
                                                        (11, 15, "rgba(1,2,3,0.5)", "t<")]) == (
        f'<mark title="plain text" style="background:#ffd33d;{MARK}">plai</mark>n text <mark title="t&lt;" '
        f'style="background:rgba(1,2,3,0.5);{MARK}">tail</mark>')
    assert evidence_view.marks_html("a\nb <c>", [(0, 3, "#f00", "t")], escape=case_view._text_html) == (
        f'<mark title="t" style="background:#f00;{MARK}">a<br>b</mark> &lt;c&gt;')
    fid = evidence_view.focus_id("w", "plain text", (0, 2))
    assert evidence_view.highlight_html("plain textabcdef", [(0, 2, "#ffd33d", "x")], height=50, focus=(1, 4),
                                        focus_id=fid, scroll_page=True) == (
        '<div style="white-space:pre-wrap;font-family:inherit;line-height:1.6;max-height:50px;overflow-y:auto">p'
        f'<mark id="{fid}" data-scroll="page" title="selected passage" style="background:rgba(31,111,235,0.35);'
        f'{MARK};outline:2px solid #1f6feb;outline-offset:1px">lai</mark>n textabcdef</div>')
    assert evidence_view.highlight_html("ab", []) == (
        '<div style="white-space:pre-wrap;font-family:inherit;line-height:1.6">ab</div>')
    page = _Page()
    monkeypatch.setattr(coverage_view, "st", page)
    coverage_view.legend(0.5, 0.5, "omission score")
    stop = '<span style="background:rgba(255,200,60,0.25);padding:2px 10px">0.50</span>'
    assert page.markdown_calls == [f'<div style="font-size:0.85em">omission score: {stop * 5}</div>']


def test_ordinary_charts_give_the_svg_written_here():
    bars = "".join(f'<rect x="{x}" y="100.0" width="20" height="0.0" fill="#1f6feb"/><rect x="{x + 22}" y="100.0" '
                   f'width="20" height="0.0" fill="#cf222e"/><text x="{x + 21}" y="114" text-anchor="middle">{k}</text>'
                   for k, x in zip(range(1, 6), range(30, 260, 52)))
    assert report.bars_svg({str(v): (0, 0) for v in range(1, 6)}, "Zero") == (
        '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="130" role="img" aria-label="Zero" '
        f'style="font:11px sans-serif"><text x="30" y="12" font-weight="bold">Zero</text>{bars}</svg>')
    band = '<rect x="{}" y="52" width="{}" height="28" fill="{}"/><text x="{}" y="{}" text-anchor="middle" ' \
           'font-size="10" fill="#555">{}</text>'
    ticks = "".join(f'<line x1="{x}" x2="{x}" y1="90" y2="94" stroke="#333"/><text x="{x}" y="106" '
                    f'text-anchor="middle" font-size="10">{t}</text>'
                    for x, t in [("190.0", "-0.1"), ("236.4", "0.0"), ("282.7", "0.1"), ("375.5", "0.3"),
                                 ("468.2", "0.5"), ("560.9", "0.7"), ("653.6", "0.9")])
    assert report.forest_svg([_row("a", 0.95, 0.91, 0.99)], "humans", "t") == (
        '<svg xmlns="http://www.w3.org/2000/svg" width="760" height="116" role="img" aria-label="t" style="font:12px '
        'sans-serif"><text x="8" y="14" font-weight="bold">t</text>'
        + band.format("190.0", "278.2", "#fde2e1", "329.1", 48, "poor")
        + band.format("468.2", "115.9", "#fff1d6", "526.1", 48, "moderate")
        + band.format("584.1", "69.5", "#e3f4e1", "618.9", 48, "good")
        + band.format("653.6", "46.4", "#c9ecc4", "676.8", 48, "excellent")
        + '<text x="182" y="72" text-anchor="end">a</text><line x1="658.3" x2="695.4" y1="68" y2="68" stroke="#333" '
        'stroke-width="2"/><circle cx="676.8" cy="68" r="4.5" fill="#1f6feb"/><text x="706" y="72" font-size="11">'
        f'0.95</text>{ticks}</svg>')
    missing = HeadlineRow("x", "m", "likert", 0, "ICC(3,k)", None, "", "", None, "", "", "", "", "")
    assert '<text x="196" y="72" fill="#888">not computed</text>' in report.forest_svg([missing], "llm", "t")
