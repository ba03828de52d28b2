"""A citation is missing only where citations are expected: not in a one-source case (a dialogue and its note) and
not in a dataset none of whose summaries cites a note. (Before, every sentence of a dialogue dataset's summary was
flagged "citation missing".)"""
import pytest

from engine.core.models import Case, Dataset, Note, Summary
from engine.evidence.support.alignment import align_summary, alignment_key


@pytest.fixture(scope="module")
def emb(suite_embedder):
    return suite_embedder


DIALOGUE = Case("e1", "Family medicine", (Note("1", "[doctor] What brings you in? [patient] A cough for a week, "
                                                 "no fever. [doctor] Any inhaler use? [patient] Albuterol twice."),))
TWO_NOTES = Case("c1", "Cardiology", (Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily."),
                                      Note("2", "Echo: LVEF 35%. Start sacubitril/valsartan.")))


def test_a_one_source_summary_has_no_missing_citation(emb):
    s = Summary("e1", "e1", "Cough for one week without fever. Uses albuterol twice.")
    res = align_summary(DIALOGUE, s, emb)
    assert {a.citation_verdict for a in res.sentences} == {"n/a"} and res.citation_issues == []
    assert "one source note" in res.sentences[0].citation_detail


def test_a_dataset_that_never_cites_has_no_missing_citation_but_one_that_cites_does(emb):
    plain = Summary("c1-s1", "c1", "New atrial fibrillation on apixaban. LVEF 35%, sacubitril/valsartan started.")
    ds = Dataset("plain", [TWO_NOTES], [plain])
    assert not ds.cites_notes()
    res = align_summary(TWO_NOTES, plain, emb, ds.cites_notes())
    assert {a.citation_verdict for a in res.sentences} == {"n/a"} and res.citation_issues == []
    cited = Summary("c1-s2", "c1", "New atrial fibrillation on apixaban. <NoteID:1> LVEF 35%, sacubitril/valsartan "
                                   "started.")
    ds2 = Dataset("cites", [TWO_NOTES], [plain, cited])
    assert ds2.cites_notes()
    res2 = align_summary(TWO_NOTES, plain, emb, ds2.cites_notes())
    assert [i["verdict"] for i in res2.citation_issues] == ["missing", "missing"]
    # keys: unchanged where citations are expected (stored results of citing datasets stay valid)
    assert alignment_key(TWO_NOTES, plain, True) != alignment_key(TWO_NOTES, plain, False)
    assert alignment_key(TWO_NOTES, plain) == alignment_key(TWO_NOTES, plain, True)


def test_the_case_page_of_a_dialogue_dataset_flags_no_missing_citation():
    """The page a reviewer reads: a dialogue dataset (one conversation per encounter, its note as the summary) shows
    no "citation missing" flag and no citation issue (before: every sentence flagged, the count at eight)."""
    from conftest import ROOT, _run
    from engine.data.loading import load_paths
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    ds, _ = load_paths([str(ROOT / "sample_data" / "formats" / "dialogue.csv")], name="dialogues")
    Store(workspace_path()).import_dataset(ds, name="dialogues")
    at = _run("pages/case.py")
    at.selectbox(key="dataset_picker").set_value("dialogues").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="dataset_picker").value == "dialogues"
    drawn = " ".join(m.value for m in at.markdown)
    assert 'data-kind="citation missing"' not in drawn and "sumcheck-flag" in drawn or "line-height:1.7" in drawn
    issues = [m for m in at.metric if m.label == "Citation issues"]
    assert issues and all(str(m.value) == "0" for m in issues), [m.value for m in issues]
    assert not any(c.value.startswith("Citation issues in ") for c in at.caption)
