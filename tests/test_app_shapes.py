"""Every page renders for every dataset shape: the sample, each file of sample_data/formats/, no
ratings, ratings but no LLM results, one summary, one rater, an item nobody rated, all-NA synthesized, only yes/no
items — with an explanatory empty state where data is missing and never an exception."""
import warnings

import pytest
from streamlit.testing.v1 import AppTest

from conftest import BUNDLE, FORMATS, ROOT
from engine.data.loading import load_paths
from engine.core.models import Dataset, Rating
from engine.sample import ensure_sample
from engine.data.store import Store

PAGES = ["pages/case.py", "pages/judge.py", "pages/evidence.py", "pages/agreement.py", "pages/review.py",
         "pages/data.py", "pages/settings.py", "pages/models.py", "pages/lexicon.py"]
YES_NO = ("abstraction", "stigmatizing_notes", "stigmatizing_summary")


def _bundle() -> Dataset:
    return load_paths(sorted(str(p) for p in BUNDLE.glob("*.csv")), name="x")[0]


def _with_ratings(ds: Dataset, keep) -> Dataset:
    return Dataset(ds.name, ds.cases, ds.summaries, [r for r in ds.ratings if keep(r)])


def shapes() -> dict[str, Dataset]:
    full = _bundle()
    one_case = full.cases[0]
    one_summary = [s for s in full.summaries if s.case_id == one_case.case_id][:1]
    out = {
        "case-json": load_paths([FORMATS / "case_json"], name="case-json")[0],
        "dialogue": load_paths([FORMATS / "dialogue.csv"], name="dialogue")[0],
        "case-json+redcap": load_paths([FORMATS / "case_json", FORMATS / "redcap_ratings.csv"], name="cr")[0],
        "one-summary": Dataset("one-summary", [one_case], one_summary,
                               [r for r in full.ratings if r.summary_id == one_summary[0].summary_id]),
        "one-rater": _with_ratings(full, lambda r: r.rater_id == "R1"),
        "item-nobody-rated": _with_ratings(full, lambda r: r.item != "useful"),
        "all-na-synthesized": Dataset(full.name, full.cases, full.summaries,
                                      [r for r in full.ratings if r.item not in ("synthesized", "abstraction")]
                                      + [Rating(r.summary_id, r.rater_id, "abstraction", 0.0, r.rater_group)
                                         for r in full.ratings if r.item == "abstraction"]
                                      + [Rating(r.summary_id, r.rater_id, "synthesized", None, r.rater_group)
                                         for r in full.ratings if r.item == "abstraction"]),
        "only-yes-no": _with_ratings(full, lambda r: r.item in YES_NO),
    }
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    path = tmp_path_factory.mktemp("shapes") / "ws.sqlite"
    st = Store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ensure_sample(st)
    for name, ds in shapes().items():
        st.import_dataset(ds, name=name)
    return path


SHAPES = ["sample", "case-json", "dialogue", "case-json+redcap", "one-summary", "one-rater", "item-nobody-rated",
          "all-na-synthesized", "only-yes-no"]


# shape -> (item label, the reason the headline must give) for panel statistics that cannot be computed
WHY_NOT = {
    "one-summary": [("Accurate", "ICC: fewer than 3 summaries were scored by every rater")],
    "one-rater": [("Accurate", "Krippendorff ordinal: too few summaries or raters")],
    "only-yes-no": [("Accurate", "no rater scored this item")],
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_page_renders(workspace, monkeypatch, shape):
    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(workspace))
    monkeypatch.setenv("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", "full")  # users see "none"; a failing test the details
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / page), default_timeout=60)
        at.session_state["dataset"] = shape
        at.run()
        assert not at.exception, (shape, page, [e.value for e in at.exception])
        if page == "pages/agreement.py" and shape in ("dialogue",):
            assert any("no human ratings" in i.value for i in at.info), (shape, [i.value for i in at.info])
        if page == "pages/agreement.py" and shape in WHY_NOT:
            text = " ".join(m.value for m in at.markdown).replace("\\", "").replace("\u2060", "")
            for item, why in WHY_NOT[shape]:
                assert f"**{item}.** Rater agreement not computed: {why}" in text, (shape, item, text[:600])
