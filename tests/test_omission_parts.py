"""A fact of several statements decided part by part (engine.evidence.medomit.decision.fact_parts / by_parts): the
decision names the parts the summary leaves out, the result places them in the note, and the Case page's rows and
detail show them instead of the whole line."""
import json
import sys
from dataclasses import replace

import pytest

from conftest import ROOT
from engine.core.models import Case, Note
from engine.evidence.medomit.decision import DEFAULT_DECISION, decide, fact_parts
from engine.evidence.medomit.result import Fact, FactScore, MedOmitResult
from engine.evidence.medomit.rows import omitted_fact_rows

LINE = ("2. Thromboprophylaxis: albumin 2.1 g/dL with low bleeding risk - start warfarin, INR goal 2-3, with "
        "enoxaparin 1 mg/kg SC b.i.d. until INR therapeutic. Hold warfarin 5 days before biopsy.")
SUMMARY = ("Membranous nephropathy with albumin 2.1 g/dL and low bleeding risk: start warfarin, INR goal 2-3. "
           "Hold warfarin 5 days before the biopsy.")
COVERAGE_ONLY = replace(DEFAULT_DECISION, use_model=False)


@pytest.fixture(scope="module")
def emb():
    from engine.evidence.embeddings import default_embedder

    return default_embedder()


def test_fact_parts_cut_sentences_and_claims_and_keep_offsets():
    parts = fact_parts(LINE)
    assert [t for t, _, _ in parts] == [
        "2. Thromboprophylaxis: albumin 2.1 g/dL with low bleeding risk - start warfarin, INR goal 2-3",
        "with enoxaparin 1 mg/kg SC b.i.d. until INR therapeutic.", "Hold warfarin 5 days before biopsy."]
    assert all(LINE[a:b] == t for t, a, b in parts)
    assert fact_parts("Afirma GSC molecular testing sent on dedicated pass") == [
        ("Afirma GSC molecular testing sent on dedicated pass", 0, 51)]


def test_a_fact_stated_in_part_is_reported_with_the_part_left_out(emb):
    d = decide(["F28"], [LINE], SUMMARY, emb, None, COVERAGE_ONLY)[0]
    assert d.omitted and len(d.parts) == 3
    assert [p.text for p in d.missing] == ["with enoxaparin 1 mg/kg SC b.i.d. until INR therapeutic."]
    assert "omitted in part" in d.explanation and "enoxaparin" in d.explanation
    assert d.p_omitted == max(p.p_omitted for p in d.parts) and d.coverage == min(p.coverage for p in d.parts)
    whole = decide(["F28"], [LINE], SUMMARY, emb, None, replace(COVERAGE_ONLY, by_parts=False))[0]
    assert whole.parts == () and whole.missing == ()  # decided whole, it points at the whole line or nothing


def test_a_fact_left_out_whole_names_no_parts(emb):
    d = decide(["F1"], [LINE], "Atrial fibrillation on apixaban 5 mg twice daily.", emb, None, COVERAGE_ONLY)[0]
    assert d.omitted and all(p.omitted for p in d.parts) and d.missing == ()


def test_the_left_out_part_is_placed_in_the_note_for_a_passage_and_for_a_paraphrased_fact(emb):
    note = "Assessment and plan.\n" + LINE + "\nFollow up in clinic."
    at = note.index(LINE)
    passage = Fact("P1", LINE, "n1", at, at + len(LINE), "passage", 1.0)
    part = "with enoxaparin 1 mg/kg SC b.i.d. until INR therapeutic."
    a = LINE.index(part)
    assert passage.part_span(note, part, a, a + len(part)) == (at + a, at + a + len(part))
    reworded = Fact("F9", "Enoxaparin 1 mg/kg SC b.i.d. until INR therapeutic, then warfarin", "n1", at,
                    at + len(LINE), "fuzzy", 0.8)
    assert reworded.part_span(note, "enoxaparin 1 mg/kg SC b.i.d.", 0, 28) == (note.index("enoxaparin"),
                                                                                note.index("enoxaparin") + 28)
    assert reworded.part_span(note, "then warfarin", 56, 69) is None  # not the note's words: not placed
    score = FactScore("F9", True, "critical", 1.0, [], 1.0, [], missing=[["then warfarin", None, None]])
    assert score.regions(reworded) == [("n1", at, at + len(LINE))]  # a part it cannot place: the whole fact


def test_the_pipeline_stores_the_parts_and_the_case_rows_show_them(emb):
    from engine.evidence.medomit.pipeline import MedOmit
    from fakes import AnswerBackend

    note = "Assessment and plan.\n" + LINE
    case = Case("neph", "nephrology", (Note("n1", note),))
    at = note.index(LINE)
    facts = [Fact("P1", LINE, "n1", at, at + len(LINE), "passage", 1.0)]
    be = AnswerBackend(lambda m: {"yes": -0.1, "no": -2.5} if "enoxaparin" not in m[-1]["content"]
                       else {"no": -0.1, "yes": -3})
    from engine.core.models import Summary

    summary = Summary("s1", "neph", SUMMARY)
    res = MedOmit(be, "m", embedder=emb)._scored(case, summary, facts, [], [], ({"P1": "critical"}, {}), [],
                                                 lambda m: None, sddx=[])
    s = res.scores[0]
    part = "with enoxaparin 1 mg/kg SC b.i.d. until INR therapeutic."
    assert s.omitted and s.missing == [[part, note.index(part), note.index(part) + len(part)]]
    back = MedOmitResult._from_json(res.to_json())
    assert back.scores[0].missing == s.missing
    row = omitted_fact_rows(back)[0]
    assert row["left out"] == [part] and row["headline"].startswith("in part — left out: with enoxaparin")
    assert row["regions"] == [(note.index(part), note.index(part) + len(part))]


def test_a_row_stored_before_parts_existed_still_reads():
    rows = [json.loads(x) for x in (ROOT / "sample_data" / "medomit_results.jsonl").read_text().splitlines()[:1]]
    d = json.loads(rows[0]["result"]) if isinstance(rows[0]["result"], str) else rows[0]["result"]
    for s in d["scores"]:
        s.pop("missing", None)
    res = MedOmitResult._from_json(json.dumps(d))
    assert all(s.missing == [] for s in res.scores)
    assert all(r["headline"] == r["text"] for r in omitted_fact_rows(res))


def test_case_page_heads_a_fact_stated_in_part_by_what_it_leaves_out_and_highlights_only_that():
    """On the sample's shipped rows: a fact the summary states in part is listed by the parts it leaves out, its
    detail says so, and the note's highlight covers the left-out parts, not the whole line."""
    import re

    from streamlit.testing.v1 import AppTest

    from conftest import TIMEOUT
    from engine.sample import SAMPLE_MEDOMIT

    found = None
    for line in SAMPLE_MEDOMIT.read_text(encoding="utf-8").splitlines():
        res = MedOmitResult.from_json(json.loads(line)["result"])
        rows = omitted_fact_rows(res) if res.status == "complete" else []
        row = next((r for r in rows if r["left out"] and all(a is not None for a, _ in r["regions"])), None)
        if row:
            found = res, row
            break
    assert found, "the shipped rows hold no fact stated in part"
    res, row = found
    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=TIMEOUT)
    at.query_params["dataset"], at.query_params["case"], at.query_params["summary"] = "sample", res.case_id, \
        res.summary_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    radio = next(r for r in at.radio if r.label.startswith("Omitted facts, "))
    pick = next(o for o in radio.options if f" {row['fact_id']} · " in o.replace("\\", "")
                and " · in part — left out:" in o.replace("\\", ""))
    radio.set_value(pick).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("only in part" in m.value and "Left out:" in m.value for m in at.markdown)
    drawn = next(m.value for m in at.markdown if 'title="left out"' in m.value)
    marked = re.findall(r'<mark [^>]*title="left out"[^>]*>([^<]*)</mark>', drawn)
    assert marked and all(m.strip() for m in marked)
    assert len("".join(marked)) < len(res.fact(row["fact_id"]).text)  # the parts, not the whole line
