"""HTML notes read as an HTML5 parser reads them: every text node kept but script, style and template content, which
is counted in the import report; markup never survives into a note.
"""
from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path

import pytest

from engine.data.fhir._attachments import html_to_text
from engine.data.loading import load_paths
from engine.data.mapping import LoadOptions
from engine.data.validation import DatasetInvalid


def html_doc(rid: str, html: str, date: str = "2024-01-05T10:00:00Z") -> dict:
    return {"resourceType": "DocumentReference", "id": rid, "status": "current",
            "type": {"coding": [{"system": "http://loinc.org", "code": "11488-4", "display": "Consult note"}]},
            "subject": {"reference": "Patient/p1"}, "date": date,
            "content": [{"attachment": {"contentType": "text/html; charset=utf-8",
                                        "data": base64.b64encode(html.encode()).decode()}}]}


def load_html(tmp_path: Path, *docs: dict):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"resourceType": "Bundle", "type": "collection",
                                "entry": [{"resource": d} for d in docs]}), encoding="utf-8")
    ds, report = load_paths([str(path)])
    return {n.note_id: n.text for n in ds.cases[0].notes}, report, str(path)


def test_a_document_without_its_head_end_tag_is_read(tmp_path):
    html = ("<!DOCTYPE html><html><head><title>Cardiology consult</title><body><p>EF 35%.<p>Plan: carvedilol."
            "</body></html>")
    notes, report, _ = load_html(tmp_path, html_doc("n1", html))
    assert notes["n1"] == "Cardiology consult\n\nEF 35%.\n\nPlan: carvedilol."
    assert report.errors == []


@pytest.mark.parametrize("html,kept", [
    ("<p>Before.</p><iframe src='x.html'>Fallback: <b>see chart</b>.</iframe><p>After the frame.</p>",
     "Before.\n\nFallback: see chart.\n\nAfter the frame."),
    ("<p>Before.</p><iframe src='x.html'><p>Text after an unclosed frame.</p>",
     "Before.\n\nText after an unclosed frame."),
    ("<object data='echo.pdf' type='application/pdf'>Echo report: EF 35%.</object>", "Echo report: EF 35%."),
    ("<p>Diet:</p><select><option>Low salt<option selected>Fluid restriction</select><button>Sign</button>",
     "Diet:\n\nLow salt\n\nFluid restriction\n\nSign"),
    ("<noscript><p>Allergies: penicillin.</p></noscript>", "Allergies: penicillin."),
    ("<textarea>Free text: no chest pain.</textarea>", "Free text: no chest pain."),
])
def test_text_that_is_not_script_or_style_is_kept(tmp_path, html, kept):
    notes, _, _ = load_html(tmp_path, html_doc("n1", html))
    assert notes["n1"] == kept


def test_script_style_and_template_content_is_dropped_and_counted(tmp_path):
    styled = ("<style>p { color: red }</style><p>Visible text.</p><script>track('x')</script>"
              "<template><p>Row template</p></template>")
    notes, report, path = load_html(tmp_path, html_doc("n1", styled), html_doc("n2", "<p>Plain.</p>"))
    assert notes["n1"] == "Visible text."
    w = [i for i in report.issues if i.severity == "warning" and "left out" in i.message]
    assert len(w) == 1 and w[0].file == path
    assert "3 element(s), 38 characters" in w[0].message and "DocumentReference/n1 (38)" in w[0].message
    assert "DocumentReference/n2" not in w[0].message


def test_an_unclosed_script_is_a_warning_naming_the_document(tmp_path):
    html = "<style>b {}</style><p>Assessment: stable.</p><script>var x = 1;<p>Plan: discharge home tomorrow.</p>"
    notes, report, _ = load_html(tmp_path, html_doc("n1", html))
    assert notes["n1"] == "Assessment: stable."
    w = [i for i in report.issues if i.severity == "warning" and "unclosed <script>" in i.message]
    assert len(w) == 1 and "DocumentReference/n1" in w[0].message and "its 47 characters" in w[0].message
    assert w[0].field == "entry[0].resource.content[0].attachment.data"


@pytest.mark.parametrize("html", [
    "<p onclick=alert(1)>a</p><img src=x onerror=alert(2)><svg><script>alert(3)</script></svg>",
    "<<p>>x</p><![CDATA[<b>]]><!-- <p>hidden --><math><mi>x</mi></math>",
    "<p>a</p></div></span><iframe><iframe><p>b</iframe></iframe>",
    "<xmp><b>literal</b></xmp><plaintext><i>rest</i>",
])
def test_markup_never_survives(html):
    text = html_to_text(html)
    assert re.search(r"<[A-Za-z/!?]", text) is None, text  # a lone "<" is text; a tag never is
    assert "alert" not in text and "onclick" not in text and "hidden" not in text


def test_an_element_tree_too_deep_is_refused_quickly(tmp_path):
    from engine.data.fhir._narrative import MAX_DEPTH, TooDeep, reduce_html

    start = time.monotonic()
    with pytest.raises(TooDeep):
        reduce_html("<div>" * 50_000 + "x")
    assert time.monotonic() - start < 10
    assert reduce_html("<div>" * (MAX_DEPTH - 10) + "deep but fine").text == "deep but fine"
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"resourceType": "Bundle", "type": "collection",
                                "entry": [{"resource": html_doc("n1", "<b>" * 20_000 + "x")}]}), encoding="utf-8")
    with pytest.raises(DatasetInvalid) as exc:
        load_paths([str(path)], LoadOptions())
    errs = exc.value.report.errors
    assert [e.field for e in errs] == ["entry[0].resource.content[0].attachment.data"]
    assert "nested more than" in errs[0].message
