"""Note-level omission flags: a note the summary never cites, a result the latest note says is still pending."""
from engine.core.models import Case, Note
from engine.evidence.coverage.results import Unit
from engine.evidence.coverage.note_flags import FLAG_KINDS, latest_notes, omission_flags, pending_flags
from engine.evidence.coverage.unit_coverage import source_units

NOTES = (
    Note("1", "Clinic visit. Started apixaban 5 mg b.i.d. for atrial fibrillation. PD-L1 testing pending.",
         date="2024-01-10"),
    Note("2", "Telephone encounter. Found confused overnight; glucose 38 mg/dL, given nasal glucagon 3 mg. "
              "No driving for one week.", date="2024-02-01"),
    Note("3", "Follow-up. Biopsy shows a membranous pattern. Immunofluorescence and electron microscopy are "
              "pending; final report expected next week.", date="2024-03-05"),
)
CASE = Case("c1", "Nephrology", NOTES)


def units_for(case, scores=None):
    """Every source unit, scored uncovered (0.9) unless ``scores`` says otherwise (logic test: no embedder)."""
    out = []
    for u in source_units(case):
        out.append(Unit(u.note_id, u.start, u.end, (scores or {}).get(u.text.strip()[:12], 0.9)))
    return out


def kinds(flags):
    return [(f.kind, f.note_id) for f in flags]


def test_a_note_never_cited_is_flagged_with_its_least_covered_passage():
    summary = "Apixaban for atrial fibrillation. <NoteID:1> Biopsy showed a membranous pattern. <NoteID:3>"
    flags = omission_flags(CASE, summary, units_for(CASE), 0.5)
    uncited = [f for f in flags if f.kind == "uncited_note"]
    assert kinds(uncited) == [("uncited_note", "2")]
    f = uncited[0]
    assert NOTES[1].text[f.start:f.end] == f.text and "glucose 38" in f.text
    assert "cites notes 1, 3 but never note 2" in f.reason


def test_no_citation_flag_without_citations_or_when_every_note_is_cited():
    units = units_for(CASE)
    plain = "Apixaban for atrial fibrillation. Glucagon given for a low. IF and EM pending."
    assert not [f for f in omission_flags(CASE, plain, units, 0.5) if f.kind == "uncited_note"]
    every = "Apixaban. <NoteID:1> Glucagon 3 mg. <NoteID:2> Biopsy. <NoteID:3>"
    assert not [f for f in omission_flags(CASE, every, units, 0.5) if f.kind == "uncited_note"]
    # a citation of a note the case does not have neither counts as citing nor raises
    ghost = "Apixaban. <NoteID:9>"
    assert not [f for f in omission_flags(CASE, ghost, units, 0.5) if f.kind == "uncited_note"]


def test_an_uncited_note_with_nothing_above_the_threshold_points_to_its_least_covered_unit():
    scores = {"Telephone en": 0.2, "No driving f": 0.45}
    units = [u if u.note_id == "2" else Unit(u.note_id, u.start, u.end, 0.1) for u in units_for(CASE, scores)]
    f = [x for x in omission_flags(CASE, "Apixaban. <NoteID:1>", units, 0.5) if x.note_id == "2"][0]
    assert f.text == "No driving for one week."


def test_pending_in_the_latest_note_is_flagged_unless_the_summary_carries_it():
    flags = pending_flags(CASE, "Biopsy on 3/5 showed a membranous pattern. <NoteID:3>")
    assert kinds(flags) == [("pending", "3")] and "electron microscopy" in flags[0].text
    assert FLAG_KINDS["pending"].label in ("pending in the latest note",)
    carried = "Biopsy showed a membranous pattern; immunofluorescence and EM are still pending. <NoteID:3>"
    assert pending_flags(CASE, carried) == []
    # a summary saying something else is pending does not carry it
    other = "Biopsy showed a membranous pattern. Insurance approval is pending."
    assert kinds(pending_flags(CASE, other)) == [("pending", "3")]


def test_pending_in_an_earlier_note_is_not_flagged_and_undated_notes_use_the_last_one():
    # note 1's "PD-L1 testing pending" is older than the latest note: it may have resulted since
    assert all(f.note_id == "3" for f in pending_flags(CASE, "Nothing relevant."))
    undated = Case("c2", "Oncology", (Note("a", "NGS sent; results pending."), Note("b", "Seen today; well.")))
    assert latest_notes(undated) == [undated.notes[-1]] and pending_flags(undated, "Well.") == []
    reverse = Case("c3", "Oncology", (Note("a", "Seen today; well."), Note("b", "NGS and PD-L1 testing pending.")))
    assert kinds(pending_flags(reverse, "Well.")) == [("pending", "b")]
    # an abbreviation or a label shared with the note carries it ("NGS", "PD-L1")
    assert pending_flags(reverse, "NGS and PD-L1 results are pending.") == []


def test_flags_are_plain_data():
    flags = omission_flags(CASE, "Apixaban. <NoteID:1>", units_for(CASE), 0.5)
    assert flags and all(set(f.to_dict()) == {"kind", "note_id", "start", "end", "text", "reason"} for f in flags)
    assert {f.kind for f in flags} <= set(FLAG_KINDS)


def test_a_note_saying_nothing_is_pending_raises_no_flag():
    for text in ("Results pending: none.", "No labs pending at discharge.", "Nothing else pending today.",
                 "Pending: N/A."):
        case = Case("c", "Medicine", (Note("1", "Seen today."), Note("2", text)))
        assert pending_flags(case, "Seen.") == [], text
    case = Case("c", "Medicine", (Note("1", "Blood cultures pending; no growth so far."),))
    assert kinds(pending_flags(case, "Seen.")) == [("pending", "1")]
