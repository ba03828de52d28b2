"""One current selection across pages: dataset, case and summary shared by every page and mirrored in the URL; the
Judge page's run settings kept for the session; an import that changes the dataset says so."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT

TIMEOUT = 120


def _app():
    """The app, on the Case page (it opens on the start page)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/case.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_case_page_summary_is_the_judge_pages_summary_and_the_urls():
    """Reproduces the failure: gi-01-s2 chosen on the Case page, the Judge page opened gi-01-s1."""
    at = _app()
    at.selectbox(key="case_picker").set_value("gi-01").run()
    _ok(at.radio(key="case_summary").set_value("gi-01-s2").run())
    assert at.query_params["summary"] == ["gi-01-s2"] or at.query_params["summary"] == "gi-01-s2"
    _ok(at.switch_page("pages/judge.py").run())
    assert at.title[0].value == "Judge"
    assert at.selectbox(key="case_picker").value == "gi-01"
    assert at.radio(key="judge_summary").value == "gi-01-s2"
    _ok(at.switch_page("pages/review.py").run())
    assert at.radio(key="review_summary").value == "gi-01-s2"
    _ok(at.radio(key="review_summary").set_value("gi-01-s3").run())
    _ok(at.switch_page("pages/case.py").run())
    assert at.radio(key="case_summary").value == "gi-01-s3"  # back on the Case page: the last choice anywhere


def test_a_link_opens_the_same_view():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["dataset"] = "sample"
    at.query_params["case"] = "neuro-02"
    at.query_params["summary"] = "neuro-02-s3"
    _ok(at.run())
    _ok(at.switch_page("pages/case.py").run())
    assert at.selectbox(key="case_picker").value == "neuro-02"
    assert at.radio(key="case_summary").value == "neuro-02-s3"


def test_a_link_naming_nothing_real_says_so_and_shows_the_first():
    """Before, a link naming a missing case silently opened card-01 and rewrote the URL."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["case"] = "<script>alert(1)</script>"
    at.query_params["summary"] = "nope"
    _ok(at.run())
    _ok(at.switch_page("pages/case.py").run())
    first = at.selectbox(key="case_picker").options[0]
    assert at.selectbox(key="case_picker").value == first
    said = " ".join(w.value for w in at.warning)
    assert "The link names case" in said and "which this dataset does not have; showing" in said, said
    assert "The link names summary 'nope'" in said and "<script>" not in said  # escaped, never markup
    _ok(at.run())  # said once: a rerun shows the page without the warning
    assert not any("The link names" in w.value for w in at.warning)


def test_judge_settings_persist_across_pages():
    at = _app()
    _ok(at.switch_page("pages/judge.py").run())
    at.session_state["judge_opts"]["n_samples"] = 3  # what submitting the form records
    _ok(at.switch_page("pages/case.py").run())
    _ok(at.switch_page("pages/judge.py").run())
    assert next(n for n in at.number_input if n.label == "Samples").value == 3
