"""Uncovered source regions (KDE and sentence coverage) and sentence alignment, with the real embedding model."""
import pytest

from conftest import BUNDLE
from engine.evidence.support.alignment import align_summary, combined_scores, coverage_density, extractive_fragments
from engine.evidence.text.lexical import Rouge
from engine.evidence.coverage.results import CoverageError, CoverageParams
from engine.evidence.coverage.regions import calibrate, score_coverage
from engine.evidence.embeddings import WINDOW
from engine.data.loading import load_paths
from engine.core.models import Case, Note, Summary
from engine.sample import load_manifest
from engine.evidence.text.sentences import split_sentences

PLANTED = ("Incidentally, the patient keeps a pet green iguana and was bitten on the left thumb by it last "
           "Tuesday, so a tetanus booster was given in the clinic.")


@pytest.fixture(scope="module")
def emb(suite_embedder):
    return suite_embedder


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE])[0]


@pytest.fixture(scope="module")
def long_case(ds, emb):
    """One ~5,000-token note built from a sample case's notes, with a distinctive fact in its last 10 %."""
    base = ds.case("card-01")
    body = "\n\n".join(n.text for n in base.notes)
    text = body
    while len(emb.tok(text, add_special_tokens=False)["input_ids"]) < 4700:
        text += "\n\n" + body
    cut = int(len(text) * 0.93)
    cut = text.index("\n", cut) + 1
    text = text[:cut] + PLANTED + "\n" + text[cut:]
    n_tok = len(emb.tok(text, add_special_tokens=False)["input_ids"])
    assert n_tok >= 4800 and text.index(PLANTED) > 0.9 * len(text)
    return Case("long", "Cardiology", (Note("1", text),)), ds.summary("card-01-s1")


def test_windows_cover_every_token(emb, long_case):
    case, _ = long_case
    text = case.notes[0].text
    te = emb.token_embeddings(text)
    n = len(emb.tok(text, add_special_tokens=False)["input_ids"])
    assert len(te.spans) == n == te.vectors.shape[0] and te.n_windows >= n // (WINDOW - 2)
    assert te.spans[-1][1] == len(text.rstrip())  # the last token is embedded too
    assert abs(float((te.vectors ** 2).sum(axis=1).mean()) - 1.0) < 1e-4


def _hits(r, case):
    start = case.notes[0].text.index(PLANTED)
    return [i for i, g in enumerate(r.regions) if g.start < start + len(PLANTED) and start < g.end]


@pytest.mark.parametrize("method", ["topiccov", "sentcov", "kde"])
def test_planted_fact_at_the_end_is_the_top_region(emb, long_case, method):
    """The summary is the source itself minus the planted fact: nothing else is uncovered, so the planted fact at
    93 % of a 5,000-token note must come first — it is only scored at all if the windows reach the note's end."""
    case, _ = long_case
    text = case.notes[0].text
    summary = Summary("all-but-planted", "long", text.replace(PLANTED, ""))
    r = score_coverage(case, summary, emb, CoverageParams(method=method, top_regions=8))
    assert _hits(r, case) and _hits(r, case)[0] == 0, [g.text for g in r.regions]


def test_planted_fact_among_top_regions_of_a_real_summary(emb, long_case):
    """With a real 9-sentence summary most of the note is uncovered; the default method (unit coverage) still
    scores the planted fact at the note's end among the least covered places (ranked by score x salience; the
    stored list puts regions naming a drug or a change the summary never writes first, and the planted fact names
    neither)."""
    from engine.evidence.coverage.regions import merge_regions

    case, summary = long_case
    r = score_coverage(case, summary, emb, CoverageParams(top_regions=8))
    assert r.method == "unitcov"
    plain = merge_regions(case, r.units, r.threshold, 8)
    start = case.notes[0].text.index(PLANTED)
    assert any(g.start < start + len(PLANTED) and start < g.end for g in plain), [g.text for g in plain]


@pytest.mark.parametrize("method", ["unitcov", "topiccov", "sentcov", "kde"])
def test_offsets_lie_inside_notes_and_match(emb, ds, method):
    case = ds.case("neph-01")
    for s in ds.summaries_for(case.case_id):
        r = score_coverage(case, s, emb, CoverageParams(method=method))
        assert r.regions and r.units, (method, s.summary_id)  # the loops below check something
        for g in r.regions:
            assert 0 <= g.start < g.end <= len(case.note(g.note_id).text)
            assert case.note(g.note_id).text[g.start:g.end] == g.text
        for u in r.units:
            assert 0 <= u.start < u.end <= len(case.note(u.note_id).text)
        for u in r.unsupported:
            assert s.text[u.start:u.end] == u.text


@pytest.mark.parametrize("method", ["unitcov", "topiccov", "sentcov", "kde"])
def test_identical_summary_scores_low(emb, ds, method):
    case = ds.case("endo-01")
    same = Summary("same", case.case_id, "\n\n".join(n.text for n in case.notes))
    real = ds.summaries_for(case.case_id)[0]
    sc = score_coverage(case, same, emb, CoverageParams(method=method))
    assert not sc.flagged and sc.global_score < 0.25 * sc.flag_threshold
    assert sc.global_score < score_coverage(case, real, emb, CoverageParams(method=method)).global_score


@pytest.mark.parametrize("text", ["", "   ", "<NoteID:1>"])
@pytest.mark.parametrize("method", ["unitcov", "topiccov", "sentcov", "kde"])
def test_empty_summary_is_a_clear_error(emb, ds, text, method):
    """Only an empty summary is refused; a one-word one is scored (tests/test_coverage_methods.py)."""
    case = ds.case("endo-01")
    with pytest.raises(CoverageError, match="the summary is empty"):
        score_coverage(case, Summary("x", case.case_id, text), emb, CoverageParams(method=method))


def test_calibration_picks_f1_maximising_threshold():
    # scores 0.1 0.2 | 0.3 0.9 with labels n n y y: threshold 0.3 separates them -> P = R = F1 = 1
    cal = calibrate([0.1, 0.2, 0.3, 0.9], [False, False, True, True])
    assert (cal.threshold, cal.precision, cal.recall, cal.f1) == (0.3, 1.0, 1.0, 1.0)
    # 0.5(y) 0.6(n) 0.7(y): t=0.5 -> P 2/3 R 1 F1 0.8; t=0.7 -> P 1 R 0.5 F1 0.667 -> 0.5 wins
    cal = calibrate([0.5, 0.6, 0.7], [True, False, True])
    assert cal.threshold == 0.5 and cal.f1 == pytest.approx(0.8)


# ------------------------------------------------------------------------------------------ alignment


def test_fragments_coverage_density():
    # summary "a b c x" vs source "a b c d": one shared fragment of 3 words -> coverage 3/4, density 9/4
    assert extractive_fragments("a b c x".split(), "a b c d".split()) == [3]
    assert coverage_density("a b c x", "a b c d") == (0.75, 2.25)


def test_fast_rouge_equals_rouge_score():
    from rouge_score import rouge_scorer

    ref = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    ours = Rouge()
    for a, b in [("Started apixaban 5 mg twice daily for stroke prevention.", "Apixaban 5 mg BID was started."),
                 ("LVEF 35% on echo with moderate MR", "Echo showed LVEF of 35 percent and moderate MR"),
                 ("no overlap here", "entirely different words")]:
        s = ref.score(a, b)
        assert ours.mean_f(a, b) == pytest.approx(
            (s["rouge1"].fmeasure + s["rouge2"].fmeasure + s["rougeL"].fmeasure) / 3, abs=1e-12)


def test_sentence_splitter_keeps_clinical_abbreviations():
    text = "Seen by Dr. Smith. Started apixaban 5 mg p.o. b.i.d. (NEW) vs. warfarin. <NoteID:2> Plan: f/u 2 wks."
    sents = split_sentences(text)
    assert [s.clean for s in sents] == ["Seen by Dr. Smith.", "Started apixaban 5 mg p.o. b.i.d. (NEW) vs. warfarin.",
                                        "Plan: f/u 2 wks."]
    assert sents[1].citations == ("2",) and text[sents[1].start:sents[1].end].endswith("<NoteID:2>")


def reference_form(text: str) -> str:
    """The published PDSQI-9 judge implementation's form: <Note ID:n>, adjacent tags as a comma list."""
    import re

    out = re.sub(r"<NoteID:([^>]+)>", r"<Note ID:\1>", text)
    return re.sub(r"(<Note ID:[^>]+>)\s+(?=<Note ID:)", r"\1, ", out)


@pytest.mark.parametrize("form", ["NoteID", "Note ID list"])
def test_alignment_finds_the_manifest_citation_defects(emb, ds, form):
    # the same figures whether the summaries cite <NoteID:n> or the reference implementation's <Note ID:n>, <Note ID:m>
    manifest = load_manifest()
    found = total = 0
    for sid, entry in manifest["summaries"].items():
        defects = [d for d in entry["defects"] if d["type"] in ("missing_citation", "wrong_citation")]
        if not defects:
            continue
        s = ds.summary(sid)
        if form != "NoteID":
            s = Summary(s.summary_id, s.case_id, reference_form(s.text))
        a = align_summary(ds.case(s.case_id), s, emb)
        if form != "NoteID":
            assert all("<Note ID:" not in x.text or x.citations for x in a.sentences)
        for d in defects:
            total += 1
            span = d["summary_span"] if form == "NoteID" else reference_form(d["summary_span"])
            sent = next(x for x in a.sentences if span in x.text)
            if d["type"] == "missing_citation":
                assert sent.citation_verdict == "missing"  # deterministic: the sentence has no tag
                found += 1
            elif sent.citation_verdict == "wrong" and sent.best_note == d["correct_note_id"]:
                found += 1
    assert total == 20  # 10 missing and 10 wrong citations in the manifest
    assert found >= 16, f"{found}/{total} citation defects found"


def test_alignment_shape_and_support(emb, ds):
    s = ds.summary("card-01-s1")
    case = ds.case("card-01")
    a = align_summary(case, s, emb)
    assert len(a.sentences) == len(split_sentences(s.text))
    for x in a.sentences:
        assert len(x.rouge_topk) == 5 and len(x.embed_topk) == 5 and 1 <= len(x.rouge_gain) <= 5
        assert 0.0 < x.support <= 1.0
        for ref in x.rouge_gain:
            assert case.note(ref.note_id).text[ref.start:ref.end] == ref.text
    assert 0.5 < a.coverage <= 1.0 and a.density > 1.0
    other = align_summary(ds.case("endo-01"), ds.summary("endo-01-s1"), emb)
    combined_scores([a, other])
    assert a.combined == pytest.approx(-other.combined)  # two summaries: z-scores mirror each other
